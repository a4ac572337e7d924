/*
 * detect_split.c - loss split by bucket: y_t = trend(t) + offset(b_t) + noise.
 *
 * Backfitting (Hastie & Tibshirani, Generalized Additive Models, 1990):
 * the trend is a robust smooth (running median of block medians) over a
 * window much longer than same-bucket runs, so a streak cannot pass for a
 * trend; the offsets are a least-squares fit of the detrended loss on each
 * point's bucket shares (one-hot when the trainer logs every step), refit
 * after trimming points beyond 4 robust sigmas. One round on the loss and
 * one on log(loss) pick the scale that explains more, which gets a second
 * round: per-bucket gaps shrink as training goes on, roughly in proportion.
 * eta^2 = 1 - SS_res / SS_tot of the detrended loss, with the F-test of the
 * k-1 offsets. Independently of bucket ids, a Gaussian mixture (EM,
 * k = 1..4, chosen by BIC = -2 logL + (3k - 1) ln n; Schwarz 1978) counts
 * the modes of the detrended loss and maps buckets onto them: "aligned"
 * when each bucket's points mostly fall in one mode (>= 80%), "trimodal"
 * when aligned with exactly three modes.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define GMM_MAX    4
#define GMM_SAMPLE 20000
#define GRID       1024

/* Robust trend: medians of blocks of B points, a running median over
 * those, and linear interpolation between block centres. O(n + m log m). */
static void smooth_trend(const double *a, size_t n, size_t w, double *out)
{
	size_t B = w / 15 > 1 ? w / 15 : 1, m = (n + B - 1) / B;
	double *blk = rm_xmalloc(m * sizeof(double)), *sm = rm_xmalloc(m * sizeof(double));
	double *scratch = rm_xmalloc(B * sizeof(double));
	for (size_t b = 0; b < m; b++) {
		size_t lo = b * B, hi = lo + B < n ? lo + B : n;
		blk[b] = rm_median(a + lo, hi - lo, scratch);
	}
	size_t wb = w / B;
	rm_running_median(blk, m, wb | 1, sm);
	for (size_t i = 0; i < n; i++) {
		double pos = ((double)i - (double)(B - 1) / 2) / (double)B;
		if (pos <= 0 || m == 1) {
			out[i] = sm[0];
			continue;
		}
		size_t b = (size_t)pos;
		if (b + 1 >= m) {
			out[i] = sm[m - 1];
			continue;
		}
		double f = pos - (double)b;
		out[i] = sm[b] * (1 - f) + sm[b + 1] * f;
	}
	free(blk);
	free(sm);
	free(scratch);
}

/* The point covers batches of known bucket (and buckets are in use). */
static int has(const struct rm_prepared *p, size_t j)
{
	return p->k > 0 && p->dom[j] >= 0;
}

/* Least squares of r on the shares of points [from, to) with batches,
 * skipping those with keep[j] == 0; wsum gets each bucket's share mass. */
static void solve_offsets(const struct rm_prepared *p, const double *r, const char *keep, size_t from, size_t to,
                          double *o, double *wsum)
{
	int k = p->k;
	double A[RM_MAX_BUCKETS * RM_MAX_BUCKETS] = {0}, b[RM_MAX_BUCKETS] = {0};
	memset(wsum, 0, (size_t)k * sizeof(*wsum));
	for (size_t j = from; j < to; j++) {
		if (!has(p, j) || (keep && !keep[j]))
			continue;
		if (p->onehot[j]) { /* the common case, O(1); share is NULL when every point is */
			int i = p->dom[j];
			A[i * k + i] += 1;
			b[i] += r[j];
			wsum[i] += 1;
			continue;
		}
		const float *s = p->share + j * (size_t)k;
		for (int i = 0; i < k; i++) {
			if (s[i] == 0)
				continue;
			wsum[i] += s[i];
			b[i] += s[i] * r[j];
			for (int l = 0; l < k; l++)
				A[i * k + l] += (double)s[i] * s[l];
		}
	}
	rm_solve(A, b, k, o);
}

