/*
 * text.c - see runmon/common.h.
 */
#include "runmon/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t rm_utf8_len(const unsigned char *p, size_t left)
{
	unsigned c = p[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xBF; /* the second byte's range (RFC 3629 §4) */
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
	else
		return 0;
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

char *rm_utf8_fix(const char *s)
{
	size_t len = strlen(s), o = 0;
	char *out = rm_xmalloc(len * 3 + 1); /* each bad byte grows to three */
	for (size_t i = 0; i < len;) {
		size_t n = rm_utf8_len((const unsigned char *)s + i, len - i);
		if (n) {
			memcpy(out + o, s + i, n);
			o += n, i += n;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3, i++;
		}
	}
	out[o] = '\0';
	return out;
}

void rm_utf8_copy(char *dst, size_t n, const char *src)
{
	size_t len = strlen(src), i = 0;
	if (len < n) {
		memcpy(dst, src, len + 1);
		return;
	}
	while (i < len) { /* keep whole sequences that leave room for "~" */
		size_t c = rm_utf8_len((const unsigned char *)src + i, len - i);
		if (!c)
			c = 1;
		if (i + c + 2 > n)
			break;
		i += c;
	}
	memcpy(dst, src, i);
	memcpy(dst + i, "~", 2);
}

/* Bytes to escape at p: 0 when the sequence there is printable. */
static int needs_escape(const unsigned char *p, size_t left, size_t *n)
{
	*n = rm_utf8_len(p, left);
	if (*n == 0) {
		*n = 1;
		return 1;
	}
	return p[0] < 0x20 || p[0] == 0x7F || (p[0] == 0xC2 && p[1] < 0xA0);
}

const char *rm_tx(const char *s)
{
	static char *ring[8];
	static unsigned next;
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), n, i;
	for (i = 0; i < len; i += n)
		if (needs_escape(p + i, len - i, &n))
			break;
	if (i == len)
		return s;
	char *out = rm_xmalloc(len * 6 + 1), *o = out;
	for (i = 0; i < len; i += n) {
		if (!needs_escape(p + i, len - i, &n)) {
			memcpy(o, s + i, n);
			o += n;
		} else if (n == 2) { /* a C1 control, U+0080..U+009F */
			o += snprintf(o, 7, "\\u%04x", (unsigned)p[i + 1]);
		} else {
			o += snprintf(o, 5, "\\x%02x", (unsigned)p[i]);
		}
	}
	*o = '\0';
	free(ring[next]);
	ring[next] = out;
	next = (next + 1) % 8;
	return out;
}

const char *rm_num(double v, char *buf, size_t n)
{
	if (v == floor(v) && fabs(v) < 1e21)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.15g", v);
	return buf;
}

const char *rm_label_short(const char *label, size_t width, char *buf, size_t n)
{
	size_t len = strlen(label), i = 0;
	if (len <= width || width < 12) {
		snprintf(buf, n, "%s", label);
		return buf;
	}
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t j = 0; j < len; j++)
		h = (h ^ (unsigned char)label[j]) * 16777619u;
	for (size_t c; i < len; i += c) { /* whole characters, leaving room for "~xxxxxx" */
		c = rm_utf8_len((const unsigned char *)label + i, len - i);
		if (!c)
			c = 1;
		if (i + c > width - 7)
			break;
	}
	snprintf(buf, n, "%.*s~%06x", (int)i, label, (unsigned)(h & 0xffffff));
	return buf;
}

/* Columns a span of text takes: UTF-8 characters, colour escapes none. */
static size_t columns(const char *s, size_t n)
{
	size_t cols = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] == '\033' && i + 1 < n && s[i + 1] == '[') {
			i += 2;
			while (i < n && !(s[i] >= '@' && s[i] <= '~'))
				i++;
			i++;
			continue;
		}
		size_t c = rm_utf8_len((const unsigned char *)s + i, n - i);
		i += c ? c : 1;
		cols++;
	}
	return cols;
}

/* The indent of a wrapped line's continuation: under the text after the
 * leading blanks and a "1. " or "VERDICT  " marker. */
static size_t hanging(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	size_t d = i;
	while (d < n && s[d] >= '0' && s[d] <= '9')
		d++;
	if (d > i && d + 1 < n && s[d] == '.' && s[d + 1] == ' ')
		return d + 2;
	if (n - i > 9 && !memcmp(s + i, "VERDICT  ", 9))
		return i + 9;
	return i;
}

static void wrap_line(FILE *out, const char *s, size_t n, size_t width)
{
	size_t indent = hanging(s, n), lead = 0;
	if (indent + 20 > width) /* too deep to wrap usefully */
		indent = 0;
	while (columns(s, n) + lead > width) {
		/* the last blank that keeps the piece within width */
		size_t cut = 0;
		for (size_t i = 1; i < n; i++)
			if (s[i] == ' ' && i > (lead ? 0 : indent) && columns(s, i) + lead <= width)
				cut = i;
			else if (columns(s, i) + lead > width)
				break;
		for (size_t i = lead ? 1 : indent + 1; !cut && i < n; i++)
			if (s[i] == ' ')
				cut = i; /* a word wider than the line: whole, on a line of its own */
		if (!cut)
			break;
		fprintf(out, "%*s%.*s\n", (int)lead, "", (int)cut, s);
		while (cut < n && s[cut] == ' ')
			cut++;
		s += cut;
		n -= cut;
		lead = indent;
	}
	fprintf(out, "%*s%.*s\n", (int)lead, "", (int)n, s);
}

void rm_wrap(FILE *out, const char *text, size_t len, size_t width)
{
	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;
		if (width >= 40)
			wrap_line(out, text, n, width);
		else
			fprintf(out, "%.*s\n", (int)n, text);
		if (!nl)
			break;
		text += n + 1;
		len -= n + 1;
	}
}

/* Optimal string alignment distance (Damerau-Levenshtein without
 * repeated edits of a substring), in three rolling rows. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t m = strlen(a), n = strlen(b);
	if (m > 64 || n > 64)
		return (size_t)-1;
	size_t rows[3][65], *pp = rows[0], *prev = rows[1], *cur = rows[2];
	for (size_t j = 0; j <= n; j++)
		prev[j] = j;
	for (size_t i = 1; i <= m; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= n; j++) {
			size_t cost = a[i - 1] != b[j - 1], d = prev[j - 1] + cost;
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < d)
				d = pp[j - 2] + 1;
			cur[j] = d;
		}
		size_t *t = pp;
		pp = prev;
		prev = cur;
		cur = t;
	}
	return prev[n];
}

const char *rm_nearest(const char *word, const char *const *cands, size_t n)
{
	size_t len = strlen(word), prefixed = 0, best = (size_t)-1, ties = 0;
	const char *pick = NULL, *near = NULL;
	for (size_t i = 0; len && i < n; i++)
		if (!strncmp(cands[i], word, len) && cands[i][len]) {
			prefixed++;
			pick = cands[i];
		}
	if (prefixed == 1)
		return pick;
	size_t limit = len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : len / 3;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, cands[i]);
		if (d < best) {
			best = d;
			near = cands[i];
			ties = 0;
		} else if (d == best && strcmp(near, cands[i])) {
			ties++;
		}
	}
	return best <= limit && !ties ? near : NULL;
}
