/*
 * test_stats.c - order statistics, running medians, distribution tails,
 * Mann-Kendall, Benjamini-Hochberg and the random generator, against known
 * values and naive implementations.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/stats.h"
#include "testutil.h"

/* NaN after every number, as the running medians order it */
static int cmp_nan_last(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	if (isnan(x) || isnan(y))
		return isnan(x) - isnan(y);
	return (x > y) - (x < y);
}

static double naive_median(const double *x, size_t n)
{
	double *s = malloc(n * sizeof(double));
	memcpy(s, x, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_nan_last);
	double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static void median_matches_sort(void **state)
{
	struct rm_rng r = {42};
	double x[301], scratch[301];
	double *big = malloc(6000 * sizeof(double)), *big_scratch = malloc(6000 * sizeof(double));
	for (int trial = 0; trial < 60; trial++) { /* past 600 the pivot comes from a sample */
		size_t n = 601 + rm_rng_below(&r, 5399);
		int levels = trial % 3 ? 1 + (int)rm_rng_below(&r, 20) : 1 << 30;
		for (size_t i = 0; i < n; i++)
			big[i] = trial % 5 == 4 ? (double)(n - i) : (double)rm_rng_below(&r, (uint64_t)levels);
		assert_true(rm_median(big, n, big_scratch) == naive_median(big, n));
	}
	free(big);
	free(big_scratch);
	for (int trial = 0; trial < 2000; trial++) {
		size_t n = 1 + rm_rng_below(&r, 300);
		int levels = 1 + (int)rm_rng_below(&r, 20); /* many duplicates */
		for (size_t i = 0; i < n; i++)
			x[i] = (double)rm_rng_below(&r, (uint64_t)levels);
		assert_true(rm_median(x, n, scratch) == naive_median(x, n));
	}
	double y[] = {5, 1, 3};
	assert_true(rm_mad(y, 3, 3, scratch) == 2);
}

static void running_median_matches_naive(void **state)
{
	struct rm_rng r = {7};
	/* both sides of the switch from a sorted window to the Fenwick tree */
	size_t widths[] = {1, 3, 5, 31, 63, 65, 101, 999, 2047, 2049, 2051};
	for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++) {
		size_t w = widths[wi], n = w > 1000 ? 5000 : 1500, every = w > 1000 ? 97 : 1;
		double *x = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
		for (size_t i = 0; i < n; i++)
			x[i] = rm_rng_below(&r, 4) ? (double)rm_rng_below(&r, 50) : rm_rng_normal(&r);
		rm_running_median(x, n, w, out);
		for (size_t i = 0; i < n; i += every) {
			size_t lo = i > w / 2 ? i - w / 2 : 0, hi = i + w / 2 + 1 < n ? i + w / 2 + 1 : n;
			double want = naive_median(x + lo, hi - lo);
			if (out[i] != want)
				fail_msg("w %zu i %zu: %g != %g", w, i, out[i], want);
		}
		free(x);
		free(out);
	}
}

/* A series holding NaN and infinities (a diverged run, a division by a
 * zero trend) must not break the sorted window: a value that enters it is
 * found again when it leaves. Found by fuzz_diagnose (a negative memmove). */
static void running_median_survives_nan(void **state)
{
	struct rm_rng r = {11};
	const double odd[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
	size_t widths[] = {1, 3, 7, 101, 2049};
	for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++) {
		size_t w = widths[wi], n = 3000;
		double *x = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
		for (size_t i = 0; i < n; i++)
			x[i] = rm_rng_below(&r, 5) ? (double)rm_rng_below(&r, 9) : odd[rm_rng_below(&r, 5)];
		rm_running_median(x, n, w, out);
		for (size_t i = 0; i<n; i += w> 1000 ? 37 : 1) {
			size_t lo = i > w / 2 ? i - w / 2 : 0, hi = i + w / 2 + 1 < n ? i + w / 2 + 1 : n;
			double want = naive_median(x + lo, hi - lo);
			if (!(out[i] == want || (isnan(out[i]) && isnan(want))))
				fail_msg("w %zu i %zu: %g != %g", w, i, out[i], want);
		}
		/* the selection stays inside the array and returns one of its values */
		size_t odd_n = n - 1;
		double m = rm_median(x, odd_n, out);
		int found = isnan(m);
		for (size_t i = 0; i < odd_n && !found; i++)
			found = x[i] == m;
		assert_true(found);
		free(x);
		free(out);
	}
}

