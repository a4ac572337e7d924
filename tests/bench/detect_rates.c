/*
 * detect_rates.c - detection and false-alarm rates over many seeds (docs/decisions.md,
 * "How runmon decides"): the split's level intervals against known levels,
 * the inferred period, and verdicts from lengths alone (buckets derived
 * from max_len). Not a test: the unit tests assert
 * the same cases over fewer seeds; this prints the rates.
 *
 * usage: detect_rates [SEEDS [epochs]]   (default 100; epochs: the fixed-order rates alone)
 *        detect_rates SEEDS truth [FILTER]   the truth matrix: each cell's miss and false-alarm
 *                                            rates (cells whose name holds FILTER)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/model.h"
#include "runmon/detect.h"
#include "runmon/sim.h"
#include "runmon/stats.h"
#include "epoch_series.h"
#include "truth.h"

enum { N = 12000 };
static const int order8[] = {0, 1, 2, 0, 3, 4, 0, 5}; /* an interleaved order that repeats every 8 */
static const double level[] = {0.55, 0.6, 1.0, 1.1, 1.6, 2.0};

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

/* The order8 run with 5% noise, the loss x1.8 where spike[t]. */
static void diagnose_hand(const char *spike, uint64_t seed, struct rm_diagnosis *d)
{
	static int64_t step[N];
	static double loss[N];
	static int bucket[N];
	for (int t = 0; t < N; t++) {
		double u = ((double)lcg(&seed) + 0.5) / 2147483648.0 - 1;
		step[t] = t;
		bucket[t] = order8[t % 8];
		loss[t] = level[bucket[t]] * (1 + 0.05 * u) * (spike[t] ? 1.8 : 1);
	}
	struct rm_series s = {.n = N, .step = step, .loss = loss, .nb = N, .bstep = step, .bucket = bucket};
	struct rm_detect_opts o;
	rm_detect_opts_default(&o);
	rm_detect_all(&s, &o, d);
}

/* A simulated run, save interval left unconfigured; with lengths_only, no
 * bucket ids: buckets derived from max_len as the store derives them; with
 * length_free, a loss that ignores length (trend and noise only). */
static void diagnose_sim_shaped(enum rm_sim_strategy strat, uint64_t seed, enum rm_sim_spikes spikes, int lengths_only,
                                int length_free, struct rm_diagnosis *d)
{
	struct rm_sim_opts o;
	struct rm_sim_step *x;
	rm_sim_opts_default(&o);
	o.strategy = strat;
	o.seed = seed;
	o.steps = 6000;
	o.spikes = spikes;
	rm_simulate(&o, &x);
	static int64_t step[6000];
	static double loss[6000], max_len[6000];
	static int bucket[6000];
	for (int t = 0; t < 6000; t++) {
		step[t] = x[t].step;
		loss[t] = x[t].loss;
		if (length_free) {
			double u = ((double)lcg(&seed) + 0.5) / 2147483648.0 - 1;
			loss[t] = (1 + exp(-(double)t / 1500)) * (1 + 0.05 * u);
		}
		max_len[t] = x[t].max_len;
		bucket[t] = x[t].bucket;
	}
	rm_sim_steps_free(x, 6000);
	struct rm_series s = {
	    .n = 6000, .step = step, .loss = loss, .nb = 6000, .bstep = step, .bucket = bucket, .max_len = max_len};
	struct rm_bucket_map m = {0};
	if (lengths_only && rm_bucket_map_derive(&m, NULL, 0, NULL, max_len, 6000, bucket)) {
		s.labels = m.label;
		s.nlabels = m.k;
		s.derived_bounds = m.bound;
		s.nderived_bounds = m.nbound;
	}
	struct rm_detect_opts opt;
	rm_detect_opts_default(&opt);
	rm_detect_all(&s, &opt, d);
	rm_bucket_map_release(&m);
}

static void diagnose_sim(enum rm_sim_strategy strat, uint64_t seed, enum rm_sim_spikes spikes, int lengths_only,
                         struct rm_diagnosis *d)
{
	diagnose_sim_shaped(strat, seed, spikes, lengths_only, 0, d);
}

