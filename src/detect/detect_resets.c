/*
 * detect_resets.c - loss resets: spikes, and what they cluster by.
 *
 * Spikes by the Hampel identifier (Hampel 1974): y > median_w + k * 1.4826
 * * MAD, with the rolling median over w = 31 points *of the same bucket*
 * and the MAD of that bucket's residuals, followed by recovery (the next
 * point of the bucket is back below half the threshold), and at least
 * 50% above the baseline. A global baseline
 * would turn every long batch of a homogeneous run into a "spike": that
 * count is reported too, with the share of its spikes that vanish in the
 * bucket-adjusted loss.
 * Clustering by bucket: the spikes x bucket contingency table (Pearson's
 * chi-square, k-1 df, Cramer's V = sqrt(chi2 / N)) and per-bucket
 * enrichment (share of spikes / share of points) with the binomial tail.
 * Competing causes: checkpoint saves, epoch boundaries and learning-rate
 * changes by the binomial tail of spikes falling just after them; the
 * Rayleigh R of spike phases modulo the save interval (Zar, Biostatistical
 * Analysis 1999, ch. 27) is reported as description only.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define HAMPEL_W 31
#define MIN_JUMP 1.5

/* Hampel flags over x[idx[0..m)] with its own rolling median; marks
 * spike[idx[i]] and stores the baseline. Returns the count. */
static size_t hampel(const double *y, const size_t *idx, size_t m, double k, char *spike, double *baseline)
{
	if (m < HAMPEL_W)
		return 0;
	double *v = rm_xmalloc(m * sizeof(double)), *med = rm_xmalloc(m * sizeof(double));
	double *e = rm_xmalloc(m * sizeof(double));
	for (size_t i = 0; i < m; i++)
		v[i] = y[idx[i]];
	rm_running_median(v, m, HAMPEL_W, med);
	for (size_t i = 0; i < m; i++)
		e[i] = fabs(v[i] - med[i]);
	double scale = 1.4826 * rm_median_inplace(e, m);
	size_t count = 0;
	if (scale > 0) {
		for (size_t i = 0; i < m; i++) {
			double thr = k * scale;
			/* A reset is a jump, not a wiggle in heavy-tailed noise:
			 * also 50% above the baseline. */
			if (v[i] - med[i] <= thr || (med[i] > 0 && v[i] < MIN_JUMP * med[i]))
				continue;
			if (i + 1 < m && v[i + 1] - med[i + 1] > thr / 2)
				continue; /* no recovery: a level shift, not a reset */
			spike[idx[i]] = 1;
			baseline[idx[i]] = med[i];
			count++;
		}
	}
	free(v);
	free(med);
	free(e);
	return count;
}

static double rel_height(const struct rm_spike *sp)
{
	return sp->loss / fmax(fabs(sp->baseline), 1e-12);
}

/* Rayleigh test of uniformity for phases of steps modulo period. */
static void rayleigh(const int64_t *steps, size_t n, int64_t period, double *rbar, double *p)
{
	double c = 0, s = 0;
	for (size_t i = 0; i < n; i++) {
		double th = 2 * M_PI * (double)(steps[i] % period) / (double)period;
		c += cos(th);
		s += sin(th);
	}
	double N = (double)n, R = sqrt(c * c + s * s) / N, Z = N * R * R;
	double pv = exp(-Z) * (1 + (2 * Z - Z * Z) / (4 * N) -
	                       (24 * Z - 132 * Z * Z + 76 * Z * Z * Z - 9 * Z * Z * Z * Z) / (288 * N * N));
	*rbar = R;
	*p = fmin(1, fmax(0, pv));
}

/* Spikes within [event, event + window) of any event, against what the
 * share of steps so covered would give by chance. */
static void near_events(const int64_t *spikes, size_t ns, const int64_t *ev, size_t ne, int64_t window, int64_t lo,
                        int64_t hi, double *near, double *expected, double *p)
{
	size_t hits = 0, e = 0;
	for (size_t i = 0; i < ns; i++) {
		while (e < ne && ev[e] + window <= spikes[i])
			e++;
		hits += e < ne && ev[e] <= spikes[i];
	}
	double covered = fmin(1, (double)ne * (double)window / fmax(1, (double)(hi - lo + 1)));
	*near = (double)hits;
	*expected = covered * (double)ns;
	*p = rm_binom_sf((double)hits, (double)ns, covered);
}

/* Spikes x bucket: chi-square with Cramer's V, and each bucket's
 * enrichment (share of spikes over share of points, binomial p). */
