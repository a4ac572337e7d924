/*
 * replay.c - see replay.h.
 */
#define _GNU_SOURCE /* qsort_r */
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/cost.h"
#include "runmon/model.h"
#include "runmon/stats.h"

#ifndef RUNMON_REPLAY_SAMPLES
#define RUNMON_REPLAY_SAMPLES "tests/data/replay/samples.csv"
#endif

#define BATCH    16 /* samples a batch, as the training drew them */
#define WINDOW   8  /* a batch draws from the samples trained this many steps either side */
#define CHUNK    64 /* batches of one bucket in a chunk */
#define MEGA     50 /* batches in a megabatch (transformers' group_by_length) */
#define NBUCKETS 4
#define EPOCHS   4 /* a sorted order's epochs over the run */
#define LR       3e-3

/* examples/torch/train.py's BOUNDARIES: bucket i holds (b[i], b[i + 1]]. */
static const int64_t bounds[NBUCKETS + 1] = {0, 40, 96, 160, 256};

static const char *const names[RP_COUNT] = {"mixed", "bucketed-random", "stride", "sorted", "chunked", "megabatch"};

const char *replay_order_name(enum replay_order o)
{
	return names[o];
}

int replay_sick(enum replay_order o)
{
	return o == RP_SORTED || o == RP_CHUNKED || o == RP_MEGABATCH;
}

/* The samples, in step order, and per bucket the samples of each step. */
struct pool {
	size_t n;
	int steps;
	int *step, *len, *bucket;
	float *loss;
	size_t *of[NBUCKETS]; /* sample indices of the bucket, in step order */
	size_t nof[NBUCKETS];
	size_t *at[NBUCKETS]; /* [steps + 1]: where each step's samples begin in of[] */
	size_t *all_at;       /* [steps + 1]: where each step's samples begin */
	double share[NBUCKETS];
};

static int bucket_of(int len)
{
	int b = 0;
	while (b + 1 < NBUCKETS && len > bounds[b + 1])
		b++;
	return b;
}

static int pool_load(struct pool *p, char *why, size_t whylen)
{
	FILE *f = fopen(RUNMON_REPLAY_SAMPLES, "r");
	if (!f)
		return snprintf(why, whylen, "cannot read %s", RUNMON_REPLAY_SAMPLES), -1;
	size_t cap = 1 << 16;
	memset(p, 0, sizeof(*p));
	p->step = rm_xmalloc(cap * sizeof(int));
	p->len = rm_xmalloc(cap * sizeof(int));
	p->loss = rm_xmalloc(cap * sizeof(float));
	char line[128];
	int prev = 0;
	while (fgets(line, sizeof(line), f)) {
		int s, l;
		float v;
		if (sscanf(line, "%d,%d,%f", &s, &l, &v) != 3)
			continue; /* the header */
		if (s < prev || l < 2 || !isfinite(v)) {
			fclose(f);
			return snprintf(why, whylen, "%s: a row out of step order or without a loss",
			                RUNMON_REPLAY_SAMPLES),
			       -1;
		}
		if (p->n == cap) {
			cap *= 2;
			p->step = rm_xrealloc(p->step, cap * sizeof(int));
			p->len = rm_xrealloc(p->len, cap * sizeof(int));
			p->loss = rm_xrealloc(p->loss, cap * sizeof(float));
		}
		p->step[p->n] = prev = s;
		p->len[p->n] = l;
		p->loss[p->n++] = v;
	}
	fclose(f);
	if (p->n < 1000)
		return snprintf(why, whylen, "%s: %zu samples", RUNMON_REPLAY_SAMPLES, p->n), -1;
	p->steps = p->step[p->n - 1] + 1;
	p->bucket = rm_xmalloc(p->n * sizeof(int));
	p->all_at = rm_xcalloc((size_t)p->steps + 1, sizeof(size_t));
	for (int b = 0; b < NBUCKETS; b++) {
		p->of[b] = rm_xmalloc(p->n * sizeof(size_t));
		p->at[b] = rm_xcalloc((size_t)p->steps + 1, sizeof(size_t));
	}
	for (size_t i = 0, s = 0; i < p->n; i++) {
		for (; (int)s <= p->step[i]; s++) {
			p->all_at[s] = i;
			for (int b = 0; b < NBUCKETS; b++)
				p->at[b][s] = p->nof[b];
		}
		int b = p->bucket[i] = bucket_of(p->len[i]);
		p->of[b][p->nof[b]++] = i;
	}
	p->all_at[p->steps] = p->n;
	for (int b = 0; b < NBUCKETS; b++) {
		p->at[b][p->steps] = p->nof[b];
		p->share[b] = (double)p->nof[b] / (double)p->n;
	}
	return 0;
}

