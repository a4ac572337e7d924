/*
 * row.h - one input row as a flat list of (key, value) fields.
 *
 * Every text format (JSON lines, CSV, Hugging Face log_history) is turned
 * into this shape so that one mapper decides which field is the loss, the
 * step or the bucket. Values stay as raw text until asked for: a row has a
 * dozen keys but a run needs a few, so most numbers are never converted.
 */
#ifndef RUNMON_ROW_H
#define RUNMON_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"

enum rm_ftype {
	RM_F_NUM,  /* JSON number or bare NaN/Infinity/-Infinity token */
	RM_F_STR,  /* JSON string (raw, still escaped) */
	RM_F_CELL, /* CSV cell: text that may hold a number */
	RM_F_BOOL,
	RM_F_NULL,   /* JSON null or empty CSV cell: missing */
	RM_F_NUMARR, /* JSON array of numbers, values in row->nums */
	RM_F_STRARR, /* JSON array of strings, spans in row->spans */
	RM_F_OTHER   /* anything else (arrays of objects, ...) */
};

struct rm_field {
	const char *key; /* flattened with ".", klen bytes (not NUL-terminated) */
	uint32_t klen;
	uint8_t type; /* enum rm_ftype */
	uint8_t have_num;
	uint8_t key_in_arena; /* key lives at arena + koff until rm_row_fix_keys */
	uint32_t koff;
	const char *raw; /* token text (not NUL-terminated) */
	uint32_t rlen;
	double num;                /* valid when have_num */
	uint32_t arr_off, arr_len; /* RM_F_NUMARR: slice of row->nums */
};

struct rm_span {
	const char *p;
	uint32_t len;
	uint8_t escaped; /* holds a backslash: rm_json_unescape before use */
};

struct rm_row {
	struct rm_field *f;
	size_t n, cap;
	char *arena; /* decoded and flattened keys */
	size_t alen, acap;
	double *nums; /* array values */
	size_t nn, ncap;
	struct rm_span *spans; /* string array elements (raw, still escaped) */
	size_t ns, scap;
};

void rm_row_init(struct rm_row *row);
void rm_row_release(struct rm_row *row);
void rm_row_clear(struct rm_row *row);

/* Appends a field; key is copied into the arena when copy_key is set. */
struct rm_field *rm_row_add(struct rm_row *row, const char *key, size_t klen, int copy_key);

/* Points copied keys at the arena; call once all fields are added. */
void rm_row_fix_keys(struct rm_row *row);

/* The field named key, or NULL. */
const struct rm_field *rm_row_get(const struct rm_row *row, const char *key);

/* Converts a field to a number. Returns 1 and sets *out for numbers,
 * non-finite tokens and the strings "NaN", "Infinity", "-Infinity" (as W&B
 * writes them in JSON-typed fields) and numbers written as strings ("5",
 * "11.52", as fairseq logs them); CSV cells also accept "nan", "inf".
 * Returns 0 for missing values (null, empty cell) and -1 for non-numbers. */
int rm_field_num(const struct rm_field *f, double *out);

/* Parses one number token of length n (JSON grammar plus the non-finite
 * tokens). Returns 1 on success, 0 if the text is not a number. Exact:
 * uses Clinger's fast path and falls back to strtod. */
int rm_parse_double(const char *s, size_t n, double *out);

/* Decodes the escapes of a JSON string's contents s[0..n) into out (at
 * least n bytes); returns the decoded length. */
size_t rm_json_unescape(const char *s, size_t n, char *out);

/* Parses a JSON object line into row (cleared first). Nested objects are
 * flattened with '.'; objects holding a "_type" key (W&B media) are dropped.
 * The line must be NUL-terminated and stays borrowed by the row. On a syntax
 * error returns RM_E_INPUT with "column N: what" in err. */
int rm_jsonrow_parse(struct rm_row *row, const char *line, size_t len, struct rm_err *err);

#endif
