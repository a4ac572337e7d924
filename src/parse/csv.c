/*
 * csv.c - CSV cell splitter; see runmon/parse.h.
 */
#include "runmon/parse.h"

#include <stdlib.h>
#include <string.h>

void rm_csv_init(struct rm_csv *c, char sep)
{
	memset(c, 0, sizeof(*c));
	c->sep = sep;
}

void rm_csv_release(struct rm_csv *c)
{
	free(c->cell);
	free(c->len);
	memset(c, 0, sizeof(*c));
}

static void push(struct rm_csv *c, char *s, size_t n)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->cell = rm_xrealloc(c->cell, c->cap * sizeof(*c->cell));
		c->len = rm_xrealloc(c->len, c->cap * sizeof(*c->len));
	}
	s[n] = '\0';
	c->cell[c->n] = s;
	c->len[c->n] = n;
	c->n++;
}

int rm_csv_split(struct rm_csv *c, char *line, size_t len, struct rm_err *err)
{
	char *p = line, *end = line + len;
	c->n = 0;
	for (;;) {
		if (p < end && *p == '"') {
			char *out = p, *q = p + 1;
			for (;;) {
				if (q >= end)
					return rm_err_set(err, RM_E_INPUT, "column %zu: unterminated quoted field",
					                  (size_t)(p - line) + 1);
				if (*q == '"') {
					if (q + 1 < end && q[1] == '"') {
						*out++ = '"';
						q += 2;
						continue;
					}
					q++;
					break;
				}
				*out++ = *q++;
			}
			if (q < end && *q != c->sep)
				return rm_err_set(err, RM_E_INPUT, "column %zu: text after a closing quote",
				                  (size_t)(q - line) + 1);
			char *next = q;
			push(c, p, (size_t)(out - p));
			if (next >= end)
				return RM_OK;
			p = next + 1;
			continue;
		}
		char *q = p;
		while (q < end && *q != c->sep)
			q++;
		int last = q >= end;
		push(c, p, (size_t)(q - p));
		if (last)
			return RM_OK;
		p = q + 1;
	}
}

char rm_csv_guess_sep(const char *header)
{
	return strchr(header, '\t') && !strchr(header, ',') ? '\t' : ',';
}
