/*
 * detect_resets.c - loss resets: where they begin, and what they cluster by.
 *
 * A reset jumps and then decays over several steps, so it is found by its
 * onset and counted once however long it lasts. Each loss point is held
 * against the level its composition expects: the trend times the mixture
 * of the bucket levels its batches hold, weighted as the point averages
 * them (a point logged every K steps on R ranks averages K x R batches; its
 * expected level is the arithmetic mean of theirs). The levels are a least
 * squares fit of loss / trend on the points' bucket shares, so a logging
 * interval that straddles a switch of bucket, or a step whose ranks hold
 * different buckets, expects what it averages and is no spike. Without
 * bucket ids, lengths stand in (the length-adjusted loss); without any
 * composition, the levels the loss alone switches between (detect_split.c).
 *
 * The excess of a point is log(loss / expected) less its running median
 * (what the trend left), in units of a robust scale (1.4826 MAD; Hampel
 * 1974), per dominant bucket when it has enough points: heavier-tailed
 * buckets get their own. An onset is a point above k scales and at least
 * 1 + 0.5 / K times the expected level (a jump, not a wiggle in heavy-
 * tailed noise: 1.5x at one step a point, less when a point averages K
 * steps and so a shorter part of the reset); the reset then lasts while
 * the excess stays above half the threshold, and must recover within
 * MAX_EVENT points with its peak in its first third (a jump that decays,
 * not a level shift or a ramp). Logged every step, a reset lasts two
 * points at least: one point alone, however high, is a spike (heavy-tailed
 * noise: a batch of a few short samples averages few tokens), not a reset.
 *
 * Clustering by bucket: onsets x bucket, each onset counted by the bucket
 * shares of the point where it begins (Pearson's chi-square, k-1 df,
 * Cramer's V = sqrt(chi2 / N), as description) and per-bucket enrichment
 * (share of onsets / share of points) with the binomial tail. Competing causes: checkpoint
 * saves, epoch boundaries and learning-rate changes by the binomial tail
 * of onsets falling just after them (the window widened by the logging
 * interval: an onset logged at step s began within its interval); the
 * Rayleigh R of onset phases modulo the save interval (Zar, Biostatistical
 * Analysis 1999, ch. 27) is reported as description only.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define LOCAL_W       101  /* points: the running median of the excess */
#define GLOBAL_W      31   /* points: the global baselines a framework's spike detector would use */
#define MAX_EVENT     64   /* points a reset may take to recover */
#define MIN_PER_SCALE 200  /* points of a bucket for a scale of its own */
#define EXPLAINED_P   1e-3 /* an event this clearly near the onsets explains those near it */
#define MIN_EXPECTED  5    /* onsets a chi-square cell must expect (Cochran's rule) */
#define MIN_ENRICH    1    /* onsets a bucket must expect to be called enriched alone */

/* Steps a point averages: the spacing of the loss rows (median of the
 * first gaps; a trainer logs every K steps). */
static double spacing(const struct rm_prepared *p)
{
	size_t m = p->n > 1 ? (p->n - 1 < 999 ? p->n - 1 : 999) : 0;
	if (m == 0)
		return 1;
	double *g = rm_xmalloc(m * sizeof(double));
	for (size_t i = 0; i < m; i++)
		g[i] = (double)(p->step[i + 1] - p->step[i]);
	double k = fmax(1, rm_median_inplace(g, m));
	free(g);
	return k;
}

/* Scratch for the onset searches, n points each: made once per diagnosis
 * (a run of millions of points would otherwise fault in fresh pages for
 * each search). */
struct work {
	double *med, *x, *e;
	double *tmp; /* made when a search needs it beside med (an own level) */
};

/* The loss relative to the trend (computed where needed: one array less
 * on a long run). */
static inline double of_trend(const struct rm_prepared *p, const double *trend, int ratio, size_t j)
{
	return ratio ? p->y[j] / trend[j] : p->y[j] - trend[j];
}

/* The arithmetic levels of the buckets, relative to the trend: least
 * squares of y / trend on the shares, refit three times without the
 * points far off the fit (above it sooner: resets). Additive (y - trend)
 * when a loss is not positive. Works in ws->med and ws->x. */
