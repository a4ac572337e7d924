/*
 * arrow.h - sequence lengths straight from Arrow IPC files: a Hugging Face
 * dataset saved with save_to_disk (a folder of data-*.arrow shards), a
 * DatasetDict folder, or one .arrow file (stream or file format).
 *
 * Reads the length of every row from an integer column (seq_len and the
 * like) or, without one, from the offsets of a list column (input_ids):
 * offset[i+1] - offset[i], so not one token is read. Files are mapped, and
 * only the metadata and the one or two buffers needed are touched.
 */
#ifndef RUNMON_ARROW_H
#define RUNMON_ARROW_H

#include <stddef.h>
#include <stdint.h>

struct rm_err;

struct rm_arrow_opts {
	const char *column;      /* an integer column; NULL: the first of seq_len, length, ... */
	const char *list_column; /* a list column whose lengths to take; NULL: input_ids */
	const char *split;       /* a DatasetDict's split; NULL: train */
};

struct rm_arrow_lengths {
	int64_t *len; /* one per row in order; -1 for a null row */
	size_t n, cap;
	size_t nulls, shards, batches;
	int from_offsets; /* 1: the lengths of a list column's values */
	char column[128]; /* the column read */
	char type[32];    /* its Arrow type, e.g. int64 or list<...> */
	char split[64];   /* the DatasetDict split read, or "" */
};

/* 1 when path names Arrow data: a folder, a .arrow/.feather file, or a file
 * that starts like one. */
int rm_arrow_is_path(const char *path);

/* Reads the lengths of a dataset folder or an Arrow file into *out (the
 * caller releases it). Errors name the file and the message. */
int rm_arrow_read_lengths(const char *path, const struct rm_arrow_opts *o, struct rm_arrow_lengths *out,
                          struct rm_err *err);

/* The same on one file's bytes (name is for messages); appends to *out. */
int rm_arrow_read_buffer(const uint8_t *buf, size_t size, const char *name, const struct rm_arrow_opts *o,
                         struct rm_arrow_lengths *out, struct rm_err *err);

void rm_arrow_lengths_release(struct rm_arrow_lengths *out);

#endif
