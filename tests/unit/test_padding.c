/*
 * test_padding.c - padding efficiency and throughput as recorded, and the
 * re-packing of a run's lengths under each strategy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/cost.h"
#include "runmon/store.h"
#include "testutil.h"

static void recorded_figures(void **state)
{
	/* Two buckets; bucket 0 batches of 4 x (100..200), bucket 1 of 2 x (900..1000). */
	const int64_t step[] = {0, 1, 2, 3};
	const int bucket[] = {0, 1, 0, 1};
	const double n[] = {4, 2, 4, 2}, lo[] = {100, 900, 100, 900}, hi[] = {200, 1000, 200, 1000};
	const double tok[] = {600, 1900, 600, 1900}, dt[] = {NAN, 1, 0.5, 1};
	double pad[4];
	for (int i = 0; i < 4; i++)
		pad[i] = n[i] * hi[i] - tok[i];
	struct rm_padding_input in = {4,    step, bucket, n, lo,   hi, tok,  pad,  dt,
	                              NULL, NULL, 0,      1, NULL, 0,  NULL, NULL, NULL};
	struct rm_padding_result r;
	rm_padding_analyze(&in, &r);
	assert_true(r.ok);
	assert_int_equal(r.k, 2);
	assert_float_equal(r.efficiency, 5000.0 / (5000 + 400 + 200), 1e-12);
	assert_float_equal(r.bucket_eff[0], 1200.0 / 1600, 1e-12);
	assert_float_equal(r.bucket_eff[1], 3800.0 / 4000, 1e-12);
	/* Throughput from the steps with a duration: 600/0.5, (1900+1900)/2. */
	assert_float_equal(r.bucket_tps[0], 1200, 1e-9);
	assert_float_equal(r.bucket_tps[1], 1900, 1e-9);
	assert_float_equal(r.tokens_per_s, (600 + 3800) / 2.5, 1e-9);
	assert_int_equal(r.budget, 2000); /* median of 800, 2000, 800, 2000 (upper) */
}

/* Ranks: each rank's batch is a batch of its own (padded to its own
 * longest, the budget per batch), the step's time is counted once for the
 * overall throughput, and each batch's own time (a rank's two micro-batches
 * share its step) for the buckets'. */
static void ranks_are_batches_of_their_own(void **state)
{
	(void)state;
	/* step 0: rank 0 bucket 0, rank 1 bucket 1; step 1: rank 0 two micro-batches of bucket 1 */
	const int64_t step[] = {0, 0, 1, 1};
	const int bucket[] = {0, 1, 1, 1};
	const double n[] = {4, 2, 2, 2}, lo[] = {100, 900, 900, 900}, hi[] = {200, 1000, 1000, 1000};
	const double tok[] = {600, 1900, 1900, 1900}, pad[] = {200, 100, 100, 100};
	const double dt[] = {2, 2, 0.5, 0.5}, step_dt[] = {2, NAN, 1, NAN};
	struct rm_padding_input in = {4,       step, bucket, n, lo,   hi, tok,  pad,  dt,
	                              step_dt, NULL, 0,      1, NULL, 0,  NULL, NULL, NULL};
	struct rm_padding_result r;
	rm_padding_analyze(&in, &r);
	assert_true(r.ok);
	assert_int_equal(r.batches, 4);
	assert_int_equal(r.budget, 2000); /* a rank's batch, not the step's four */
	assert_float_equal(r.tokens_per_s, (600 + 1900 + 3800) / 3.0, 1e-9);
	assert_float_equal(r.bucket_tps[0], 600 / 2.0, 1e-9);
	assert_float_equal(r.bucket_tps[1], 5700 / 3.0, 1e-9);
}

/* With the dataset's lengths, re-packing uses them, not the lengths rebuilt
 * from the batches; the recorded figures still come from the batches. */
static void dataset_lengths_replace_rebuilt(void **state)
{
	(void)state;
	const int64_t step[] = {0, 1, 2, 3};
	const int bucket[] = {0, 1, 0, 1};
	const double n[] = {4, 2, 4, 2}, lo[] = {100, 900, 100, 900}, hi[] = {200, 1000, 200, 1000};
	const double tok[] = {600, 1900, 600, 1900}, pad[] = {200, 100, 200, 100};
	int64_t lens[5000];
	for (int i = 0; i < 5000; i++)
		lens[i] = 300; /* all one length: every strategy packs without padding */
	struct rm_padding_input in = {4,    step, bucket, n, lo,   hi,   tok,  pad,  NULL,
	                              NULL, NULL, 0,      1, lens, 5000, NULL, NULL, NULL};
	struct rm_padding_result r;
	rm_padding_analyze(&in, &r);
	assert_true(r.ok);
	assert_false(r.reconstructed);
	assert_int_equal(r.dataset_lengths, 5000);
	assert_float_equal(r.efficiency, 5000.0 / 5600, 1e-12); /* as recorded */
	assert_float_equal(r.strategy_eff[RM_PACK_SORTED], 1.0, 1e-12);
	assert_float_equal(r.strategy_eff[RM_PACK_RANDOM], 1.0, 1e-12);
	in.lengths = NULL; /* rebuilt: lengths of 100..1000 pad when shuffled */
	rm_padding_analyze(&in, &r);
	assert_true(r.reconstructed);
	assert_int_equal(r.dataset_lengths, 0);
	assert_true(r.strategy_eff[RM_PACK_RANDOM] < 0.99);
}