/* The levels' 95% intervals against the levels the loss was made with
 * (relative to the run's weighted mean level, as the split reports them):
 * T steps, a decaying trend, AR(1) noise with the given phi, buckets in
 * random order or in streaks of 50-200 steps. Returns how many of the
 * seeds x buckets intervals cover the truth, *with of them given (none
 * where the run is too short for its streaks). */
static int level_coverage(int seeds, int T, int streaks, double phi, int *with)
{
	enum { K = 3 };
	int64_t *step = malloc((size_t)T * sizeof(*step));
	double *loss = malloc((size_t)T * sizeof(*loss));
	int *bucket = malloc((size_t)T * sizeof(*bucket));
	const double truth[K] = {0.5, 1.0, 2.0};
	int covered = 0;
	*with = 0;
	for (int seed = 1; seed <= seeds; seed++) {
		struct rm_rng rng = {(uint64_t)seed * 977};
		double ar = 0;
		int b = 0, left = 0;
		for (int t = 0; t < T; t++) {
			if (!streaks)
				b = (int)rm_rng_below(&rng, K);
			else if (left-- <= 0) {
				b = (int)rm_rng_below(&rng, K);
				left = 50 + (int)rm_rng_below(&rng, 151);
			}
			step[t] = t;
			bucket[t] = b;
			ar = phi * ar + 0.03 * sqrt(1 - phi * phi) * rm_rng_normal(&rng);
			loss[t] = (1 + 2 * exp(-(double)t / 1500)) * truth[b] * exp(ar);
		}
		struct rm_series s = {.n = T, .step = step, .loss = loss, .nb = T, .bstep = step, .bucket = bucket};
		struct rm_detect_opts o;
		struct rm_diagnosis d;
		rm_detect_opts_default(&o);
		rm_detect_all(&s, &o, &d);
		double lw = 0, w = 0;
		for (int i = 0; i < K && d.split.k == K; i++) {
			lw += d.split.weight[i] * log(truth[i]);
			w += d.split.weight[i];
		}
		for (int i = 0; i < K && d.split.k == K; i++)
			if (isfinite(d.split.level_lo[i])) {
				double t = truth[i] / exp(lw / w);
				(*with)++;
				covered += d.split.level_lo[i] <= t && t <= d.split.level_hi[i];
			}
		rm_diagnosis_release(&d);
	}
	free(step);
	free(loss);
	free(bucket);
	return covered;
}

/* The truth matrix over seeds 1..seeds: a row per cell. */
static int truth_rates(int seeds, const char *filter)
{
	struct truth_cell *cells;
	size_t n = truth_cells(&cells);
	int worst_false = 0;
	printf("%-48s %6s %6s %6s %8s %8s  %s\n", "cell", "miss", "false", "bucket", "made", "found", "first failure");
	for (size_t i = 0; i < n; i++) {
		char name[96], first[320] = "";
		truth_cell_name(&cells[i], name, sizeof(name));
		if (filter && !strstr(name, filter))
			continue;
		int miss = 0, fa = 0, wb = 0;
		double made = 0, found = 0;
		for (int seed = 1; seed <= seeds; seed++) {
			struct truth_outcome out;
			truth_run(&cells[i], (uint64_t)seed, &out);
			miss += out.missed;
			fa += out.false_alarm;
			wb += out.wrong_bucket;
			made += (double)out.onsets;
			found += (double)out.found;
			if (!first[0] && out.why[0])
				snprintf(first, sizeof(first), "seed %d: %s", seed, out.why);
			if (getenv("RUNMON_TRUTH_VERBOSE") && out.why[0]) /* every failure, not only the first */
				fprintf(stderr, "%s seed %d: %s\n", name, seed, out.why);
		}
		worst_false = fa > worst_false ? fa : worst_false;
		printf("%-48s %5.1f%% %5.1f%% %5.1f%% %8.1f %8.1f  %s\n", name, 100.0 * miss / seeds,
		       100.0 * fa / seeds, 100.0 * wb / seeds, made / seeds, found / seeds, first);
		fflush(stdout);
	}
	free(cells);
	return 0;
}

