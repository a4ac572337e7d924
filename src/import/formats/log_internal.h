/*
 * log_internal.h - the console-log reader's text helpers (log_text.c),
 * shared by its files.
 */
#ifndef RUNMON_LOG_INTERNAL_H
#define RUNMON_LOG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Character classes of the reader's scans, one table lookup each (the
 * reader looks at every byte of every line several times; the C locale's
 * classes, which <ctype.h> gives through a call and a pointer). */
enum { RM_LOG_SPACE = 1, RM_LOG_KEY = 2, RM_LOG_SEP = 4, RM_LOG_DIGIT = 8, RM_LOG_NUM0 = 16 };
extern const unsigned char rm_log_class[256];

static inline int rm_log_space(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_SPACE;
}

/* Can c start a key ("lr", "_step", "(embed)")? */
static inline int rm_log_key_start(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_KEY;
}

/* Could c begin a number as logs write it ("-1.5", "[0.1]", "nan")? */
static inline int rm_log_num_start(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_NUM0;
}

/* Could c begin a field separator (" | ", ", ", " : ")? */
static inline int rm_log_sep_char(unsigned char c)
{
	return rm_log_class[c] & RM_LOG_SEP;
}
/* Parses a number as logs write it: "1,702,559", "221.07s", "410ms",
 * "12.34%", "100/500000" (the first), "7.45E+00", "[0.0001]", "001",
 * "nan", "inf". Returns 1 and *out, or 0. */
int rm_log_number(const char *s, size_t n, double *out);
/* The index of the next '|', ',' or ':' in s[i..n), or n. */
size_t rm_log_next_sep(const char *s, size_t i, size_t n);
/* Is t a log level ("INFO", "WARNING")? */
int rm_log_is_level(const char *t, size_t n);
/* Reads "a/b/c", three numbers (OpenNMT-py's bsz); returns 1 and v, or 0. */
int rm_log_triple(const char *s, size_t n, double v[3]);
/* Does w (lower case) occur in s[0..n), ignoring case? */
int rm_log_has_word(const char *s, size_t n, const char *w);
/* Is name a key of the object text ('name': or "name":)? */
int rm_log_has_key(const char *obj, size_t n, const char *name);
/* Could an object that does not parse have been a training record? */
int rm_log_record_like(const char *obj, size_t n);
/* Removes escape sequences in place; returns the new length. */
size_t rm_log_strip_escapes(char *s, size_t n);
/* Is the line an indented name=value pair continuing the record above? */
int rm_log_continuation(const char *s, size_t n);
/* Does the word say what the number before it counts ("frames")? */
int rm_log_count_unit(const char *t, size_t n);
/* Opens icefall's "loss[...]" groups, drops "tot_...[...]" ones and blanks
 * a rank prefix ("(3/4)", "[rank3]:") in place; returns the rank or -1. */
int64_t rm_log_open_groups(char *s, size_t n);

/* The longest key the reader makes (a pattern's field name leaves room for
 * an "eval_" prefix). */
#define RM_LOG_MAX_KEY 96

/* ---- --pattern: "step:{step} loss:{loss}" ---- */
#define MAX_PATTERN_FIELDS 32

struct pattern {
	int n;                                   /* fields */
	const char *lit[MAX_PATTERN_FIELDS + 1]; /* the literal before field i; lit[n] after the last */
	size_t litlen[MAX_PATTERN_FIELDS + 1];
	const char *name[MAX_PATTERN_FIELDS];
	size_t namelen[MAX_PATTERN_FIELDS];
};

/* Compiles p into pt: 0, or -1 with why set. */
int rm_log_pattern_compile(const char *p, struct pattern *pt, char *why, size_t whylen);
/* Matches literal l at s[*pos..n), a run of blanks matching any (or none);
 * moves *pos past it and returns 1, or 0. */
int rm_log_literal_at(const char *l, size_t ll, const char *s, size_t n, size_t *pos);

#endif
