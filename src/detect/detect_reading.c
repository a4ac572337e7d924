/*
 * detect_reading.c - what a logged loss point is (issue 64.2): one step's
 * loss, or the mean of the steps since the previous point, and whether its
 * stamp is its batch's step or one off (a 1-based print over a 0-based
 * sidecar).
 *
 * A reading is taken from the evidence only when the evidence decides. The
 * starting point is the one given (--loss-is), else the convention the loss
 * key says (Lightning's "<name>_step" metrics are one step's value), else
 * the mean. Each reading's composition is fitted (the split's R^2); when
 * another fits better, an encompassing test (Davidson and MacKinnon's:
 * both readings' bucket shares in one regression of the detrended loss)
 * asks whether its shares explain what the starting point's cannot, and
 * whether the starting point's add nothing beyond it. Only then does it
 * win. In a chunked order a point's neighbours share its bucket and the
 * readings cannot be told apart; with evenly mixed intervals the mean's
 * shares hardly vary. Either way the test is inconclusive and the starting
 * point stays, said as such.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/common.h"
#include "runmon/stats.h"

/* The challenger's fit and its gain must pass this level: a switch on
 * noise would join every point wrongly. */
#define READING_SWITCH_P 1e-3

int rm_loss_key_reading(const char *key)
{
	if (!key)
		return RM_READ_AUTO;
	size_t n = strlen(key);
	/* Lightning's self.log(..., on_step=True, on_epoch=True) names the
	 * step's value "<name>_step" (and the epoch's mean "<name>_epoch"). */
	if (n > 5 && (!strcmp(key + n - 5, "_step") || !strcmp(key + n - 5, "/step")))
		return RM_READ_STEP;
	return RM_READ_AUTO;
}

/* Residual sum of squares of y on an intercept and the given columns of X
 * (n rows of w columns, row-major), the columns centred first. */
static double rss(const double *X, size_t n, int w, const int *cols, int ncols, const double *y)
{
	int m = ncols + 1;
	double A[(2 * RM_MAX_BUCKETS + 1) * (2 * RM_MAX_BUCKETS + 1)] = {0}, b[2 * RM_MAX_BUCKETS + 1] = {0};
	double x[2 * RM_MAX_BUCKETS + 1], mean[2 * RM_MAX_BUCKETS + 1] = {0}, row[2 * RM_MAX_BUCKETS + 1];
	for (size_t i = 0; i < n; i++)
		for (int c = 0; c < ncols; c++)
			mean[c] += X[i * (size_t)w + (size_t)cols[c]] / (double)n;
	for (size_t i = 0; i < n; i++) {
		row[0] = 1;
		for (int c = 0; c < ncols; c++)
			row[c + 1] = X[i * (size_t)w + (size_t)cols[c]] - mean[c];
		for (int a = 0; a < m; a++) {
			b[a] += row[a] * y[i];
			for (int c = 0; c < m; c++)
				A[a * m + c] += row[a] * row[c];
		}
	}
	rm_solve(A, b, m, x);
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		double f = x[0];
		for (int c = 0; c < ncols; c++)
			f += x[c + 1] * (X[i * (size_t)w + (size_t)cols[c]] - mean[c]);
		s += (y[i] - f) * (y[i] - f);
	}
	return s;
}

/* The encompassing test of reading a (the better fit) against d (the
 * starting point) on d's detrended loss: p_gain, that a's shares add
 * nothing beyond d's; p_back, that d's add nothing beyond a's. Returns 0
 * when it could not be run. */
static int encompass(const struct rm_prepared *pa, const struct rm_prepared *pd, const struct rm_split_result *spd,
                     double *p_gain, double *p_back)
{
	int k = pd->k;
	if (pa->n != pd->n || pa->k != k || k < 2 || !spd->trend)
		return 0;
	int q = k - 1; /* shares sum to one: the first bucket is the baseline */
	int w = 2 * q;
	double *X = rm_xmalloc(pd->n * (size_t)w * sizeof(double));
	double *y = rm_xmalloc(pd->n * sizeof(double));
	size_t n = 0;
	for (size_t j = 0; j < pd->n; j++) {
		if (rm_pt_to(pa, j) == rm_pt_from(pa, j) || rm_pt_to(pd, j) == rm_pt_from(pd, j))
			continue;
		if (!(spd->trend[j] > 0) && spd->log_scale)
			continue;
		y[n] = spd->log_scale ? log(pd->y[j] / spd->trend[j]) : pd->y[j] - spd->trend[j];
		if (!isfinite(y[n]))
			continue;
		for (int b = 1; b < k; b++) {
			X[n * (size_t)w + (size_t)(b - 1)] = rm_prepared_share(pa, j, b);
			X[n * (size_t)w + (size_t)(q + b - 1)] = rm_prepared_share(pd, j, b);
		}
		n++;
	}
	int ok = n > (size_t)(w + 10);
	if (ok) {
		int all[2 * RM_MAX_BUCKETS], ca[RM_MAX_BUCKETS], cd[RM_MAX_BUCKETS];
		for (int c = 0; c < q; c++) {
			ca[c] = all[c] = c;
			cd[c] = all[q + c] = q + c;
		}
		double full = rss(X, n, w, all, w, y), only_a = rss(X, n, w, ca, q, y), only_d = rss(X, n, w, cd, q, y);
		double df = (double)n - (double)w - 1, sigma2 = full / df;
		*p_gain = sigma2 > 0 ? rm_f_sf(fmax(only_d - full, 0) / q / sigma2, q, df) : 1;
		*p_back = sigma2 > 0 ? rm_f_sf(fmax(only_a - full, 0) / q / sigma2, q, df) : 1;
	}
	free(X);
	free(y);
	return ok;
}