int main(int argc, char **argv)
{
	int seeds = argc > 1 ? atoi(argv[1]) : 100;
	if (argc > 2 && !strcmp(argv[2], "truth"))
		return truth_rates(seeds, argc > 3 ? argv[3] : NULL);
	if (argc > 2 && !strcmp(argv[2], "epochs")) /* the fixed-order rates alone */
		goto epochs;
	for (int streaks = 0; streaks <= 1; streaks++)
		for (int T = 6000; T <= 60000; T *= 10)
			for (int ph = 0; ph < 3; ph++) {
				static const double phis[] = {0, 0.9, 0.99};
				int with, covered = level_coverage(seeds, T, streaks, phis[ph], &with);
				printf("level intervals, %d steps, buckets %s, AR(1) noise phi %.2f: ", T,
				       streaks ? "in streaks of 50-200" : "in random order", phis[ph]);
				if (with)
					printf("cover the true level %d/%d (%.1f%%)\n", covered, with,
					       100.0 * covered / with);
				else
					printf("none given\n");
				fflush(stdout);
			}
	static char spike[N];
	static const int periods[] = {100, 250, 500, 1000, 2000};
	for (int pi = 0; pi < 5; pi++)
		for (int jitter = 0; jitter <= 2; jitter += 2)
			for (int share = 100; share >= 50; share -= 50) {
				int right = 0, P = periods[pi];
				for (int seed = 1; seed <= seeds; seed++) {
					uint64_t x = (uint64_t)seed * 31 + (uint64_t)pi;
					memset(spike, 0, sizeof(spike));
					for (int t = P + 1; t + 2 < N; t += P)
						if (lcg(&x) % 100 < (uint64_t)share)
							spike[t + (jitter ? (int)(lcg(&x) % 5) - 2 : 0)] = 1;
					struct rm_diagnosis d;
					diagnose_hand(spike, (uint64_t)seed, &d);
					right += d.resets.periodic_cause && llabs(d.resets.period - P) <= 1 &&
					         d.rank[0].h == RM_H_PERIODIC;
					rm_diagnosis_release(&d);
				}
				printf("every %4d steps, jitter +/-%d, %3d%% of saves spike: right period and verdict "
				       "%3d/%d\n",
				       P, jitter, share, right, seeds);
			}
	int ok = 0, called = 0, bucket = 0;
	for (int seed = 1; seed <= seeds; seed++) {
		struct rm_diagnosis d;
		memset(spike, 0, sizeof(spike));
		for (int t = 512; t < N; t += 512)
			spike[t] = 1;
		diagnose_hand(spike, (uint64_t)seed, &d);
		ok += d.resets.periodic_cause && !d.resets.cluster_by_bucket && d.rank[0].h == RM_H_PERIODIC;
		rm_diagnosis_release(&d);
		uint64_t x = (uint64_t)seed * 7919;
		for (int t = 0; t < N; t++)
			spike[t] = order8[t % 8] == 5 && lcg(&x) % 100 < 5;
		diagnose_hand(spike, (uint64_t)seed, &d);
		called += d.resets.periodic_cause;
		bucket += d.rank[0].h == RM_H_BUCKET_RESETS;
		rm_diagnosis_release(&d);
	}
	printf("saves every 512 steps in an order repeating every 8: periodic verdict %d/%d\n", ok, seeds);
	printf("resets of one bucket in that order: called periodic %d/%d, bucket verdict %d/%d\n", called, seeds,
	       bucket, seeds);
	static const enum rm_sim_strategy strats[] = {RM_SIM_SORTED, RM_SIM_CHUNKED, RM_SIM_INTERLEAVED,
	                                              RM_SIM_HF_MEGABATCH, RM_SIM_BUCKETED_RANDOM};
	for (size_t k = 0; k < sizeof(strats) / sizeof(strats[0]); k++)
		for (int sp = 0; sp < 2; sp++) {
			int fp = 0;
			for (int seed = 1; seed <= seeds; seed++) {
				struct rm_diagnosis d;
				diagnose_sim(strats[k], (uint64_t)seed, sp ? RM_SIM_SPIKES_BUCKET : RM_SIM_SPIKES_NONE,
				             0, &d);
				fp += d.resets.periodic_cause;
				rm_diagnosis_release(&d);
			}
			printf("%s, %s: called periodic %d/%d\n", rm_sim_strategy_name(strats[k]),
			       sp ? "resets in the longest bucket" : "no resets", fp, seeds);
		}
	/* Lengths only: every strategy, no resets and resets in the longest bucket. */
	static const enum rm_sim_strategy all[] = {RM_SIM_SORTED,          RM_SIM_CHUNKED, RM_SIM_HF_MEGABATCH,
	                                           RM_SIM_BUCKETED_RANDOM, RM_SIM_MIXED,   RM_SIM_INTERLEAVED};
	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
		for (int sp = 0; sp < 2; sp++) {
			int homog = 0, unstable = 0, alarm = 0, coupled = 0, ordered = 0, sum = 0;
			for (int seed = 1; seed <= seeds; seed++) {
				struct rm_diagnosis d;
				diagnose_sim(all[k], (uint64_t)seed, sp ? RM_SIM_SPIKES_BUCKET : RM_SIM_SPIKES_NONE, 1,
				             &d);
				homog += d.rank[0].h == RM_H_HOMOGENEOUS && d.severity >= RM_SEV_WARN;
				unstable += d.rank[0].h == RM_H_INSTABILITY && d.severity >= RM_SEV_WARN;
				alarm += d.severity >= RM_SEV_WARN;
				coupled += d.length.coupled;
				ordered += d.length.ordered;
				sum += d.length.per_sequence_sum;
				rm_diagnosis_release(&d);
			}
			printf("lengths only, %s, %s: homogeneous %d/%d, instability %d/%d, any alarm %d/%d;"
			       " length coupled %d/%d, ordered %d/%d, per-sequence sum %d/%d\n",
			       rm_sim_strategy_name(all[k]), sp ? "resets in the longest bucket" : "no resets", homog,
			       seeds, unstable, seeds, alarm, seeds, coupled, seeds, ordered, seeds, sum, seeds);
		}
	/* A loss that ignores length: coupling there is a false alarm. */
	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		int coupled = 0, alarm = 0;
		for (int seed = 1; seed <= seeds; seed++) {
			struct rm_diagnosis d;
			diagnose_sim_shaped(all[k], (uint64_t)seed, RM_SIM_SPIKES_NONE, 1, 1, &d);
			coupled += d.length.coupled;
			alarm += d.severity >= RM_SEV_WARN && d.rank[0].h != RM_H_HOMOGENEOUS;
			rm_diagnosis_release(&d);
		}
		printf("lengths only, %s, loss ignores length: length coupled %d/%d, alarms other than homogeneous"
		       " %d/%d\n",
		       rm_sim_strategy_name(all[k]), coupled, seeds, alarm, seeds);
	}
