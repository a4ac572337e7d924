/*
 * lengthsrc.h - a distribution of sequence lengths read from a file or a
 * dataset, for `buckets`, `simulate --lengths-from` and `diagnose
 * --lengths-from`: a saved Hugging Face dataset or an Arrow file (see
 * arrow.h), one integer per line, a batch sidecar's "lens", or a CSV column.
 */
#ifndef RUNMON_LENGTHSRC_H
#define RUNMON_LENGTHSRC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runmon/arrow.h"

struct rm_err;

/* What was read, for the user. */
struct rm_length_source {
	int arrow;                    /* 1: Arrow data; the fields below say what */
	struct rm_arrow_lengths info; /* its len array is not kept */
	size_t skipped;               /* sidecar rows without lens, Arrow null rows */
	size_t empty;                 /* Arrow rows of length 0 (an empty input_ids), left out */
};

/* Reads the lengths at path (o's column choices apply to Arrow data, and
 * o->column to a CSV column or a sidecar key) into *lens (the caller frees). */
int rm_lengths_read(const char *path, const struct rm_arrow_opts *o, int64_t **lens, size_t *n,
                    struct rm_length_source *src, struct rm_err *err);

/* One line to stderr-style fp saying what was read and what was left out. */
void rm_length_source_note(const struct rm_length_source *src, const char *path, size_t n, FILE *fp);

#endif