static const struct {
	int reading, shift;
} cand[RM_READINGS] = {{RM_READ_MEAN, 0}, {RM_READ_STEP, 0}, {RM_READ_STEP, -1}, {RM_READ_STEP, 1}};

static void fit_one(const struct rm_series *s, int i, struct rm_prepared *p, struct rm_split_result *sp)
{
	struct rm_series t = *s;
	t.reading = cand[i].reading;
	t.stamp_shift = cand[i].shift;
	rm_prepare(&t, p);
	rm_detect_split(p, sp);
}

static void release_one(struct rm_prepared *p, struct rm_split_result *sp)
{
	free(sp->trend);
	free(sp->adjusted);
	rm_prepared_release(p);
}

void rm_choose_reading(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_series *out,
                       struct rm_reading_fit *rf)
{
	memset(rf, 0, sizeof(*rf));
	for (int i = 0; i < RM_READINGS; i++)
		rf->r2[i] = rf->p_fit[i] = NAN;
	rf->p_gain = rf->p_back = NAN;
	rf->challenger = -1;
	*out = *s;
	int64_t span = s->n > 1 ? s->step[s->n - 1] - s->step[0] : 0;
	rf->steps_per_point = s->n > 1 ? (double)span / (double)(s->n - 1) : 1;
	/* Sparse: points fewer than the steps batches were recorded at (one
	 * batch row a point, as a fairseq or Marian line's own counts give,
	 * meets its point however it is read). */
	size_t bsteps = 0;
	for (size_t t = 0; t < s->nb; t++)
		bsteps += t == 0 || s->bstep[t] != s->bstep[t - 1];
	rf->sparse = s->nb > 0 && rf->steps_per_point > 1.5 && (double)bsteps > 1.5 * (double)s->n;
	rf->given = o->reading != RM_READ_AUTO;
	rf->convention = s->reading_hint;
	int start = o->reading != RM_READ_AUTO        ? o->reading
	            : s->reading_hint != RM_READ_AUTO ? s->reading_hint
	                                              : RM_READ_MEAN;
	rf->best = rf->start = start == RM_READ_STEP ? 1 : 0;
	rf->reading = out->reading = start;
	out->stamp_shift = 0;
	rf->basis = rf->given ? RM_BASIS_GIVEN : !rf->sparse ? RM_BASIS_DENSE : RM_BASIS_ASSUMED;
	if (rf->given || !rf->sparse)
		return;
	int best = -1;
	for (int i = 0; i < RM_READINGS; i++) {
		struct rm_prepared p;
		struct rm_split_result sp;
		fit_one(s, i, &p, &sp);
		rf->r2[i] = sp.ok ? sp.eta2 : NAN;
		rf->p_fit[i] = sp.ok ? sp.p : NAN;
		release_one(&p, &sp);
		if (isfinite(rf->r2[i]) && (best < 0 || rf->r2[i] > rf->r2[best]))
			best = i;
	}
	if (best < 0)
		return; /* nothing to fit (too few points, one bucket) */
	if (rf->convention != RM_READ_AUTO)
		rf->basis = RM_BASIS_CONVENTION;
	if (best == rf->start) {
		rf->basis = RM_BASIS_AGREES;
		return;
	}
	struct rm_prepared pa, pd;
	struct rm_split_result sa, sd;
	fit_one(s, best, &pa, &sa);
	fit_one(s, rf->start, &pd, &sd);
	int tested = sd.ok && encompass(&pa, &pd, &sd, &rf->p_gain, &rf->p_back);
	release_one(&pa, &sa);
	release_one(&pd, &sd);
	rf->challenger = best;
	double start_r2 = isfinite(rf->r2[rf->start]) ? fmax(rf->r2[rf->start], 0) : 0;
	if (!tested || !(rf->p_fit[best] < READING_SWITCH_P && rf->r2[best] >= 2 * start_r2 + 0.01 &&
	                 rf->p_gain < READING_SWITCH_P))
		return; /* the evidence does not decide: the starting point stays */
	rf->basis = RM_BASIS_FIT;
	rf->best = best;
	rf->reading = out->reading = cand[best].reading;
	rf->shift = out->stamp_shift = cand[best].shift;
}

void rm_join_measure(const struct rm_prepared *p, struct rm_join *j)
{
	memset(j, 0, sizeof(*j));
	j->points = p->n;
	j->with_batches = (size_t)p->with_batches;
	j->batches = p->nb;
	for (size_t i = 0; i < p->n; i++)
		j->covered += rm_pt_to(p, i) - rm_pt_from(p, i);
	j->loss_lo = p->n ? p->step[0] : -1;
	j->loss_hi = p->n ? p->step[p->n - 1] : -1;
	j->batch_lo = p->nb ? p->bstep[0] : -1;
	j->batch_hi = p->nb ? p->bstep[p->nb - 1] : -1;
	j->none = p->nb > 0 && p->n > 0 && p->with_batches == 0;
}

void rm_detect_join(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_join *j,
                    struct rm_reading_fit *rf)
{
	struct rm_series read;
	struct rm_prepared p;
	rm_choose_reading(s, o, &read, rf);
	rm_prepare(&read, &p);
	rm_join_measure(&p, j);
	rm_prepared_release(&p);
}
