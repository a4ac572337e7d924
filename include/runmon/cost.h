/*
 * cost.h - the cost layer: bucket boundaries fitted to lengths (least
 * padding), buckets derived from a run's lengths, and the padding price of
 * a batching strategy. Pure: arrays in, numbers out.
 */
#ifndef RUNMON_COST_H
#define RUNMON_COST_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/model.h"

/* ==== buckets =============================================================== */
/*
 * bucket boundaries fitted to a length distribution, and the
 * padding they cost.
 *
 * Model: a batch is built from one bucket and padded to its longest
 * sequence; with big batches that is the bucket's longest length, so a
 * bucket holding lengths l costs sum(max(l) - l) padding tokens. The fit
 * chooses k contiguous groups of the distinct lengths minimising the total
 * by exact dynamic programming. Pure: arrays in, numbers out.
 */
/* A length distribution: distinct lengths ascending with their counts. */
struct rm_lengths {
	size_t n;     /* distinct lengths */
	int64_t *len; /* tokens, ascending */
	int64_t *count;
	int64_t total; /* sequences */
};

/* Builds the distribution of raw lengths (any order); caller releases. */
void rm_lengths_from(struct rm_lengths *d, const int64_t *lens, size_t n);
void rm_lengths_release(struct rm_lengths *d);

struct rm_bucketing {
	int k;             /* buckets */
	int64_t bound[65]; /* boundaries: bucket i holds (bound[i], bound[i+1]] */
	int64_t tokens;    /* real tokens */
	int64_t padding;   /* padding tokens under the model */
	double efficiency; /* tokens / (tokens + padding) */
	int64_t bucket_seqs[64], bucket_tokens[64], bucket_padding[64];
};

/* The optimal k buckets (k <= 64). Divide-and-conquer optimisation of the
 * DP (the cost satisfies the quadrangle inequality), O(k D log D). */
void rm_buckets_fit(const struct rm_lengths *d, int k, struct rm_bucketing *out);
/* Brute-force O(k D^2) DP, for the tests. */
void rm_buckets_fit_slow(const struct rm_lengths *d, int k, struct rm_bucketing *out);
/* Padding of given boundaries (bound[0] < ... < bound[k]; lengths above the
 * last go to the last bucket). */
void rm_buckets_eval(const struct rm_lengths *d, const int64_t *bound, int k, struct rm_bucketing *out);
/* The one padding model of runmon (buckets, diagnose, compare): seq[0..n)
 * taken in order into batches, each closed when one more sequence would
 * pad it past budget tokens (its count times its longest), each padded to
 * its own longest; adds the real and the padding tokens to *tok, *pad. */
void rm_pack_greedy(const int64_t *seq, size_t n, int64_t budget, double *tok, double *pad);
struct rm_rng; /* stats.h */
/* Fisher-Yates over a[0..n) with r: the one shuffle the re-packings use. */
void rm_shuffle_i64(struct rm_rng *r, int64_t *a, size_t n);
/* Padding efficiency when each bucket's sequences, shuffled (seeded), are
 * packed by rm_pack_greedy at tokens_per_batch. */
double rm_buckets_packed(const struct rm_lengths *d, const int64_t *bound, int k, int64_t tokens_per_batch,
                         uint64_t seed);
/* Equal-width and equal-count (quantile) boundaries for comparison. */
void rm_buckets_equal_width(const struct rm_lengths *d, int k, int64_t max_len, struct rm_bucketing *out);
void rm_buckets_quantile(const struct rm_lengths *d, int k, struct rm_bucketing *out);

/* ==== padding =============================================================== */
/*
 * the cost side of a run: padding efficiency and throughput as
 * recorded, and the padding each batching strategy would have on the same
 * lengths with the same token budget per batch. Pure: arrays in.
 */
#define RM_PAD_MAX      32      /* buckets reported */
#define RM_PAD_MAX_SEQS 4194304 /* sequences rebuilt for re-packing (32 MiB) */

/* Per-step batch statistics as stored (NaN when unknown). */
struct rm_padding_input {
	size_t nb;
	const int64_t *step;
	const int *bucket;
	const double *n, *min_len, *max_len, *tokens, *padded;
	const double *dt;      /* seconds the batch took (its step's runtime difference with the
	                        * previous step, over its rank's micro-batches), NaN unknown */
	const double *step_dt; /* the step's seconds on its first batch, NaN elsewhere; may be NULL
	                        * (then dt, one batch a step) */
	const int64_t *bounds; /* the run's bucket boundaries, or NULL */
	int nbounds;
	uint64_t seed;
	const int64_t *lengths; /* the dataset's lengths to re-pack, or NULL: from the batches */
	size_t nlengths;
	/* Each batch's recorded lengths, lens_n[t] of them from lens[lens_at[t]]
	 * (0: not recorded: rebuilt from n, min, max and tokens); may be NULL. */
	const int64_t *lens;
	const size_t *lens_at;
	const uint32_t *lens_n;
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
	int fit_kept_own;        /* no fit packed better than the run's own boundaries: fitted holds those */
	int reconstructed;       /* some lengths rebuilt from per-batch n/min/max/tokens */
	size_t recorded_batches; /* batches whose recorded lengths were re-packed as they are */
	int64_t dataset_lengths; /* else the dataset's lengths re-packed (a sample of this many) */
	int64_t stride;          /* 1 in this many steps was read (set by the caller) */
};

void rm_padding_analyze(const struct rm_padding_input *in, struct rm_padding_result *out);

/* ==== derived buckets ======================================================= */
/* Without ids: derives buckets from n batches' lengths when at least half
 * have a max_len (NaN unknown). When every batch holds one bucket of a
 * bucketing sampler, no batch's [min_len, max_len] straddles its
 * boundaries: the boundaries are the cut points between the lengths the
 * batches span (each the longest length below it), found when min_len is
 * given (NULL: not recorded) and the spans fall into 2 or more groups that
 * each hold 0.5% of the batches. Otherwise (mixed batches) the least-
 * padding fit (runmon buckets) for k = 1..8, keeping the smallest k whose
 * fit is within a point of 8 buckets' efficiency; m->cut_points says
 * which. With bounds (nbounds of them), those instead. Fills dense_out
 * (-1 without a length) and returns 1; returns 0, with m empty, when too
 * few lengths. A rm_bucket_derive_fn (model.h). */
int rm_bucket_map_derive(struct rm_bucket_map *m, const int64_t *bounds, int nbounds, const double *min_len,
                         const double *max_len, size_t n, int *dense_out);
/* The usual derivation: rm_bucket_map_derive, boundaries of the run's own. */
extern const struct rm_derive rm_derive_own;

#endif
