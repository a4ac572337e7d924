/*
 * test_buckets.c - the bucket fit: the fast DP against the O(k D^2) DP and
 * against exhaustive search, and padding figures worked by hand.
 */
#include <stdlib.h>
#include <string.h>

#include "runmon/cost.h"
#include "runmon/stats.h"
#include "testutil.h"

static void hand_computed(void **state)
{
	const int64_t lens[] = {10, 1, 2, 3};
	struct rm_lengths d;
	struct rm_bucketing b;
	rm_lengths_from(&d, lens, 4);
	assert_int_equal(d.n, 4);
	rm_buckets_fit(&d, 2, &b);
	/* {1,2,3} padded to 3 and {10}: 2 + 1 + 0 + 0 */
	assert_int_equal(b.padding, 3);
	assert_int_equal(b.bound[1], 3);
	assert_int_equal(b.bound[2], 10);
	assert_int_equal(b.tokens, 16);
	assert_float_equal(b.efficiency, 16.0 / 19.0, 1e-12);
	rm_buckets_fit(&d, 1, &b);
	assert_int_equal(b.padding, 10 * 4 - 16);
	rm_buckets_fit(&d, 9, &b); /* more buckets than lengths: one each */
	assert_int_equal(b.k, 4);
	assert_int_equal(b.padding, 0);
	rm_lengths_release(&d);
	/* The sidecar example: one batch of 1801, 1755, 1790 pads 57 tokens. */
	const int64_t batch[] = {1801, 1755, 1790}, bound[] = {0, 8192};
	rm_lengths_from(&d, batch, 3);
	rm_buckets_eval(&d, bound, 1, &b);
	assert_int_equal(b.padding, 57);
	rm_lengths_release(&d);
}

/* Minimum padding over every choice of k-1 cut points among D lengths. */
static int64_t exhaustive(const struct rm_lengths *d, int k)
{
	int64_t best = INT64_MAX;
	size_t D = d->n;
	for (uint64_t mask = 0; mask < (1ull << (D - 1)); mask++) {
		if (__builtin_popcountll(mask) != k - 1)
			continue;
		int64_t bound[65];
		int nb = 0;
		bound[nb++] = 0;
		for (size_t i = 0; i + 1 < D; i++)
			if (mask & (1ull << i))
				bound[nb++] = d->len[i];
		bound[nb++] = d->len[D - 1];
		struct rm_bucketing b;
		rm_buckets_eval(d, bound, k, &b);
		if (b.padding < best)
			best = b.padding;
	}
	return best;
}

static void dp_matches_brute_force(void **state)
{
	struct rm_rng r = {11};
	for (int trial = 0; trial < 300; trial++) {
		size_t n = 1 + rm_rng_below(&r, 200);
		int64_t *lens = malloc(n * sizeof(int64_t));
		int64_t span = 2 + (int64_t)rm_rng_below(&r, trial < 150 ? 12 : 400);
		for (size_t i = 0; i < n; i++)
			lens[i] = 1 + (int64_t)rm_rng_below(&r, (uint64_t)span);
		struct rm_lengths d;
		rm_lengths_from(&d, lens, n);
		int k = 1 + (int)rm_rng_below(&r, 8);
		struct rm_bucketing fast, slow;
		rm_buckets_fit(&d, k, &fast);
		rm_buckets_fit_slow(&d, k, &slow);
		if (fast.padding != slow.padding)
			fail_msg("trial %d: fast %lld != slow %lld", trial, (long long)fast.padding,
			         (long long)slow.padding);
		if (d.n <= 12 && k <= (int)d.n)
			assert_int_equal(slow.padding, exhaustive(&d, k));
		/* The fit is never worse than the simple rules. */
		struct rm_bucketing ew, q;
		rm_buckets_equal_width(&d, fast.k, 0, &ew);
		rm_buckets_quantile(&d, fast.k, &q);
		assert_true(fast.padding <= ew.padding && fast.padding <= q.padding);
		rm_lengths_release(&d);
		free(lens);
	}
}

/* One batch per bucket (a huge budget) is the bucket-max model exactly;
 * smaller batches pad less. */
static void packed_batches(void **state)
{
	struct rm_rng r = {5};
	int64_t lens[5000];
	for (int i = 0; i < 5000; i++)
		lens[i] = 16 + (int64_t)rm_rng_below(&r, 4000);
	struct rm_lengths d;
	struct rm_bucketing b;
	rm_lengths_from(&d, lens, 5000);
	rm_buckets_fit(&d, 4, &b);
	assert_float_equal(rm_buckets_packed(&d, b.bound, b.k, INT64_MAX / 8, 1), b.efficiency, 1e-12);
	double small = rm_buckets_packed(&d, b.bound, b.k, 16384, 1);
	assert_true(small >= b.efficiency && small <= 1);
	assert_float_equal(rm_buckets_packed(&d, b.bound, b.k, 16384, 1), small, 0); /* seeded */
	rm_lengths_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(hand_computed),
	    cmocka_unit_test(dp_matches_brute_force),
	    cmocka_unit_test(packed_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
