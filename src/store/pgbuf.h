/*
 * pgbuf.h - a growing byte buffer for rows in PostgreSQL's binary COPY
 * format, whose integers are big-endian (PostgreSQL docs, COPY, "Binary
 * Format"); and the fields of its text format. Shared by the driver
 * (staged upserts, streamed scans) and `runmon copy`.
 */
#ifndef RUNMON_PGBUF_H
#define RUNMON_PGBUF_H

#include <stdint.h>
#include <string.h>

#include "runmon/common.h"

struct rm_pgbuf {
	char *s;
	size_t len, cap;
};

static inline void rm_pgbuf_put(struct rm_pgbuf *b, const void *s, size_t n)
{
	if (!n)
		return;
	if (b->len + n > b->cap)
		b->s = rm_xrealloc(b->s, b->cap = 2 * (b->len + n) + 4096);
	memcpy(b->s + b->len, s, n);
	b->len += n;
}

static inline void rm_pgbuf_be(struct rm_pgbuf *b, uint64_t v, int bytes)
{
	unsigned char x[8];
	for (int i = 0; i < bytes; i++)
		x[i] = (unsigned char)(v >> 8 * (bytes - 1 - i));
	rm_pgbuf_put(b, x, (size_t)bytes);
}

/* The format's header: signature, flags, header extension length. */
static inline void rm_pgbuf_header(struct rm_pgbuf *b)
{
	rm_pgbuf_put(b, "PGCOPY\n\377\r\n\0", 11);
	rm_pgbuf_be(b, 0, 4);
	rm_pgbuf_be(b, 0, 4);
}

/* A hex digit's value (bytea's text form is \x and two digits a byte). */
static inline int rm_pgcopy_hex(int c)
{
	return c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
}

/* A field of COPY's text format in place: backslash escapes undone, *len
 * its length; NULL for \N. */
static inline char *rm_pgcopy_unescape(char *f, size_t *len)
{
	if (f[0] == '\\' && f[1] == 'N' && !f[2])
		return NULL;
	char *w = f;
	for (char *p = f; *p; p++) {
		if (*p != '\\' || !p[1]) {
			*w++ = *p;
			continue;
		}
		switch (*++p) {
		case 'n': *w++ = '\n'; break;
		case 't': *w++ = '\t'; break;
		case 'r': *w++ = '\r'; break;
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case 'v': *w++ = '\v'; break;
		default: *w++ = *p;
		}
	}
	*w = '\0';
	*len = (size_t)(w - f);
	return f;
}

#endif
