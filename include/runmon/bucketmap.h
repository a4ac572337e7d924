/*
 * bucketmap.h - bucket labels as trainers write them, mapped to the dense
 * buckets 0..k-1 the detectors count with.
 *
 * A label is any integer (0..6, an upper bound such as 770 or 8192, -1) or
 * a text ("long", "1216-1728", stored under an id from RM_BUCKET_TEXT_ID).
 * Dense buckets are ordered by the mean max_len of their batches, so that
 * "longer" means longer whatever the labels; labels without lengths come
 * after, in id order. Beyond RM_MAX_BUCKETS labels, neighbours in that
 * order are grouped, and the map says so (labels_seen > k).
 */
#ifndef RUNMON_BUCKETMAP_H
#define RUNMON_BUCKETMAP_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/lens.h"

#define RM_BUCKET_TEXT_ID ((int64_t)1 << 50) /* text labels' ids; integer labels stay below in magnitude */
#define RM_BUCKET_NONE    INT64_MIN          /* a batch without a bucket */

struct rm_bucket_map {
	int k;         /* dense buckets */
	size_t labels; /* distinct labels seen; more than k when grouped */
	char label[RM_MAX_BUCKETS][RM_BUCKET_LABEL_LEN];
	double top[RM_MAX_BUCKETS]; /* the longest batch of each (-inf: none known) */
	size_t nraw;                /* distinct ids, sorted, and the dense bucket of each */
	int64_t *raw;
	int *dense;
	/* No bucket id recorded: buckets derived from max_len, bucket i holding
	 * (bound[i], bound[i + 1]] (the last one longer lengths too). */
	int derived;
	int nbound;
	int64_t bound[RM_MAX_BUCKETS + 1];
};

/* Text labels of a run's text ids, sorted by id (from the store). */
struct rm_bucket_texts {
	size_t n;
	const int64_t *id;
	char *const *label;
};

/* Distinct bucket ids as a scan meets them, each with a small index (in
 * the order first met) and the count and max_len sum the map orders by. */
struct rm_bucket_ids {
	struct rm_bucket_slot *slot; /* open addressing: a hostile file may hold millions of ids */
	size_t cap, n;
	int64_t *id;       /* per index */
	double *sum, *top; /* of known max_len */
	size_t *known, *seen;
	int last;
};
/* Counts a batch of bucket id (RM_BUCKET_NONE: none) and max_len (NaN
 * unknown); returns the id's index, -1 for none. */
int rm_bucket_ids_add(struct rm_bucket_ids *t, int64_t id, double max_len);
/* Adds id, when not met, as the bucket of no batch (one mixed batches
 * hold a share of), placed in the length order at len. */
void rm_bucket_ids_reserve(struct rm_bucket_ids *t, int64_t id, double len);
/* Adds from's ids and counts to into; remap[i] is into's index of from's i. */
void rm_bucket_ids_merge(struct rm_bucket_ids *into, const struct rm_bucket_ids *from, int *remap);
void rm_bucket_ids_release(struct rm_bucket_ids *t);
/* Builds the map from the ids met; dense_of[i] (t->n of them) becomes the
 * dense bucket of index i. */
void rm_bucket_map_from_ids(struct rm_bucket_map *m, const struct rm_bucket_ids *t, const struct rm_bucket_texts *texts,
                            int *dense_of);
/* Builds the map from n batches' ids (RM_BUCKET_NONE for none) and max_len
 * (NaN unknown), then rewrites dense_out[i] (may be NULL) with each batch's
 * dense bucket, -1 for none. */
void rm_bucket_map_build(struct rm_bucket_map *m, const int64_t *ids, const double *max_len, size_t n,
                         const struct rm_bucket_texts *texts, int *dense_out);
/* Without ids: derives buckets from n batches' max_len (NaN unknown) when
 * at least half have one, fitting boundaries with the least-padding fit
 * (runmon buckets) for k = 1..8 and keeping the smallest k whose fit is
 * within a point of 8 buckets' efficiency. Fills dense_out (-1 without a
 * length) and returns 1; returns 0, with m empty, when too few lengths. */
int rm_bucket_map_derive(struct rm_bucket_map *m, const double *max_len, size_t n, int *dense_out);
/* The derived bucket of a length (-1 for NaN). */
int rm_bucket_map_of_length(const struct rm_bucket_map *m, double max_len);

/* Where lengths fall among the map's buckets: the derived boundaries; the
 * run's recorded ones (bounds, nbounds of them; bucket i holding
 * (bounds[i], bounds[i + 1]]) when its ids are those indexes; else each
 * bucket up to its longest batch, when those rise with the length order.
 * Returns 1, or 0 when none gives lengths a bucket. */
int rm_bucket_map_cuts(const struct rm_bucket_map *m, const int64_t *bounds, int nbounds, struct rm_length_cuts *c);

/* The dense bucket of a stored id, -1 when the map has not seen it. */
int rm_bucket_map_dense(const struct rm_bucket_map *m, int64_t raw);
void rm_bucket_map_release(struct rm_bucket_map *m);

#endif
