/*
 * map_internal.h - what the key mapper's files share (map.c,
 * map_counters.c, map_batch.c).
 */
#ifndef RUNMON_MAP_INTERNAL_H
#define RUNMON_MAP_INTERNAL_H

#include "runmon/sink.h"

/* The batch fields' names, by enum rm_batch_field. */
extern const char *const rm_map_batch_names[];

/* Cumulative counters (tokens, sequences so far) into rec's batch: 0, or
 * -1 with why set when a counter is not one. */
int rm_map_cumulative(struct rm_mapper *m, const struct rm_field *const *pick, struct rm_record *rec, char *why,
                      size_t whylen);
/* Tokens of the interval from a token rate, when the batch has none. */
void rm_map_rate_tokens(struct rm_mapper *m, const struct rm_field *const *pick, struct rm_record *rec);

/* A list of lengths (a number array, or a text cell "[1801, 1755]") into
 * b's statistics and the mapper's encoded buffer: the count, or -1. */
int rm_map_lens_stats(struct rm_mapper *m, const struct rm_row *row, const struct rm_field *f, struct rm_batch *b);
/* A bucket label into rec: an integer as it is, or a text (a JSON string
 * decoded) interned in the mapper's texts; 0, or -1 with why set. */
int rm_map_bucket_label(struct rm_mapper *m, const struct rm_field *f, int rc, double v, struct rm_record *rec,
                        char *why, size_t whylen);
/* Refuses batch statistics no real batch has: 0, or -1 with why set. */
int rm_map_check_batch(const struct rm_batch *b, char *why, size_t whylen);
/* Derives what b's statistics give (mean length, tokens). */
void rm_map_complete_batch(struct rm_batch *b);

#endif
