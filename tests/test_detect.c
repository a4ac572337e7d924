/*
 * test_detect.c - the detectors: exact runs-test moments, known offsets,
 * and the verdict over many simulated runs with known ground truth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/detect.h"
#include "runmon/render.h"
#include "runmon/sim.h"
#include "runmon/stats.h"
#include "testutil.h"

/* Arrays behind a series made from a simulation. */
struct simrun {
	struct rm_series s;
	int64_t *step, *bstep;
	double *loss, *lr, *epoch, *max_len;
	int *bucket;
};

static void simrun_make(struct simrun *r, enum rm_sim_strategy strat, uint64_t seed, int64_t steps,
                        enum rm_sim_spikes spikes, int log_every)
{
	struct rm_sim_opts o;
	struct rm_sim_step *st;
	rm_sim_opts_default(&o);
	o.strategy = strat;
	o.seed = seed;
	o.steps = steps;
	o.spikes = spikes;
	o.log_every = log_every;
	rm_simulate(&o, &st);
	size_t n = (size_t)steps, m = 0;
	r->step = malloc(n * sizeof(int64_t));
	r->bstep = malloc(n * sizeof(int64_t));
	r->loss = malloc(n * sizeof(double));
	r->lr = malloc(n * sizeof(double));
	r->epoch = malloc(n * sizeof(double));
	r->max_len = malloc(n * sizeof(double));
	r->bucket = malloc(n * sizeof(int));
	double acc = 0;
	for (size_t t = 0; t < n; t++) {
		r->bstep[t] = st[t].step;
		r->bucket[t] = st[t].bucket;
		r->max_len[t] = st[t].max_len;
		acc += st[t].loss;
		if ((t + 1) % (size_t)log_every == 0) {
			r->step[m] = st[t].step;
			r->loss[m] = acc / log_every;
			r->lr[m] = st[t].lr;
			r->epoch[m] = st[t].epoch;
			m++;
			acc = 0;
		}
	}
	free(st);
	r->s = (struct rm_series){.n = m,
	                          .step = r->step,
	                          .loss = r->loss,
	                          .lr = r->lr,
	                          .epoch = r->epoch,
	                          .nb = n,
	                          .bstep = r->bstep,
	                          .bucket = r->bucket,
	                          .max_len = r->max_len,
	                          .checkpoint_every = o.save_every};
}

static void simrun_free(struct simrun *r)
{
	free(r->step);
	free(r->bstep);
	free(r->loss);
	free(r->lr);
	free(r->epoch);
	free(r->max_len);
	free(r->bucket);
}

static void diagnose(enum rm_sim_strategy strat, uint64_t seed, int64_t steps, enum rm_sim_spikes spikes, int log_every,
                     struct rm_diagnosis *d)
{
	struct simrun r;
	struct rm_detect_opts o;
	rm_detect_opts_default(&o);
	simrun_make(&r, strat, seed, steps, spikes, log_every);
	rm_detect_all(&r.s, &o, d);
	simrun_free(&r);
}

/* Exact mean and variance of the runs count over all distinct orders of
 * a multiset, by enumeration (next permutation in lexicographic order). */
static int next_perm(int *a, int n)
{
	int i = n - 2;
	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return 0;
	int j = n - 1;
	while (a[j] <= a[i])
		j--;
	int t = a[i];
	a[i] = a[j];
	a[j] = t;
	for (int l = i + 1, r = n - 1; l < r; l++, r--) {
		t = a[l];
		a[l] = a[r];
		a[r] = t;
	}
	return 1;
}

