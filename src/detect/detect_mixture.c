/*
 * detect_mixture.c - composition as a mixture, when a step holds several
 * batches (data-parallel ranks, gradient-accumulation micro-batches).
 *
 * The loss a trainer logs at a step averages its batches, so what matters
 * is the step's mixture of buckets: its share vector c_t / m_t (c_t[b]
 * batches of bucket b among the step's m_t) against the run's proportions
 * P. Three questions tell the shapes apart:
 *
 * - Concordance: do the ranks of a step draw one bucket together? The
 *   share of steps whose ranks' first batches all hold one bucket, against
 *   sum_b P_b^r for r ranks drawing independently; z from the binomial
 *   variance sum pi(1 - pi) over steps.
 * - Per-rank runs: the runs test (detect_runs.c) on each rank's sequence.
 * - Drift: over windows of w steps, the chi-square of the window's counts
 *   O_b against m_win P_b. Under a random order of the same steps, the
 *   window sum of c_t[b] has variance w s_b^2 (T - w) / (T - 1) (sampling
 *   w of T steps without replacement; s_b^2 the variance of c_t[b] over
 *   steps), so E[chi2] = sum_b s_b^2 (T - w) / (T - 1) / (mbar P_b). The
 *   ratio of the windows' mean chi-square to that is 1 in a random order
 *   of the steps, whatever the steps hold (lockstep steps included): only
 *   order raises it. Its z uses the spread of the windows' ratios. This is
 *   the variance-ratio idea (Lo & MacKinlay 1988) on bucket counts.
 *   Persistence is the lag where the autocorrelation of the centred share
 *   vector, sum_t <d_t, d_t+h> / sum_t |d_t|^2, falls below 1/e.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

/* The steps' bucket counts (T x k) and batch counts. */
struct steps {
	size_t T;
	int k;
	float *c;  /* c[t * k + b] */
	float *m;  /* batches of step t */
	double *P; /* the run's proportions */
	double mbar;
};

static void count_steps(const struct rm_prepared *p, struct steps *st)
{
	size_t T = 0;
	for (size_t t = 0; t < p->nb; t++)
		T += t == 0 || p->bstep[t] != p->bstep[t - 1];
	st->T = T;
	st->k = p->k;
	st->c = rm_xcalloc((T ? T : 1) * (size_t)p->k, sizeof(float));
	st->m = rm_xcalloc(T ? T : 1, sizeof(float));
	st->P = rm_xcalloc((size_t)p->k, sizeof(double));
	size_t i = 0;
	for (size_t t = 0; t < p->nb; t++) {
		if (t > 0 && p->bstep[t] != p->bstep[t - 1])
			i++;
		st->c[i * (size_t)p->k + (size_t)p->bseq[t]] += 1;
		st->m[i] += 1;
		st->P[p->bseq[t]] += 1;
	}
	for (int b = 0; b < p->k; b++)
		st->P[b] /= (double)(p->nb ? p->nb : 1);
	st->mbar = (double)p->nb / (double)(T ? T : 1);
}