static void distribution_tails(void **state)
{
	/* Critical values from standard tables. */
	assert_float_equal(rm_chi2_sf(3.841459, 1), 0.05, 1e-6);
	assert_float_equal(rm_chi2_sf(11.0705, 5), 0.05, 1e-5);
	assert_float_equal(rm_chi2_sf(0, 3), 1.0, 0);
	assert_float_equal(rm_chi2_sf(100, 2), exp(-50), 1e-25);
	assert_float_equal(rm_f_sf(4.1028, 2, 10), 0.05, 1e-5);
	assert_float_equal(rm_f_sf(2.3053, 5, 100), 0.05, 1e-4);
	assert_float_equal(rm_t_quantile(0.975, 19), 2.093024, 1e-6); /* Student's t tables */
	assert_float_equal(rm_t_quantile(0.975, 4), 2.776445, 1e-6);
	assert_float_equal(rm_t_quantile(0.975, 1), 12.706205, 1e-5);
	assert_float_equal(rm_t_quantile(0.975, 1e6), 1.959966, 1e-5);
	assert_true(isnan(rm_t_quantile(0.4, 5)));
	/* P(X >= 3), X ~ Bin(10, 0.2) = 1 - (0.8^10 + 10*0.2*0.8^9 + 45*0.04*0.8^8) */
	assert_float_equal(rm_binom_sf(3, 10, 0.2), 0.3222004736, 1e-9);
	assert_float_equal(rm_binom_sf(0, 10, 0.2), 1.0, 0);
	assert_float_equal(rm_binom_sf(11, 10, 0.2), 0.0, 0);
	assert_float_equal(rm_norm_cdf(1.959963985), 0.975, 1e-9);
	for (double p = 1e-10; p < 1; p *= 3.7)
		assert_float_equal(rm_norm_cdf(rm_norm_quantile(p)), p, p * 1e-9);
}

static void mann_kendall_known_values(void **state)
{
	const double up[] = {1, 2, 3, 4, 5};
	struct rm_mk mk = rm_mann_kendall(up, 5);
	assert_float_equal(mk.s, 10, 0);
	assert_float_equal(mk.var, 5 * 4 * 15 / 18.0, 1e-12);
	assert_float_equal(mk.z, 9 / sqrt(5 * 4 * 15 / 18.0), 1e-12);
	/* One tie of two: var = (n(n-1)(2n+5) - 2*1*9) / 18. */
	const double tied[] = {1, 1, 2, 3};
	mk = rm_mann_kendall(tied, 4);
	assert_float_equal(mk.s, 5, 0);
	assert_float_equal(mk.var, (4 * 3 * 13 - 18) / 18.0, 1e-12);
	assert_float_equal(mk.z, 4 / sqrt((4 * 3 * 13 - 18) / 18.0), 1e-12);
	const double down[] = {3, 2, 1};
	assert_true(rm_mann_kendall(down, 3).z < 0);
}

static void benjamini_hochberg(void **state)
{
	const double p[] = {0.01, 0.04, 0.03, 0.005};
	double q[4];
	rm_bh_adjust(p, 4, q);
	assert_float_equal(q[0], 0.02, 1e-12);
	assert_float_equal(q[1], 0.04, 1e-12);
	assert_float_equal(q[2], 0.04, 1e-12);
	assert_float_equal(q[3], 0.02, 1e-12);
}

static void acf_of_a_period(void **state)
{
	double x[400], a[21];
	for (int i = 0; i < 400; i++)
		x[i] = i % 10 < 5 ? 1 : -1;
	rm_acf(x, 400, 20, a);
	assert_float_equal(a[0], 1, 1e-12);
	assert_true(a[10] > 0.9 && a[5] < -0.9);
}

static void rng_is_reproducible(void **state)
{
	struct rm_rng a = {123}, b = {123};
	for (int i = 0; i < 100; i++)
		assert_true(rm_rng_next(&a) == rm_rng_next(&b));
	int v[50], seen[50] = {0};
	for (int i = 0; i < 50; i++)
		v[i] = i;
	rm_rng_shuffle_int(&a, v, 50);
	for (int i = 0; i < 50; i++)
		seen[v[i]]++;
	for (int i = 0; i < 50; i++)
		assert_int_equal(seen[i], 1);
	double m = 0, s = 0;
	for (int i = 0; i < 100000; i++) {
		double z = rm_rng_normal(&a);
		m += z;
		s += z * z;
	}
	assert_float_equal(m / 100000, 0, 0.02);
	assert_float_equal(s / 100000, 1, 0.02);
}

/* The byte shuffle (the ladder's permutations) draws ahead of its swaps;
 * it must give the int shuffle's permutation from the same state, and
 * leave the state where that one does. */
static void byte_shuffle_matches_int_shuffle(void **state)
{
	const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 18, 33, 1000, 100003};
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		size_t n = sizes[t];
		int *v = malloc((n + 1) * sizeof(int));
		uint8_t *u = malloc(n + 1);
		for (size_t i = 0; i < n; i++)
			u[i] = (uint8_t)(v[i] = (int)(i % 251));
		struct rm_rng a = {77 + t}, b = {77 + t};
		rm_rng_shuffle_int(&a, v, n);
		rm_rng_shuffle_u8(&b, u, n);
		for (size_t i = 0; i < n; i++)
			if (u[i] != (uint8_t)v[i])
				fail_msg("n %zu: position %zu differs", n, i);
		assert_true(rm_rng_next(&a) == rm_rng_next(&b));
		free(v);
		free(u);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(median_matches_sort),
	    cmocka_unit_test(running_median_matches_naive),
	    cmocka_unit_test(running_median_survives_nan),
	    cmocka_unit_test(distribution_tails),
	    cmocka_unit_test(mann_kendall_known_values),
	    cmocka_unit_test(benjamini_hochberg),
	    cmocka_unit_test(acf_of_a_period),
	    cmocka_unit_test(rng_is_reproducible),
	    cmocka_unit_test(byte_shuffle_matches_int_shuffle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
