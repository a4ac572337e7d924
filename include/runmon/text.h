/*
 * text.h - untrusted text made safe to show: run names, keys and paths
 * come from file contents and file names, so they may hold terminal escape
 * sequences or bytes that are not UTF-8.
 */
#ifndef RUNMON_TEXT_H
#define RUNMON_TEXT_H

#include <stddef.h>

/* Length of the well-formed UTF-8 sequence at p (1..4; RFC 3629: no
 * overlongs, surrogates or code points above U+10FFFF), 0 if none. */
size_t rm_utf8_len(const unsigned char *p, size_t left);

/* A copy of s with each byte that starts no well-formed sequence replaced
 * by U+FFFD, as JSON and the store's readers need. Caller frees. */
char *rm_utf8_fix(const char *s);

/* Copies src into dst (n bytes with the NUL), cut at a character boundary
 * with "~" at the end when it does not fit, so the copy stays UTF-8. */
void rm_utf8_copy(char *dst, size_t n, const char *src);

/* s as a terminal may show it: C0 and C1 controls, DEL and malformed bytes
 * become \xHH (\u00HH for C1), so no escape sequence reaches the screen and
 * no line can be forged. Returns s itself when nothing needs escaping, else
 * one of a few rotating buffers: valid until 8 later calls, main thread only. */
const char *rm_tx(const char *s);

#endif