static void spikes_by_bucket(const struct rm_prepared *p, const size_t *npts, size_t tot, struct rm_resets_result *r)
{
	if (p->k < 2 || r->spikes == 0)
		return;
	double N = (double)tot, S = (double)r->spikes, chi2 = 0;
	for (int b = 0; b < p->k; b++) {
		double share = (double)npts[b] / N, es = S * share, en = (N - S) * share;
		double os = (double)r->bucket_spikes[b], on = (double)npts[b] - os;
		if (es > 0)
			chi2 += (os - es) * (os - es) / es;
		if (en > 0)
			chi2 += (on - en) * (on - en) / en;
		r->enrichment[b] = share > 0 ? (os / S) / share : 0;
		r->enrich_p[b] = rm_binom_sf(os, S, share);
	}
	r->chi2 = chi2;
	r->chi2_df = p->k - 1;
	r->chi2_p = rm_chi2_sf(chi2, r->chi2_df);
	r->cramers_v = sqrt(chi2 / N);
}

/* Checkpoint saves every `every` steps: the spikes within w steps after a
 * save against the share of steps so covered (binomial), and Rayleigh's R. */
static void checkpoint_test(const int64_t *ss, size_t ns, int64_t every, int64_t lo, int64_t hi,
                            struct rm_resets_result *r)
{
	rayleigh(ss, ns, every, &r->ckpt_r, &r->ckpt_p);
	/* Saves at every multiple of P: a spike is near one when its phase is
	 * below w. Counted, not listed: a run whose steps jump to 2^53 with
	 * saves every 7 steps would need petabytes (fuzz_diagnose). */
	int64_t P = every, w = P / 50 > 5 ? P / 50 : 5;
	size_t hits = 0;
	for (size_t i = 0; i < ns; i++)
		hits += ss[i] % P < w;
	double nsaves = (double)((hi - (lo / P) * P) / P + 1);
	double covered = fmin(1, nsaves * (double)w / fmax(1, (double)(hi - lo) + 1));
	r->ckpt_near = (double)hits;
	r->ckpt_expected = covered * (double)ns;
	r->ckpt_p = rm_binom_sf((double)hits, (double)ns, covered);
}

/* Learning-rate changes: jumps of more than 20% that are also 5x both
 * neighbouring moves, so a warmup or cosine ramp is not a change. Their
 * steps go to ev; returns how many. */
static size_t lr_changes(const struct rm_prepared *p, int64_t *ev)
{
	size_t n = p->n, ne = 0;
	size_t last = SIZE_MAX, prev2 = SIZE_MAX;
	for (size_t j = 0; j < n; j++) {
		if (!isfinite(p->lr[j]))
			continue;
		if (last != SIZE_MAX) {
			double d = fabs(p->lr[j] - p->lr[last]);
			double before = prev2 != SIZE_MAX ? fabs(p->lr[last] - p->lr[prev2]) : 0;
			size_t nx = j + 1;
			while (nx < n && !isfinite(p->lr[nx]))
				nx++;
			double after = nx < n ? fabs(p->lr[nx] - p->lr[j]) : 0;
			if (d > 0.2 * fmax(fabs(p->lr[last]), 1e-12) && d > 5 * before && d > 5 * after)
				ev[ne++] = p->step[j];
		}
		prev2 = last;
		last = j;
	}
	return ne;
}

