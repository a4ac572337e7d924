/*
 * simulate.c - see runmon/sim.h.
 *
 * A bucketed batch takes as many sequences of one bucket as fit the token
 * budget at that bucket's upper bound. The loss of a batch is the mean of
 * a per-length level over its tokens (piecewise linear through anchors
 * that give the three groups teams see: up to 1216 tokens ~0.55, to 2432
 * ~1.1, longer 1.7-2.0); a step's is the mean over its batches, times the
 * trend 1 + 1.2 exp(-t / (steps/4)), times 0.92 per completed epoch, times
 * (1 + 0.05 noise).
 *
 * Events are shaped as real ones are, not as a detector looks for them: a
 * loss reset jumps to 2-3x and decays over 5-30 steps, exponentially or
 * linearly (each reset draws its own), and multiplies the whole step's
 * loss, every rank's batch alike (the model is shared). A run that
 * diverges turns NaN or +Inf, or grows tenfold every 20 steps.
 */
#include "runmon/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/model.h"
#include "sim_internal.h"

static const int64_t default_bounds[] = {0, 770, 1216, 1728, 2432, 3296, 8192};
static const char *const names[RM_SIM_COUNT] = {"sorted", "chunked",      "bucketed-random", "interleaved",
                                                "mixed",  "hf-megabatch", "stride"};
static const char *const spike_names[RM_SIM_SPIKES_COUNT] = {"none", "bucket", "checkpoint", "epoch", "random"};
static const char *const diverge_names[RM_SIM_DIVERGE_COUNT] = {"none", "nan", "inf", "explode"};
static const char *const mode_names[RM_SIM_RANK_MODES] = {"lockstep", "sharded", "independent"};

static int parse_name(const char *const *table, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(name, table[i]))
			return i;
	return -1;
}

const char *rm_sim_strategy_name(enum rm_sim_strategy s)
{
	return names[s];
}

int rm_sim_strategy_parse(const char *name, enum rm_sim_strategy *out)
{
	int i = parse_name(names, RM_SIM_COUNT, name);
	if (i >= 0)
		*out = (enum rm_sim_strategy)i;
	return i < 0 ? -1 : 0;
}

const char *rm_sim_spikes_name(enum rm_sim_spikes s)
{
	return spike_names[s];
}

int rm_sim_spikes_parse(const char *name, enum rm_sim_spikes *out)
{
	int i = parse_name(spike_names, RM_SIM_SPIKES_COUNT, name);
	if (i >= 0)
		*out = (enum rm_sim_spikes)i;
	return i < 0 ? -1 : 0;
}

const char *rm_sim_diverge_name(enum rm_sim_diverge d)
{
	return diverge_names[d];
}

int rm_sim_diverge_parse(const char *name, enum rm_sim_diverge *out)
{
	int i = parse_name(diverge_names, RM_SIM_DIVERGE_COUNT, name);
	if (i >= 0)
		*out = (enum rm_sim_diverge)i;
	return i < 0 ? -1 : 0;
}

const char *rm_sim_rank_mode_name(enum rm_sim_rank_mode m)
{
	return mode_names[m];
}

int rm_sim_rank_mode_parse(const char *name, enum rm_sim_rank_mode *out)
{
	int i = parse_name(mode_names, RM_SIM_RANK_MODES, name);
	if (i >= 0)
		*out = (enum rm_sim_rank_mode)i;
	return i < 0 ? -1 : 0;
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
	o->reset_bucket = -1;
}

int rm_sim_slots(const struct rm_sim_opts *o)
{
	return (o->ranks > 1 ? o->ranks : 1) * (o->micro > 1 ? o->micro : 1);
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
	st->bucket = rm_sim_bucket_of(g, hi);
	return lev / sum; /* token-weighted: the loss is a mean over tokens */
}

/* Share of batches from each bucket when batches are bucketed: length
 * share over sequences per batch. */