static void runs_moments_match_enumeration(void **state)
{
	const size_t cases[][4] = {{3, 2, 2, 0}, {4, 1, 0, 0}, {2, 2, 2, 1}, {5, 3, 0, 0}, {1, 1, 1, 1}, {3, 3, 3, 0}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int a[16], n = 0, k = 0;
		for (int i = 0; i < 4; i++) {
			if (cases[c][i])
				k = i + 1;
			for (size_t j = 0; j < cases[c][i]; j++)
				a[n++] = i;
		}
		double sum = 0, sum2 = 0, count = 0;
		do {
			double runs = 1;
			for (int i = 1; i < n; i++)
				runs += a[i] != a[i - 1];
			sum += runs;
			sum2 += runs * runs;
			count++;
		} while (next_perm(a, n));
		double mean, var;
		rm_runs_moments(cases[c], k, &mean, &var);
		assert_float_equal(mean, sum / count, 1e-9);
		assert_float_equal(var, sum2 / count - (sum / count) * (sum / count), 1e-9);
	}
}

static void runs_of_a_known_sequence(void **state)
{
	/* AAAAABBBCC AAAAABBBCC ...: 3 runs per 10 steps. */
	int64_t step[100];
	int bucket[100];
	for (int i = 0; i < 100; i++) {
		step[i] = i;
		bucket[i] = i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : 2;
	}
	struct rm_series s = {.nb = 100, .bstep = step, .bucket = bucket};
	struct rm_detect_opts o;
	struct rm_runs_result r;
	rm_detect_opts_default(&o);
	rm_detect_runs(&s, &o, &r);
	assert_true(r.ok);
	assert_int_equal(r.k, 3);
	assert_float_equal(r.runs, 30, 0);
	assert_int_equal(r.per[0].longest, 5);
	assert_float_equal(r.per[0].mean_run, 5, 1e-12);
	assert_float_equal(r.per[0].expected_mean_run, 1 / (1 - 0.5), 1e-12);
	assert_int_equal(r.worst[0].length, 5);
	assert_int_equal(r.worst[0].first_step, 0);
	assert_int_equal(r.worst[0].last_step, 4);
	assert_true(r.z < 0);
}

/* y = trend * level[b] * noise: the split finds the levels as ratios, and
 * the adjusted loss no longer depends on the bucket. */
static void split_recovers_levels(void **state)
{
	size_t n = 6000;
	int64_t *step = malloc(n * sizeof(int64_t));
	double *loss = malloc(n * sizeof(double));
	int *bucket = malloc(n * sizeof(int));
	const double level[3] = {0.5, 1.0, 2.0};
	struct rm_rng rng = {3};
	for (size_t t = 0; t < n; t++) {
		step[t] = (int64_t)t;
		bucket[t] = (int)rm_rng_below(&rng, 3);
		loss[t] = (1 + 2 * exp(-(double)t / 1500)) * level[bucket[t]] * (1 + 0.03 * rm_rng_normal(&rng));
	}
	struct rm_series s = {.n = n, .step = step, .loss = loss, .nb = n, .bstep = step, .bucket = bucket};
	struct rm_detect_opts o;
	struct rm_diagnosis d;
	rm_detect_opts_default(&o);
	rm_detect_all(&s, &o, &d);
	assert_true(d.split.ok);
	assert_true(d.split.log_scale);
	assert_float_equal(d.split.level[1] / d.split.level[0], 2.0, 0.03);
	assert_float_equal(d.split.level[2] / d.split.level[1], 2.0, 0.03);
	assert_true(d.split.eta2 > 0.9);
	assert_true(d.split.p < 1e-100);
	assert_int_equal(d.split.modes, 3);
	assert_true(d.split.trimodal);
	/* Adjusted means per bucket agree within 2%. */
	double a0 = d.curves.bucket_adjusted_mean[0], a2 = d.curves.bucket_adjusted_mean[2];
	assert_float_equal(a2 / a0, 1.0, 0.02);
	assert_true(d.runs.ok && !d.runs.flagged); /* random order */
	rm_diagnosis_release(&d);
	free(step);
	free(loss);
	free(bucket);
}