/* Random lengths in homogeneous batches: sorted packs best, random worst,
 * interleaving is bucketing in another order, and fitted boundaries do at
 * least about as well as the current ones. */
static void strategies_rank(void **state)
{
	enum { N = 3000 };
	static int64_t step[N];
	static int bucket[N];
	static double n[N], lo[N], hi[N], tok[N], pad[N];
	const int64_t bounds[] = {0, 500, 1000, 2000, 4000};
	unsigned seed = 7;
	for (int t = 0; t < N; t++) {
		int b = t % 4;
		seed = seed * 1103515245u + 12345u;
		double top = (double)bounds[b + 1], bottom = (double)bounds[b] + 1;
		step[t] = t;
		bucket[t] = b;
		n[t] = floor(16000 / top);
		hi[t] = bottom + (top - bottom) * (0.5 + 0.5 * (double)(seed >> 16) / 65536.0);
		lo[t] = bottom + (hi[t] - bottom) * 0.1;
		tok[t] = floor(n[t] * (lo[t] + hi[t]) / 2);
		pad[t] = n[t] * hi[t] - tok[t];
	}
	struct rm_padding_input in = {N,    step,   bucket, n, lo,   hi, tok,  pad,  NULL,
	                              NULL, bounds, 5,      3, NULL, 0,  NULL, NULL, NULL};
	struct rm_padding_result r;
	rm_padding_analyze(&in, &r);
	const double *e = r.strategy_eff;
	assert_true(r.ok && r.reconstructed);
	assert_true(e[RM_PACK_SORTED] >= e[RM_PACK_BUCKETED]);
	assert_true(e[RM_PACK_BUCKETED] > e[RM_PACK_RANDOM]);
	assert_float_equal(e[RM_PACK_INTERLEAVED], e[RM_PACK_BUCKETED], 0);
	assert_true(e[RM_PACK_FITTED] >= e[RM_PACK_BUCKETED]); /* never worse (issue 66.2) */
	assert_int_equal(r.fitted_k, 4);
	for (int s = 0; s < RM_PACK_COUNT; s++)
		assert_true(e[s] > 0 && e[s] <= 1);
	assert_true(isnan(r.tokens_per_s));
}

/* Issue 66.2: a fit never packs worse than the run's own boundaries. Over
 * seeds of random bucketings, the fitted figure is at least the current
 * one; a run already on its fitted boundaries keeps them and says so; and
 * recorded lengths are re-packed as recorded, not rebuilt. */
