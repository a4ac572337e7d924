/*
 * buckets.h - bucket boundaries fitted to a length distribution, and the
 * padding they cost.
 *
 * Model: a batch is built from one bucket and padded to its longest
 * sequence; with big batches that is the bucket's longest length, so a
 * bucket holding lengths l costs sum(max(l) - l) padding tokens. The fit
 * chooses k contiguous groups of the distinct lengths minimising the total
 * by exact dynamic programming. Pure: arrays in, numbers out.
 */
#ifndef RUNMON_BUCKETS_H
#define RUNMON_BUCKETS_H

#include <stddef.h>
#include <stdint.h>

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
/* Padding efficiency when each bucket's sequences, shuffled (seeded), are
 * cut into batches of tokens_per_batch / (the bucket's longest length)
 * sequences, each padded to its own longest. */
double rm_buckets_packed(const struct rm_lengths *d, const int64_t *bound, int k, int64_t tokens_per_batch,
                         uint64_t seed);
/* Equal-width and equal-count (quantile) boundaries for comparison. */
void rm_buckets_equal_width(const struct rm_lengths *d, int k, int64_t max_len, struct rm_bucketing *out);
void rm_buckets_quantile(const struct rm_lengths *d, int k, struct rm_bucketing *out);

#endif
