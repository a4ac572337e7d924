/*
 * stats.c - see runmon/stats.h. Distribution tails use the standard series and
 * continued-fraction expansions of the incomplete gamma and beta functions
 * (Abramowitz & Stegun 6.5.29/6.5.31, 26.5.8; Lentz's method for the
 * fractions).
 */
#include "runmon/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"

static void swap(double *a, double *b)
{
	double t = *a;
	*a = *b;
	*b = t;
}

/* Rearranges x[l..r] so that x[k] is the value of rank k, with smaller
 * ones before and larger ones after. Floyd and Rivest's SELECT (CACM 18(3),
 * 1975, Algorithm 489): the pivot is first placed by selecting within a
 * sample around k, so a pass over n values leaves only about n^(2/3) to
 * look at again. x[l] and x[r] are the sentinels of the partition loops. */
static void select_range(double *x, ptrdiff_t l, ptrdiff_t r, ptrdiff_t k)
{
	while (r > l) {
		if (r - l > 600) {
			double n = (double)(r - l + 1), i = (double)(k - l + 1), z = log(n);
			double s = 0.5 * exp(2 * z / 3), sd = 0.5 * sqrt(z * s * (n - s) / n) * (i < n / 2 ? -1 : 1);
			ptrdiff_t nl = (ptrdiff_t)((double)k - i * s / n + sd),
			          nr = (ptrdiff_t)((double)k + (n - i) * s / n + sd);
			select_range(x, nl > l ? nl : l, nr < r ? nr : r, k);
		}
		double t = x[k];
		ptrdiff_t i = l, j = r;
		swap(&x[l], &x[k]);
		if (x[r] > t)
			swap(&x[r], &x[l]);
		while (i < j) {
			swap(&x[i], &x[j]);
			i++;
			j--;
			while (x[i] < t)
				i++;
			while (x[j] > t)
				j--;
		}
		if (x[l] == t) {
			swap(&x[l], &x[j]);
		} else {
			j++;
			swap(&x[j], &x[r]);
		}
		if (j <= k)
			l = j + 1;
		if (k <= j)
			r = j - 1;
	}
}

/* The k-th smallest, reordering x so that x[0..k) <= x[k] <= x(k..n). */
static double select_k(double *x, size_t n, size_t k)
{
	select_range(x, 0, (ptrdiff_t)n - 1, (ptrdiff_t)k);
	return x[k];
}

double rm_median_inplace(double *x, size_t n)
{
	double m = select_k(x, n, n / 2);
	if (n % 2)
		return m;
	/* The lower middle is the largest of the lower half. */
	double lo = x[0];
	for (size_t i = 1; i < n / 2; i++)
		if (x[i] > lo)
			lo = x[i];
	return (lo + m) / 2;
}

double rm_median(const double *x, size_t n, double *scratch)
{
	memcpy(scratch, x, n * sizeof(*x));
	return rm_median_inplace(scratch, n);
}

double rm_mad(const double *x, size_t n, double med, double *scratch)
{
	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(x[i] - med);
	return rm_median_inplace(scratch, n);
}

struct ranked {
	double v;
	size_t i;
};

/* The order of the running medians: NaN after every number and equal to
 * any NaN, so that the order stays total (a value added to the window is
 * found again when it leaves) whatever a series holds. */
static int before(double a, double b)
{
	return a < b || (isnan(b) && !isnan(a));
}

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	return before(x->v, y->v) ? -1 : before(y->v, x->v) ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* Fenwick tree over ranks: count in window, k-th smallest by descent. */
static void fw_add(int *t, size_t n, size_t i, int d)
{
	for (i++; i <= n; i += i & (~i + 1))
		t[i] += d;
}

static size_t fw_kth(const int *t, size_t n, int k) /* 1-based k */
{
	size_t pos = 0, step = 1;
	while (step * 2 <= n)
		step *= 2;
	for (; step; step /= 2)
		if (pos + step <= n && t[pos + step] < k) {
			pos += step;
			k -= t[pos];
		}
	return pos; /* 0-based rank */
}

/* Index of the first element >= v in the sorted win[0..cnt). Branchless
 * (a conditional move per level): the comparisons are unpredictable. */
static size_t lower_bound(const double *win, size_t cnt, double v)
{
	if (cnt == 0)
		return 0;
	const double *base = win;
	while (cnt > 1) {
		size_t half = cnt / 2;
		base = before(base[half], v) ? base + half : base;
		cnt -= half;
	}
	return (size_t)(base - win) + before(*base, v);
}

/* Windows up to 2048: a sorted copy of the window. Once it is full, each step
 * replaces the leaving value by the entering one with a single shift of
 * the values between their positions. */