static void mixture_levels(const struct rm_prepared *p, const double *trend, int ratio, struct work *ws, double *L)
{
	int k = p->k;
	double *a = ws->med, *d = ws->x;
	char *keep = rm_xmalloc(p->n);
	for (int round = 0; round < 4; round++) {
		double A[RM_MAX_BUCKETS * RM_MAX_BUCKETS] = {0}, b[RM_MAX_BUCKETS] = {0};
		for (size_t j = 0; j < p->n; j++) {
			if (p->dom[j] < 0 || (round && !keep[j]) || !isfinite(of_trend(p, trend, ratio, j)))
				continue;
			if (p->onehot[j]) {
				int i = p->dom[j];
				A[i * k + i] += 1;
				b[i] += of_trend(p, trend, ratio, j);
				continue;
			}
			const float *s = p->share + j * (size_t)k;
			for (int i = 0; i < k; i++) {
				if (s[i] == 0)
					continue;
				b[i] += s[i] * of_trend(p, trend, ratio, j);
				for (int l = 0; l < k; l++)
					A[i * k + l] += (double)s[i] * s[l];
			}
		}
		rm_solve(A, b, k, L);
		if (round == 3)
			break; /* the last fit: the points it leaves out are not needed */
		size_t m = 0;
		for (size_t j = 0; j < p->n; j++) {
			d[j] = p->dom[j] >= 0 ? of_trend(p, trend, ratio, j) - rm_prepared_mix(p, j, L) : NAN;
			if (isfinite(d[j]))
				a[m++] = fabs(d[j]);
		}
		double mad = m ? 1.4826 * rm_median_inplace(a, m) : 0;
		/* Resets only raise the loss: points well above the fit are left
		 * out (2.5 scales; a normal tail loses 0.6%), far below only. The
		 * same points kept give the same fit: it has converged. */
		size_t changed = 0;
		for (size_t j = 0; j < p->n; j++) {
			char kj = d[j] <= 2.5 * mad + 1e-300 && d[j] >= -4 * mad - 1e-300;
			changed += round == 0 || kj != keep[j];
			keep[j] = kj;
		}
		if (!changed)
			break;
	}
	free(keep);
}

/* The excess of each point over what its composition expects, in log
 * units (additive where a loss or its expectation is not positive). */
static void excess(const struct rm_prepared *p, const struct rm_split_result *sp, const double *len_adj,
                   struct work *ws, double **own)
{
	double *e = ws->e;
	*own = NULL;
	size_t n = p->n;
	int positive = 1;
	for (size_t j = 0; j < n && positive; j++)
		positive = p->y[j] > 0 && (!sp->trend || sp->trend[j] > 0) && (!len_adj || len_adj[j] > 0);
	if (len_adj) { /* lengths stand in for buckets: the length-adjusted loss */
		for (size_t j = 0; j < n; j++)
			e[j] = positive ? log(len_adj[j]) : len_adj[j];
		return;
	}
	double L[RM_MAX_BUCKETS] = {0};
	int mix = sp->trend && p->k >= 2 && p->with_batches >= 50;
	if (mix)
		mixture_levels(p, sp->trend, positive, ws, L);
	for (size_t j = 0; j < n; j++) {
		double t = sp->trend ? sp->trend[j] : 0;
		double m = mix && p->dom[j] >= 0 ? rm_prepared_mix(p, j, L) : (positive ? 1 : 0);
		if (positive && m > 0)
			e[j] = log(p->y[j] / (t > 0 ? t * m : m));
		else if (positive)
			e[j] = log(p->y[j] / fmax(t, 1e-300));
		else
			e[j] = p->y[j] - t - m;
	}
	/* The loss alone: a point that sits at one of its levels may be a batch
	 * of that level or a reset of a lower one, and one between two levels a
	 * logging interval across a switch; only a rise above the highest
	 * level is a reset for sure. Resets of lower levels go unseen: the
	 * price of having no composition. */
	if (!mix && sp->levels >= 2) {
		*own = rm_xmalloc(n * sizeof(double));
		double top = sp->level_at[sp->levels - 1];
		for (size_t j = 0; j < n; j++) {
			int c = 0;
			while (c + 1 < sp->levels && e[j] >= sp->level_cut[c + 1])
				c++;
			(*own)[j] = e[j] - sp->level_at[c];
			e[j] -= top;
		}
	}
}

