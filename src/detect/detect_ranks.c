/*
 * detect_ranks.c - the split and the length coupling on each rank's own
 * loss, when the log printed one per data-parallel rank.
 *
 * A step's loss is the mean over its R ranks, each of which saw its own
 * batch: the mean blurs R batches' effects into one number. A rank's loss
 * against its rank's batches is the direct measurement. The ranks are laid
 * end to end on one axis (rank r's step s at r * span + s), so each rank's
 * loss point covers exactly that rank's batches since its previous point,
 * and the ordinary fits run on that series unchanged.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

/* Stable counting sort of n items by rank: order[] gets their indexes. */
static void by_rank(const int *rank, size_t n, int R, size_t *order)
{
	size_t *at = rm_xcalloc((size_t)R + 1, sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		at[rank[i] + 1]++;
	for (int r = 0; r < R; r++)
		at[r + 1] += at[r];
	for (size_t i = 0; i < n; i++)
		order[at[rank[i]]++] = i;
	free(at);
}

int rm_detect_rank_fits(const struct rm_series *s, struct rm_split_result *split, struct rm_length_result *length,
                        int *ranks)
{
	memset(split, 0, sizeof(*split));
	memset(length, 0, sizeof(*length));
	*ranks = 0;
	if (!s->rl_loss || s->nrl < 2 || !s->nb || !s->brank || s->nranks < 2)
		return 0;
	int R = s->nranks;
	for (size_t i = 0; i < s->nrl; i++)
		if (s->rl_rank[i] >= R)
			R = s->rl_rank[i] + 1;
	int64_t lo = s->rl_step[0] < s->bstep[0] ? s->rl_step[0] : s->bstep[0];
	int64_t hi = s->rl_step[s->nrl - 1] > s->bstep[s->nb - 1] ? s->rl_step[s->nrl - 1] : s->bstep[s->nb - 1];
	if (hi - lo >= INT64_MAX / 4 / R) /* the axis would overflow */
		return 0;
	int64_t span = hi - lo + 2;
	size_t *po = rm_xmalloc(s->nrl * sizeof(size_t)), *bo = rm_xmalloc(s->nb * sizeof(size_t));
	by_rank(s->rl_rank, s->nrl, R, po);
	by_rank(s->brank, s->nb, R, bo);
	int64_t *step = rm_xmalloc(s->nrl * sizeof(int64_t)), *bstep = rm_xmalloc(s->nb * sizeof(int64_t));
	double *loss = rm_xmalloc(s->nrl * sizeof(double)), *max_len = NULL;
	int *bucket = rm_xmalloc(s->nb * sizeof(int));
	char *seen = rm_xcalloc((size_t)R, 1);
	for (size_t i = 0; i < s->nrl; i++) {
		size_t o = po[i];
		step[i] = s->rl_rank[o] * span + (s->rl_step[o] - lo) + 1;
		loss[i] = s->rl_loss[o];
		if (isfinite(loss[i]) && !seen[s->rl_rank[o]]) {
			seen[s->rl_rank[o]] = 1;
			++*ranks;
		}
	}
	if (s->max_len)
		max_len = rm_xmalloc(s->nb * sizeof(double));
	for (size_t t = 0; t < s->nb; t++) {
		size_t o = bo[t];
		bstep[t] = s->brank[o] * span + (s->bstep[o] - lo) + 1;
		bucket[t] = s->bucket[o];
		if (max_len)
			max_len[t] = s->max_len[o];
	}
	struct rm_series rs = {
	    .n = s->nrl,
	    .step = step,
	    .loss = loss,
	    .nb = s->nb,
	    .bstep = bstep,
	    .nranks = 1,
	    .bucket = bucket,
	    .max_len = max_len,
	    .labels = s->labels,
	    .nlabels = s->nlabels,
	    .labels_seen = s->labels_seen,
	    .derived_bounds = s->derived_bounds,
	    .nderived_bounds = s->nderived_bounds,
	    .reading = s->reading,
	    .stamp_shift = s->stamp_shift,
	};
	int ok = 0;
	if (*ranks >= 2) {
		struct rm_prepared p;
		rm_prepare(&rs, &p);
		rm_detect_split(&p, split);
		rm_detect_length(&p, split, length);
		split->mixed = p.multi;
		ok = split->ok || length->ok;
		rm_prepared_release(&p);
	}
	free(seen);
	free(po);
	free(bo);
	free(step);
	free(bstep);
	free(loss);
	free(bucket);
	free(max_len);
	return ok;
}