/* The pool, read once a process. */
static const struct pool *pool(char *why, size_t whylen)
{
	static struct pool p;
	static int state; /* 0 unread, 1 read, -1 failed */
	if (!state)
		state = pool_load(&p, why, whylen) ? -1 : 1;
	if (state < 0 && !why[0])
		snprintf(why, whylen, "cannot read %s", RUNMON_REPLAY_SAMPLES);
	return state > 0 ? &p : NULL;
}

/* A bucket drawn by the buckets' shares of the samples. */
static int draw_bucket(const struct pool *p, struct rm_rng *rng)
{
	double u = rm_rng_uniform(rng), acc = 0;
	for (int b = 0; b < NBUCKETS - 1; b++)
		if (u < (acc += p->share[b]))
			return b;
	return NBUCKETS - 1;
}

/* The steps of the training a run's step t stands for: [lo, hi). */
static void window(const struct pool *p, int64_t t, int64_t steps, int *lo, int *hi)
{
	int c = (int)((double)t * p->steps / (double)steps);
	*lo = c - WINDOW < 0 ? 0 : c - WINDOW;
	*hi = c + WINDOW + 1 > p->steps ? p->steps : c + WINDOW + 1;
}

/* A sample of bucket b (or of any, b < 0) trained in [lo, hi). */
static size_t draw_sample(const struct pool *p, int b, int lo, int hi, struct rm_rng *rng)
{
	size_t from = b < 0 ? p->all_at[lo] : p->at[b][lo], to = b < 0 ? p->all_at[hi] : p->at[b][hi];
	if (to <= from) { /* none there: the bucket's nearest */
		from = 0;
		to = b < 0 ? p->n : p->nof[b];
	}
	size_t k = from + (size_t)rm_rng_below(rng, to - from);
	return b < 0 ? k : p->of[b][k];
}

struct batch {
	size_t idx[BATCH];
};

/* The batch's loss as the trainer reduces it: the mean over its real
 * tokens (a sample of length L predicts L - 1). */
static double batch_loss(const struct pool *p, const struct batch *bt, int *min_len, int *max_len)
{
	double num = 0, den = 0;
	*min_len = 1 << 30;
	*max_len = 0;
	for (int i = 0; i < BATCH; i++) {
		size_t j = bt->idx[i];
		num += p->loss[j] * (p->len[j] - 1);
		den += p->len[j] - 1;
		*min_len = p->len[j] < *min_len ? p->len[j] : *min_len;
		*max_len = p->len[j] > *max_len ? p->len[j] : *max_len;
	}
	return num / den;
}

static int by_len_desc(const void *a, const void *b, void *arg)
{
	const struct pool *p = arg;
	return p->len[*(const size_t *)b] - p->len[*(const size_t *)a];
}

/* The bucket of each batch of one-bucket orders: the whole run's order. */
static void order_buckets(const struct pool *p, const struct replay_opts *o, struct rm_rng *rng, int *bk)
{
	int64_t T = o->steps, per_epoch = T / EPOCHS > 0 ? T / EPOCHS : 1;
	double issued[NBUCKETS] = {0};
	for (int64_t t = 0; t < T;) {
		switch (o->order) {
		case RP_BUCKETED_RANDOM: bk[t++] = draw_bucket(p, rng); break;
		case RP_STRIDE: { /* the bucket furthest behind its share */
			int best = 0;
			for (int b = 1; b < NBUCKETS; b++)
				if ((issued[b] + 1) / p->share[b] < (issued[best] + 1) / p->share[best])
					best = b;
			issued[best]++;
			bk[t++] = best;
			break;
		}
		case RP_CHUNKED: {
			int b = draw_bucket(p, rng);
			for (int i = 0; i < CHUNK && t < T; i++)
				bk[t++] = b;
			break;
		}
		case RP_SORTED: { /* an epoch: each bucket's share of it, shortest first */
			int64_t start = t;
			for (int b = 0; b < NBUCKETS; b++) {
				int64_t end = b == NBUCKETS - 1
				                  ? start + per_epoch
				                  : start + (int64_t)llround(p->share[b] * (double)per_epoch);
				for (; t < end && t < T; t++)
					bk[t] = b;
			}
			break;
		}
		default: bk[t++] = -1;
		}
	}
}

