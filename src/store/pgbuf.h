/*
 * pgbuf.h - a growing byte buffer for rows in PostgreSQL's binary COPY
 * format, whose integers are big-endian (PostgreSQL docs, COPY, "Binary
 * Format"). Shared by the driver's staged upserts and `runmon copy`.
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

#endif
