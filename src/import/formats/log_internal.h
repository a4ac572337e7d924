/*
 * log_internal.h - the console-log reader's text helpers (log_text.c),
 * shared by its files.
 */
#ifndef RUNMON_LOG_INTERNAL_H
#define RUNMON_LOG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Can c start a key ("lr", "_step", "(embed)")? */
int rm_log_key_start(int c);
/* Parses a number as logs write it: "1,702,559", "221.07s", "410ms",
 * "12.34%", "100/500000" (the first), "7.45E+00", "[0.0001]", "001",
 * "nan", "inf". Returns 1 and *out, or 0. */
int rm_log_number(const char *s, size_t n, double *out);
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

#endif