int replay_series_make(const struct replay_opts *o, struct rm_sim_series *out, char *why, size_t whylen)
{
	why[0] = 0;
	const struct pool *p = pool(why, whylen);
	if (!p)
		return -1;
	memset(out, 0, sizeof(*out));
	size_t T = (size_t)o->steps, N = o->loss_only ? 0 : T, K = (size_t)(o->log_every > 1 ? o->log_every : 1), m = 0;
	out->step = rm_xmalloc((T / K + 1) * sizeof(int64_t));
	out->loss = rm_xmalloc((T / K + 1) * sizeof(double));
	out->lr = rm_xmalloc((T / K + 1) * sizeof(float));
	out->epoch = rm_xmalloc((T / K + 1) * sizeof(float));
	out->bstep = rm_xmalloc((N ? N : 1) * sizeof(int64_t));
	out->max_len = rm_xmalloc((N ? N : 1) * sizeof(double));
	out->bucket = rm_xmalloc((N ? N : 1) * sizeof(int));
	out->brank = rm_xcalloc(N ? N : 1, sizeof(int));
	double *min_len = rm_xmalloc((N ? N : 1) * sizeof(double));
	int *bk = rm_xmalloc(T * sizeof(int));
	struct rm_rng rng = {o->seed * 0x9E3779B97F4A7C15ull + 65};
	order_buckets(p, o, &rng, bk);
	struct batch *mega = rm_xmalloc(MEGA * sizeof(*mega));
	double acc = 0;
	int64_t per_epoch = (int64_t)T / EPOCHS > 0 ? (int64_t)T / EPOCHS : 1;
	for (size_t t = 0; t < T; t++) {
		int lo, hi, mn, mx;
		window(p, (int64_t)t, (int64_t)T, &lo, &hi);
		struct batch bt;
		if (o->order == RP_MEGABATCH) {
			if (t % MEGA == 0) { /* MEGA batches drawn, sorted by length, cut in turn */
				size_t all[MEGA * BATCH];
				for (size_t i = 0; i < MEGA * BATCH; i++)
					all[i] = draw_sample(p, -1, lo, hi, &rng);
				qsort_r(all, MEGA * BATCH, sizeof(size_t), by_len_desc, (void *)p);
				for (int i = 0; i < MEGA; i++)
					memcpy(mega[i].idx, all + (size_t)i * BATCH, sizeof(mega[i].idx));
			}
			bt = mega[t % MEGA];
		} else {
			for (int i = 0; i < BATCH; i++)
				bt.idx[i] = draw_sample(p, bk[t], lo, hi, &rng);
		}
		double loss = batch_loss(p, &bt, &mn, &mx);
		if (N) {
			out->bstep[t] = (int64_t)t;
			out->bucket[t] = bucket_of(mx); /* a padding-aware loader's label: its longest */
			out->max_len[t] = mx;
			min_len[t] = mn;
		}
		acc += loss;
		if ((t + 1) % K)
			continue;
		out->step[m] = (int64_t)t;
		out->loss[m] = acc / (double)K;
		out->lr[m] = rm_float_of(LR);
		out->epoch[m] = rm_epoch_float((double)(t + 1) / (double)per_epoch);
		m++;
		acc = 0;
	}
	free(mega);
	free(bk);
	out->truth.reset_bucket = -1;
	out->s = (struct rm_series){.n = m,
	                            .step = out->step,
	                            .loss = out->loss,
	                            .lr = out->lr,
	                            .epoch = out->epoch,
	                            .nb = N,
	                            .bstep = out->bstep,
	                            .brank = out->brank,
	                            .nranks = 1,
	                            .bucket = out->bucket,
	                            .max_len = out->max_len,
	                            .steps_per_epoch = per_epoch};
	if (o->no_bucket && N) /* as the store derives them */
		rm_sim_series_derive(out, min_len);
	free(min_len);
	return 0;
}
