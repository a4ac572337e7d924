/*
 * padding.h - the cost side of a run: padding efficiency and throughput as
 * recorded, and the padding each batching strategy would have on the same
 * lengths with the same token budget per batch. Pure: arrays in.
 */
#ifndef RUNMON_PADDING_H
#define RUNMON_PADDING_H

#include <stddef.h>
#include <stdint.h>

#define RM_PAD_MAX      32      /* buckets reported */
#define RM_PAD_MAX_SEQS 4194304 /* sequences rebuilt for re-packing (32 MiB) */

/* Per-step batch statistics as stored (NaN when unknown). */
struct rm_padding_input {
	size_t nb;
	const int64_t *step;
	const int *bucket;
	const double *n, *min_len, *max_len, *tokens, *padded;
	const double *dt;      /* seconds the step took (runtime difference with the previous
	                        * step), NaN unknown: for throughput */
	const int64_t *bounds; /* the run's bucket boundaries, or NULL */
	int nbounds;
	uint64_t seed;
	const int64_t *lengths; /* the dataset's lengths to re-pack, or NULL: rebuilt from the batches */
	size_t nlengths;
};

enum rm_strategy {
	RM_PACK_SORTED,
	RM_PACK_BUCKETED,
	RM_PACK_FITTED,
	RM_PACK_INTERLEAVED,
	RM_PACK_RANDOM,
	RM_PACK_COUNT
};
const char *rm_strategy_name(enum rm_strategy s);

struct rm_padding_result {
	int ok; /* batches with n, max_len and tokens */
	size_t batches;
	int64_t budget;    /* tokens per padded batch (median n * max_len) */
	double efficiency; /* recorded: tokens / (tokens + padding) */
	int k;
	int bucket[RM_PAD_MAX];
	double bucket_eff[RM_PAD_MAX];
	double bucket_tps[RM_PAD_MAX]; /* tokens per second, NaN unknown */
	double tokens_per_s;           /* overall, NaN unknown */
	double strategy_eff[RM_PACK_COUNT];
	int64_t fitted[RM_PAD_MAX + 1]; /* fitted boundaries, fitted_k + 1 of them */
	int fitted_k;
	int reconstructed;       /* lengths rebuilt from per-batch n/min/max/tokens */
	int64_t dataset_lengths; /* else the dataset's lengths re-packed (a sample of this many) */
	int64_t stride;          /* 1 in this many steps was read (set by the caller) */
};

void rm_padding_analyze(const struct rm_padding_input *in, struct rm_padding_result *out);

#endif
