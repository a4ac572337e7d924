/*
 * epoch_series.c - see epoch_series.h.
 */
#include "epoch_series.h"

#include <math.h>

#include "runmon/stats.h"

void epoch_series_diagnose(int fixed, double hard, int wave, uint64_t seed, struct rm_diagnosis *d)
{
	enum { E = 5, S = 2000, K = 10, M = E * S / K };
	static int64_t step[M];
	static double loss[M], diff[S];
	static float epoch[M];
	static int order[S];
	struct rm_rng rng = {seed};
	for (int b = 0; b < S; b++) {
		diff[b] = hard * rm_rng_normal(&rng) + (b == 759 || b == 1299 ? 1.2 : 0);
		order[b] = b;
	}
	size_t n = 0;
	for (int e = 0; e < E; e++) {
		if (!fixed)
			rm_rng_shuffle_int(&rng, order, S);
		for (int s = K; s <= S; s += K) {
			int64_t t = (int64_t)e * S + s;
			step[n] = t;
			epoch[n] = e + 1;
			loss[n++] = 2 + 3 * exp(-(double)t / 3000) + diff[order[s - 1]] + 0.03 * rm_rng_normal(&rng) +
			            (wave ? 0.3 * cos(2 * M_PI * s / S) : 0);
		}
	}
	struct rm_series sr = {.n = n, .step = step, .loss = loss, .epoch = epoch};
	struct rm_detect_opts o;
	rm_detect_opts_default(&o);
	rm_detect_all(&sr, &o, d);
}