/* Ranks' first batches of each step: all one bucket, against chance. */
static void concordance(const struct rm_prepared *p, const struct steps *st, struct rm_mixture_result *r)
{
	double obs = 0, expect = 0, var = 0;
	size_t tested = 0, multi = 0;
	for (size_t t = 0; t < p->nb;) {
		size_t e = t;
		int ranks = 0, same = 1, first = p->bseq[t], prev_rank = -1;
		for (; e < p->nb && p->bstep[e] == p->bstep[t]; e++)
			if (p->brank[e] != prev_rank) { /* a rank's first batch of the step */
				prev_rank = p->brank[e];
				ranks++;
				same &= p->bseq[e] == first;
			}
		t = e;
		if (ranks < 2)
			continue;
		multi++;
		double pi = 0;
		for (int b = 0; b < st->k; b++)
			pi += pow(st->P[b], ranks);
		obs += same;
		expect += pi;
		var += pi * (1 - pi);
		tested++;
	}
	r->multi_rank = (double)multi / (double)(st->T ? st->T : 1);
	if (tested < 50)
		return;
	r->concordance = obs / (double)tested;
	r->concordance_expected = expect / (double)tested;
	r->concordance_z = var > 0 ? (obs - expect) / sqrt(var) : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The runs test on each rank, from its slots' totals (rm_detect_runs_ranked). */
static void rank_runs(const struct rm_prepared *p, const struct rank_total *per_rank, const struct rm_detect_opts *o,
                      struct rm_mixture_result *r)
{
	int R = p->nranks;
	double *z = rm_xmalloc((size_t)R * sizeof(double));
	int nz = 0;
	for (int q = 0; q < R; q++) {
		const struct rank_total *t = &per_rank[q];
		if (t->n < 20 || !(t->var > 0))
			continue;
		z[nz] = (t->runs - t->expected) / sqrt(t->var);
		r->ranks_flagged += z[nz] <= o->runs_z;
		nz++;
	}
	r->ranks_tested = nz;
	if (nz) {
		qsort(z, (size_t)nz, sizeof(double), cmp_double);
		r->rank_z_min = z[0];
		r->rank_z_max = z[nz - 1];
		r->rank_z_median = nz % 2 ? z[nz / 2] : (z[nz / 2 - 1] + z[nz / 2]) / 2;
	}
	free(z);
}

static void windows(const struct steps *st, struct rm_mixture_result *r)
{
	size_t T = st->T, k = (size_t)st->k;
	double s2[RM_MAX_BUCKETS] = {0};
	for (size_t b = 0; b < k; b++) {
		double mean = 0, ss = 0;
		for (size_t t = 0; t < T; t++)
			mean += st->c[t * k + b];
		mean /= (double)T;
		for (size_t t = 0; t < T; t++) {
			double d = st->c[t * k + b] - mean;
			ss += d * d;
		}
		s2[b] = ss / (double)T;
	}
	static const int64_t sizes[RM_MIX_WINDOWS] = {4, 16, 64, 256, 1024, 4096};
	double *ratio = rm_xmalloc((T / 4 + 1) * sizeof(double));
	r->worst = -1;
	for (int wi = 0; wi < RM_MIX_WINDOWS; wi++) {
		size_t w = (size_t)sizes[wi], J = T / w;
		if (J < 16)
			break;
		double fpc = (double)(T - w) / (double)(T - 1), expect = 0, tv_rand = 0;
		for (size_t b = 0; b < k; b++)
			if (st->P[b] > 0) {
				expect += s2[b] * fpc / (st->mbar * st->P[b]);
				/* E|N(0, v)| = sqrt(2v/pi), v the variance of the window's share */
				tv_rand += 0.5 * sqrt(2 * s2[b] * fpc / (double)w / M_PI) / st->mbar;
			}
		if (!(expect > 0))
			continue;
		double sum = 0, sq = 0, tv = 0;
		for (size_t j = 0; j < J; j++) {
			double O[RM_MAX_BUCKETS] = {0}, mw = 0;
			for (size_t t = j * w; t < (j + 1) * w; t++) {
				for (size_t b = 0; b < k; b++)
					O[b] += st->c[t * k + b];
				mw += st->m[t];
			}
			double x2 = 0, d = 0;
			for (size_t b = 0; b < k; b++)
				if (st->P[b] > 0) {
					double e = mw * st->P[b];
					x2 += (O[b] - e) * (O[b] - e) / e;
					d += fabs(O[b] / mw - st->P[b]);
				}
			ratio[j] = x2 / expect;
			sum += ratio[j];
			tv += 0.5 * d;
		}
		double mean = sum / (double)J;
		for (size_t j = 0; j < J; j++)
			sq += (ratio[j] - mean) * (ratio[j] - mean);
		double sd = sqrt(sq / (double)(J - 1));
		int i = r->windows++;
		r->window[i] = (int64_t)w;
		r->ratio[i] = mean;
		r->ratio_z[i] = sd > 0 ? (mean - 1) / (sd / sqrt((double)J)) : 0;
		r->tv[i] = tv / (double)J;
		r->tv_random[i] = tv_rand;
		int sig = r->ratio[i] >= 1.5 && r->ratio_z[i] >= 4;
		/* the worst: the window whose shares stray furthest beyond random, among those beyond chance */
		if (r->worst < 0 ||
		    (sig && (!r->drifts || r->tv[i] - r->tv_random[i] > r->tv[r->worst] - r->tv_random[r->worst])))
			r->worst = i;
		r->drifts |= sig;
	}
	free(ratio);
}

/* The autocorrelation of the centred share vectors d (T x k) at lag h. */
static double share_acf(const float *d, size_t T, size_t k, size_t h, double ss)
{
	double num = 0;
	for (size_t i = 0; i + h * k < T * k; i++)
		num += (double)d[i] * d[i + h * k];
	return num / ss;
}

/* Turns st->c into the centred share vectors (the windows are done with
 * the counts by then: no second T x k array) and finds their persistence. */
static void persistence(struct steps *st, struct rm_mixture_result *r)
{
	size_t k = (size_t)st->k, T = st->T;
	float *d = st->c;
	double ss = 0;
	for (size_t t = 0; t < T; t++)
		for (size_t b = 0; b < k; b++) {
			d[t * k + b] = (float)(d[t * k + b] / st->m[t] - st->P[b]);
			ss += (double)d[t * k + b] * d[t * k + b];
		}
	if (ss > 0) {
		size_t lag = 1; /* lags growing by half, as for the length's correlation time */
		while (lag < T / 2 && share_acf(d, T, k, lag, ss) >= exp(-1))
			lag = lag < 4 ? lag + 1 : lag + lag / 2;
		r->persistence = (double)lag;
	}
}

void rm_detect_mixture(const struct rm_prepared *p, const struct rank_total *per_rank, const struct rm_detect_opts *o,
                       struct rm_mixture_result *r)
{
	memset(r, 0, sizeof(*r));
	r->worst = -1;
	r->ranks = p->nranks;
	if (!p->multi || p->k < 2)
		return;
	struct steps st;
	count_steps(p, &st);
	r->steps = st.T;
	r->per_step = st.mbar;
	if (st.T >= 200) {
		r->ok = 1;
		if (p->brank) {
			concordance(p, &st, r);
			rank_runs(p, per_rank, o, r);
		}
		windows(&st, r);
		persistence(&st, r);
	}
	free(st.c);
	free(st.m);
	free(st.P);
	if (r->ok)
		rm_mixture_shape(r);
}

void rm_mixture_shape(struct rm_mixture_result *r)
{
	int lockstep = r->ranks > 1 && r->concordance >= 0.5 && r->concordance_z >= 4;
	int streaks = r->ranks_tested >= 2 && 2 * r->ranks_flagged >= r->ranks_tested;
	r->shape = lockstep    ? RM_MIX_LOCKSTEP
	           : streaks   ? RM_MIX_RANK_STREAKS
	           : r->drifts ? RM_MIX_DRIFT
	                       : RM_MIX_RANDOM;
	if (r->shape == RM_MIX_RANK_STREAKS || r->shape == RM_MIX_DRIFT) {
		/* How far and how long: a mixture a few points off its proportions,
		 * or back within a few steps, moves the logged loss little. */
		double far = r->worst >= 0 ? r->tv[r->worst] - r->tv_random[r->worst] : 0;
		r->severity = r->drifts && far >= 0.05 && r->persistence >= 10 ? RM_SEV_WARN
		              : r->drifts || streaks                           ? RM_SEV_INFO
		                                                               : RM_SEV_NONE;
	}
}
