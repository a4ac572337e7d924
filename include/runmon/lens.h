/*
 * lens.h - a batch's sequence lengths as the store keeps them, and the
 * token shares of the buckets they fall in.
 *
 * batches.lens holds the lengths sorted ascending, each as its difference
 * from the one before in an unsigned LEB128 varint: one or two bytes a
 * sequence for lengths up to 16k tokens, whatever the order recorded.
 */
#ifndef RUNMON_LENS_H
#define RUNMON_LENS_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"

#define RM_LENS_MAX_SEQS 65536 /* sequences in one batch's list; more are refused */

/* Encodes n lengths (whole, 0..2^31; sorted in place) into out, which holds
 * at least 5 * n bytes; returns the bytes written. */
size_t rm_lens_encode(int64_t *len, size_t n, uint8_t *out);
/* Decodes into out (cap entries); returns the count, or -1 when the bytes
 * are not a whole list or hold more than cap. */
long rm_lens_decode(const uint8_t *in, size_t nbytes, int64_t *out, size_t cap);

/* Lengths to dense buckets: a length goes to the first cut whose hi it
 * does not pass (the last cut takes longer ones too), and that cut to
 * dense[i] (-1: a bucket the detectors do not count). */
struct rm_length_cuts {
	int n;
	int64_t hi[RM_MAX_BUCKETS];
	int dense[RM_MAX_BUCKETS];
};

/* The token share of each dense bucket among a batch's lengths (encoded
 * as above): writes up to RM_MAX_BUCKETS (bucket, share) pairs, buckets
 * ascending, shares summing to 1; returns how many, 0 when no token falls
 * in a counted bucket, -1 when the bytes are not a list. */
int rm_lens_shares(const uint8_t *in, size_t nbytes, const struct rm_length_cuts *cuts, uint8_t *bucket, float *share);

/* Mixed batches: the rows (ascending) whose lengths span buckets, each
 * with the token share of every dense bucket it holds: row[i] has parts
 * from[i] .. from[i + 1] - 1. */
struct rm_mix {
	size_t n;
	size_t *row;
	uint32_t *from; /* n + 1 entries when n > 0 */
	uint8_t *bucket;
	float *share;
	size_t cap, pcap;
};
/* Appends row (above the last one added) with its parts. */
void rm_mix_add(struct rm_mix *m, size_t row, const uint8_t *bucket, const float *share, int parts);
void rm_mix_release(struct rm_mix *m);

#endif