/* The offsets over every point, centred to a zero weighted mean. */
static void fit_offsets(const struct rm_prepared *p, const double *r, const char *keep, double *o, double *wsum)
{
	int k = p->k;
	solve_offsets(p, r, keep, 0, p->n, o, wsum);
	double mean = 0, tot = 0;
	for (int i = 0; i < k; i++) {
		mean += o[i] * wsum[i];
		tot += wsum[i];
	}
	mean = tot > 0 ? mean / tot : 0;
	for (int i = 0; i < k; i++)
		o[i] -= mean;
}

static double fitted(const struct rm_prepared *p, const double *o, size_t j)
{
	if (!has(p, j))
		return 0;
	if (p->onehot[j])
		return o[p->dom[j]];
	const float *s = p->share + j * (size_t)p->k;
	double v = 0;
	for (int i = 0; i < p->k; i++)
		v += s[i] * o[i];
	return v;
}

struct fit {
	double o[RM_MAX_BUCKETS], w[RM_MAX_BUCKETS];
	double eta2, f, df1, df2, p;
	double *trend, *resid; /* resid: z - trend */
	char *keep;            /* the points the offsets were fitted on (outliers trimmed) */
};

/* Mean same-bucket run length in batches. */
static double mean_run(const struct rm_prepared *p)
{
	size_t runs = p->nb ? 1 : 0;
	for (size_t t = 1; t < p->nb; t++)
		runs += p->bseq[t] != p->bseq[t - 1];
	return runs ? (double)p->nb / (double)runs : 1;
}

static size_t trend_window(const struct rm_prepared *p)
{
	double spacing = p->n > 1 ? (double)(p->step[p->n - 1] - p->step[0]) / (double)(p->n - 1) : 1;
	/* Wide enough to hold many runs of one bucket, or of alike lengths (a
	 * bucket derived from length can cut a true bucket's run in pieces). */
	double w_steps = fmax(200, 20 * fmax(mean_run(p), p->len_run));
	size_t w = (size_t)(w_steps / fmax(spacing, 1));
	if (w > p->n / 3)
		w = p->n / 3;
	if (w < 5)
		w = 5;
	return w | 1;
}

/* One backfitting round: trend of z minus the current offsets, then the
 * offsets of z minus that trend, refit without points beyond 4 robust
 * sigmas. Then eta^2 and the F-test for the current fit. */
static void fit_round(const struct rm_prepared *p, const double *z, size_t w, struct fit *f)
{
	size_t n = p->n;
	if (!f->trend) {
		f->trend = rm_xmalloc(n * sizeof(double));
		f->resid = rm_xmalloc(n * sizeof(double));
		f->keep = rm_xmalloc(n);
		memset(f->o, 0, sizeof(f->o));
	}
	char *keep = f->keep;
	/* resid serves twice as scratch (a long run need not hold another
	 * array): the input of the smoothing, then the deviations whose median
	 * is the scale; each time it is made the residual again after. */
	double *resid = f->resid;
	for (size_t j = 0; j < n; j++)
		resid[j] = z[j] - fitted(p, f->o, j);
	smooth_trend(resid, n, w, f->trend);
	for (size_t j = 0; j < n; j++)
		resid[j] = z[j] - f->trend[j];
	fit_offsets(p, resid, NULL, f->o, f->w);
	size_t m = 0;
	for (size_t j = 0; j < n; j++) /* m <= j: what is overwritten was read */
		if (has(p, j))
			resid[m++] = fabs(resid[j] - fitted(p, f->o, j));
	double mad = m ? 1.4826 * rm_median_inplace(resid, m) : 0;
	for (size_t j = 0; j < n; j++)
		resid[j] = z[j] - f->trend[j];
	for (size_t j = 0; j < n; j++)
		keep[j] = fabs(resid[j] - fitted(p, f->o, j)) <= 4 * mad + 1e-300;
	fit_offsets(p, f->resid, keep, f->o, f->w);
	/* eta^2 and F over the points with batches. */
	double mean = 0, sst = 0, ssr = 0, cnt = 0;
	for (size_t j = 0; j < n; j++)
		if (has(p, j)) {
			mean += f->resid[j];
			cnt++;
		}
	mean = cnt ? mean / cnt : 0;
	for (size_t j = 0; j < n; j++) {
		if (!has(p, j))
			continue;
		double e = f->resid[j] - mean, r = f->resid[j] - mean - fitted(p, f->o, j);
		sst += e * e;
		ssr += r * r;
	}
	f->eta2 = sst > 0 ? fmax(0, 1 - ssr / sst) : 0;
	f->df1 = p->k - 1;
	f->df2 = cnt - p->k;
	f->f = f->df1 > 0 && f->df2 > 0 && ssr > 0 ? ((sst - ssr) / f->df1) / (ssr / f->df2) : 0;
	f->p = f->df1 > 0 && f->df2 > 0 ? (ssr > 0 ? rm_f_sf(f->f, f->df1, f->df2) : 0) : 1;
}

