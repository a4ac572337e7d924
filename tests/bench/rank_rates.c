/*
 * rank_rates.c - verdicts on data-parallel runs over many seeds (docs/decisions.md,
 * "Ranks and micro-batches"): each rank mode x strategy of `simulate`,
 * 4 ranks (and 2 ranks x 2 micro-batches), the shape runmon names and how
 * often it alarms; then sharded runs recorded with max_len only and with
 * each batch's lengths (docs/decisions.md, "Mixed batches"). Not a test:
 * tests/test_detect.c asserts the same cases over fewer seeds; this prints
 * the rates.
 *
 * usage: rank_rates [SEEDS [lens]]   (default 100; lens: the second table only)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/detect.h"
#include "runmon/sim.h"

enum { STEPS = 6000 };

static void diagnose(enum rm_sim_strategy strat, enum rm_sim_rank_mode mode, int ranks, int micro, uint64_t seed,
                     int lens, struct rm_diagnosis *d)
{
	struct rm_sim_opts o;
	rm_sim_opts_default(&o);
	o.strategy = strat;
	o.seed = seed;
	o.steps = STEPS;
	o.ranks = ranks;
	o.micro = micro;
	o.rank_mode = mode;
	o.lens = lens;
	struct rm_sim_series ss;
	rm_sim_series_make(&o, &ss);
	struct rm_detect_opts opt;
	rm_detect_opts_default(&opt);
	rm_detect_all(&ss.s, &opt, d);
	rm_sim_series_release(&ss);
}

int main(int argc, char **argv)
{
	int seeds = argc > 1 ? atoi(argv[1]) : 100, only_lens = argc > 2 && !strcmp(argv[2], "lens");
	static const enum rm_sim_strategy strats[] = {RM_SIM_CHUNKED,      RM_SIM_SORTED,          RM_SIM_INTERLEAVED,
	                                              RM_SIM_HF_MEGABATCH, RM_SIM_BUCKETED_RANDOM, RM_SIM_MIXED};
	static const int shapes[][2] = {{4, 1}, {2, 2}};
	for (size_t sh = 0; sh < 2 && !only_lens; sh++)
		for (int mode = 0; mode < RM_SIM_RANK_MODES; mode++)
			for (size_t k = 0; k < sizeof(strats) / sizeof(strats[0]); k++) {
				if (mode == RM_SIM_INDEPENDENT &&
				    (strats[k] == RM_SIM_MIXED || strats[k] == RM_SIM_HF_MEGABATCH))
					continue; /* simulate deals those out in one order */
				int alarm = 0, shape[5] = {0};
				for (int seed = 1; seed <= seeds; seed++) {
					struct rm_diagnosis d;
					diagnose(strats[k], (enum rm_sim_rank_mode)mode, shapes[sh][0], shapes[sh][1],
					         (uint64_t)seed, 0, &d);
					alarm += d.severity >= RM_SEV_WARN;
					shape[d.mixture.shape]++;
					rm_diagnosis_release(&d);
				}
				printf("%d ranks x %d micro, %-11s %-15s alarm %3d/%d; shape", shapes[sh][0],
				       shapes[sh][1], rm_sim_rank_mode_name((enum rm_sim_rank_mode)mode),
				       rm_sim_strategy_name(strats[k]), alarm, seeds);
				for (int i = 0; i < 5; i++)
					if (shape[i])
						printf(" %s %d", rm_mix_shape_name((enum rm_mix_shape)i), shape[i]);
				printf("\n");
				fflush(stdout);
			}
	/* Each batch's own lengths (simulate --lens): mixed batches count in
	 * every bucket by token share. Alarms, how many batches mix, the split's
	 * R^2 and the longest bucket's level over the shortest's (the simulator
	 * gives about 3.3; the bucket of the longest sequence blurs it). */
	static const enum rm_sim_strategy lstrats[] = {RM_SIM_MIXED, RM_SIM_HF_MEGABATCH, RM_SIM_CHUNKED};
	static const int lshapes[][2] = {{1, 1}, {4, 1}, {2, 2}};
	for (size_t sh = 0; sh < 3; sh++)
		for (size_t k = 0; k < 3; k++)
			for (int lens = 0; lens <= 1; lens++) {
				int alarm = 0;
				double mixed = 0, r2 = 0, ratio = 0;
				for (int seed = 1; seed <= seeds; seed++) {
					struct rm_diagnosis d;
					diagnose(lstrats[k], RM_SIM_SHARDED, lshapes[sh][0], lshapes[sh][1],
					         (uint64_t)seed, lens, &d);
					alarm += d.severity >= RM_SEV_WARN;
					mixed += (double)d.split.mixed_batches / (double)(d.batches ? d.batches : 1);
					r2 += d.split.eta2;
					ratio += d.split.k ? d.split.level[d.split.k - 1] / d.split.level[0] : 0;
					rm_diagnosis_release(&d);
				}
				printf("%d ranks x %d micro, sharded %-13s %-9s alarm %3d/%d; mixed batches %5.1f%%, "
				       "R^2 %.3f, long/short level %.2f\n",
				       lshapes[sh][0], lshapes[sh][1], rm_sim_strategy_name(lstrats[k]),
				       lens ? "lens" : "max_len", alarm, seeds, 100 * mixed / seeds, r2 / seeds,
				       ratio / seeds);
				fflush(stdout);
			}
	return 0;
}
