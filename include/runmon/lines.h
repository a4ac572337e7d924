/*
 * lines.h - buffered line reader for text inputs (JSONL, CSV).
 *
 * Reads in large chunks and hands out NUL-terminated lines in place, so the
 * memory used is one chunk plus the longest line, whatever the file size.
 * Strips a UTF-8 byte-order mark at the start and a CR before each LF.
 */
#ifndef RUNMON_LINES_H
#define RUNMON_LINES_H

#include <stdint.h>
#include <stdio.h>

#include "runmon/common.h"

#define RM_LINES_MAX_DEFAULT (64u << 20) /* bytes: longest line accepted */

struct rm_lines {
	FILE *fp;
	const char *path; /* borrowed, for error messages */
	char *buf;
	size_t cap;      /* bytes allocated in buf */
	size_t len;      /* bytes of data in buf */
	size_t pos;      /* start of the next line in buf */
	size_t max_line; /* bytes; a longer line is an error */
	int eof;
	int complete_only;    /* hold back a last line without its newline */
	int partial;          /* set when such a line was held back */
	uint64_t lineno;      /* 1-based number of the line last returned */
	uint64_t offset;      /* file offset of the line last returned */
	uint64_t next_offset; /* file offset just past it */
	uint64_t buf_offset;  /* file offset of buf[0] */
};

/* Opens path ("-" is stdin). Returns RM_OK or RM_E_IO. */
int rm_lines_open(struct rm_lines *lr, const char *path, struct rm_err *err);

/* Next line without its terminator; *line is NULL at end of file. The line
 * stays valid until the next call. Returns RM_OK, RM_E_IO or RM_E_INPUT
 * (line longer than max_line). */
int rm_lines_next(struct rm_lines *lr, char **line, size_t *len, struct rm_err *err);

/* Continues reading at a byte offset that starts a line; lineno is the
 * number of the line before it. For files that grow between reads. */
int rm_lines_seek(struct rm_lines *lr, uint64_t offset, uint64_t lineno, struct rm_err *err);

void rm_lines_close(struct rm_lines *lr);

#endif