/* Robust scales: scale[b] of the excesses of points of one bucket alone
 * (dense b) when it has enough of them, scale[k] of all. x is the excess
 * less its local median. */
static void scales(const struct rm_prepared *p, const double *x, double *tmp, int per_bucket, double *scale)
{
	size_t n = p->n;
	for (size_t j = 0; j < n; j++)
		tmp[j] = fabs(x[j]);
	scale[p->k] = 1.4826 * rm_median_inplace(tmp, n);
	for (int b = 0; b < p->k; b++) {
		size_t m = 0;
		for (size_t j = 0; j < n && per_bucket; j++)
			if (p->dom[j] == b && p->onehot[j])
				tmp[m++] = fabs(x[j]);
		scale[b] = m >= MIN_PER_SCALE ? 1.4826 * rm_median_inplace(tmp, m) : scale[p->k];
	}
}

struct onset {
	size_t at, len; /* the point it begins at, points it lasts */
	double peak;    /* the highest loss / expected of the reset */
	double area;    /* its excess in steps of doubled loss: sum of (ratio - 1) x steps per point */
};

struct onsets {
	struct onset *v;
	size_t n, cap;
};

static void onset_add(struct onsets *o, struct onset x)
{
	if (o->n == o->cap)
		o->v = rm_xrealloc(o->v, (o->cap = o->cap ? 2 * o->cap : 64) * sizeof(*o->v));
	o->v[o->n++] = x;
}

/* Onsets in the excess series e (log units) over its running median of
 * w points, in units of a robust scale of that (per dominant bucket with
 * per_bucket); or, with own (each point's distance to its own level), over
 * the running median of own, in units of its scale: what the trend left,
 * measured where levels do not switch. Marks mark[at] (may be NULL) and
 * returns how many, adding them to ev (may be NULL). */
static size_t find_onsets(const struct rm_prepared *p, const double *e, size_t w, const double *own, double k, double K,
                          size_t min_len, int per_bucket, struct work *ws, char *mark, struct onsets *ev)
{
	size_t n = p->n, count = 0;
	double *med = ws->med, *x = ws->x, sc[RM_MAX_BUCKETS + 1];
	rm_running_median(own ? own : e, n, w, med);
	for (size_t j = 0; j < n; j++)
		x[j] = e[j] - med[j];
	if (own)
		for (size_t j = 0; j < n; j++)
			med[j] = own[j] - med[j];
	/* Without own, the median has served: its array takes the scales' copy. */
	if (own && !ws->tmp)
		ws->tmp = rm_xmalloc(n * sizeof(double));
	scales(p, own ? med : x, own ? ws->tmp : med, per_bucket && !own, sc);
	/* the scale of point j */
#define SCALE(j) (p->dom[j] >= 0 && p->onehot[j] ? sc[p->dom[j]] : sc[p->k])
	double min_jump = log(1 + 0.5 / K);
	for (size_t j = 0; j < n;) {
		double thr = k * SCALE(j);
		if (!(thr > 0) || !(x[j] > thr) || x[j] < min_jump) {
			j++;
			continue;
		}
		size_t end = j + 1, peak = j;
		/* It lasts while above half the threshold, until a second jump
		 * (a new reset before this one decayed) starts an event of its own. */
		while (end < n && end - j < MAX_EVENT && x[end] > 0.5 * k * SCALE(end) &&
		       x[end] - x[end - 1] <= k * SCALE(end)) {
			if (x[end] > x[peak])
				peak = end;
			end++;
		}
		size_t len = end - j;
		int recovered = end == n || len < MAX_EVENT;
		/* A jump that decays: its peak in its first third, its last third
		 * well below its first (a block of a level is flat). */
		int decays = peak - j <= len / 3;
		if (decays && len >= 3) {
			double head = 0, tail = 0;
			size_t third = (len + 2) / 3;
			for (size_t i = 0; i < third; i++) {
				head += x[j + i];
				tail += x[end - 1 - i];
			}
			decays = tail <= 0.7 * head;
		}
		if (recovered && decays && len >= min_len) {
			double area = 0;
			for (size_t i = j; i < end; i++)
				area += (exp(fmax(0, x[i])) - 1) * K;
			if (mark)
				mark[j] = 1;
			if (ev)
				onset_add(ev, (struct onset){j, len, exp(x[peak]), area});
			count++;
			j = end;
			continue;
		}
		j = end;
		while (j < n && x[j] > 0.5 * k * SCALE(j) && x[j] - x[j - 1] <= k * SCALE(j)) /* a level shift */
			j++;
	}
#undef SCALE
	return count;
}

