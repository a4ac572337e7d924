/*
 * map_internal.h - what the key mapper's files share (map.c,
 * map_counters.c).
 */
#ifndef RUNMON_MAP_INTERNAL_H
#define RUNMON_MAP_INTERNAL_H

#include "runmon/sink.h"

/* Cumulative counters (tokens, sequences so far) into rec's batch: 0, or
 * -1 with why set when a counter is not one. */
int rm_map_cumulative(struct rm_mapper *m, const struct rm_field *const *pick, struct rm_record *rec, char *why,
                      size_t whylen);
/* Tokens of the interval from a token rate, when the batch has none. */
void rm_map_rate_tokens(struct rm_mapper *m, const struct rm_field *const *pick, struct rm_record *rec);

#endif
