/*
 * detect_order.c - a data order that repeats every epoch (no shuffle).
 *
 * A loop that never shuffles feeds the same batches in the same order
 * each epoch, so a batch's own difficulty shows at the same in-epoch step
 * every epoch. The loss is detrended (the split's trend) and high-passed
 * (less a running median of 9 points), which keeps what belongs to single
 * batches and drops any smooth shape an epoch has of its own (a schedule
 * restarted per epoch). Consecutive epochs' values at the same in-epoch
 * step are correlated; the null is the same correlation with the later
 * epoch turned circularly by many offsets, which keeps each epoch's own
 * autocorrelation (a circular-shift test). Spikes that recur at one
 * in-epoch step in most epochs are named: they are the same batches.
 *
 * In-epoch steps come from a whole-number epoch on each loss row (the
 * step where the epoch's first row falls is its start), else from a
 * configured steps-per-epoch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define MIN_PAIRS  50
#define SHIFTS     200
#define HIGH_PASS  9
#define FLAG_R     0.3
#define FLAG_Z     6.0
#define SPIKE_SIGS 5.0

/* How a point's epoch is told: by its whole-number epoch (an epoch starts
 * at its first row's step), or by a configured steps-per-epoch. Computed
 * where needed rather than kept per point (16 bytes a step on a long run). */
struct epoch_clock {
	int by_epoch;
	int64_t steps_per_epoch;
};

static int64_t epoch_of(const struct rm_prepared *p, const struct epoch_clock *c, size_t j)
{
	return c->by_epoch ? (int64_t)p->epoch[j] : p->step[j] / c->steps_per_epoch;
}

/* The in-epoch step of point j, whose epoch's rows begin at point e0. */
static int64_t in_epoch(const struct rm_prepared *p, const struct epoch_clock *c, size_t j, size_t e0)
{
	return c->by_epoch ? p->step[j] - p->step[e0] : p->step[j] % c->steps_per_epoch;
}

/* The first point past j's epoch (its run of rows of one epoch). */
static size_t epoch_end(const struct rm_prepared *p, const struct epoch_clock *c, size_t j)
{
	int64_t e = epoch_of(p, c, j);
	while (j < p->n && epoch_of(p, c, j) == e)
		j++;
	return j;
}

/* Sets the clock; returns the epochs, or 0 when the run does not tell them. */
static int epochs_of(const struct rm_prepared *p, int64_t steps_per_epoch, struct epoch_clock *c)
{
	size_t whole = 0;
	for (size_t j = 0; j < p->n; j++)
		whole +=
		    isfinite(p->epoch[j]) && p->epoch[j] >= 0 && p->epoch[j] == floor(p->epoch[j]) && p->epoch[j] < 1e9;
	c->by_epoch = p->n && whole == p->n;
	c->steps_per_epoch = steps_per_epoch;
	if (!c->by_epoch && steps_per_epoch <= 0)
		return 0;
	int epochs = 0;
	for (size_t j = 0; j < p->n; j = epoch_end(p, c, j))
		epochs++;
	return epochs;
}

/* Pearson correlation of h[a[i]] and h[b[(i + k) % m]] over each of the
 * segment pairs [from[s], from[s] + len[s]) (k scaled to each segment's
 * length). Pairs are held as indexes: 8 bytes a pair, not 16. */
static double shifted_r(const double *h, const uint32_t *a, const uint32_t *b, const size_t *from, const size_t *len,
                        size_t nseg, double frac)
{
	double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, n = 0;
	for (size_t s = 0; s < nseg; s++) {
		size_t m = len[s], k = (size_t)(frac * (double)m) % (m ? m : 1);
		for (size_t i = 0; i < m; i++) {
			double x = h[a[from[s] + i]], y = h[b[from[s] + (i + k) % m]];
			sa += x, sb += y, saa += x * x, sbb += y * y, sab += x * y, n++;
		}
	}
	double va = saa - sa * sa / n, vb = sbb - sb * sb / n;
	return va > 0 && vb > 0 ? (sab - sa * sb / n) / sqrt(va * vb) : 0;
}

static int by_pos(const void *x, const void *y)
{
	const int64_t *a = x, *b = y; /* (position, step) pairs */
	return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1];
}

/* Spikes of the high-passed loss (beyond SPIKE_SIGS robust sigmas) that
 * fall at one in-epoch step in at least two epochs and half of them. */
