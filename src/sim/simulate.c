/*
 * simulate.c - see runmon/sim.h.
 *
 * Sequence lengths are log-normal (median 1100 tokens, sigma 0.75),
 * clipped to [16, last boundary]. A bucketed batch takes as many sequences
 * of one bucket as fit the token budget at that bucket's upper bound. The
 * loss of a batch is the mean of a per-length level over its sequences
 * (piecewise linear through anchors that give the three groups teams
 * see: up to 1216 tokens ~0.55, to 2432 ~1.1, longer 1.7-2.0), times the trend 1 + 1.2 exp(-t / (steps/4)), times
 * 0.92 per completed epoch, times (1 + 0.05 noise).
 */
#include "runmon/cost.h"
#include "runmon/model.h"
#include "runmon/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/stats.h"

static const int64_t default_bounds[] = {0, 770, 1216, 1728, 2432, 3296, 8192};
static const char *const names[RM_SIM_COUNT] = {"sorted", "chunked",      "bucketed-random", "interleaved",
                                                "mixed",  "hf-megabatch", "stride"};

const char *rm_sim_strategy_name(enum rm_sim_strategy s)
{
	return names[s];
}

int rm_sim_strategy_parse(const char *name, enum rm_sim_strategy *out)
{
	for (int i = 0; i < RM_SIM_COUNT; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum rm_sim_strategy)i;
			return 0;
		}
	return -1;
}

void rm_sim_opts_default(struct rm_sim_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->strategy = RM_SIM_CHUNKED;
	o->steps = 20000;
	o->seed = 1;
	o->log_every = 1;
	o->save_every = 500;
	o->tokens_per_batch = 65536;
	o->ranks = o->micro = 1;
	o->rank_mode = RM_SIM_SHARDED;
}

/* Loss level by sequence length: short ~0.55, medium ~1.1, long 1.6-2.2. */
static double level_of(double len)
{
	static const double x[] = {0, 1216, 1217, 2432, 2433, 4000, 8192};
	static const double y[] = {0.52, 0.6, 1.02, 1.2, 1.7, 1.85, 2.0};
	for (int i = 1; i < 7; i++)
		if (len <= x[i])
			return y[i - 1] + (y[i] - y[i - 1]) * (len - x[i - 1]) / (x[i] - x[i - 1]);
	return y[6];
}

struct gen {
	struct rm_rng rng;
	const int64_t *b;
	int nb; /* boundaries */
	int k;  /* buckets */
	double maxlen;
	const struct rm_lengths *d; /* an empirical distribution, or NULL */
	int64_t *cum;               /* d's cumulative counts */
};