static void homogeneous_orders_are_flagged(void **state)
{
	const enum rm_sim_strategy bad[] = {RM_SIM_SORTED, RM_SIM_CHUNKED, RM_SIM_HF_MEGABATCH};
	for (size_t i = 0; i < 3; i++)
		for (uint64_t seed = 1; seed <= 8; seed++) {
			struct rm_diagnosis d;
			diagnose(bad[i], seed, 6000, RM_SIM_SPIKES_NONE, 1, &d);
			if (d.severity < RM_SEV_WARN || d.rank[0].h != RM_H_HOMOGENEOUS)
				fail_msg("%s seed %llu: %s %s", rm_sim_strategy_name(bad[i]), (unsigned long long)seed,
				         rm_severity_name(d.severity), rm_hypothesis_name(d.rank[0].h));
			if (bad[i] == RM_SIM_HF_MEGABATCH) {
				assert_true(d.ladder.ramp);
				assert_int_equal(d.ladder.ramp_period, 50);
			} else {
				assert_true(d.runs.flagged);
			}
			rm_diagnosis_release(&d);
		}
}

/* At most 1% false alarms over 100 healthy seeds of each healthy order. */
static void healthy_orders_rarely_alarm(void **state)
{
	const enum rm_sim_strategy good[] = {RM_SIM_INTERLEAVED, RM_SIM_BUCKETED_RANDOM, RM_SIM_MIXED};
	for (size_t i = 0; i < 3; i++) {
		int alarms = 0, runs_flags = 0;
		for (uint64_t seed = 1; seed <= 100; seed++) {
			struct rm_diagnosis d;
			diagnose(good[i], seed, 3000, RM_SIM_SPIKES_NONE, 1, &d);
			alarms += d.severity >= RM_SEV_WARN;
			runs_flags += d.runs.flagged;
			rm_diagnosis_release(&d);
		}
		if (alarms > 1 || runs_flags > 0)
			fail_msg("%s: %d alarms, %d runs flags in 100 seeds", rm_sim_strategy_name(good[i]), alarms,
			         runs_flags);
	}
}

static void resets_are_attributed(void **state)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct rm_diagnosis d;
		/* Resets in the longest bucket, homogeneous order. */
		diagnose(RM_SIM_CHUNKED, seed, 8000, RM_SIM_SPIKES_BUCKET, 1, &d);
		assert_true(d.resets.cluster_by_bucket);
		assert_false(d.resets.checkpoint_cause);
		assert_int_equal(d.rank[0].h, RM_H_HOMOGENEOUS);
		assert_int_equal(d.severity, RM_SEV_CRITICAL);
		int top = 0;
		for (int b = 1; b < d.resets.k; b++)
			if (d.resets.enrichment[b] > d.resets.enrichment[top])
				top = b;
		assert_int_equal(d.resets.bucket[top], 5);
		rm_diagnosis_release(&d);
		/* The same resets with interleaved buckets: the data, not the order. */
		diagnose(RM_SIM_INTERLEAVED, seed, 8000, RM_SIM_SPIKES_BUCKET, 1, &d);
		assert_true(d.resets.cluster_by_bucket);
		assert_int_equal(d.rank[0].h, RM_H_BUCKET_RESETS);
		rm_diagnosis_release(&d);
		/* Resets after each checkpoint save, whatever the bucket. */
		diagnose(RM_SIM_INTERLEAVED, seed, 8000, RM_SIM_SPIKES_CHECKPOINT, 1, &d);
		assert_true(d.resets.checkpoint_cause);
		assert_false(d.resets.cluster_by_bucket);
		assert_int_equal(d.rank[0].h, RM_H_CHECKPOINT);
		assert_true(d.resets.ckpt_r > 0.9);
		rm_diagnosis_release(&d);
	}
}

/* Resets that come in bursts during streaks of long batches have dependent
 * phases; they must not pass for checkpoint interference. */
static void bursts_are_not_checkpoints(void **state)
{
	for (uint64_t seed = 10; seed < 30; seed++) {
		struct rm_diagnosis d;
		diagnose(RM_SIM_CHUNKED, seed, 5000, RM_SIM_SPIKES_BUCKET, 1, &d);
		if (d.resets.checkpoint_cause)
			fail_msg("seed %llu: bucket resets taken for checkpoints (q %g)", (unsigned long long)seed,
			         d.resets.ckpt_q);
		rm_diagnosis_release(&d);
	}
}