static void running_median_sorted(const double *x, size_t n, size_t w, double *out)
{
	double *win = rm_xmalloc((w + 1) * sizeof(double));
	size_t h = w / 2, lo = 0, hi = 0, cnt = 0;
	for (size_t i = 0; i < n; i++) {
		size_t want_lo = i > h ? i - h : 0, want_hi = i + h + 1 < n ? i + h + 1 : n;
		while (hi < want_hi && lo < want_lo) { /* replace x[lo] by x[hi] */
			size_t from = lower_bound(win, cnt, x[lo++]);
			double v = x[hi++];
			size_t to = lower_bound(win, cnt, v);
			if (to > from) { /* shift (from, to) left; v lands at to-1 */
				memmove(win + from, win + from + 1, (to - 1 - from) * sizeof(double));
				win[to - 1] = v;
			} else { /* shift [to, from) right; v lands at to */
				memmove(win + to + 1, win + to, (from - to) * sizeof(double));
				win[to] = v;
			}
		}
		for (; hi < want_hi; hi++) {
			size_t a = lower_bound(win, cnt, x[hi]);
			memmove(win + a + 1, win + a, (cnt - a) * sizeof(double));
			win[a] = x[hi];
			cnt++;
		}
		for (; lo < want_lo; lo++) {
			size_t a = lower_bound(win, cnt, x[lo]);
			memmove(win + a, win + a + 1, (cnt - a - 1) * sizeof(double));
			cnt--;
		}
		out[i] = cnt % 2 ? win[cnt / 2] : (win[cnt / 2 - 1] + win[cnt / 2]) / 2;
	}
	free(win);
}

void rm_running_median(const double *x, size_t n, size_t w, double *out)
{
	if (n == 0)
		return;
	/* A sorted window moves at most w values a step, a Fenwick tree costs
	 * cache misses over the whole series: on 1M points the window is 5-8x
	 * faster at w = 101 and, even on sorted input (every step moves the
	 * whole window), no slower up to about 2000. */
	if (w <= 2048) {
		running_median_sorted(x, n, w, out);
		return;
	}
	struct ranked *r = rm_xmalloc(n * sizeof(*r));
	size_t *rank = rm_xmalloc(n * sizeof(*rank));
	double *sorted = rm_xmalloc(n * sizeof(*sorted));
	int *tree = rm_xcalloc(n + 1, sizeof(*tree));
	for (size_t i = 0; i < n; i++)
		r[i] = (struct ranked){x[i], i};
	qsort(r, n, sizeof(*r), cmp_ranked);
	for (size_t i = 0; i < n; i++) {
		rank[r[i].i] = i;
		sorted[i] = r[i].v;
	}
	size_t h = w / 2, lo = 0, hi = 0; /* window [lo, hi) */
	for (size_t i = 0; i < n; i++) {
		size_t want_lo = i > h ? i - h : 0, want_hi = i + h + 1 < n ? i + h + 1 : n;
		while (hi < want_hi)
			fw_add(tree, n, rank[hi++], 1);
		while (lo < want_lo)
			fw_add(tree, n, rank[lo++], -1);
		size_t cnt = hi - lo;
		double a = sorted[fw_kth(tree, n, (int)(cnt + 1) / 2)];
		if (cnt % 2 == 0)
			a = (a + sorted[fw_kth(tree, n, (int)cnt / 2 + 1)]) / 2;
		out[i] = a;
	}
	free(r);
	free(rank);
	free(sorted);
	free(tree);
}

double rm_norm_cdf(double z)
{
	return 0.5 * erfc(-z / M_SQRT2);
}

/* P. J. Acklam's rational approximation (2003), refined by one Halley
 * step on erfc. */
double rm_norm_quantile(double p)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
	                           1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
	                           6.680131188771972e+01, -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
	                           -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
	                           3.754408661907416e+00};
	double q, r, x;
	if (p <= 0)
		return -INFINITY;
	if (p >= 1)
		return INFINITY;
	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	} else if (p > 1 - 0.02425) {
		q = sqrt(-2 * log1p(-p));
		x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	} else {
		q = p - 0.5;
		r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
	}
	double e = 0.5 * erfc(-x / M_SQRT2) - p, u = e * sqrt(2 * M_PI) * exp(x * x / 2);
	return x - u / (1 + x * u / 2);
}

#define EPS  1e-15
#define TINY 1e-300

/* Regularized lower incomplete gamma P(a, x) by its series (x < a + 1). */
static double gamma_p_series(double a, double x)
{
	double sum = 1.0 / a, term = sum;
	for (int n = 1; n < 100000; n++) {
		term *= x / (a + n);
		sum += term;
		if (fabs(term) < fabs(sum) * EPS)
			break;
	}
	return sum * exp(-x + a * log(x) - lgamma(a));
}

