/*
 * derive.c - buckets for a run that records lengths but no bucket ids: the
 * least-padding boundaries of `runmon buckets`, fitted to the run's own
 * lengths. See cost.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/cost.h"

#define RM_BATCH_MAX_LEN_D ((double)RM_BATCH_MAX_LEN)
#define DERIVE_MAX_K       8

int rm_bucket_map_derive(struct rm_bucket_map *m, const double *max_len, size_t n, int *dense_out)
{
	memset(m, 0, sizeof(*m));
	int64_t *lens = rm_xmalloc((n ? n : 1) * sizeof(int64_t));
	size_t known = 0;
	for (size_t i = 0; i < n; i++)
		if (max_len[i] >= 1 && max_len[i] <= RM_BATCH_MAX_LEN_D)
			lens[known++] = (int64_t)llround(max_len[i]);
	if (known < 2 || known * 2 < n) {
		free(lens);
		return 0;
	}
	struct rm_lengths d;
	struct rm_bucketing fit[DERIVE_MAX_K + 1];
	rm_lengths_from(&d, lens, known);
	free(lens);
	int kmax = d.n < DERIVE_MAX_K ? (int)d.n : DERIVE_MAX_K, k = 1;
	for (int j = 1; j <= kmax; j++)
		rm_buckets_fit(&d, j, &fit[j]);
	while (k < kmax && fit[k].efficiency < fit[kmax].efficiency - 0.01)
		k++;
	rm_lengths_release(&d);
	m->derived = 1;
	m->nbound = fit[k].k + 1;
	memcpy(m->bound, fit[k].bound, (size_t)m->nbound * sizeof(int64_t));
	m->k = m->nbound - 1;
	m->labels = (size_t)m->k;
	m->nraw = (size_t)m->k;
	m->raw = rm_xmalloc((size_t)m->k * sizeof(int64_t));
	m->dense = rm_xmalloc((size_t)m->k * sizeof(int));
	for (int b = 0; b < m->k; b++) {
		m->raw[b] = b;
		m->dense[b] = b;
		snprintf(m->label[b], RM_BUCKET_LABEL_LEN, "(%lld, %lld]", (long long)m->bound[b],
		         (long long)m->bound[b + 1]);
	}
	for (size_t i = 0; dense_out && i < n; i++)
		dense_out[i] = rm_bucket_map_of_length(m, max_len[i]);
	return 1;
}
