/*
 * How much of a run has batch composition: one definition for runs, the
 * report, diagnose's JSON and the metrics endpoint, so the four agree.
 */
#include "runmon/model.h"

int64_t rm_batch_steps_covered(const int64_t *step, size_t n, const int64_t *bstep, size_t nb)
{
	int64_t covered = 0;
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		/* the batches up to this loss step belong to it or to earlier ones */
		int hit = 0;
		while (j < nb && bstep[j] <= step[i]) {
			hit = 1;
			j++;
		}
		covered += hit;
	}
	return covered;
}

double rm_run_batch_share(const struct rm_run_info *r)
{
	if (r->steps <= 0 || r->batch_steps <= 0)
		return 0;
	return r->batch_steps >= r->steps ? 1.0 : (double)r->batch_steps / (double)r->steps;
}
