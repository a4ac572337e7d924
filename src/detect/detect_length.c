/*
 * detect_length.c - continuous length coupling: does the loss follow the
 * batch's length, and do batches follow each other by length?
 *
 * Buckets are a coarse view of length; this is the fine one. Each loss
 * point gets x, the mean log length of the batches it covers, and y, its
 * loss with the split's trend taken out (log(loss / trend) when every loss
 * is positive, else loss - trend). The least-squares slope of y on x is
 * the length effect, and the squared correlation its partial R^2 given
 * the trend. Neighbouring points are correlated (a homogeneous order makes
 * x nearly constant over a run), so the confidence intervals use
 * Bartlett's effective sample size n / (1 + 2 sum_k rx(k) ry(k)) over the
 * lags where x stays correlated (Bartlett 1935; Bretherton et al. 1999,
 * J. Climate 12:1990), and Fisher's z for the correlation. Lengths that
 * change as slowly as the trend are confounded with it, and no effect is
 * claimed.
 *
 * The order of lengths is the lag-1..RM_LEN_LAGS autocorrelation of the
 * batches' log length: near 0 in random order, near 1 when batches come
 * one bucket (or one sorted stretch) at a time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define MIN_POINTS 50

/* Mean log length of the batches point j covers, NaN when none is known. */
static double point_log_length(const struct rm_prepared *p, size_t j)
{
	double sum = 0;
	size_t m = 0;
	for (size_t t = rm_pt_from(p, j), to = rm_pt_to(p, j); t < to; t++)
		if (!isnan(p->blog[t])) {
			sum += p->blog[t];
			m++;
		}
	return m ? sum / (double)m : NAN;
}

struct fit {
	double slope, r, xbar, sxx, syy;
	size_t m;
};

/* Least squares of y on x over the points keep[] allows. */
static void fit_line(const float *x, const double *y, const char *keep, size_t n, struct fit *f)
{
	double mx = 0, my = 0;
	size_t m = 0;
	for (size_t j = 0; j < n; j++)
		if (keep[j]) {
			mx += x[j];
			my += y[j];
			m++;
		}
	memset(f, 0, sizeof(*f));
	if (m < 3)
		return;
	mx /= (double)m;
	my /= (double)m;
	double sxy = 0;
	for (size_t j = 0; j < n; j++)
		if (keep[j]) {
			double dx = x[j] - mx, dy = y[j] - my;
			f->sxx += dx * dx;
			f->syy += dy * dy;
			sxy += dx * dy;
		}
	f->m = m;
	f->xbar = mx;
	f->slope = f->sxx > 0 ? sxy / f->sxx : 0;
	f->r = f->sxx > 0 && f->syy > 0 ? sxy / sqrt(f->sxx * f->syy) : 0;
}

/* Bartlett's effective sample size m / (1 + 2 sum_k rx(k) ry(k)) of two
 * series, the sum over lags up to maxlag. A homogeneous order keeps x
 * correlated over many lags, so lag 1 alone would overstate it; lags grow
 * by half each time (1, 2, 3, 4, 6, 9, ...) and the sum between them is a
 * trapezoid, O(m log maxlag). */
static double effective_n(const double *x, const double *y, size_t m, size_t maxlag)
{
	double mx = 0, my = 0, sx = 0, sy = 0;
	for (size_t i = 0; i < m; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)m;
	my /= (double)m;
	for (size_t i = 0; i < m; i++) {
		sx += (x[i] - mx) * (x[i] - mx);
		sy += (y[i] - my) * (y[i] - my);
	}
	double sum = 0, prev = 0;
	size_t at = 0;
	for (size_t lag = 1; lag <= maxlag && lag < m; lag = lag < 4 ? lag + 1 : lag + lag / 2) {
		double g = rm_acf_lag(x, m, mx, sx, lag) * rm_acf_lag(y, m, my, sy, lag);
		sum += lag == 1 ? g : (double)(lag - at) * (g + prev) / 2;
		prev = g;
		at = lag;
	}
	return (double)m / (1 + 2 * fmax(0, sum));
}

