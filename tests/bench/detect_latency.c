/*
 * detect_latency.c - how soon runmon names homogeneous batching (issue
 * 65.5): each sick order's run cut to its first K logged points, over
 * seeds, for each kind of composition recorded (bucket ids, lengths only,
 * the loss alone); and how many prefixes of healthy orders alarm. Runs as
 * `watch` sees a growing run: the same detectors on the points so far.
 * Not a test (the unit and e2e tests assert fixed cases); it prints the
 * table docs/performance.md quotes.
 *
 * usage: detect_latency [SEEDS]   (default 10)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/detect.h"
#include "runmon/sim.h"
#include "truth.h"

static const size_t prefix[] = {50, 100, 200, 300, 500, 1000, 2000, 4000};
enum { NPREFIX = sizeof(prefix) / sizeof(prefix[0]), STEPS = 4000 };

/* The diagnosis of the first k points (and the batches up to the last of
 * them) of a simulated run. */
static void diagnose_prefix(const struct rm_sim_series *ss, size_t k, struct rm_diagnosis *d)
{
	struct rm_series s = ss->s;
	if (k < s.n)
		s.n = k;
	int64_t last = s.step[s.n - 1];
	size_t nb = 0;
	while (nb < s.nb && s.bstep[nb] <= last)
		nb++;
	s.nb = nb;
	size_t nrl = 0;
	while (nrl < s.nrl && s.rl_step[nrl] <= last)
		nrl++;
	s.nrl = nrl;
	struct rm_detect_opts o;
	rm_detect_opts_default(&o);
	rm_detect_all(&s, &o, d);
}

static int names_homogeneous(const struct rm_diagnosis *d)
{
	for (int i = 0; i < RM_H_COUNT; i++)
		if (d->rank[i].h == RM_H_HOMOGENEOUS)
			return d->rank[i].severity >= RM_SEV_WARN;
	return 0;
}

static int alarms(const struct rm_diagnosis *d)
{
	return d->severity >= RM_SEV_WARN;
}

int main(int argc, char **argv)
{
	int seeds = argc > 1 ? atoi(argv[1]) : 10;
	if (seeds < 1) {
		fprintf(stderr, "usage: detect_latency [SEEDS]\n");
		return 2;
	}
	static const enum rm_sim_strategy sick[] = {RM_SIM_CHUNKED, RM_SIM_SORTED, RM_SIM_HF_MEGABATCH};
	static const enum rm_sim_strategy healthy[] = {RM_SIM_MIXED, RM_SIM_STRIDE, RM_SIM_INTERLEAVED,
	                                               RM_SIM_BUCKETED_RANDOM};
	static const char *const comp_name[COMP_COUNT] = {"bucket ids", "lengths only", "loss alone"};
	printf("Sick orders: seeds (of %d) whose run, cut to its first K points logged every step, names\n"
	       "homogeneous batching at warn or above\n\n",
	       seeds);
	printf("%-13s %-13s", "order", "recorded");
	for (int p = 0; p < NPREFIX; p++)
		printf(" %5zu", prefix[p]);
	printf("   median K\n");
	for (size_t i = 0; i < sizeof(sick) / sizeof(sick[0]); i++)
		for (int c = 0; c < COMP_COUNT; c++) {
			int named[NPREFIX] = {0}, first[64];
			int nfirst = 0;
			for (int seed = 1; seed <= seeds; seed++) {
				struct truth_cell cell = {sick[i], RK_ONE, 1, (enum truth_comp)c, EV_NONE, 0};
				struct rm_sim_opts o;
				struct rm_sim_series ss;
				truth_opts(&cell, (uint64_t)seed, &o);
				o.steps = STEPS;
				rm_sim_series_make(&o, &ss);
				int at = -1;
				for (int p = 0; p < NPREFIX; p++) {
					struct rm_diagnosis d;
					diagnose_prefix(&ss, prefix[p], &d);
					if (names_homogeneous(&d)) {
						named[p]++;
						if (at < 0)
							at = p;
					}
					rm_diagnosis_release(&d);
				}
				if (nfirst < 64)
					first[nfirst++] = at < 0 ? NPREFIX : at;
				rm_sim_series_release(&ss);
			}
			/* the median of the first prefix each seed was named at */
			for (int a = 1; a < nfirst; a++)
				for (int b = a; b > 0 && first[b] < first[b - 1]; b--) {
					int t = first[b];
					first[b] = first[b - 1];
					first[b - 1] = t;
				}
			int med = first[nfirst / 2];
			printf("%-13s %-13s", rm_sim_strategy_name(sick[i]), comp_name[c]);
			for (int p = 0; p < NPREFIX; p++)
				printf(" %5d", named[p]);
			if (med < NPREFIX)
				printf("   %zu\n", prefix[med]);
			else
				printf("   > %d\n", STEPS);
			fflush(stdout);
		}
	printf("\nHealthy orders: prefixes (of %d: %d seeds x %d cuts) that raise any alarm at warn or above\n\n",
	       seeds * NPREFIX, seeds, NPREFIX);
	for (size_t i = 0; i < sizeof(healthy) / sizeof(healthy[0]); i++)
		for (int c = 0; c < COMP_COUNT; c++) {
			int alarmed = 0;
			for (int seed = 1; seed <= seeds; seed++) {
				struct truth_cell cell = {healthy[i], RK_ONE, 1, (enum truth_comp)c, EV_NONE, 0};
				struct rm_sim_opts o;
				struct rm_sim_series ss;
				truth_opts(&cell, (uint64_t)seed + 1000, &o);
				o.steps = STEPS;
				rm_sim_series_make(&o, &ss);
				for (int p = 0; p < NPREFIX; p++) {
					struct rm_diagnosis d;
					diagnose_prefix(&ss, prefix[p], &d);
					alarmed += alarms(&d);
					if (alarms(&d) && getenv("LATENCY_VERBOSE"))
						fprintf(stderr, "  %s, %s, seed %d, %zu points: %s (%s)\n",
						        rm_sim_strategy_name(healthy[i]), comp_name[c], seed + 1000,
						        prefix[p], rm_hypothesis_name(d.rank[0].h),
						        rm_severity_name(d.severity));
					rm_diagnosis_release(&d);
				}
				rm_sim_series_release(&ss);
			}
			printf("%-16s %-13s %3d of %d\n", rm_sim_strategy_name(healthy[i]), comp_name[c], alarmed,
			       seeds * NPREFIX);
			fflush(stdout);
		}
	return 0;
}