static void fit_release(struct fit *f)
{
	free(f->trend);
	free(f->resid);
	free(f->keep);
	f->trend = f->resid = NULL;
	f->keep = NULL;
}

#define LEVEL_BLOCKS   20 /* contiguous blocks of points, each fitted alone */
#define LEVEL_MIN_MASS 10 /* points' worth of a bucket for a block to estimate it */

/* 95% intervals of the levels by batch means (Conway 1963; Law and
 * Kelton, Simulation Modeling and Analysis, ch. 9): the offsets fitted on
 * each of 20 contiguous blocks of points vary as the estimate does, trend
 * residuals that wander over hundreds of steps included, where the
 * least-squares standard error would take the points as independent. A
 * bucket needs 5 blocks with 10 points of it, and blocks as long as the
 * trend window; else its interval is NaN. */
static void level_intervals(const struct rm_prepared *p, const struct fit *f, size_t window, int use_log,
                            struct rm_split_result *r)
{
	int k = p->k;
	for (int i = 0; i < k; i++)
		r->level_lo[i] = r->level_hi[i] = NAN;
	/* Blocks shorter than the trend window share its errors, which then
	 * pass for agreement. And with buckets in streaks (same-bucket runs of
	 * over 10 points on average) the trend and the buckets are partly
	 * confounded: there the intervals covered the true levels 74-90% of the
	 * time, not 95% (tests/bench/detect_rates), so none are given. */
	if (p->n / LEVEL_BLOCKS < window || mean_run(p) > 10)
		return;
	double sum[RM_MAX_BUCKETS] = {0}, sq[RM_MAX_BUCKETS] = {0}, o[RM_MAX_BUCKETS], w[RM_MAX_BUCKETS];
	int m[RM_MAX_BUCKETS] = {0};
	for (int b = 0; b < LEVEL_BLOCKS; b++) {
		size_t from = p->n * (size_t)b / LEVEL_BLOCKS, to = p->n * (size_t)(b + 1) / LEVEL_BLOCKS;
		solve_offsets(p, f->resid, f->keep, from, to, o, w);
		for (int i = 0; i < k; i++)
			if (w[i] >= LEVEL_MIN_MASS) {
				sum[i] += o[i];
				sq[i] += o[i] * o[i];
				m[i]++;
			}
	}
	for (int i = 0; i < k; i++) {
		if (m[i] < 5)
			continue;
		double mean = sum[i] / m[i], var = fmax(0, (sq[i] - m[i] * mean * mean) / (m[i] - 1));
		double half = rm_t_quantile(0.975, m[i] - 1) * sqrt(var / m[i]);
		/* about the whole run's estimate, which the blocks' mean estimates too */
		r->level_lo[i] = use_log ? exp(f->o[i] - half) : f->o[i] - half;
		r->level_hi[i] = use_log ? exp(f->o[i] + half) : f->o[i] + half;
	}
}