/* The onsets a global baseline (a running median of the series itself,
 * as a framework's spike detector has) finds in y. */
static size_t global_onsets(const struct rm_prepared *p, const double *y, double k, double K, struct work *ws)
{
	int positive = 1;
	for (size_t j = 0; j < p->n && positive; j++)
		positive = y[j] > 0;
	for (size_t j = 0; j < p->n; j++)
		ws->e[j] = positive ? log(y[j]) : y[j];
	return find_onsets(p, ws->e, GLOBAL_W, NULL, k, K, 1, 0, ws, NULL, NULL);
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

/* Onsets within [event, event + window) of any event, against what the
 * share of steps so covered would give by chance. */
static void near_events(const int64_t *ons, size_t ns, const int64_t *ev, size_t ne, int64_t window, int64_t lo,
                        int64_t hi, char *hit, double *near, double *expected, double *p)
{
	size_t hits = 0, e = 0;
	for (size_t i = 0; i < ns; i++) {
		while (e < ne && ev[e] + window <= ons[i])
			e++;
		hit[i] = e < ne && ev[e] <= ons[i];
		hits += (size_t)hit[i];
	}
	double covered = fmin(1, (double)ne * (double)window / fmax(1, (double)(hi - lo + 1)));
	*near = (double)hits;
	*expected = covered * (double)ns;
	*p = rm_binom_sf((double)hits, (double)ns, covered);
}

/* Onsets x bucket, each onset by the bucket shares of its point: chi-square
 * with Cramer's V, and each bucket's enrichment (share of onsets over share
 * of points, binomial p). */
/* Each bucket's share of the onsets' points. */
static void onset_counts(const struct rm_prepared *p, const struct onset *ev, size_t ne, double *cnt)
{
	memset(cnt, 0, (size_t)p->k * sizeof(double));
	for (size_t i = 0; i < ne; i++) {
		size_t j = ev[i].at;
		if (p->dom[j] < 0)
			continue;
		if (p->onehot[j])
			cnt[p->dom[j]]++;
		else
			for (int b = 0; b < p->k; b++)
				cnt[b] += rm_prepared_share(p, j, b);
	}
}

/* Could S onsets show bucket b at all? The most they could hold of it is
 * the sum of the S largest shares of b among the points (a histogram of
 * the shares, in hundredths, summed from the top); that count's binomial
 * tail against b's share of the points says whether any placement could
 * be significant. */
static int bucket_visible(const struct rm_prepared *p, int b, double S, double share)
{
	size_t hist[101] = {0};
	for (size_t j = 0; j < p->n; j++)
		if (p->dom[j] >= 0)
			hist[(int)lround(100 * rm_prepared_share(p, j, b))]++;
	double left = S, most = 0;
	for (int h = 100; h >= 0 && left > 0; h--) {
		double take = fmin(left, (double)hist[h]);
		most += take * h / 100.0;
		left -= take;
	}
	return rm_binom_sf(most, S, share) < EXPLAINED_P;
}

static double chi2_cell(double observed, double expected)
{
	return expected > 0 ? (observed - expected) * (observed - expected) / expected : 0;
}

static void onsets_by_bucket(const struct rm_prepared *p, const struct onset *ev, size_t ne, struct rm_resets_result *r)
{
	double npts[RM_MAX_BUCKETS] = {0}, tot = 0, cnt[RM_MAX_BUCKETS];
	for (size_t j = 0; j < p->n; j++)
		for (int b = 0; b < p->k && p->dom[j] >= 0; b++) {
			double s = rm_prepared_share(p, j, b);
			npts[b] += s;
			tot += s;
		}
	onset_counts(p, ev, ne, cnt);
	double S = 0;
	for (int b = 0; b < p->k; b++) {
		S += cnt[b];
		r->bucket[b] = p->bucket_id[b];
		r->bucket_spikes[b] = (size_t)llround(cnt[b]);
	}
	if (p->k < 2 || S < 1 || tot <= 0)
		return;
	/* Buckets where fewer than MIN_EXPECTED onsets are expected are pooled
	 * into one chi-square cell (its approximation fails below it). The
	 * exact binomial test of a bucket needs no such floor, but a bucket
	 * expecting less than one onset (3 batches in 20,000) turns any two
	 * near it into a huge "enrichment": it is never called enriched alone.
	 * A floor of 5 there would miss the simulator's bucket resets (15 of
	 * 15 in a bucket of a sixth of the steps: 2.5 expected, p 1e-9). */
	double chi2 = 0, pool_o = 0, pool_n = 0, pool_share = 0;
	int cells = 0;
	for (int b = 0; b < p->k; b++) {
		double share = npts[b] / tot, es = S * share;
		double os = cnt[b], on = npts[b] - os;
		r->enrichment[b] = share > 0 ? (os / S) / share : 0;
		r->enrich_p[b] = es >= MIN_ENRICH ? rm_binom_sf(cnt[b], S, share) : 1;
		if (es < MIN_EXPECTED) {
			pool_o += os;
			pool_n += on;
			pool_share += share;
			continue;
		}
		chi2 += chi2_cell(os, es) + chi2_cell(on, (tot - S) * share);
		cells++;
	}
	if (S * pool_share >= MIN_EXPECTED) {
		chi2 += chi2_cell(pool_o, S * pool_share) + chi2_cell(pool_n, (tot - S) * pool_share);
		cells++;
	}
	int visible = 0;
	for (int b = 0; b < p->k && !visible; b++)
		visible = npts[b] > 0 && bucket_visible(p, b, S, npts[b] / tot);
	r->bucket_blind = !visible;
	r->chi2 = chi2;
	r->chi2_df = cells > 1 ? cells - 1 : 0;
	r->chi2_p = cells > 1 ? rm_chi2_sf(chi2, r->chi2_df) : 1;
	r->cramers_v = sqrt(chi2 / tot);
}

/* Do the onsets fall on longer (or shorter) batches than the points do?
 * The onsets' mean log length against all points', in standard errors:
 * with buckets a coarse cut of the length (a least-padding fit), a
 * bucket's resets may show only in their lengths. */
static double length_lean(const struct rm_prepared *p, const struct onset *ev, size_t ne)
{
	if (!p->blog || ne < 3)
		return 0;
	double sum = 0, sq = 0, on = 0;
	size_t m = 0, mo = 0;
	for (size_t j = 0, i = 0; j < p->n; j++) {
		double v = 0;
		size_t c = 0;
		for (size_t t = rm_pt_from(p, j), to = rm_pt_to(p, j); t < to; t++)
			if (!isnan(p->blog[t])) {
				v += p->blog[t];
				c++;
			}
		while (i < ne && ev[i].at < j)
			i++;
		if (!c)
			continue;
		v /= (double)c;
		sum += v;
		sq += v * v;
		m++;
		if (i < ne && ev[i].at == j) {
			on += v;
			mo++;
		}
	}
	if (m < 2 || mo < 3)
		return 0;
	double mean = sum / (double)m, sd = sqrt(fmax(0, sq / (double)m - mean * mean));
	return sd > 0 ? (on / (double)mo - mean) / (sd / sqrt((double)mo)) : 0;
}

/* Checkpoint saves every `every` steps: the onsets within w (widened by the
 * logging interval K) steps after a save against the share of steps so
 * covered (binomial), and Rayleigh's R. */
static void checkpoint_test(const struct rm_prepared *p, const struct onset *ev, const int64_t *ss, size_t ns,
                            int64_t every, int64_t K, char *hit, struct rm_resets_result *r)
{
	int64_t lo = p->step[0], hi = p->step[p->n - 1];
	rayleigh(ss, ns, every, &r->ckpt_r, &r->ckpt_p);
	/* Saves at every multiple of P: an onset is near one when its phase is
	 * below w. Counted, not listed: a run whose steps jump to 2^53 with
	 * saves every 7 steps would need petabytes (fuzz_diagnose). */
	int64_t P = every, w = (P / 50 > 5 ? P / 50 : 5) + K - 1;
	if (w >= P)
		w = P - 1 > 0 ? P - 1 : 1;
	size_t hits = 0;
	for (size_t i = 0; i < ns; i++) { /* the first save is at step P */
		hit[i] = ss[i] >= P && ss[i] % P < w;
		hits += (size_t)hit[i];
	}
	double nsaves = (double)(hi / P - (lo > P ? (lo - 1) / P : 0)); /* saves at P, 2P, ... in the run */
	double covered = fmin(1, nsaves * (double)w / fmax(1, (double)(hi - lo) + 1));
	/* Where the batch order repeats (an interleaved order whose cycle
	 * divides the save interval), a bucket may sit at the same phases as
	 * the saves: an onset of bucket b is near a save as often as b's
	 * points are. */
	if (p->k >= 2) {
		double near[RM_MAX_BUCKETS] = {0}, all[RM_MAX_BUCKETS] = {0}, expect = 0;
		for (size_t j = 0; j < p->n; j++)
			if (p->dom[j] >= 0) {
				all[p->dom[j]]++;
				near[p->dom[j]] += p->step[j] >= P && p->step[j] % P < w;
			}
		for (size_t i = 0; i < ns; i++) {
			int b = p->dom[ev[i].at];
			expect += b >= 0 && all[b] > 0 ? near[b] / all[b] : covered;
		}
		covered = fmin(1, fmax(covered, expect / (double)ns));
	}
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

/* Keeps the RM_MAX_LIST largest onsets (by peak over expected) in r->list,
 * and counts every onset in its chart column (a chart marks them all). */
static void list_onsets(const struct rm_prepared *p, const double *e, const struct onset *ev, size_t ne,
                        struct rm_resets_result *r)
{
	size_t nl = 0;
	for (size_t i = 0; i < ne; i++) {
		size_t j = ev[i].at;
		uint16_t *at = &r->cover[rm_plot_col(p->step[j], p->step[0], p->step[p->n - 1])];
		*at += *at < UINT16_MAX;
		double base = p->y[j] / exp(e[j]); /* the expected level */
		struct rm_spike cand = {
		    p->step[j], p->dom[j] >= 0 ? p->bucket_id[p->dom[j]] : -1, p->y[j], base, ev[i].peak, ev[i].len};
		if (nl < RM_MAX_LIST)
			r->list[nl++] = cand;
		else if (cand.peak > r->list[nl - 1].peak)
			r->list[nl - 1] = cand;
		else
			continue;
		for (size_t a = nl - 1; a > 0 && r->list[a].peak > r->list[a - 1].peak; a--) {
			struct rm_spike t = r->list[a];
			r->list[a] = r->list[a - 1];
			r->list[a - 1] = t;
		}
	}
}

/* The events a person would suspect: epoch boundaries and learning-rate
 * changes near the onsets. */
static void competing_causes(const struct rm_prepared *p, const struct rm_series *s, const int64_t *ss, size_t ns,
                             int64_t K, char *hit_epoch, char *hit_lr, struct rm_resets_result *r)
{
	size_t n = p->n, ne = 0;
	int64_t lo = p->step[0], hi = p->step[n - 1];
	int64_t *ev = rm_xmalloc((n > 64 ? n : 64) * sizeof(int64_t));
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
		near_events(ss, ns, ev, ne, w + K, lo, hi, hit_epoch, &r->epoch_near, &r->epoch_expected, &r->epoch_p);
	}
	ne = lr_changes(p, ev);
	r->lr_changes = ne;
	if (ne > 0 && ns > 0)
		near_events(ss, ns, ev, ne, 10 + K, lo, hi, hit_lr, &r->lr_near, &r->lr_expected, &r->lr_p);
	free(ev);
}

void rm_detect_resets(const struct rm_prepared *p, const struct rm_split_result *sp, const double *len_adj,
                      const struct rm_series *s, const struct rm_detect_opts *o, struct rm_resets_result *r)
{
	memset(r, 0, sizeof(*r));
	r->chi2_p = r->ckpt_p = r->epoch_p = r->lr_p = r->period_p = 1;
	r->period_beyond_bucket_p = r->bucket_beyond_period_p = 1;
	for (int i = 0; i < RM_MAX_BUCKETS; i++)
		r->enrich_p[i] = 1;
	if (p->n < 2 * GLOBAL_W || !sp->trend)
		return;
	r->ok = 1;
	size_t n = p->n;
	double K = spacing(p);
	r->interval = K;
	/* steps a point averages: its spacing, unless each is one step's loss */
	double A = s->reading == RM_READ_STEP ? 1 : K;
	struct work ws = {rm_xmalloc(n * sizeof(double)), rm_xmalloc(n * sizeof(double)),
	                  rm_xmalloc(n * sizeof(double)), NULL};
	/* What a framework's spike detector sees, raw and adjusted. */
	r->spikes_global = global_onsets(p, p->y, o->hampel_k, A, &ws);
	if (sp->adjusted || len_adj)
		r->spikes_adjusted = global_onsets(p, len_adj ? len_adj : sp->adjusted, o->hampel_k, A, &ws);
	r->vanish_share = r->spikes_global && r->spikes_adjusted < r->spikes_global
	                      ? 1 - (double)r->spikes_adjusted / (double)r->spikes_global
	                      : 0;
	/* Onsets against the expected level. */
	double *e = ws.e;
	char *mark = rm_xcalloc(n, 1);
	struct onsets found = {0};
	double *own;
	excess(p, sp, len_adj, &ws, &own);
	size_t ne = find_onsets(p, e, LOCAL_W < n / 2 ? LOCAL_W : (n / 2) | 1, own, o->hampel_k, A, K > 1 ? 1 : 2, 1,
	                        &ws, mark, &found);
	struct onset *ev = found.v;
	free(own);
	r->spikes = ne;
	r->k = p->k;
	int64_t *ss = rm_xmalloc((ne ? ne : 1) * sizeof(int64_t));
	for (size_t i = 0; i < ne; i++) {
		ss[i] = p->step[ev[i].at];
		r->spikes_2x += ev[i].area >= 1;
		r->with_composition += p->dom[ev[i].at] >= 0;
	}
	list_onsets(p, e, ev, ne, r);
	/* The events a person would suspect; the onsets they clearly explain
	 * are left out of the test by bucket (an interleaved order that
	 * repeats may put one bucket at every save). */
	char *hit = rm_xcalloc(3 * (ne ? ne : 1), 1), *hit_ckpt = hit, *hit_epoch = hit + ne, *hit_lr = hit + 2 * ne;
	r->checkpoint_every = s->checkpoint_every;
	if (s->checkpoint_every > 1 && ne >= 3)
		checkpoint_test(p, ev, ss, ne, s->checkpoint_every, (int64_t)K, hit_ckpt, r);
	competing_causes(p, s, ss, ne, (int64_t)K, hit_epoch, hit_lr, r);
	size_t kept = 0;
	for (size_t i = 0; i < ne; i++) {
		int explained = (r->ckpt_near && r->ckpt_p < EXPLAINED_P && hit_ckpt[i]) ||
		                (r->epoch_near && r->epoch_p < EXPLAINED_P && hit_epoch[i]) ||
		                (r->lr_near && r->lr_p < EXPLAINED_P && hit_lr[i]);
		if (!explained)
			ev[kept++] = ev[i];
	}
	r->bucket_tested = kept;
	onsets_by_bucket(p, ev, kept, r);
	r->length_z = length_lean(p, ev, kept);
	free(hit);
	if (s->checkpoint_every <= 1) /* a configured interval wins: no search */
		rm_detect_period(p, mark, r);
	free(ss);
	free(ev);
	free(mark);
	free(ws.med);
	free(ws.x);
	free(ws.tmp);
	free(ws.e);
}