/* The first distinct length index whose length is >= x. */
static size_t lower_len(const struct rm_lengths *d, double x)
{
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((double)d->len[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A length of the empirical distribution within [lo, hi], by inverting its
 * cumulative counts; -1 when it has none there. */
static double draw_empirical(struct gen *g, double lo, double hi)
{
	size_t a = lower_len(g->d, lo), b = lower_len(g->d, hi + 0.5); /* [a, b) */
	if (a >= b)
		return -1;
	int64_t base = a ? g->cum[a - 1] : 0, span = g->cum[b - 1] - base;
	int64_t u = base + (int64_t)(rm_rng_uniform(&g->rng) * (double)span);
	size_t l = a, h = b - 1;
	while (l < h) { /* the first index whose cumulative count exceeds u */
		size_t mid = l + (h - l) / 2;
		if (g->cum[mid] > u)
			h = mid;
		else
			l = mid + 1;
	}
	return (double)g->d->len[l];
}

/* A length from the log-normal truncated to [lo, hi], by inverting its
 * CDF: no rejection loop, however narrow the range. */
static double draw_between(struct gen *g, double lo, double hi)
{
	double e = g->d ? draw_empirical(g, lo, hi) : -1;
	if (e >= 0)
		return e;
	double plo = rm_norm_cdf((log(lo - 0.5) - log(1100)) / 0.75);
	double phi = rm_norm_cdf((log(hi + 0.5) - log(1100)) / 0.75);
	double u = plo + (phi - plo) * rm_rng_uniform(&g->rng);
	double v = round(exp(log(1100) + 0.75 * rm_norm_quantile(u)));
	return fmin(fmax(v, lo), hi);
}

static double draw_len(struct gen *g)
{
	if (g->d) /* all of it: lengths past the last boundary go to the last bucket */
		return draw_between(g, 1, (double)g->d->len[g->d->n - 1]);
	return draw_between(g, fmin(16, g->maxlen), g->maxlen);
}

static int bucket_of(const struct gen *g, double len)
{
	for (int i = 0; i + 1 < g->nb; i++)
		if (len <= (double)g->b[i + 1])
			return i;
	return g->k - 1;
}

/* A length from bucket b: (lo, hi], at least 1. */
static double draw_len_in(struct gen *g, int b)
{
	return draw_between(g, fmax((double)g->b[b] + 1, 1), (double)g->b[b + 1]);
}

/* Fills st's composition from lengths and returns the batch's level. */
static double compose(struct rm_sim_step *st, const double *len, int n, const struct gen *g)
{
	double lo = INFINITY, hi = 0, sum = 0, lev = 0;
	for (int i = 0; i < n; i++) {
		lo = fmin(lo, len[i]);
		hi = fmax(hi, len[i]);
		sum += len[i];
		lev += level_of(len[i]) * len[i];
	}
	st->n = n;
	st->min_len = (int)lo;
	st->max_len = (int)hi;
	st->mean_len = sum / n;
	st->tokens = (int64_t)sum;
	st->padded = (int64_t)(n * hi - sum);
	st->bucket = bucket_of(g, hi);
	return lev / sum; /* token-weighted: the loss is a mean over tokens */
}

/* Share of batches from each bucket when batches are bucketed: length
 * share over sequences per batch. */
static void bucket_shares(struct gen *g, const struct rm_sim_opts *o, double *q)
{
	double cnt[64] = {0}, tot = 0;
	for (int i = 0; i < 20000; i++)
		cnt[bucket_of(g, draw_len(g))]++;
	for (int b = 0; b < g->k; b++) {
		double per = fmax(1, floor((double)o->tokens_per_batch / (double)g->b[b + 1]));
		q[b] = cnt[b] / per;
		tot += q[b];
	}
	for (int b = 0; b < g->k; b++)
		q[b] /= tot;
}

static int pick(struct gen *g, const double *q)
{
	double u = rm_rng_uniform(&g->rng), c = 0;
	for (int b = 0; b < g->k; b++) {
		c += q[b];
		if (u < c)
			return b;
	}
	return g->k - 1;
}

/* The bucket sequence of a bucketed strategy: n batches, epochs of
 * `epoch` batches. */
static void bucket_order(struct gen *g, const struct rm_sim_opts *o, const double *q, int64_t n, int64_t epoch,
                         int *seq)
{
	double credit[64] = {0};
	int cur = 0, left = 0;
	for (int64_t t = 0; t < n; t++) {
		switch (o->strategy) {
		case RM_SIM_SORTED: {
			/* Within an epoch, the bucket whose cumulative share covers
			 * the position: short first, long last. */
			double pos = (double)(t % epoch) / (double)epoch, c = 0;
			seq[t] = g->k - 1;
			for (int b = 0; b < g->k; b++) {
				c += q[b];
				if (pos < c) {
					seq[t] = b;
					break;
				}
			}
			break;
		}
		case RM_SIM_CHUNKED:
			if (left == 0) {
				cur = pick(g, q);
				left = 50 + (int)rm_rng_below(&g->rng, 151);
			}
			left--;
			seq[t] = cur;
			break;
		case RM_SIM_INTERLEAVED: {
			/* Stride scheduling: each bucket earns its share per step;
			 * the richest bucket goes next. */
			int best = 0;
			for (int b = 0; b < g->k; b++) {
				credit[b] += q[b];
				if (credit[b] > credit[best])
					best = b;
			}
			credit[best] -= 1;
			seq[t] = best;
			break;
		}
		default: seq[t] = pick(g, q);
		}
	}
}

/* The stride strategy: a dataset drawn once, an epoch of batches, ordered
 * by the stride sampler per rank and epoch as a trainer's loader would,
 * with the ranks' micro-batches as ranks of their own (the sampler's
 * accumulation: slot r x micro + m of ranks x micro). */
struct stride_run {
	int64_t *data; /* the dataset's lengths */
	size_t n;
	struct rm_stride_epoch *ep; /* per slot: the current epoch's batches */
	uint32_t epoch;
	int64_t epoch_steps, first_step; /* the current epoch's steps, and where it began */
	int64_t bounds[RM_STRIDE_MAX_BUCKETS + 1];
};

static void stride_epoch(struct stride_run *sr, const struct gen *g, const struct rm_sim_opts *o)
{
	int S = rm_sim_slots(o);
	struct rm_stride_opts so = {.bounds = sr->bounds,
	                            .nbounds = g->k + 1,
	                            .max_tokens = o->tokens_per_batch,
	                            .seed = o->seed,
	                            .epoch = sr->epoch,
	                            .world_size = S};
	for (int r = 0; r < S; r++) {
		rm_stride_epoch_free(&sr->ep[r]);
		so.rank = r;
		rm_stride_epoch(sr->data, sr->n, &so, &sr->ep[r]);
	}
	sr->epoch_steps = (int64_t)sr->ep[0].nbatches;
}

static void stride_begin(struct stride_run *sr, struct gen *g, const struct rm_sim_opts *o)
{
	double want = (double)o->steps_per_epoch * rm_sim_slots(o), have = 0;
	size_t cap = 1024;
	sr->data = rm_xmalloc(cap * sizeof(int64_t));
	sr->ep = rm_xcalloc((size_t)rm_sim_slots(o), sizeof(*sr->ep));
	for (int b = 0; b <= g->k; b++)
		sr->bounds[b] = g->b[b];
	/* Draw until an epoch has steps_per_epoch steps: batches hold more than
	 * the budget over the bucket's upper bound, so the count runs short
	 * and the dataset grows by the shortfall. The epoch ends there, as the
	 * run's config says; the order's last few batches go unused. */
	for (;;) {
		while (have < want || sr->n == 0) {
			if (sr->n == cap)
				sr->data = rm_xrealloc(sr->data, (cap *= 2) * sizeof(int64_t));
			double v = draw_len(g);
			sr->data[sr->n++] = (int64_t)v;
			have += 1 / fmax(1, floor((double)o->tokens_per_batch / (double)g->b[bucket_of(g, v) + 1]));
		}
		stride_epoch(sr, g, o);
		if (sr->epoch_steps >= o->steps_per_epoch)
			break;
		want *= 1.02 + (double)(o->steps_per_epoch - sr->epoch_steps) / (double)o->steps_per_epoch;
	}
	sr->epoch_steps = o->steps_per_epoch;
}

/* The lengths of slot j's batch at step t into len; their count. */
static int stride_lengths(struct stride_run *sr, const struct gen *g, const struct rm_sim_opts *o, int64_t t, int slot,
                          double *len)
{
	while (t - sr->first_step >= sr->epoch_steps && sr->epoch_steps > 0) {
		sr->first_step += sr->epoch_steps;
		sr->epoch++;
		stride_epoch(sr, g, o);
		sr->epoch_steps = o->steps_per_epoch;
	}
	const struct rm_stride_epoch *ep = &sr->ep[slot];
	size_t j = (size_t)(t - sr->first_step), cnt = 0;
	if (j >= ep->nbatches) /* a later epoch's order a batch short: its first again */
		j %= ep->nbatches;
	for (size_t p = ep->start[j]; p < ep->start[j + 1] && cnt < 4096; p++)
		len[cnt++] = (double)sr->data[ep->idx[p]];
	return (int)cnt;
}

static void stride_end(struct stride_run *sr, const struct rm_sim_opts *o)
{
	for (int r = 0; sr->ep && r < rm_sim_slots(o); r++)
		rm_stride_epoch_free(&sr->ep[r]);
	free(sr->ep);
	free(sr->data);
}

static const char *const mode_names[RM_SIM_RANK_MODES] = {"lockstep", "sharded", "independent"};

const char *rm_sim_rank_mode_name(enum rm_sim_rank_mode m)
{
	return mode_names[m];
}

int rm_sim_rank_mode_parse(const char *name, enum rm_sim_rank_mode *out)
{
	for (int i = 0; i < RM_SIM_RANK_MODES; i++)
		if (!strcmp(name, mode_names[i])) {
			*out = (enum rm_sim_rank_mode)i;
			return 0;
		}
	return -1;
}

int rm_sim_slots(const struct rm_sim_opts *o)
{
	return (o->ranks > 1 ? o->ranks : 1) * (o->micro > 1 ? o->micro : 1);
}

/* The bucket of every batch, steps x slots in (step, rank, micro) order:
 * lockstep, every slot of a step draws the step's bucket; sharded, one
 * global order dealt out in turn; independent, each rank its own order of
 * steps x micro batches, started at its own phase. */
static void slot_order(struct gen *g, const struct rm_sim_opts *o, const double *q, int *seq)
{
	int64_t n = o->steps, epoch = o->steps_per_epoch;
	int R = o->ranks > 1 ? o->ranks : 1, M = o->micro > 1 ? o->micro : 1, S = R * M;
	if (S == 1 || o->rank_mode == RM_SIM_LOCKSTEP) {
		int *step_seq = S == 1 ? seq : rm_xmalloc((size_t)n * sizeof(int));
		bucket_order(g, o, q, n, epoch, step_seq);
		for (int64_t t = 0; t < n && S > 1; t++)
			for (int j = 0; j < S; j++)
				seq[t * S + j] = step_seq[t];
		if (S > 1)
			free(step_seq);
	} else if (o->rank_mode == RM_SIM_SHARDED) {
		bucket_order(g, o, q, n * S, epoch * S, seq);
	} else {
		int64_t per = n * M;
		int *own = rm_xmalloc((size_t)per * sizeof(int));
		for (int r = 0; r < R; r++) {
			bucket_order(g, o, q, per, epoch * M, own);
			int64_t phase = (int64_t)rm_rng_below(&g->rng, (uint64_t)per);
			for (int64_t t = 0; t < n; t++)
				for (int m = 0; m < M; m++)
					seq[t * S + r * M + m] = own[(t * M + m + phase) % per];
		}
		free(own);
	}
}

/* The batch's lengths as a trainer records them (whole tokens). */
static void record_lens(struct rm_sim_step *st, const double *len, int n)
{
	int64_t v[4096];
	uint8_t code[5 * 4096];
	for (int i = 0; i < n; i++)
		v[i] = (int64_t)len[i]; /* as compose() takes min_len and max_len */
	st->lens_bytes = (uint32_t)rm_lens_encode(v, (size_t)n, code);
	st->lens = rm_xmalloc(st->lens_bytes);
	memcpy(st->lens, code, st->lens_bytes);
}

void rm_sim_steps_free(struct rm_sim_step *st, size_t n)
{
	for (size_t i = 0; st && i < n; i++)
		free(st[i].lens);
	free(st);
}

void rm_simulate(const struct rm_sim_opts *o0, struct rm_sim_step **out)
{
	struct rm_sim_opts o = *o0;
	struct gen g = {.rng = {o.seed * 0x9E3779B97F4A7C15ull + 1}};
	g.b = o.bounds && o.nbounds >= 2 ? o.bounds : default_bounds;
	g.nb = o.bounds && o.nbounds >= 2 ? o.nbounds : 7;
	g.k = g.nb - 1 < 64 ? g.nb - 1 : 64;
	g.maxlen = (double)g.b[g.nb - 1];
	if (o.lengths && o.lengths->n) {
		g.d = o.lengths;
		g.cum = rm_xmalloc(g.d->n * sizeof(int64_t));
		for (size_t i = 0; i < g.d->n; i++)
			g.cum[i] = g.d->count[i] + (i ? g.cum[i - 1] : 0);
	}
	if (o.steps_per_epoch <= 0)
		o.steps_per_epoch = o.steps / 3 > 0 ? o.steps / 3 : 1;
	if (o.log_every < 1)
		o.log_every = 1;
	int64_t n = o.steps;
	int S = rm_sim_slots(&o), M = o.micro > 1 ? o.micro : 1;
	size_t N = (size_t)n * (size_t)S;
	struct rm_sim_step *st = rm_xcalloc(N ? N : 1, sizeof(*st));
	double q[64], len[4096];
	int *seq = rm_xmalloc((N ? N : 1) * sizeof(int));
	bucket_shares(&g, &o, q);
	int bucketed = o.strategy != RM_SIM_MIXED && o.strategy != RM_SIM_HF_MEGABATCH && o.strategy != RM_SIM_STRIDE;
	if (bucketed)
		slot_order(&g, &o, q, seq);
	struct stride_run sr = {0};
	if (o.strategy == RM_SIM_STRIDE)
		stride_begin(&sr, &g, &o);
	/* HF megabatches: 50 batches of a fixed size, sorted longest first. */
	const int mega = 50, per = 16;
	double *pool = rm_xmalloc(mega * per * sizeof(double));
	double runtime = 0;
	for (int64_t t = 0; t < n; t++) {
		double level = 0, work = 0;
		for (int j = 0; j < S; j++) {
			size_t i = (size_t)t * (size_t)S + (size_t)j;
			int cnt;
			if (j > 0 && !bucketed && o.rank_mode == RM_SIM_LOCKSTEP) {
				cnt = st[i - 1].n; /* the step's lengths again */
			} else if (bucketed) {
				int b = seq[i];
				cnt = (int)fmax(1, floor((double)o.tokens_per_batch / (double)g.b[b + 1]));
				if (cnt > 4096)
					cnt = 4096;
				for (int x = 0; x < cnt; x++)
					len[x] = draw_len_in(&g, b);
			} else if (o.strategy == RM_SIM_STRIDE) {
				cnt = stride_lengths(&sr, &g, &o, t, j, len);
			} else if (o.strategy == RM_SIM_MIXED) {
				/* Random lengths until the padded batch would pass the budget. */
				double hi = 0;
				cnt = 0;
				for (;;) {
					double v = draw_len(&g);
					if (cnt > 0 && (cnt + 1) * fmax(hi, v) > (double)o.tokens_per_batch)
						break;
					len[cnt++] = v;
					hi = fmax(hi, v);
					if (cnt == 4096)
						break;
				}
			} else {
				int slot = (int)(i % (size_t)mega);
				if (slot == 0) {
					for (int x = 0; x < mega * per; x++)
						pool[x] = draw_len(&g);
					/* descending sort (insertion sort is fine for 800) */
					for (int x = 1; x < mega * per; x++) {
						double v = pool[x];
						int y = x;
						while (y > 0 && pool[y - 1] < v) {
							pool[y] = pool[y - 1];
							y--;
						}
						pool[y] = v;
					}
				}
				cnt = per;
				memcpy(len, pool + slot * per, per * sizeof(double));
			}
			level += compose(&st[i], len, cnt, &g) / S; /* the step's loss: the mean over its batches */
			if (o.lens)
				record_lens(&st[i], len, cnt);
			st[i].step = t;
			st[i].rank = j / M;
			st[i].micro = j % M;
			work += (double)(st[i].tokens + st[i].padded);
		}
		struct rm_sim_step *s = &st[(size_t)t * (size_t)S];
		double epoch = (double)t / (double)o.steps_per_epoch;
		double trend = (1 + 1.2 * exp(-(double)t / fmax(1, (double)n / 4))) * pow(0.92, floor(epoch));
		double loss = level * trend * (1 + 0.05 * rm_rng_normal(&g.rng));
		if (o.spikes == RM_SIM_SPIKES_BUCKET && s->bucket == g.k - 1 && rm_rng_uniform(&g.rng) < 0.03)
			loss *= 1.8;
		if (o.spikes == RM_SIM_SPIKES_CHECKPOINT && o.save_every > 0 && t % o.save_every == 1)
			loss *= 1.8;
		double warm = fmax(1, (double)n / 50);
		double lr =
		    3e-4 * ((double)t < warm ? ((double)t + 1) / warm
		                             : 0.5 * (1 + cos(M_PI * ((double)t - warm) / fmax(1, (double)n - warm))));
		runtime += work / (S / M) / 30000.0; /* ranks work in parallel */
		for (int j = 0; j < S; j++) {
			s[j].loss = loss;
			s[j].lr = lr;
			s[j].epoch = epoch;
			s[j].runtime = runtime;
		}
	}
	free(pool);
	free(seq);
	free(g.cum);
	stride_end(&sr, &o);
	*out = st;
}

void rm_sim_series_make(const struct rm_sim_opts *o, struct rm_sim_series *out)
{
	struct rm_sim_step *x;
	rm_simulate(o, &x);
	size_t T = (size_t)o->steps, S = (size_t)rm_sim_slots(o), N = T * S;
	memset(out, 0, sizeof(*out));
	out->step = rm_xmalloc((T ? T : 1) * sizeof(int64_t));
	out->loss = rm_xmalloc((T ? T : 1) * sizeof(double));
	out->bstep = rm_xmalloc((N ? N : 1) * sizeof(int64_t));
	out->max_len = rm_xmalloc((N ? N : 1) * sizeof(double));
	out->bucket = rm_xmalloc((N ? N : 1) * sizeof(int));
	out->brank = rm_xmalloc((N ? N : 1) * sizeof(int));
	struct rm_length_cuts cuts = {.n = 0};
	if (o->lens) { /* bucket i holds (b[i], b[i + 1]], the last longer lengths too, as bucket_of() */
		const int64_t *b = o->bounds && o->nbounds >= 2 ? o->bounds : default_bounds;
		int nb = o->bounds && o->nbounds >= 2 ? o->nbounds : 7;
		cuts.n = nb - 1 < RM_MAX_BUCKETS ? nb - 1 : RM_MAX_BUCKETS;
		for (int i = 0; i < cuts.n; i++) {
			cuts.hi[i] = b[i + 1];
			cuts.dense[i] = i;
		}
	}
	for (size_t i = 0; i < N; i++) {
		uint8_t bucket[RM_MAX_BUCKETS];
		float share[RM_MAX_BUCKETS];
		int parts = x[i].lens ? rm_lens_shares(x[i].lens, x[i].lens_bytes, &cuts, bucket, share) : 0;
		if (parts >= 2)
			rm_mix_add(&out->mix, i, bucket, share, parts);
		out->bstep[i] = x[i].step;
		out->bucket[i] = x[i].bucket;
		out->brank[i] = x[i].rank;
		out->max_len[i] = x[i].max_len;
		out->step[i / S] = x[i].step;
		out->loss[i / S] = x[i].loss;
	}
	rm_sim_steps_free(x, N);
	out->s = (struct rm_series){.n = T,
	                            .step = out->step,
	                            .loss = out->loss,
	                            .nb = N,
	                            .bstep = out->bstep,
	                            .brank = out->brank,
	                            .nranks = o->ranks > 1 ? o->ranks : 1,
	                            .bucket = out->bucket,
	                            .max_len = out->max_len,
	                            .mix = out->mix.n ? &out->mix : NULL};
}

void rm_sim_series_release(struct rm_sim_series *ss)
{
	free(ss->step);
	free(ss->loss);
	free(ss->bstep);
	free(ss->max_len);
	free(ss->bucket);
	free(ss->brank);
	rm_mix_release(&ss->mix);
	memset(ss, 0, sizeof(*ss));
}
