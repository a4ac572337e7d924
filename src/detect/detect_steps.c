/*
 * detect_steps.c - a diagnosis read back step by step: each loss row with
 * its bucket- and length-adjusted values and the batches it covers, for
 * `runmon export`.
 */
#include <math.h>
#include <string.h>

#include "runmon/detect.h"

int rm_each_step_row(const struct rm_series *s, const struct rm_diagnosis *d, rm_step_row_fn fn, void *arg)
{
	const double *badj = d->split.adjusted, *ladj = d->length.adjusted;
	double share[RM_MAX_BUCKETS];
	int k = s->nlabels < RM_MAX_BUCKETS ? s->nlabels : RM_MAX_BUCKETS;
	/* As the detectors count (rm_prepare): row i covers the batches in
	 * (step of row i-1, step_i], the first as many steps as the second;
	 * or, read as one step's loss, the batches of its own step (shifted).
	 * Finite losses index the adjusted curves in order. */
	int one = d->reading.reading == RM_READ_STEP;
	int64_t shift = one ? d->reading.shift : 0;
	int64_t first_gap = one ? 1 : s->n > 1 ? s->step[1] - s->step[0] : 1;
	size_t b = 0, j = 0;
	while (b < s->nb && s->n && s->bstep[b] <= s->step[0] + shift - first_gap)
		b++;
	for (size_t i = 0; i < s->n; i++) {
		struct rm_step_row r = {.step = s->step[i], .loss = s->loss[i], .dominant = -1, .share = share, .k = k};
		uint64_t ranks[(RM_MAX_RANKS + 63) / 64];
		double known = 0, top = 0;
		memset(ranks, 0, sizeof(ranks));
		memset(share, 0, sizeof(share));
		while (one && b < s->nb && s->bstep[b] < s->step[i] + shift)
			b++;
		for (; b < s->nb && s->bstep[b] <= s->step[i] + shift; b++) {
			int rank = s->brank ? s->brank[b] : 0;
			if (rank >= 0 && rank < RM_MAX_RANKS && !(ranks[rank / 64] >> (rank % 64) & 1)) {
				ranks[rank / 64] |= 1ull << (rank % 64);
				r.ranks++;
			}
			r.batches++;
			if (s->bucket[b] >= 0 && s->bucket[b] < k) {
				share[s->bucket[b]]++;
				known++;
			}
		}
		for (int c = 0; c < k; c++) {
			if (share[c] > top) {
				top = share[c];
				r.dominant = c;
			}
			share[c] = known > 0 ? share[c] / known : NAN;
		}
		if (isfinite(s->loss[i])) {
			r.bucket_adjusted = badj ? badj[j] : s->loss[i];
			r.length_adjusted = ladj ? ladj[j] : NAN;
			j++;
		} else {
			r.nonfinite = s->nonfinite ? s->nonfinite[i] : 1;
			r.bucket_adjusted = r.length_adjusted = NAN;
		}
		int rc = fn(arg, &r);
		if (rc)
			return rc;
	}
	return 0;
}
