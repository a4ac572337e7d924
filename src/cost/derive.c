/*
 * derive.c - buckets for a run that records lengths but no bucket ids. See
 * cost.h: the sampler's own boundaries when its batches each hold one
 * bucket (the cuts no batch straddles), else the least-padding boundaries
 * of `runmon buckets` fitted to the run's own lengths.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/cost.h"

#define RM_BATCH_MAX_LEN_D ((double)RM_BATCH_MAX_LEN)
#define DERIVE_MAX_K       8
#define GROUP_MIN_SHARE    0.005 /* a group of spans holds this share of the batches to be a bucket */

struct span {
	int64_t lo, hi;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The boundaries no batch straddles: the spans [min_len, max_len] sorted
 * and joined where they overlap; each group's longest length is a cut. A
 * group with too few batches joins the next (its cut is not the sampler's:
 * a stray batch). Returns the boundaries' count (0: fewer than 2 groups). */
static int cut_points(const double *min_len, const double *max_len, size_t n, int64_t *bound)
{
	struct span *sp = rm_xmalloc((n ? n : 1) * sizeof(*sp));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		double lo = min_len[i], hi = max_len[i];
		if (lo >= 1 && hi >= lo && hi <= RM_BATCH_MAX_LEN_D)
			sp[m++] = (struct span){(int64_t)llround(lo), (int64_t)llround(hi)};
	}
	int nb = 0;
	if (m * 2 < n || m < 2)
		goto out;
	qsort(sp, m, sizeof(*sp), cmp_span);
	size_t need = (size_t)ceil(GROUP_MIN_SHARE * (double)m), count = 0;
	int64_t top = sp[0].hi;
	bound[nb++] = 0;
	for (size_t i = 0; i < m; i++) {
		if (sp[i].lo > top && count >= need) { /* a gap: top is a cut */
			if (nb == RM_MAX_BUCKETS) {
				nb = 0; /* more groups than buckets: no bucketing sampler's */
				goto out;
			}
			bound[nb++] = top;
			count = 0;
		}
		top = sp[i].hi > top ? sp[i].hi : top;
		count++;
	}
	if (count < need && nb > 1) /* the last group is a stray: the one before takes it */
		nb--;
	bound[nb++] = top;
	if (nb < 3)
		nb = 0;
out:
	free(sp);
	return nb;
}

/* The least-padding fit with the smallest k within a point of the best. */
static int fitted_bounds(const double *max_len, size_t n, int64_t *bound)
{
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
	memcpy(bound, fit[k].bound, (size_t)(fit[k].k + 1) * sizeof(int64_t));
	return fit[k].k + 1;
}

const struct rm_derive rm_derive_own = {rm_bucket_map_derive, NULL, 0};

int rm_bucket_map_derive(struct rm_bucket_map *m, const int64_t *bounds, int nbounds, const double *min_len,
                         const double *max_len, size_t n, int *dense_out)
{
	memset(m, 0, sizeof(*m));
	size_t known = 0;
	for (size_t i = 0; i < n; i++)
		known += max_len[i] >= 1 && max_len[i] <= RM_BATCH_MAX_LEN_D;
	if (known < 2 || known * 2 < n)
		return 0;
	int nb = 0;
	if (bounds && nbounds >= 2 && nbounds <= RM_MAX_BUCKETS + 1) {
		memcpy(m->bound, bounds, (size_t)nbounds * sizeof(int64_t));
		nb = nbounds;
	} else {
		nb = min_len ? cut_points(min_len, max_len, n, m->bound) : 0;
		m->cut_points = nb > 0;
		if (!nb && !(nb = fitted_bounds(max_len, n, m->bound)))
			return 0;
	}
	m->derived = 1;
	m->nbound = nb;
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