#define GMM_BINS 512

/* One-dimensional Gaussian mixture by EM over a histogram of x (sorted
 * ascending; bins between the 0.1% and 99.9% quantiles, counts as
 * weights), started at evenly spaced quantiles. Binning makes each EM
 * iteration O(bins * k) whatever n is. Returns the log-likelihood. */
static double gmm(const double *x, size_t n, int k, double *mu, double *var, double *w)
{
	double lo = x[(size_t)(0.001 * (double)n)], hi = x[(size_t)(0.999 * (double)(n - 1))];
	double width = (hi - lo) / GMM_BINS, cnt[GMM_BINS] = {0}, ctr[GMM_BINS];
	if (!(width > 0))
		width = 1e-12;
	for (size_t i = 0; i < n; i++) {
		double t = (x[i] - lo) / width; /* clamped before the cast: losses may span 1e308 (fuzz_diagnose) */
		cnt[!(t >= 0) ? 0 : t >= GMM_BINS ? GMM_BINS - 1 : (int)t]++;
	}
	double m = 0, v = 0;
	for (int b = 0; b < GMM_BINS; b++) {
		ctr[b] = lo + (b + 0.5) * width;
		m += cnt[b] * ctr[b];
	}
	m /= (double)n;
	for (int b = 0; b < GMM_BINS; b++)
		v += cnt[b] * (ctr[b] - m) * (ctr[b] - m);
	v = fmax(v / (double)n, width * width);
	for (int c = 0; c < k; c++) {
		mu[c] = x[(size_t)(((double)c + 0.5) / k * (double)n)];
		var[c] = v / (k * k);
		w[c] = 1.0 / k;
	}
	double resp[GMM_BINS][GMM_MAX], ll = -INFINITY;
	for (int it = 0; it < 300; it++) {
		double nll = 0;
		for (int b = 0; b < GMM_BINS; b++) {
			double tot = 0;
			for (int c = 0; c < k; c++) {
				double d = ctr[b] - mu[c];
				resp[b][c] = w[c] * exp(-0.5 * d * d / var[c]) / sqrt(2 * M_PI * var[c]);
				tot += resp[b][c];
			}
			tot = fmax(tot, 1e-300);
			nll += cnt[b] * log(tot);
			for (int c = 0; c < k; c++)
				resp[b][c] /= tot;
		}
		for (int c = 0; c < k; c++) {
			double sw = 0, sx = 0, sxx = 0;
			for (int b = 0; b < GMM_BINS; b++) {
				sw += cnt[b] * resp[b][c];
				sx += cnt[b] * resp[b][c] * ctr[b];
			}
			if (sw < 1e-9)
				continue;
			mu[c] = sx / sw;
			for (int b = 0; b < GMM_BINS; b++)
				sxx += cnt[b] * resp[b][c] * (ctr[b] - mu[c]) * (ctr[b] - mu[c]);
			/* floor: a component narrower than a bin is an artefact */
			var[c] = fmax(sxx / sw, width * width);
			w[c] = sw / (double)n;
		}
		if (fabs(nll - ll) < 1e-9 * (double)n) {
			ll = nll;
			break;
		}
		ll = nll;
	}
	return ll;
}