static void repeated_spikes(const struct rm_prepared *p, const double *h, const struct epoch_clock *c, int64_t base,
                            int epochs, struct rm_order_result *r)
{
	double *scratch = rm_xmalloc(p->n * sizeof(double));
	double med = rm_median(h, p->n, scratch), sig = 1.4826 * rm_mad(h, p->n, med, scratch);
	free(scratch);
	if (!(sig > 0))
		return;
	size_t ns = 0;
	int64_t(*sp)[2] = rm_xmalloc(p->n * sizeof(*sp));
	for (size_t e0 = 0, e1; e0 < p->n; e0 = e1) {
		e1 = epoch_end(p, c, e0);
		for (size_t j = e0; j < e1; j++)
			if (h[j] - med > SPIKE_SIGS * sig) {
				sp[ns][0] = in_epoch(p, c, j, e0);
				sp[ns++][1] = p->step[j];
			}
	}
	qsort(sp, ns, sizeof(*sp), by_pos);
	for (size_t a = 0; a < ns;) {
		size_t b = a;
		while (b < ns && sp[b][0] == sp[a][0])
			b++;
		int count = (int)(b - a), at = -1;
		if (count >= 2 && 2 * count >= epochs) {
			if (r->nspikes < RM_ORDER_SPIKES)
				at = r->nspikes++;
			for (int i = 0; i < r->nspikes && at < 0; i++) /* full: keep the most repeated */
				if (count > r->spike_epochs[i])
					at = i;
		}
		if (at >= 0) {
			r->spike_pos[at] = sp[a][0] + base;
			r->spike_first[at] = sp[a][1];
			r->spike_epochs[at] = count;
		}
		a = b;
	}
	free(sp);
}

void rm_detect_order(const struct rm_prepared *p, const struct rm_series *s, const struct rm_split_result *sp,
                     struct rm_order_result *r)
{
	memset(r, 0, sizeof(*r));
	if (!sp->trend || p->n < 2 * MIN_PAIRS || p->n > UINT32_MAX)
		return;
	size_t n = p->n;
	struct epoch_clock c;
	int epochs = epochs_of(p, s->steps_per_epoch, &c);
	r->by_epoch = c.by_epoch;
	r->epochs = epochs;
	double *rr = NULL, *h = NULL;
	uint32_t *a = NULL, *b = NULL;
	size_t *from = NULL, *len = NULL;
	if (epochs < 2)
		goto out;
	int positive = 1;
	/* bucket levels out (their order has a name of its own: the runs test) */
	const double *y = sp->adjusted ? sp->adjusted : p->y;
	for (size_t j = 0; j < n && positive; j++)
		positive = y[j] > 0 && sp->trend[j] > 0;
	rr = rm_xmalloc(n * sizeof(double));
	h = rm_xmalloc(n * sizeof(double));
	for (size_t j = 0; j < n; j++)
		rr[j] = positive ? log(y[j] / sp->trend[j]) : y[j] - sp->trend[j];
	rm_running_median(rr, n, HIGH_PASS, h);
	for (size_t j = 0; j < n; j++)
		h[j] = rr[j] - h[j];
	free(rr);
	rr = NULL;
	/* pairs: each epoch's points against the next epoch's at the same in-epoch step */
	a = rm_xmalloc(n * sizeof(*a));
	b = rm_xmalloc(n * sizeof(*b));
	from = rm_xmalloc((size_t)epochs * sizeof(size_t));
	len = rm_xmalloc((size_t)epochs * sizeof(size_t));
	size_t m = 0, nseg = 0;
	for (size_t e0 = 0; e0 < n;) {
		size_t e1 = epoch_end(p, &c, e0), f1 = e1 < n ? epoch_end(p, &c, e1) : n;
		if (e1 < n && epoch_of(p, &c, e1) == epoch_of(p, &c, e0) + 1) {
			size_t seg = m;
			for (size_t i = e0, j = e1; i < e1 && j < f1;) {
				int64_t pi = in_epoch(p, &c, i, e0), pj = in_epoch(p, &c, j, e1);
				if (pi < pj)
					i++;
				else if (pj < pi)
					j++;
				else {
					a[m] = (uint32_t)i++;
					b[m++] = (uint32_t)j++;
				}
			}
			if (m - seg >= 8) {
				from[nseg] = seg;
				len[nseg++] = m - seg;
			} else {
				m = seg;
			}
		}
		e0 = e1;
	}
	r->pairs = m;
	if (m < MIN_PAIRS)
		goto out;
	r->ok = 1;
	r->r = shifted_r(h, a, b, from, len, nseg, 0);
	/* shifts: up to SHIFTS, about 2e7 pairs in all on a long run */
	int shifts = (int)fmax(30, fmin(SHIFTS, 2e7 / (double)m));
	double sum = 0, sum2 = 0;
	for (int k = 0; k < shifts; k++) {
		double v = shifted_r(h, a, b, from, len, nseg, 0.05 + 0.9 * (k + 0.5) / shifts);
		sum += v;
		sum2 += v * v;
	}
	r->shifts = shifts;
	r->null_mean = sum / shifts;
	r->null_sd = sqrt(fmax(0, sum2 / shifts - r->null_mean * r->null_mean));
	r->z = r->null_sd > 0 ? (r->r - r->null_mean) / r->null_sd : 0;
	r->flagged = r->r >= FLAG_R && r->z >= FLAG_Z;
	if (r->flagged) /* in-epoch steps as the first epoch counts them */
		repeated_spikes(p, h, &c, s->steps_per_epoch > 0 && !r->by_epoch ? 0 : p->step[0], epochs, r);
out:
	free(rr);
	free(h);
	free(a);
	free(b);
	free(from);
	free(len);
}
