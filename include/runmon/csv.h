/*
 * csv.h - split one CSV line into cells (RFC 4180 quoting, "" escapes).
 *
 * Cells are unquoted in place, so the line buffer is modified; cell
 * pointers stay valid as long as the line does. A quoted field may not span
 * lines: training logs do not produce them, and rejecting them keeps line
 * numbers in errors exact.
 */
#ifndef RUNMON_CSV_H
#define RUNMON_CSV_H

#include <stddef.h>

#include "runmon/common.h"

struct rm_csv {
	char **cell;
	size_t *len;
	size_t n, cap;
	char sep; /* ',' or '\t' */
};

void rm_csv_init(struct rm_csv *c, char sep);
void rm_csv_release(struct rm_csv *c);

/* Splits line into c->cell[0..n). Returns RM_OK or RM_E_INPUT with
 * "column N: what" in err. */
int rm_csv_split(struct rm_csv *c, char *line, size_t len, struct rm_err *err);

/* Picks the separator from a header line: tab if it has tabs and no commas. */
char rm_csv_guess_sep(const char *header);

#endif