epochs:;
	/* Five epochs logged every 10th batch: a fixed order (batch difficulty
	 * sd 0.08, or a faint 0.03 against noise of 0.03) against shuffled
	 * epochs, with and without a schedule restarting every epoch. */
	static const struct {
		int fixed;
		double hard;
		int wave;
		const char *what;
	} ep[] = {{1, 0.08, 0, "fixed order"},
	          {1, 0.03, 0, "fixed order, faint"},
	          {0, 0.08, 0, "shuffled epochs"},
	          {0, 0.08, 1, "shuffled epochs, schedule restarting each epoch"}};
	for (size_t k = 0; k < sizeof(ep) / sizeof(ep[0]); k++) {
		int named = 0, flagged = 0, spikes = 0;
		for (int seed = 1; seed <= seeds; seed++) {
			struct rm_diagnosis d;
			epoch_series_diagnose(ep[k].fixed, ep[k].hard, ep[k].wave, (uint64_t)seed, &d);
			flagged += d.order.flagged;
			named += d.rank[0].h == RM_H_FIXED_ORDER && d.rank[0].severity >= RM_SEV_WARN;
			spikes += d.order.nspikes == 2;
			rm_diagnosis_release(&d);
		}
		printf("%s: flagged %d/%d, verdict %d/%d, both repeated spikes named %d/%d\n", ep[k].what, flagged,
		       seeds, named, seeds, spikes, seeds);
	}
	return 0;
}