/* Index of the lowest density strictly between grid points a < b. */
static int valley(const double *dens, int a, int b)
{
	int v = a + 1;
	for (int g = a + 1; g < b; g++)
		if (dens[g] < dens[v])
			v = g;
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void modes(const struct rm_prepared *p, const double *resid, struct rm_split_result *r)
{
	size_t stride = p->n > GMM_SAMPLE ? p->n / GMM_SAMPLE : 1, m = 0;
	double *x = rm_xmalloc((p->n / stride + 1) * sizeof(double));
	size_t *at = rm_xmalloc((p->n / stride + 1) * sizeof(size_t));
	for (size_t j = 0; j < p->n; j += stride) {
		at[m] = j;
		x[m++] = resid[j];
	}
	double best = INFINITY;
	double mu[GMM_MAX][GMM_MAX], var[GMM_MAX][GMM_MAX], w[GMM_MAX][GMM_MAX];
	int kbest = 1;
	/* quantile initialisation wants sorted data */
	double *sorted = rm_xmalloc(m * sizeof(double));
	memcpy(sorted, x, m * sizeof(double));
	qsort(sorted, m, sizeof(double), cmp_double);
	for (int k = 1; k <= GMM_MAX && (size_t)k * 10 <= m; k++) {
		double ll = gmm(sorted, m, k, mu[k - 1], var[k - 1], w[k - 1]);
		r->bic[k - 1] = -2 * ll + (3.0 * k - 1) * log((double)m);
		if (r->bic[k - 1] < best) {
			best = r->bic[k - 1];
			kbest = k;
		}
	}
	free(sorted);
	/* Modes are the peaks of the fitted density, not its components: two
	 * overlapping Gaussians make one peak. Basins split at the valleys. */
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < m; i++) {
		lo = fmin(lo, x[i]);
		hi = fmax(hi, x[i]);
	}
	double dens[GRID], *M = mu[kbest - 1], *V = var[kbest - 1], *W = w[kbest - 1];
	for (int g = 0; g < GRID; g++) {
		double xx = lo + (hi - lo) * g / (GRID - 1), f = 0;
		for (int c = 0; c < kbest; c++)
			f += W[c] * exp(-0.5 * (xx - M[c]) * (xx - M[c]) / V[c]) / sqrt(V[c]);
		dens[g] = f;
	}
	/* Local maxima; then, while two neighbours are not separated by a
	 * valley 10% below the lower one, drop the lower. */
	int pk[GRID], npk = 0;
	for (int g = 1; g < GRID - 1; g++)
		if (dens[g] > dens[g - 1] && dens[g] >= dens[g + 1])
			pk[npk++] = g;
	if (npk == 0)
		pk[npk++] = dens[0] >= dens[GRID - 1] ? 0 : GRID - 1;
	for (int merged = 1; merged && npk > 1;) {
		merged = 0;
		for (int i = 0; i + 1 < npk && !merged; i++) {
			int v = valley(dens, pk[i], pk[i + 1]), low = dens[pk[i]] < dens[pk[i + 1]] ? i : i + 1;
			if (dens[v] * 1.1 > dens[pk[low]]) {
				memmove(pk + low, pk + low + 1, (size_t)(npk - low - 1) * sizeof(int));
				npk--;
				merged = 1;
			}
		}
	}
	if (npk > GMM_MAX)
		npk = GMM_MAX;
	double *cut = r->mode_cut; /* basin c is [cut[c], cut[c+1]) */
	cut[0] = -INFINITY;
	for (int i = 0; i < npk; i++) {
		r->mode_mean[i] = lo + (hi - lo) * pk[i] / (GRID - 1);
		cut[i + 1] = i + 1 < npk ? lo + (hi - lo) * valley(dens, pk[i], pk[i + 1]) / (GRID - 1) : INFINITY;
		r->mode_depth[i] =
		    i + 1 < npk ? dens[valley(dens, pk[i], pk[i + 1])] / fmin(dens[pk[i]], dens[pk[i + 1]]) : 0;
	}
	r->modes = npk;
	double mass[GMM_MAX] = {0};
	int *basin = rm_xmalloc(m * sizeof(int));
	for (size_t i = 0; i < m; i++) {
		int c = 0;
		while (c + 1 < npk && x[i] >= cut[c + 1])
			c++;
		basin[i] = c;
		mass[c]++;
	}
	for (int c = 0; c < npk; c++)
		r->mode_weight[c] = mass[c] / (double)m;
	/* Map each bucket's pure points onto their mode. */
	double votes[RM_MAX_BUCKETS][GMM_MAX] = {{0}};
	for (size_t i = 0; i < m; i++) {
		size_t j = at[i];
		int d = p->dom[j];
		if (!has(p, j) || !p->onehot[j])
			continue;
		votes[d][basin[i]]++;
	}
	free(basin);
	int kbest_modes = npk;
	int used[GMM_MAX] = {0}, lined_up = 0;
	double pur_num = 0, pur_den = 0;
	for (int i = 0; i < p->k; i++) {
		double tot = 0, top = 0;
		int topc = -1;
		for (int c = 0; c < kbest_modes; c++) {
			tot += votes[i][c];
			if (votes[i][c] > top) {
				top = votes[i][c];
				topc = c;
			}
		}
		r->mode_of_bucket[i] = topc;
		r->bucket_purity[i] = tot > 0 ? top / tot : 0;
		if (topc >= 0 && !used[topc]) {
			used[topc] = 1;
			lined_up++;
		}
		pur_num += top;
		pur_den += tot;
	}
	r->aligned = npk >= 2 && lined_up >= 2 && pur_den > 0 && pur_num / pur_den >= 0.8;
	r->trimodal = r->aligned && npk == 3 && lined_up == 3;
	free(x);
	free(at);
}