void rm_detect_resets(const struct rm_prepared *p, const double *adjusted, const struct rm_series *s,
                      const struct rm_detect_opts *o, struct rm_resets_result *r)
{
	memset(r, 0, sizeof(*r));
	r->chi2_p = r->ckpt_p = r->epoch_p = r->lr_p = r->period_p = 1;
	r->period_beyond_bucket_p = r->bucket_beyond_period_p = 1;
	for (int i = 0; i < RM_MAX_BUCKETS; i++)
		r->enrich_p[i] = 1;
	if (p->n < 2 * HAMPEL_W)
		return;
	r->ok = 1;
	size_t n = p->n;
	char *spike = rm_xcalloc(n, 1), *gspike = rm_xcalloc(n, 1), *aspike = rm_xcalloc(n, 1);
	double *baseline = rm_xcalloc(n, sizeof(double)), *scratch = rm_xcalloc(n, sizeof(double));
	size_t *idx = rm_xmalloc(n * sizeof(size_t)), *all = rm_xmalloc(n * sizeof(size_t));
	for (size_t j = 0; j < n; j++)
		all[j] = j;
	/* Global baselines, raw and adjusted (for bucket or length). */
	r->spikes_global = hampel(p->y, all, n, o->hampel_k, gspike, scratch);
	if (adjusted)
		r->spikes_adjusted = hampel(adjusted, all, n, o->hampel_k, aspike, scratch);
	size_t vanished = 0;
	for (size_t j = 0; j < n; j++)
		vanished += gspike[j] && !aspike[j];
	r->vanish_share = r->spikes_global ? (double)vanished / (double)r->spikes_global : 0;
	/* Per-bucket baselines; without buckets the global one stands in. */
	r->k = p->k;
	size_t npts[RM_MAX_BUCKETS] = {0}, tot = 0;
	if (p->k >= 1) {
		for (int b = 0; b < p->k; b++) {
			size_t m = 0;
			for (size_t j = 0; j < n; j++)
				if (p->dom[j] == b)
					idx[m++] = j;
			npts[b] = m;
			tot += m;
			r->bucket[b] = p->bucket_id[b];
			r->bucket_spikes[b] = hampel(p->y, idx, m, o->hampel_k, spike, baseline);
			r->spikes += r->bucket_spikes[b];
		}
	} else {
		r->spikes = hampel(p->y, all, n, o->hampel_k, spike, baseline);
		tot = n;
	}
	/* The spikes, largest first (relative to their baseline). */
	int64_t *ss = rm_xmalloc((r->spikes ? r->spikes : 1) * sizeof(int64_t));
	size_t ns = 0, nl = 0;
	for (size_t j = 0; j < n; j++) {
		if (!spike[j])
			continue;
		ss[ns++] = p->step[j];
		r->spikes_2x += baseline[j] > 0 && p->y[j] >= 2 * baseline[j];
		struct rm_spike cand = {p->step[j], p->dom[j] >= 0 ? p->bucket_id[p->dom[j]] : -1, p->y[j],
		                        baseline[j]};
		if (nl < RM_MAX_LIST)
			r->list[nl++] = cand;
		else if (rel_height(&cand) > rel_height(&r->list[nl - 1]))
			r->list[nl - 1] = cand;
		else
			continue;
		for (size_t a = nl - 1; a > 0 && rel_height(&r->list[a]) > rel_height(&r->list[a - 1]); a--) {
			struct rm_spike t = r->list[a];
			r->list[a] = r->list[a - 1];
			r->list[a - 1] = t;
		}
	}
	spikes_by_bucket(p, npts, tot, r);
	/* Checkpoint saves: how many spikes fall within w steps after a save,
	 * against the share of steps so covered. Rayleigh's R describes the
	 * phase concentration but is not the test: spikes that cluster in time
	 * (during a streak of long batches) have dependent phases, and the
	 * Rayleigh test would take them for periodic. */
	int64_t lo = p->step[0], hi = p->step[n - 1];
	int64_t *ev = rm_xmalloc((n > 64 ? n : 64) * sizeof(int64_t));
	size_t ne = 0;
	r->checkpoint_every = s->checkpoint_every;
	if (s->checkpoint_every > 1 && ns >= 3)
		checkpoint_test(ss, ns, s->checkpoint_every, lo, hi, r);
	/* Epoch boundaries: given, or where the epoch column crosses an integer. */
	r->steps_per_epoch = s->steps_per_epoch;
	if (s->steps_per_epoch > 0) {
		for (int64_t e = (lo / s->steps_per_epoch + 1) * s->steps_per_epoch; e <= hi && ne < n;
		     e += s->steps_per_epoch)
			ev[ne++] = e;
	} else {
		double prev = NAN;
		for (size_t j = 0; j < n; j++) {
			double e = p->epoch[j];
			if (isfinite(e) && isfinite(prev) && floor(e) > floor(prev))
				ev[ne++] = p->step[j];
			if (isfinite(e))
				prev = e;
		}
	}
	if (ne > 0 && ns > 0) {
		int64_t w = (hi - lo) / (int64_t)(200 * ne) > 3 ? (hi - lo) / (int64_t)(200 * ne) : 3;
		near_events(ss, ns, ev, ne, w, lo, hi, &r->epoch_near, &r->epoch_expected, &r->epoch_p);
	}
	ne = lr_changes(p, ev);
	r->lr_changes = ne;
	if (s->checkpoint_every <= 1) /* a configured interval wins: no search */
		rm_detect_period(p, spike, r);
	if (ne > 0 && ns > 0)
		near_events(ss, ns, ev, ne, 10, lo, hi, &r->lr_near, &r->lr_expected, &r->lr_p);
	free(ev);
	free(ss);
	free(spike);
	free(gspike);
	free(aspike);
	free(baseline);
	free(scratch);
	free(idx);
	free(all);
}