/* The trainer logs the mean loss every 10 steps: still diagnosed. */
static void interval_logging(void **state)
{
	struct rm_diagnosis d;
	diagnose(RM_SIM_CHUNKED, 4, 20000, RM_SIM_SPIKES_NONE, 10, &d);
	assert_int_equal(d.points, 2000);
	assert_int_equal(d.ladder.interval, 1);
	assert_true(d.split.ok && d.split.eta2 > 0.5);
	assert_int_equal(d.rank[0].h, RM_H_HOMOGENEOUS);
	assert_true(d.severity >= RM_SEV_WARN);
	rm_diagnosis_release(&d);
	diagnose(RM_SIM_INTERLEAVED, 4, 20000, RM_SIM_SPIKES_NONE, 10, &d);
	assert_true(d.severity <= RM_SEV_INFO);
	rm_diagnosis_release(&d);
}

/* Without batch composition only the bucket-free parts run. */
static void no_batch_composition(void **state)
{
	struct simrun r;
	struct rm_detect_opts o;
	struct rm_diagnosis d;
	rm_detect_opts_default(&o);
	simrun_make(&r, RM_SIM_CHUNKED, 1, 3000, RM_SIM_SPIKES_NONE, 1);
	r.s.nb = 0;
	r.loss[10] = NAN;
	rm_detect_all(&r.s, &o, &d);
	assert_false(d.has_buckets);
	assert_false(d.runs.ok);
	assert_false(d.split.ok);
	assert_int_equal(d.nonfinite, 1);
	assert_true(d.severity <= RM_SEV_INFO);
	char line[512];
	rm_explain_verdict(&d, line, sizeof(line));
	assert_non_null(strstr(line, "record batch composition"));
	rm_diagnosis_release(&d);
	simrun_free(&r);
}

static void same_seed_same_answer(void **state)
{
	struct rm_diagnosis a, b;
	diagnose(RM_SIM_CHUNKED, 9, 5000, RM_SIM_SPIKES_BUCKET, 1, &a);
	diagnose(RM_SIM_CHUNKED, 9, 5000, RM_SIM_SPIKES_BUCKET, 1, &b);
	assert_true(a.ladder.p == b.ladder.p && a.ladder.perm_mean == b.ladder.perm_mean);
	assert_true(a.resets.spikes == b.resets.spikes && a.split.eta2 == b.split.eta2);
	rm_diagnosis_release(&a);
	rm_diagnosis_release(&b);
}

static void names_are_complete(void **state)
{
	for (int i = 0; i < RM_H_COUNT; i++) {
		assert_non_null(rm_hypothesis_name((enum rm_hypothesis)i));
		for (int j = 0; j < i; j++)
			assert_string_not_equal(rm_hypothesis_name((enum rm_hypothesis)i),
			                        rm_hypothesis_name((enum rm_hypothesis)j));
	}
	for (int i = 0; i < RM_SIM_COUNT; i++) {
		enum rm_sim_strategy back;
		assert_int_equal(rm_sim_strategy_parse(rm_sim_strategy_name((enum rm_sim_strategy)i), &back), 0);
		assert_int_equal(back, i);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(runs_moments_match_enumeration),
	    cmocka_unit_test(runs_of_a_known_sequence),
	    cmocka_unit_test(split_recovers_levels),
	    cmocka_unit_test(homogeneous_orders_are_flagged),
	    cmocka_unit_test(healthy_orders_rarely_alarm),
	    cmocka_unit_test(resets_are_attributed),
	    cmocka_unit_test(bursts_are_not_checkpoints),
	    cmocka_unit_test(interval_logging),
	    cmocka_unit_test(no_batch_composition),
	    cmocka_unit_test(same_seed_same_answer),
	    cmocka_unit_test(names_are_complete),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