#define LEVEL_DEPTH      0.5  /* a valley at most this share of the lower peak's density parts two levels */
#define LEVEL_SEED_DEPTH 0.8  /* looser, for the levels the backfitting starts from */
#define LEVEL_SHARE      0.10 /* of the points, each level: resets' excursions hold fewer */
#define LEVEL_VISITS     5    /* separate runs of points at each level */

/* Merges level i + 1 into level i. */
static void merge_level(struct rm_split_result *r, int i, double *depth)
{
	r->level_share[i] += r->level_share[i + 1];
	depth[i] = depth[i + 1];
	for (int c = i + 1; c + 1 < r->levels; c++) {
		r->level_share[c] = r->level_share[c + 1];
		r->level_cut[c] = r->level_cut[c + 1];
		depth[c] = depth[c + 1];
	}
	r->level_cut[r->levels - 1] = r->level_cut[r->levels];
	r->levels--;
}

/* Without composition: the modes of the detrended loss (resid) that are
 * levels, deeply parted and each held by enough points visited often
 * enough, and the runs test on the sequence of levels the points sit at. */
static void loss_levels(const struct rm_prepared *p, const double *resid, int log_scale, double max_depth,
                        struct rm_split_result *r)
{
	double depth[GMM_MAX];
	r->levels = r->modes;
	r->level_log = log_scale;
	for (int c = 0; c <= r->modes; c++)
		r->level_cut[c] = r->mode_cut[c];
	for (int c = 0; c < r->modes; c++) {
		r->level_share[c] = r->mode_weight[c];
		depth[c] = r->mode_depth[c];
	}
	for (int i = 0; i + 1 < r->levels;) /* shallow valleys are one level */
		if (depth[i] > max_depth)
			merge_level(r, i, depth);
		else
			i++;
	for (int i = 0; i < r->levels && r->levels > 1; i++) /* a thin level joins its neighbour */
		if (r->level_share[i] < LEVEL_SHARE) {
			merge_level(r, i + 1 < r->levels ? i : i - 1, depth);
			i = -1;
		}
	if (r->levels < 2) {
		r->levels = 0;
		return;
	}
	size_t count[GMM_MAX] = {0}, visits[GMM_MAX] = {0}, runs = 0;
	double *v[GMM_MAX];
	for (int c = 0; c < r->levels; c++)
		v[c] = rm_xmalloc(p->n * sizeof(double));
	int prev = -1;
	for (size_t j = 0; j < p->n; j++) {
		int c = 0;
		while (c + 1 < r->levels && resid[j] >= r->level_cut[c + 1])
			c++;
		v[c][count[c]++] = resid[j];
		if (c != prev) {
			runs++;
			visits[c]++;
		}
		prev = c;
	}
	int ok = 1;
	for (int c = 0; c < r->levels; c++) {
		ok &= visits[c] >= LEVEL_VISITS;
		r->level_share[c] = (double)count[c] / (double)p->n;
		r->level_at[c] = count[c] ? rm_median_inplace(v[c], count[c]) : NAN;
		free(v[c]);
	}
	if (!ok) { /* a step change, not levels the loss keeps switching between */
		r->levels = 0;
		return;
	}
	for (int c = 0; c < r->levels; c++)
		r->level_ratio[c] = log_scale ? exp(r->level_at[c] - r->level_at[0]) : r->level_at[c] - r->level_at[0];
	double mean, var;
	rm_runs_moments(count, r->levels, &mean, &var);
	r->level_runs = runs;
	r->level_runs_expected = mean;
	r->level_runs_z = var > 0 ? ((double)runs - mean) / sqrt(var) : 0;
}