void rm_detect_length(const struct rm_prepared *p, const struct rm_split_result *sp, struct rm_length_result *r)
{
	memset(r, 0, sizeof(*r));
	if (!p->blog)
		return;
	r->batches = p->len_batches;
	r->min_len = p->len_min;
	r->max_len = p->len_max;
	memcpy(r->acf, p->len_acf + 1, sizeof(r->acf));
	r->ordered = r->batches >= MIN_POINTS && r->acf[0] >= 0.5;
	size_t n = p->n;
	for (size_t j = 0; j < n && (n < MIN_POINTS || !sp->trend); j++)
		r->points += !isnan(point_log_length(p, j)); /* for the message: too few */
	if (n < MIN_POINTS || !sp->trend)
		return;
	/* x in floats: a log length needs no more, and a long run holds many. */
	float *x = rm_xmalloc(n * sizeof(float));
	double *y = rm_xmalloc(n * sizeof(double));
	double *scratch = rm_xmalloc(n * sizeof(double));
	char *keep = rm_xmalloc(n);
	int positive = 1;
	for (size_t j = 0; j < n && positive; j++)
		positive = p->y[j] > 0 && sp->trend[j] > 0;
	r->log_scale = positive;
	for (size_t j = 0; j < n; j++) {
		x[j] = (float)point_log_length(p, j);
		y[j] = positive ? log(p->y[j] / sp->trend[j]) : p->y[j] - sp->trend[j];
		keep[j] = !isnan(x[j]) && isfinite(y[j]);
		r->points += (size_t)keep[j];
	}
	struct fit f;
	fit_line(x, y, keep, n, &f);
	if (r->points < MIN_POINTS || f.sxx <= 0)
		goto out;
	/* Refit without the resets (residuals beyond 5 robust sigmas), which
	 * would otherwise pull the slope towards wherever they fall. */
	size_t m = 0;
	for (size_t j = 0; j < n; j++)
		if (keep[j])
			scratch[m++] = y[j] - f.slope * x[j];
	double med = rm_median_inplace(scratch, m);
	m = 0;
	for (size_t j = 0; j < n; j++)
		if (keep[j])
			scratch[m++] = fabs(y[j] - f.slope * x[j] - med);
	double mad = 1.4826 * rm_median_inplace(scratch, m);
	for (size_t j = 0; j < n; j++)
		if (keep[j] && fabs(y[j] - f.slope * x[j] - med) > 5 * mad + 1e-300)
			keep[j] = 0;
	fit_line(x, y, keep, n, &f);
	if (f.m < MIN_POINTS || f.sxx <= 0)
		goto out;
	/* The kept points, packed: x into scratch, y in place. */
	m = 0;
	for (size_t j = 0; j < n; j++)
		if (keep[j]) {
			scratch[m] = x[j];
			y[m++] = y[j];
		}
	double per_point = p->n ? (double)p->nb / (double)p->n : 1; /* batches a loss point covers */
	double corr_points = p->len_run / fmax(1, per_point);
	size_t maxlag = (size_t)fmin((double)m / 4, fmax(8, 4 * corr_points));
	double n_eff = effective_n(scratch, y, m, maxlag);
	free(scratch);
	scratch = NULL;
	r->n_eff = n_eff = fmin((double)f.m, fmax(4, n_eff));
	r->ok = 1;
	r->slope = f.slope;
	r->r = f.r;
	r->r2 = f.r * f.r;
	double se = sqrt(fmax(0, f.syy / f.sxx * (1 - r->r2) / (n_eff - 2)));
	r->slope_lo = f.slope - 1.96 * se;
	r->slope_hi = f.slope + 1.96 * se;
	r->p = se > 0 ? 2 * rm_norm_cdf(-fabs(f.slope) / se) : (f.slope != 0 ? 0 : 1);
	double z = atanh(fmax(-0.999999, fmin(0.999999, f.r))), zse = 1 / sqrt(n_eff - 3);
	double lo = tanh(z - 1.96 * zse), hi = tanh(z + 1.96 * zse);
	r->r2_lo = lo * hi <= 0 ? 0 : fmin(lo * lo, hi * hi);
	r->r2_hi = fmax(lo * lo, hi * hi);
	r->ref_len = exp(f.xbar);
	/* Lengths that change as slowly as the trend (sorted by length over an
	 * epoch) cannot be told from it: the trend's window, at most a third of
	 * the run, must hold 8 correlation times of the length. Sorted orders
	 * have one of a sixth of an epoch, chunked ones of a chunk. */
	r->confounded = 8 * p->len_run > (double)p->nb / 3;
	r->coupled = !r->confounded && r->r2 >= 0.1 && r->r2_lo >= 0.05;
	r->per_sequence_sum = r->coupled && r->log_scale && fabs(r->slope - 1) <= 0.2;
	if (r->confounded)
		goto out;
	/* The loss at the reference length: what the curve would read had every
	 * batch been of the run's typical length. */
	r->adjusted = rm_xmalloc(n * sizeof(double));
	for (size_t j = 0; j < n; j++) {
		double dx = isnan(x[j]) ? 0 : x[j] - f.xbar;
		r->adjusted[j] = positive ? p->y[j] * exp(-f.slope * dx) : p->y[j] - f.slope * dx;
	}
out:
	free(x);
	free(y);
	free(scratch);
	free(keep);
}