static void fit_never_worse_and_lengths_as_recorded(void **state)
{
	(void)state;
	enum { N = 600, PER = 8 };
	static int64_t step[N], lens[N * PER];
	static size_t at[N];
	static uint32_t cnt[N];
	static int bucket[N];
	static double n[N], lo[N], hi[N], tok[N], pad[N];
	for (unsigned seed = 1; seed <= 20; seed++) {
		unsigned x = seed;
		int64_t bounds[5] = {0, 0, 0, 0, 4000};
		for (int b = 1; b < 4; b++) {
			x = x * 1103515245u + 12345u;
			bounds[b] = bounds[b - 1] + 100 + (int64_t)((x >> 16) % 900);
		}
		for (int t = 0; t < N; t++) {
			int b = t % 4;
			double sum = 0, mn = 1e18, mx = 0;
			for (int i = 0; i < PER; i++) {
				x = x * 1103515245u + 12345u;
				int64_t l =
				    bounds[b] + 1 + (int64_t)((x >> 16) % (uint64_t)(bounds[b + 1] - bounds[b]));
				lens[t * PER + i] = l;
				sum += (double)l;
				mn = fmin(mn, (double)l);
				mx = fmax(mx, (double)l);
			}
			step[t] = t;
			bucket[t] = b;
			n[t] = PER;
			lo[t] = mn;
			hi[t] = mx;
			tok[t] = sum;
			pad[t] = PER * mx - sum;
			at[t] = (size_t)t * PER;
			cnt[t] = PER;
		}
		struct rm_padding_input in = {N,    step,   bucket, n,    lo,   hi, tok,  pad, NULL,
		                              NULL, bounds, 5,      seed, NULL, 0,  lens, at,  cnt};
		struct rm_padding_result r;
		rm_padding_analyze(&in, &r);
		assert_true(r.ok);
		assert_false(r.reconstructed);
		assert_int_equal(r.recorded_batches, N);
		assert_true(r.strategy_eff[RM_PACK_FITTED] >= r.strategy_eff[RM_PACK_BUCKETED]);
		assert_int_equal(r.fit_kept_own, !(r.strategy_eff[RM_PACK_FITTED] > r.strategy_eff[RM_PACK_BUCKETED]));
		/* On its own fitted boundaries, the run keeps them. */
		int64_t fitted[RM_PAD_MAX + 1];
		int k = r.fitted_k;
		memcpy(fitted, r.fitted, (size_t)(k + 1) * sizeof(int64_t));
		in.bounds = fitted;
		in.nbounds = k + 1;
		rm_padding_analyze(&in, &r);
		assert_true(r.fit_kept_own);
		assert_int_equal(r.fitted_k, k);
		assert_memory_equal(r.fitted, fitted, (size_t)(k + 1) * sizeof(int64_t));
		assert_float_equal(r.strategy_eff[RM_PACK_FITTED], r.strategy_eff[RM_PACK_BUCKETED], 0);
		/* Half the batches without their lengths: those are rebuilt. */
		for (int t = 0; t < N; t += 2)
			cnt[t] = 0;
		rm_padding_analyze(&in, &r);
		assert_true(r.reconstructed);
		assert_int_equal(r.recorded_batches, N / 2);
	}
}

/* Whatever the store holds (rows an older import let through), the cost
 * side neither overflows nor allocates beyond its cap (issue 19: n = 2^61
 * wrapped cap * sizeof(int64_t); n = 1e12 ran out of memory). */
static void hostile_rows_bounded(void **state)
{
	const int64_t step[] = {0, 1, 2, 3, 4, 5, 6, 7};
	const int bucket[] = {0, 0, 1, 1, 2, -5, 300, 1};
	const double n[] = {2305843009213693952.0, 1e12, 4, -3, 55000, 4, 4, 4};
	const double hi[] = {100, 100, 200, 100, 100, -9e18, 9e18, 300};
	const double lo[] = {50, 50, 100, 50, 9e18, 10, 10, NAN};
	const double tok[] = {100, 100, 600, 100, 4e6, 40, 40, 900};
	const double pad[] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
	struct rm_padding_input in = {8,    step, bucket, n, lo,   hi, tok,  pad,  NULL,
	                              NULL, NULL, 0,      1, NULL, 0,  NULL, NULL, NULL};
	struct rm_padding_result r;
	rm_padding_analyze(&in, &r);
	assert_true(r.ok);
	assert_int_equal(r.batches, 3); /* steps 2, 4 and 7: the others are impossible */
	for (int s = 0; s < RM_PACK_COUNT; s++)
		assert_true(isnan(r.strategy_eff[s]) || (r.strategy_eff[s] > 0 && r.strategy_eff[s] <= 1));
	/* Batches beyond the rebuild cap are counted, not rebuilt. */
	enum { M = 40 };
	static int64_t st[M];
	static int bk[M];
	static double nn[M], lo2[M], hi2[M], tk[M], pd[M];
	for (int t = 0; t < M; t++) {
		st[t] = t, bk[t] = t % 2, nn[t] = RM_BATCH_MAX_N, lo2[t] = 1, hi2[t] = 8;
		tk[t] = 4.0 * RM_BATCH_MAX_N, pd[t] = NAN;
	}
	struct rm_padding_input big = {M,    st,   bk, nn, lo2,  hi2, tk,   pd,   NULL,
	                               NULL, NULL, 0,  1,  NULL, 0,   NULL, NULL, NULL};
	rm_padding_analyze(&big, &r);
	assert_true(r.ok);
	assert_int_equal(r.batches, M);
	assert_float_equal(r.efficiency, 0.5, 1e-12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(recorded_figures),
	    cmocka_unit_test(ranks_are_batches_of_their_own),
	    cmocka_unit_test(dataset_lengths_replace_rebuilt),
	    cmocka_unit_test(strategies_rank),
	    cmocka_unit_test(fit_never_worse_and_lengths_as_recorded),
	    cmocka_unit_test(hostile_rows_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