/* One step of Lentz's method for a continued fraction b0 + a1/(b1 + a2/(b2 +
 * ...)): updates c and d for the term (an, bn) and returns the factor the
 * running value is multiplied by. */
static double lentz_step(double *c, double *d, double an, double bn)
{
	*d = bn + an * *d;
	if (fabs(*d) < TINY)
		*d = TINY;
	*c = bn + an / *c;
	if (fabs(*c) < TINY)
		*c = TINY;
	*d = 1 / *d;
	return *d * *c;
}

/* Regularized upper incomplete gamma Q(a, x) by continued fraction. */
static double gamma_q_cf(double a, double x)
{
	double b = x + 1 - a, c = 1 / TINY, d = 1 / b, h = d;
	for (int i = 1; i < 100000; i++) {
		b += 2;
		double del = lentz_step(&c, &d, -i * (i - a), b);
		h *= del;
		if (fabs(del - 1) < EPS)
			break;
	}
	return exp(-x + a * log(x) - lgamma(a)) * h;
}

double rm_chi2_sf(double x, double df)
{
	double a = df / 2, y = x / 2;
	if (!(x > 0))
		return 1.0;
	return y < a + 1 ? 1 - gamma_p_series(a, y) : gamma_q_cf(a, y);
}

/* Continued fraction for the incomplete beta (Lentz): even and odd terms
 * alternate. */
static double beta_cf(double a, double b, double x)
{
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;
	if (fabs(d) < TINY)
		d = TINY;
	d = 1 / d;
	h = d;
	for (int m = 1; m < 100000; m++) {
		double m2 = 2.0 * m;
		h *= lentz_step(&c, &d, m * (b - m) * x / ((a + m2 - 1) * (a + m2)), 1);
		double del = lentz_step(&c, &d, -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)), 1);
		h *= del;
		if (fabs(del - 1) < EPS)
			break;
	}
	return h;
}

double rm_betainc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1) / (a + b + 2))
		return exp(lbt) * beta_cf(a, b, x) / a;
	return 1 - exp(lbt) * beta_cf(b, a, 1 - x) / b;
}

double rm_f_sf(double f, double d1, double d2)
{
	if (!(f > 0))
		return 1.0;
	return rm_betainc(d2 / 2, d1 / 2, d2 / (d2 + d1 * f));
}

/* Student's t: P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2) (Abramowitz and
 * Stegun 26.7.1 with 26.5.27); the quantile by bisection on it. */
double rm_t_quantile(double p, double df)
{
	if (!(p > 0.5 && p < 1 && df > 0))
		return NAN;
	double two_sided = 2 * (1 - p), lo = 0, hi = 1;
	while (rm_betainc(df / 2, 0.5, df / (df + hi * hi)) > two_sided && hi < 1e12)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;
		if (rm_betainc(df / 2, 0.5, df / (df + mid * mid)) > two_sided)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double rm_binom_sf(double k, double n, double p)
{
	if (k <= 0)
		return 1.0;
	if (k > n)
		return 0.0;
	return rm_betainc(k, n - k + 1, p);
}

struct rm_mk rm_mann_kendall(const double *x, size_t n)
{
	struct rm_mk mk = {0, 0, 0};
	for (size_t i = 0; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++)
			mk.s += (x[j] > x[i]) - (x[j] < x[i]);
	/* Tie correction: sum over tie groups of t(t-1)(2t+5). */
	double *s = rm_xmalloc((n ? n : 1) * sizeof(*s)), ties = 0;
	memcpy(s, x, n * sizeof(*s));
	for (size_t i = 1; i < n; i++) { /* insertion sort: segments are short */
		double v = s[i];
		size_t j = i;
		while (j > 0 && s[j - 1] > v) {
			s[j] = s[j - 1];
			j--;
		}
		s[j] = v;
	}
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && s[j] == s[i])
			j++;
		double t = (double)(j - i);
		ties += t * (t - 1) * (2 * t + 5);
		i = j;
	}
	free(s);
	double dn = (double)n;
	mk.var = (dn * (dn - 1) * (2 * dn + 5) - ties) / 18;
	if (mk.var > 0)
		mk.z = mk.s > 0 ? (mk.s - 1) / sqrt(mk.var) : mk.s < 0 ? (mk.s + 1) / sqrt(mk.var) : 0;
	return mk;
}

struct pidx {
	double p;
	size_t i;
};

static int cmp_pidx(const void *a, const void *b)
{
	const struct pidx *x = a, *y = b;
	return x->p < y->p ? -1 : x->p > y->p;
}

