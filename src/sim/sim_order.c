/*
 * sim_order.c - the simulator's sequence lengths and bucket orders.
 *
 * Lengths are log-normal (median 1100 tokens, sigma 0.75), clipped to
 * [16, last boundary], or drawn from a real distribution. Orders are
 * generated one batch at a time, each from a random stream of its own, so
 * a run of any length needs memory for one step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "sim_internal.h"

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

/* The log-normal's length at probability u of its mass within [lo, hi]. */
static double lognormal_at(double lo, double hi, double u)
{
	double plo = rm_norm_cdf((log(lo - 0.5) - log(1100)) / 0.75);
	double phi = rm_norm_cdf((log(hi + 0.5) - log(1100)) / 0.75);
	double v = exp(log(1100) + 0.75 * rm_norm_quantile(plo + (phi - plo) * u));
	return fmin(fmax(v, lo), hi);
}

static void fill_table(double *t, double lo, double hi)
{
	for (int i = 0; i <= SIM_QN; i++)
		t[i] = lognormal_at(lo, hi, (double)i / SIM_QN);
}

void rm_sim_gen_init(struct gen *g)
{
	g->qtab = rm_xmalloc((size_t)(g->k + 1) * (SIM_QN + 1) * sizeof(double));
	for (int b = 0; b < g->k; b++)
		fill_table(g->qtab + (size_t)b * (SIM_QN + 1), fmax((double)g->b[b] + 1, 1), (double)g->b[b + 1]);
	fill_table(g->qtab + (size_t)g->k * (SIM_QN + 1), fmin(16, g->maxlen), g->maxlen);
}

void rm_sim_gen_release(struct gen *g)
{
	free(g->qtab);
	free(g->cum);
	g->qtab = NULL;
	g->cum = NULL;
}

/* A length from table t (range [lo, hi]): the truncated log-normal by its
 * inverse CDF, no rejection loop however narrow the range. */
static double draw_table(struct gen *g, int t, double lo, double hi)
{
	double e = g->d ? draw_empirical(g, lo, hi) : -1;
	if (e >= 0)
		return e;
	const double *q = g->qtab + (size_t)t * (SIM_QN + 1);
	double u = rm_rng_uniform(&g->rng) * SIM_QN, f = floor(u);
	size_t i = (size_t)f;
	return round(q[i] + (q[i + 1] - q[i]) * (u - f));
}

double rm_sim_draw_len(struct gen *g)
{
	if (g->d) /* all of it: lengths past the last boundary go to the last bucket */
		return draw_empirical(g, 1, (double)g->d->len[g->d->n - 1]);
	return draw_table(g, g->k, fmin(16, g->maxlen), g->maxlen);
}

int rm_sim_bucket_of(const struct gen *g, double len)
{
	for (int i = 0; i + 1 < g->nb; i++)
		if (len <= (double)g->b[i + 1])
			return i;
	return g->k - 1;
}

/* A length from bucket b: (lo, hi], at least 1. */
double rm_sim_draw_len_in(struct gen *g, int b)
{
	return draw_table(g, b, fmax((double)g->b[b] + 1, 1), (double)g->b[b + 1]);
}

static int pick(struct order *o)
{
	double u = rm_rng_uniform(&o->rng), c = 0;
	for (int b = 0; b < o->k; b++) {
		c += o->q[b];
		if (u < c)
			return b;
	}
	return o->k - 1;
}

void rm_sim_order_init(struct order *o, enum rm_sim_strategy s, uint64_t seed, const double *q, int k, int64_t epoch,
                       int phased)
{
	memset(o, 0, sizeof(*o));
	o->strategy = s;
	o->rng.s = seed * 0xD1B54A32D192ED03ull + 7;
	o->q = q;
	o->k = k;
	o->epoch = epoch > 0 ? epoch : 1;
	if (!phased)
		return;
	/* A rank with a sampler of its own starts at its own phase. */
	o->pos = (int64_t)rm_rng_below(&o->rng, (uint64_t)o->epoch);
	for (int b = 0; b < k; b++)
		o->credit[b] = rm_rng_uniform(&o->rng);
}

int rm_sim_order_next(struct order *o)
{
	int b;
	switch (o->strategy) {
	case RM_SIM_SORTED: {
		/* Within an epoch, the bucket whose cumulative share covers the
		 * position: short first, long last. */
		double at = (double)(o->pos % o->epoch) / (double)o->epoch, c = 0;
		b = o->k - 1;
		for (int i = 0; i < o->k; i++) {
			c += o->q[i];
			if (at < c) {
				b = i;
				break;
			}
		}
		break;
	}
	case RM_SIM_CHUNKED:
		if (o->left == 0) {
			o->cur = pick(o);
			o->left = 50 + (int)rm_rng_below(&o->rng, 151);
		}
		o->left--;
		b = o->cur;
		break;
	case RM_SIM_INTERLEAVED:
		/* Stride scheduling: each bucket earns its share per batch; the
		 * richest goes next. */
		b = 0;
		for (int i = 0; i < o->k; i++) {
			o->credit[i] += o->q[i];
			if (o->credit[i] > o->credit[b])
				b = i;
		}
		o->credit[b] -= 1;
		break;
	default: b = pick(o);
	}
	o->pos++;
	return b;
}

void rm_sim_slots_init(struct slot_orders *so, const struct rm_sim_opts *o, const double *q, int k, uint64_t seed)
{
	so->R = o->ranks > 1 ? o->ranks : 1;
	so->M = o->micro > 1 ? o->micro : 1;
	so->mode = so->R * so->M == 1 ? RM_SIM_LOCKSTEP : o->rank_mode;
	int64_t epoch = o->steps_per_epoch;
	int n = so->mode == RM_SIM_INDEPENDENT ? so->R : 1;
	so->ord = rm_xcalloc((size_t)n, sizeof(*so->ord));
	if (so->mode == RM_SIM_SHARDED)
		epoch *= so->R * so->M;
	else if (so->mode == RM_SIM_INDEPENDENT)
		epoch *= so->M;
	for (int r = 0; r < n; r++)
		rm_sim_order_init(&so->ord[r], o->strategy, seed + (uint64_t)r * 0x9E3779B97F4A7C15ull, q, k, epoch,
		                  so->mode == RM_SIM_INDEPENDENT);
}

void rm_sim_slots_next(struct slot_orders *so, int *bucket)
{
	int S = so->R * so->M;
	if (so->mode == RM_SIM_LOCKSTEP) {
		int b = rm_sim_order_next(&so->ord[0]);
		for (int j = 0; j < S; j++)
			bucket[j] = b;
	} else if (so->mode == RM_SIM_SHARDED) {
		for (int j = 0; j < S; j++)
			bucket[j] = rm_sim_order_next(&so->ord[0]);
	} else {
		for (int r = 0; r < so->R; r++)
			for (int m = 0; m < so->M; m++)
				bucket[r * so->M + m] = rm_sim_order_next(&so->ord[r]);
	}
}

void rm_sim_slots_release(struct slot_orders *so)
{
	free(so->ord);
	so->ord = NULL;
}