/* The loss alone: a first trend over a window wide enough for blocks of
 * levels (a fifth of the run), its levels; then, with each point labelled
 * by the level it sits at, backfitting as with buckets (the trend of the
 * loss less its level, over a window of a few label runs), and the levels
 * again. On log scale when every loss is positive. */
static void fit_alone(const struct rm_prepared *p, struct rm_split_result *r)
{
	size_t n = p->n;
	int positive = 1;
	for (size_t j = 0; j < n && positive; j++)
		positive = p->y[j] > 0;
	double *z = rm_xmalloc(n * sizeof(double));
	for (size_t j = 0; j < n; j++)
		z[j] = positive ? log(p->y[j]) : p->y[j];
	struct rm_prepared q = *p;
	struct fit f = {0};
	q.k = 0;
	/* A third of the run, then a fifth: the blocks' levels average out in
	 * the wider, a steep early trend fits the narrower. */
	for (int div = 3; div <= 5; div += 2) {
		size_t w = trend_window(p);
		if (w < (n / (size_t)div | 1))
			w = n / (size_t)div | 1;
		fit_release(&f);
		fit_round(&q, z, w, &f);
		modes(&q, f.resid, r);
		loss_levels(&q, f.resid, positive, LEVEL_SEED_DEPTH, r);
		if (r->levels >= 2)
			break;
	}
	int *label = r->levels >= 2 ? rm_xmalloc(n * sizeof(int)) : NULL;
	char *onehot = label ? rm_xmalloc(n) : NULL;
	for (int round = 0; label && round < 2; round++) {
		size_t runs = 0;
		for (size_t j = 0; j < n; j++) {
			int c = 0;
			while (c + 1 < r->levels && f.resid[j] >= r->level_cut[c + 1])
				c++;
			label[j] = c;
			onehot[j] = 1;
			runs += j == 0 || label[j] != label[j - 1];
		}
		struct rm_prepared lq = *p;
		lq.k = r->levels;
		lq.dom = label;
		lq.onehot = onehot;
		lq.share = NULL;
		size_t lw = 4 * (n / (runs ? runs : 1)) | 1;
		if (lw < (n / 20 | 1))
			lw = n / 20 | 1;
		if (lw < 201)
			lw = 201;
		if (lw > n / 3)
			lw = n / 3 | 1;
		for (int c = 0; c < r->levels; c++) /* backfitting starts from the levels found */
			f.o[c] = r->level_at[c];
		fit_round(&lq, z, lw, &f);
		fit_round(&lq, z, lw, &f);
		modes(&q, f.resid, r);
		loss_levels(&q, f.resid, positive, round ? LEVEL_DEPTH : LEVEL_SEED_DEPTH, r);
		if (r->levels < 2)
			break;
	}
	/* The level-adjusted loss: each point less the level it sits at, as the
	 * bucket-adjusted loss is each batch less its bucket's. */
	for (size_t j = 0; j < n; j++) {
		r->trend[j] = positive ? exp(f.trend[j]) : f.trend[j];
		double at = 0;
		if (r->levels >= 2) {
			int c = 0;
			while (c + 1 < r->levels && f.resid[j] >= r->level_cut[c + 1])
				c++;
			at = r->level_at[c];
		}
		r->adjusted[j] = positive ? p->y[j] * exp(-at) : p->y[j] - at;
	}
	free(label);
	free(onehot);
	free(z);
	fit_release(&f);
}

