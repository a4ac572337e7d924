/*
 * detect_diverge.c - divergence: the loss turns NaN or Inf, or explodes by
 * an order of magnitude, and stays so to the end of the run.
 *
 * A point is bad when its loss was logged as NaN or Inf (a row that logged
 * no loss is not), or when it is ten times the median loss before the
 * tail. The tail is the longest end of the run in which at least 90% of
 * the points are bad, starting at a bad point; at least MIN_POINTS of it;
 * it begins where the loss began to climb to it.
 * An isolated NaN mid-run (a skipped fp16 step) is no divergence; a
 * reset that recovers is none either. The median is taken twice: over the
 * whole run, then over what precedes the tail it found.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define MIN_POINTS 3
#define BAD_SHARE  0.9
#define EXPLODE    10.0

/* Is point i NaN or Inf as logged (not merely absent)? */
static int nonfinite(const struct rm_series *s, size_t i)
{
	if (isfinite(s->loss[i]))
		return 0;
	return !s->nonfinite || s->nonfinite[i] == 1 || s->nonfinite[i] == 2;
}

static int logged(const struct rm_series *s, size_t i)
{
	return isfinite(s->loss[i]) || nonfinite(s, i);
}

/* The median of the finite losses of points [0, end). */
static double median_before(const struct rm_series *s, size_t end)
{
	double *v = rm_xmalloc((end ? end : 1) * sizeof(double));
	size_t m = 0;
	for (size_t i = 0; i < end; i++)
		if (isfinite(s->loss[i]))
			v[m++] = s->loss[i];
	double med = m ? rm_median_inplace(v, m) : NAN;
	free(v);
	return med;
}

/* The median of the finite losses of points i - 4 .. i + 4. */
static double smoothed(const struct rm_series *s, size_t i)
{
	double v[9];
	size_t m = 0;
	for (size_t j = i >= 4 ? i - 4 : 0; j <= i + 4 && j < s->n; j++)
		if (isfinite(s->loss[j]))
			v[m++] = s->loss[j];
	return m ? rm_median_inplace(v, m) : NAN;
}

static int bad(const struct rm_series *s, size_t i, double base)
{
	return nonfinite(s, i) || (base > 0 && s->loss[i] > EXPLODE * base);
}

/* The start of the bad tail (n: none): the earliest bad point from which
 * on BAD_SHARE of the logged points are bad. */
static size_t tail_start(const struct rm_series *s, double base, size_t *points)
{
	size_t start = s->n, nbad = 0, nlogged = 0;
	*points = 0;
	for (size_t i = s->n; i-- > 0;) {
		if (!logged(s, i))
			continue;
		nlogged++;
		if (!bad(s, i, base))
			continue;
		nbad++;
		if ((double)nbad >= BAD_SHARE * (double)nlogged) {
			start = i;
			*points = nlogged;
		}
	}
	return start;
}

void rm_detect_divergence(const struct rm_series *s, struct rm_divergence *d)
{
	memset(d, 0, sizeof(*d));
	d->peak = d->baseline = NAN;
	if (s->n == 0)
		return;
	size_t last = s->n; /* the run must end bad */
	while (last > 0 && !logged(s, last - 1))
		last--;
	double base = median_before(s, s->n);
	if (last == 0 || !bad(s, last - 1, base))
		return;
	size_t points, start = tail_start(s, base, &points);
	base = median_before(s, start);
	start = tail_start(s, base, &points);
	if (start >= s->n || points < MIN_POINTS)
		return;
	/* An explosion climbs before it passes ten times the loss: its start
	 * is where the climb began (the loss's median over 9 points about the
	 * last or above, and a quarter over the median before). */
	while (start > 0 && isfinite(s->loss[start - 1])) {
		double before = smoothed(s, start - 1), at = isfinite(s->loss[start]) ? smoothed(s, start) : INFINITY;
		if (!(before > 1.25 * base && before <= 1.15 * at))
			break;
		start--;
	}
	d->found = 1;
	d->first_step = s->step[start];
	d->baseline = base;
	d->points = points;
	for (size_t i = start; i < s->n; i++) {
		if (!logged(s, i))
			continue;
		double y = s->loss[i];
		if (isfinite(y)) {
			d->exploded += base > 0 && y > EXPLODE * base;
			if (!(y <= d->peak))
				d->peak = y;
		} else if (isinf(y) || (s->nonfinite && s->nonfinite[i] == 2)) {
			d->inf++;
		} else {
			d->nan++;
		}
	}
}