void rm_bh_adjust(const double *p, size_t m, double *q)
{
	if (m == 0)
		return;
	struct pidx *a = rm_xmalloc(m * sizeof(*a));
	for (size_t i = 0; i < m; i++)
		a[i] = (struct pidx){p[i], i};
	qsort(a, m, sizeof(*a), cmp_pidx);
	double run = 1.0;
	for (size_t r = m; r-- > 0;) {
		double v = a[r].p * (double)m / (double)(r + 1);
		if (v < run)
			run = v;
		a[r].p = run;
	}
	for (size_t r = 0; r < m; r++)
		q[a[r].i] = a[r].p;
	free(a);
}

void rm_acf(const double *x, size_t n, size_t maxlag, double *out)
{
	double mean = 0, var = 0;
	for (size_t i = 0; i < n; i++)
		mean += x[i];
	mean /= (double)(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		var += (x[i] - mean) * (x[i] - mean);
	for (size_t lag = 0; lag <= maxlag; lag++) {
		double c = 0;
		for (size_t i = 0; i + lag < n; i++)
			c += (x[i] - mean) * (x[i + lag] - mean);
		out[lag] = var > 0 ? c / var : 0;
	}
}

double rm_acf_lag(const double *x, size_t n, double mean, double ss, size_t lag)
{
	double c = 0;
	for (size_t i = 0; i + lag < n; i++)
		c += (x[i] - mean) * (x[i + lag] - mean);
	return ss > 0 ? c / ss : 0;
}

uint64_t rm_rng_next(struct rm_rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

double rm_rng_uniform(struct rm_rng *r)
{
	return (double)(rm_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double rm_rng_normal(struct rm_rng *r)
{
	double u = rm_rng_uniform(r), v = rm_rng_uniform(r);
	return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

/* Lemire's multiply-shift ("Fast random integer generation in an
 * interval", 2019), without the rejection step: the bias is below 2^-40
 * for the sizes shuffled here. */
uint64_t rm_rng_below(struct rm_rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rm_rng_next(r) * n) >> 64);
}

void rm_rng_shuffle_int(struct rm_rng *r, int *a, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rm_rng_below(r, i);
		int t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* The same permutation as rm_rng_shuffle_int from the same state. The
 * draws are made SHUFFLE_AHEAD swaps early, in the same order, so that the
 * byte each swap reads is fetched while the swaps before it run: on ten
 * million batches the array is past the caches, and the random reads were
 * the shuffle's whole cost. */
#define SHUFFLE_AHEAD 16

void rm_rng_shuffle_u8(struct rm_rng *r, uint8_t *a, size_t n)
{
	size_t ahead[SHUFFLE_AHEAD];
	for (size_t i = n, k = 0; i > 1 && k < SHUFFLE_AHEAD; i--, k++) {
		ahead[k] = (size_t)rm_rng_below(r, i);
		__builtin_prefetch(a + ahead[k], 1);
	}
	for (size_t i = n, k = 0; i > 1; i--, k = (k + 1) % SHUFFLE_AHEAD) {
		size_t j = ahead[k];
		if (i > SHUFFLE_AHEAD + 1) { /* the draw for i - SHUFFLE_AHEAD, in turn */
			ahead[k] = (size_t)rm_rng_below(r, i - SHUFFLE_AHEAD);
			__builtin_prefetch(a + ahead[k], 1);
		}
		uint8_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* Solves the k x k system A x = b in place (Gaussian elimination with
 * partial pivoting); a singular column gets x = 0. */
void rm_solve(double *A, double *b, int k, double *x)
{
	for (int c = 0; c < k; c++) {
		int piv = c;
		for (int r = c + 1; r < k; r++)
			if (fabs(A[r * k + c]) > fabs(A[piv * k + c]))
				piv = r;
		if (piv != c) {
			for (int j = 0; j < k; j++) {
				double t = A[c * k + j];
				A[c * k + j] = A[piv * k + j];
				A[piv * k + j] = t;
			}
			double t = b[c];
			b[c] = b[piv];
			b[piv] = t;
		}
		if (fabs(A[c * k + c]) < 1e-12)
			continue;
		for (int r = c + 1; r < k; r++) {
			double f = A[r * k + c] / A[c * k + c];
			for (int j = c; j < k; j++)
				A[r * k + j] -= f * A[c * k + j];
			b[r] -= f * b[c];
		}
	}
	for (int c = k - 1; c >= 0; c--) {
		if (fabs(A[c * k + c]) < 1e-12) {
			x[c] = 0;
			continue;
		}
		double s = b[c];
		for (int j = c + 1; j < k; j++)
			s -= A[c * k + j] * x[j];
		x[c] = s / A[c * k + c];
	}
}