struct round_job {
	const struct rm_prepared *p;
	const double *z;
	size_t w;
	struct fit *f;
};

static void *round_thread(void *arg)
{
	struct round_job *j = arg;
	fit_round(j->p, j->z, j->w, j->f);
	return NULL;
}

void rm_detect_split(const struct rm_prepared *p, struct rm_split_result *r)
{
	memset(r, 0, sizeof(*r));
	r->k = p->k;
	for (int i = 0; i < p->k; i++)
		r->bucket[i] = p->bucket_id[i];
	if (p->n < 50)
		return;
	if (p->k < 2 || p->with_batches < 50) {
		r->trend = rm_xmalloc(p->n * sizeof(double));
		r->adjusted = rm_xmalloc(p->n * sizeof(double));
		/* No bucket information: the trend is still useful downstream,
		 * and without any composition the loss's own levels speak. */
		struct rm_prepared q = *p;
		struct fit f = {0};
		q.k = 0;
		if (p->nb == 0) {
			fit_alone(p, r);
			return;
		}
		fit_round(&q, p->y, trend_window(p), &f);
		memcpy(r->trend, f.trend, p->n * sizeof(double));
		memcpy(r->adjusted, p->y, p->n * sizeof(double));
		modes(&q, f.resid, r);
		fit_release(&f);
		return;
	}
	/* One round on each scale picks the scale; the winner gets a second.
	 * The two first rounds are independent: the linear one runs on a
	 * thread of its own (the other core is free once the order thread is
	 * done). */
	struct fit lin = {0}, lg = {0};
	size_t w = trend_window(p);
	int positive = 1;
	for (size_t j = 0; j < p->n && positive; j++)
		positive = p->y[j] > 0;
	struct round_job job = {p, p->y, w, &lin};
	pthread_t th;
	int threaded = positive && pthread_create(&th, NULL, round_thread, &job) == 0;
	if (!threaded)
		fit_round(p, p->y, w, &lin);
	int use_log = 0;
	double *z = NULL;
	if (positive) {
		z = rm_xmalloc(p->n * sizeof(double));
		for (size_t j = 0; j < p->n; j++)
			z[j] = log(p->y[j]);
		fit_round(p, z, w, &lg);
		if (threaded)
			pthread_join(th, NULL);
		use_log = lg.eta2 > lin.eta2;
		fit_release(use_log ? &lin : &lg); /* the loser's arrays, before round two */
	}
	fit_round(p, use_log ? z : p->y, w, use_log ? &lg : &lin);
	free(z);
	struct fit *f = use_log ? &lg : &lin;
	r->ok = 1;
	r->log_scale = use_log;
	for (int i = 0; i < p->k; i++) {
		r->offset[i] = f->o[i];
		r->level[i] = use_log ? exp(f->o[i]) : f->o[i];
		r->weight[i] = f->w[i];
	}
	r->eta2 = f->eta2;
	r->f = f->f;
	r->df1 = f->df1;
	r->df2 = f->df2;
	r->p = f->p;
	level_intervals(p, f, w, use_log, r);
	modes(p, f->resid, r);
	/* The winner's arrays become the trend and the adjusted loss, in place
	 * (a long run need not hold both at once). */
	for (size_t j = 0; j < p->n; j++) {
		double fit = fitted(p, f->o, j);
		f->trend[j] = use_log ? exp(f->trend[j]) : f->trend[j];
		f->resid[j] = use_log ? p->y[j] * exp(-fit) : p->y[j] - fit;
	}
	r->trend = f->trend;
	r->adjusted = f->resid;
	f->trend = f->resid = NULL;
	r->flagged = r->eta2 >= 0.1 && r->p < 1e-6;
	fit_release(&lin);
	fit_release(&lg);
}