static void bucket_shares(struct gen *g, const struct rm_sim_opts *o, double *q)
{
	double cnt[SIM_MAX_K] = {0}, tot = 0;
	for (int i = 0; i < 20000; i++)
		cnt[rm_sim_bucket_of(g, rm_sim_draw_len(g))]++;
	for (int b = 0; b < g->k; b++) {
		double per = fmax(1, floor((double)o->tokens_per_batch / (double)g->b[b + 1]));
		q[b] = cnt[b] / per;
		tot += q[b];
	}
	for (int b = 0; b < g->k; b++)
		q[b] /= tot;
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
			double v = rm_sim_draw_len(g);
			sr->data[sr->n++] = (int64_t)v;
			have +=
			    1 / fmax(1, floor((double)o->tokens_per_batch / (double)g->b[rm_sim_bucket_of(g, v) + 1]));
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

static void stride_end(struct stride_run *sr, int slots)
{
	for (int r = 0; sr->ep && r < slots; r++)
		rm_stride_epoch_free(&sr->ep[r]);
	free(sr->ep);
	free(sr->data);
}

/* The batch's lengths as a trainer records them (whole tokens), into the
 * step's buffer. */
static void record_lens(struct rm_sim_step *st, const double *len, int n, uint8_t *buf)
{
	int64_t v[4096];
	for (int i = 0; i < n; i++)
		v[i] = (int64_t)len[i]; /* as compose() takes min_len and max_len */
	st->lens_bytes = (uint32_t)rm_lens_encode(v, (size_t)n, buf);
	st->lens = buf;
}

enum { MEGA = 50, MEGA_PER = 16 }; /* HF megabatches: 50 batches of 16, sorted longest first */

/* A reset under way: the loss times 1 + (height - 1) * decay(step - t0). */
struct reset {
	int64_t t0, len;
	double height;
	int linear; /* else exponential, to 5% of the jump after len steps */
};

struct rm_sim {
	struct rm_sim_opts o;
	struct gen g;
	double q[SIM_MAX_K];
	int S, M, bucketed;
	struct slot_orders so;
	int *slot_bucket;
	struct stride_run sr;
	double pool[MEGA * MEGA_PER];
	int64_t batch_i; /* batches drawn (megabatch position) */
	double len[4096];
	struct rm_sim_step *st; /* S entries */
	uint8_t *lens_buf;      /* S x 5 x 4096 bytes with o.lens */
	struct rm_rng noise;    /* the loss's noise and its events */
	int64_t t;              /* the next step */
	double runtime;
	struct reset reset;
	size_t truth_cap;
	struct rm_sim_truth truth;
};

struct rm_sim *rm_sim_open(const struct rm_sim_opts *o0)
{
	struct rm_sim *s = rm_xcalloc(1, sizeof(*s));
	struct rm_sim_opts *o = &s->o;
	*o = *o0;
	struct gen *g = &s->g;
	g->rng.s = o->seed * 0x9E3779B97F4A7C15ull + 1;
	g->b = o->bounds && o->nbounds >= 2 ? o->bounds : default_bounds;
	g->nb = o->bounds && o->nbounds >= 2 ? o->nbounds : 7;
	g->k = g->nb - 1 < SIM_MAX_K ? g->nb - 1 : SIM_MAX_K;
	g->maxlen = (double)g->b[g->nb - 1];
	if (o->lengths && o->lengths->n) {
		g->d = o->lengths;
		g->cum = rm_xmalloc(g->d->n * sizeof(int64_t));
		for (size_t i = 0; i < g->d->n; i++)
			g->cum[i] = g->d->count[i] + (i ? g->cum[i - 1] : 0);
	}
	rm_sim_gen_init(g);
	if (o->steps_per_epoch <= 0)
		o->steps_per_epoch = o->steps / 3 > 0 ? o->steps / 3 : 1;
	if (o->log_every < 1)
		o->log_every = 1;
	if (o->reset_bucket < 0 || o->reset_bucket >= g->k)
		o->reset_bucket = g->k - 1;
	if (o->diverge && o->diverge_at <= 0)
		o->diverge_at = o->steps - o->steps / 20;
	s->S = rm_sim_slots(o);
	s->M = o->micro > 1 ? o->micro : 1;
	s->st = rm_xcalloc((size_t)s->S, sizeof(*s->st));
	s->slot_bucket = rm_xcalloc((size_t)s->S, sizeof(int));
	if (o->lens)
		s->lens_buf = rm_xmalloc((size_t)s->S * 5 * 4096);
	s->noise.s = o->seed * 0xBF58476D1CE4E5B9ull + 3;
	s->reset.t0 = -1;
	bucket_shares(g, o, s->q);
	s->bucketed = o->strategy != RM_SIM_MIXED && o->strategy != RM_SIM_HF_MEGABATCH && o->strategy != RM_SIM_STRIDE;
	if (s->bucketed)
		rm_sim_slots_init(&s->so, o, s->q, g->k, o->seed);
	if (o->strategy == RM_SIM_STRIDE)
		stride_begin(&s->sr, g, o);
	s->truth.reset_bucket = o->spikes == RM_SIM_SPIKES_BUCKET ? o->reset_bucket : -1;
	s->truth.diverge_step = o->diverge ? o->diverge_at : -1;
	s->truth.steps_per_epoch = o->steps_per_epoch;
	return s;
}

/* Slot j's lengths at step t into s->len; their count. */
static int batch_lengths(struct rm_sim *s, int64_t t, int j)
{
	struct gen *g = &s->g;
	const struct rm_sim_opts *o = &s->o;
	int cnt;
	if (j > 0 && !s->bucketed && o->rank_mode == RM_SIM_LOCKSTEP)
		return s->st[j - 1].n; /* the step's lengths again */
	if (s->bucketed) {
		int b = s->slot_bucket[j];
		cnt = (int)fmax(1, floor((double)o->tokens_per_batch / (double)g->b[b + 1]));
		if (cnt > 4096)
			cnt = 4096;
		for (int x = 0; x < cnt; x++)
			s->len[x] = rm_sim_draw_len_in(g, b);
		return cnt;
	}
	if (o->strategy == RM_SIM_STRIDE)
		return stride_lengths(&s->sr, g, o, t, j, s->len);
	if (o->strategy == RM_SIM_MIXED) {
		/* Random lengths until the padded batch would pass the budget. */
		double hi = 0;
		cnt = 0;
		for (;;) {
			double v = rm_sim_draw_len(g);
			if (cnt > 0 && (cnt + 1) * fmax(hi, v) > (double)o->tokens_per_batch)
				break;
			s->len[cnt++] = v;
			hi = fmax(hi, v);
			if (cnt == 4096)
				break;
		}
		return cnt;
	}
	int slot = (int)(s->batch_i % MEGA);
	if (slot == 0) {
		for (int x = 0; x < MEGA * MEGA_PER; x++)
			s->pool[x] = rm_sim_draw_len(g);
		for (int x = 1; x < MEGA * MEGA_PER; x++) { /* descending insertion sort, 800 entries */
			double v = s->pool[x];
			int y = x;
			while (y > 0 && s->pool[y - 1] < v) {
				s->pool[y] = s->pool[y - 1];
				y--;
			}
			s->pool[y] = v;
		}
	}
	memcpy(s->len, s->pool + slot * MEGA_PER, MEGA_PER * sizeof(double));
	return MEGA_PER;
}

/* The bucket most of the step's batches hold (ties: the first slot's). */
static int dominant(const struct rm_sim *s)
{
	int count[SIM_MAX_K] = {0}, best = s->st[0].bucket;
	for (int j = 0; j < s->S; j++)
		if (++count[s->st[j].bucket] > count[best])
			best = s->st[j].bucket;
	return best;
}

static void onset(struct rm_sim *s, int64_t t, enum rm_sim_spikes cause)
{
	struct reset *r = &s->reset;
	r->t0 = t;
	r->len = s->o.reset_steps > 0 ? s->o.reset_steps : 5 + (int64_t)rm_rng_below(&s->noise, 26);
	r->height = s->o.reset_height > 0 ? s->o.reset_height : 2 + rm_rng_uniform(&s->noise);
	r->linear = rm_rng_uniform(&s->noise) < 0.5;
	if (s->truth.nresets == s->truth_cap) {
		s->truth_cap = s->truth_cap ? 2 * s->truth_cap : 64;
		s->truth.reset = rm_xrealloc(s->truth.reset, s->truth_cap * sizeof(*s->truth.reset));
	}
	s->truth.reset[s->truth.nresets++] = (struct rm_sim_onset){t, dominant(s), cause};
}

/* Starts the resets due at step t; returns the loss factor of the one under way. */
static double resets(struct rm_sim *s, int64_t t, int64_t warm)
{
	const struct rm_sim_opts *o = &s->o;
	struct reset *r = &s->reset;
	int idle = r->t0 < 0 || t >= r->t0 + r->len;
	switch (o->spikes) {
	case RM_SIM_SPIKES_CHECKPOINT:
		if (o->save_every > 0 && t > 1 && t % o->save_every == 1)
			onset(s, t, o->spikes);
		break;
	case RM_SIM_SPIKES_EPOCH:
		if (t > 0 && t % o->steps_per_epoch == 0)
			onset(s, t, o->spikes);
		break;
	case RM_SIM_SPIKES_BUCKET: /* one reset every 100 steps of the bucket, about */
		if (rm_rng_uniform(&s->noise) < 1.0 / (double)(o->reset_every > 0 ? o->reset_every : 100) && idle &&
		    dominant(s) == o->reset_bucket)
			onset(s, t, o->spikes);
		break;
	case RM_SIM_SPIKES_RANDOM:
		if (rm_rng_uniform(&s->noise) < 1.0 / (double)(o->reset_every > 0 ? o->reset_every : 400) && idle)
			onset(s, t, o->spikes);
		break;
	default: break;
	}
	if (o->lr_restarts > 0 && t > warm && (t - warm) % o->lr_restarts == 0)
		onset(s, t, RM_SIM_SPIKES_NONE);
	if (r->t0 < 0 || t >= r->t0 + r->len + 4 * r->len)
		return 1;
	double d = (double)(t - r->t0),
	       decay = r->linear ? fmax(0, 1 - d / (double)r->len) : exp(-3 * d / (double)r->len);
	return 1 + (r->height - 1) * decay;
}

const struct rm_sim_step *rm_sim_next(struct rm_sim *s)
{
	const struct rm_sim_opts *o = &s->o;
	int64_t t = s->t, n = o->steps;
	if (t >= n)
		return NULL;
	s->t++;
	if (s->bucketed)
		rm_sim_slots_next(&s->so, s->slot_bucket);
	double level = 0, work = 0;
	for (int j = 0; j < s->S; j++) {
		struct rm_sim_step *st = &s->st[j];
		int cnt = batch_lengths(s, t, j);
		s->batch_i++;
		level += compose(st, s->len, cnt, &s->g) / s->S; /* the step's loss: the mean over its batches */
		st->lens = NULL;
		st->lens_bytes = 0;
		if (o->lens)
			record_lens(st, s->len, cnt, s->lens_buf + (size_t)j * 5 * 4096);
		st->step = t;
		st->rank = j / s->M;
		st->micro = j % s->M;
		work += (double)(st->tokens + st->padded);
	}
	double epoch = (double)t / (double)o->steps_per_epoch;
	double trend = (1 + 1.2 * exp(-(double)t / fmax(1, (double)n / 4))) * pow(0.92, floor(epoch));
	double loss = level * trend * (1 + 0.05 * rm_rng_normal(&s->noise));
	double warm = fmax(1, (double)n / 50);
	loss *= resets(s, t, (int64_t)warm);
	if (o->diverge && t >= o->diverge_at) {
		if (o->diverge == RM_SIM_DIVERGE_NAN)
			loss = NAN;
		else if (o->diverge == RM_SIM_DIVERGE_INF)
			loss = INFINITY;
		else
			loss *= pow(10, fmin(250, (double)(t - o->diverge_at) / 20));
	}
	double lr;
	if ((double)t < warm)
		lr = 3e-4 * ((double)t + 1) / warm;
	else if (o->lr_restarts > 0) /* cosine annealing with warm restarts (Loshchilov and Hutter, 2017) */
		lr = 3e-4 * 0.5 *
		     (1 + cos(M_PI * (double)(((int64_t)t - (int64_t)warm) % o->lr_restarts) / (double)o->lr_restarts));
	else
		lr = 3e-4 * 0.5 * (1 + cos(M_PI * ((double)t - warm) / fmax(1, (double)n - warm)));
	s->runtime += work / (s->S / s->M) / 30000.0; /* ranks work in parallel */
	for (int j = 0; j < s->S; j++) {
		s->st[j].loss = loss;
		s->st[j].lr = lr;
		s->st[j].epoch = epoch;
		s->st[j].runtime = s->runtime;
	}
	return s->st;
}

const struct rm_sim_truth *rm_sim_truth(const struct rm_sim *s)
{
	return &s->truth;
}

void rm_sim_close(struct rm_sim *s)
{
	if (!s)
		return;
	if (s->bucketed)
		rm_sim_slots_release(&s->so);
	stride_end(&s->sr, s->S);
	rm_sim_gen_release(&s->g);
	free(s->st);
	free(s->slot_bucket);
	free(s->lens_buf);
	rm_sim_truth_release(&s->truth);
	free(s);
}

void rm_sim_truth_release(struct rm_sim_truth *t)
{
	free(t->reset);
	t->reset = NULL;
	t->nresets = 0;
}

void rm_simulate_truth(const struct rm_sim_opts *o, struct rm_sim_step **out, struct rm_sim_truth *truth)
{
	struct rm_sim *s = rm_sim_open(o);
	size_t S = (size_t)s->S, N = (size_t)o->steps * S;
	struct rm_sim_step *all = rm_xcalloc(N ? N : 1, sizeof(*all));
	const struct rm_sim_step *st;
	for (size_t i = 0; (st = rm_sim_next(s)); i += S)
		for (size_t j = 0; j < S; j++) {
			all[i + j] = st[j];
			if (st[j].lens) {
				all[i + j].lens = rm_xmalloc(st[j].lens_bytes);
				memcpy(all[i + j].lens, st[j].lens, st[j].lens_bytes);
			}
		}
	if (truth) {
		*truth = s->truth;
		s->truth.reset = NULL;
	}
	rm_sim_close(s);
	*out = all;
}

void rm_simulate(const struct rm_sim_opts *o, struct rm_sim_step **out)
{
	rm_simulate_truth(o, out, NULL);
}

void rm_sim_steps_free(struct rm_sim_step *st, size_t n)
{
	for (size_t i = 0; st && i < n; i++)
		free(st[i].lens);
	free(st);
}

static int streak_order(const struct rm_sim_opts *o)
{
	return o->strategy == RM_SIM_SORTED || o->strategy == RM_SIM_CHUNKED || o->strategy == RM_SIM_HF_MEGABATCH;
}

int rm_sim_onset_composition(const struct rm_sim_opts *o)
{
	int S = rm_sim_slots(o);
	if (streak_order(o) && o->strategy != RM_SIM_HF_MEGABATCH)
		return S == 1 || o->rank_mode != RM_SIM_INDEPENDENT;
	return S * (o->log_every > 1 ? o->log_every : 1) == 1;
}

int rm_sim_loss_alone_shows_resets(const struct rm_sim_opts *o)
{
	int per_point = rm_sim_slots(o) * (o->log_every > 1 ? o->log_every : 1);
	/* Where the loss has levels, a reset of a lower one looks like a batch
	 * of a higher one: only a mixture that hardly changes shows them all. */
	if (o->strategy == RM_SIM_INTERLEAVED || o->strategy == RM_SIM_STRIDE)
		return per_point >= 8;
	return o->strategy == RM_SIM_MIXED;
}

int rm_sim_causes(const struct rm_sim_opts *o, enum rm_hypothesis *req, unsigned *allowed)
{
	int n = 0, S = rm_sim_slots(o);
	unsigned ok = 0;
	int streaks = streak_order(o);
	/* An event's resets: required where they can be seen (and, for a
	 * bucket's, told apart by bucket), else allowed either way. */
	int seen = !o->loss_only || rm_sim_loss_alone_shows_resets(o);
	enum rm_hypothesis ev[3];
	int nev = 0;
	/* One bucket a batch in random order braids the loss: from the loss
	 * alone, suspected; with the order recorded, healthy. */
	int braid = o->strategy == RM_SIM_BUCKETED_RANDOM;
	/* From the loss alone a level shows only where a logged point holds one
	 * bucket: streaks dealt to ranks in turn or in lockstep, or a braid of
	 * single batches logged every step. Ranks with orders of their own
	 * average the levels away, as does a logging interval over a braid; a
	 * sorted epoch visits each level once; a megabatch's lengths ramp down
	 * in each (a saw-tooth, not levels). */
	int one_rank = S == 1 || o->rank_mode == RM_SIM_LOCKSTEP;
	int shows = (streaks && o->strategy != RM_SIM_SORTED && o->strategy != RM_SIM_HF_MEGABATCH &&
	             o->rank_mode != RM_SIM_INDEPENDENT) ||
	            (braid && one_rank && o->log_every <= 1);
	if (o->loss_only ? shows : streaks)
		req[n++] = RM_H_HOMOGENEOUS;
	else if (streaks || braid)
		ok |= 1u << RM_H_HOMOGENEOUS;
	switch (o->spikes) {
	case RM_SIM_SPIKES_BUCKET:
		if (o->loss_only || !rm_sim_onset_composition(o)) /* resets no cause explains, or a bucket's */
			ok |= 1u << RM_H_INSTABILITY | 1u << RM_H_BUCKET_RESETS;
		else if (!streaks)
			ev[nev++] = RM_H_BUCKET_RESETS;
		if (streaks) /* the buckets come in streaks: a period of the order may carry them */
			ok |= 1u << RM_H_PERIODIC;
		break;
	case RM_SIM_SPIKES_CHECKPOINT:
		ev[nev++] = RM_H_CHECKPOINT;
		ok |= 1u << RM_H_PERIODIC;
		break;
	case RM_SIM_SPIKES_EPOCH:
		ev[nev++] = RM_H_EPOCH;
		ok |= 1u << RM_H_PERIODIC | 1u << RM_H_FIXED_ORDER;
		break;
	case RM_SIM_SPIKES_RANDOM: ev[nev++] = RM_H_INSTABILITY; break;
	default: break;
	}
	if (o->lr_restarts > 0) {
		ev[nev++] = RM_H_LR;
		ok |= 1u << RM_H_PERIODIC;
	}
	for (int i = 0; i < nev; i++)
		if (seen)
			req[n++] = ev[i];
		else
			ok |= 1u << ev[i];
	if (o->diverge)
		req[n++] = RM_H_DIVERGENCE;
	for (int i = 0; i < n; i++)
		ok |= 1u << req[i];
	if (allowed)
		*allowed = ok;
	return n;
}
