/*
 * jsonrow.c - a small JSON scanner for one history row per line.
 *
 * Why not jansson here: W&B rows carry bare NaN/Infinity tokens that
 * jansson rejects (wandb-api.md section 3), and building a full object per
 * row costs as much as Python's json module. This scanner validates the
 * syntax, flattens nested objects with '.', keeps number arrays (a sidecar's
 * "lens") and leaves values as raw text for rm_field_num. It never
 * allocates per value: keys point into the line unless they are nested or
 * escaped.
 */
#include "runmon/parse.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

struct jp {
	const char *s, *p, *end;
	struct rm_row *row;
	struct rm_err *err;
	char *pfx; /* flattened key prefix, "a.b." */
	size_t plen, pcap;
	int depth;
	int skip; /* > 0 while inside a value that is validated but not kept */
};

static int fail(struct jp *jp, const char *what)
{
	return rm_err_set(jp->err, RM_E_INPUT, "column %zu: %s", (size_t)(jp->p - jp->s) + 1, what);
}

static void ws(struct jp *jp)
{
	while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\r' || *jp->p == '\n'))
		jp->p++;
}

static void pfx_put(struct jp *jp, const char *s, size_t n)
{
	if (jp->plen + n + 1 > jp->pcap) {
		jp->pcap = (jp->plen + n + 1) * 2 + 64;
		jp->pfx = rm_xrealloc(jp->pfx, jp->pcap);
	}
	memcpy(jp->pfx + jp->plen, s, n);
	jp->plen += n;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Scans a string starting at the opening quote; sets [*raw, *rlen) to its
 * escaped contents and *esc when it holds a backslash. */
static int scan_string(struct jp *jp, const char **raw, size_t *rlen, int *esc)
{
	const char *p = ++jp->p;
	*esc = 0;
	for (;;) {
		const char *q = p;
		while (q < jp->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
			q++;
		if (q >= jp->end) {
			jp->p = q;
			return fail(jp, "unterminated string");
		}
		if (*q == '"') {
			*raw = jp->p;
			*rlen = (size_t)(q - jp->p);
			jp->p = q + 1;
			return RM_OK;
		}
		if ((unsigned char)*q < 0x20) {
			jp->p = q;
			return fail(jp, "control character in string");
		}
		*esc = 1;
		if (q + 1 >= jp->end) {
			jp->p = q;
			return fail(jp, "unterminated string");
		}
		if (q[1] == 'u') {
			if (q + 6 > jp->end || hexval(q[2]) < 0 || hexval(q[3]) < 0 || hexval(q[4]) < 0 ||
			    hexval(q[5]) < 0) {
				jp->p = q;
				return fail(jp, "bad \\u escape");
			}
			p = q + 6;
		} else if (strchr("\"\\/bfnrt", q[1])) {
			p = q + 2;
		} else {
			jp->p = q;
			return fail(jp, "bad escape in string");
		}
	}
}

/* Writes code point cp as UTF-8 at out; returns the bytes written. */
static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

size_t rm_json_unescape(const char *s, size_t n, char *out)
{
	const char *end = s + n;
	char *o = out;
	while (s < end) {
		const char *bs = memchr(s, '\\', (size_t)(end - s));
		size_t plain = bs ? (size_t)(bs - s) : (size_t)(end - s);
		memmove(o, s, plain);
		o += plain;
		s += plain;
		if (!bs || s + 1 >= end)
			break;
		char c = s[1];
		s += 2;
		switch (c) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			if (end - s < 4)
				return (size_t)(o - out);
			unsigned cp =
			    (unsigned)(hexval(s[0]) << 12 | hexval(s[1]) << 8 | hexval(s[2]) << 4 | hexval(s[3]));
			s += 4;
			if (cp >= 0xD800 && cp < 0xDC00 && end - s >= 6 && s[0] == '\\' && s[1] == 'u') {
				int h[4] = {hexval(s[2]), hexval(s[3]), hexval(s[4]), hexval(s[5])};
				unsigned lo = (unsigned)(h[0] << 12 | h[1] << 8 | h[2] << 4 | h[3]);
				if (h[0] >= 0 && h[1] >= 0 && h[2] >= 0 && h[3] >= 0 && lo >= 0xDC00 && lo < 0xE000) {
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					s += 6;
				}
			}
			o += put_utf8(o, cp);
			break;
		}
		default: *o++ = c; break;
		}
	}
	return (size_t)(o - out);
}

/* Appends the decoded form of an escaped (already validated) key. */
static void unescape_into_pfx(struct jp *jp, const char *s, size_t n)
{
	if (jp->plen + n + 1 > jp->pcap) {
		jp->pcap = (jp->plen + n + 1) * 2 + 64;
		jp->pfx = rm_xrealloc(jp->pfx, jp->pcap);
	}
	jp->plen += rm_json_unescape(s, n, jp->pfx + jp->plen);
}

static int scan_number(struct jp *jp, const char **raw, size_t *rlen)
{
	const char *p = jp->p;
	if (*p == '-')
		p++;
	if (p < jp->end && *p == 'I') {
		if (jp->end - p >= 8 && !memcmp(p, "Infinity", 8)) {
			p += 8;
			goto done;
		}
		return fail(jp, "invalid literal");
	}
	if (p >= jp->end || *p < '0' || *p > '9')
		return fail(jp, "invalid number");
	while (p < jp->end && *p >= '0' && *p <= '9')
		p++;
	if (p < jp->end && *p == '.') {
		p++;
		if (p >= jp->end || *p < '0' || *p > '9') {
			jp->p = p;
			return fail(jp, "invalid number");
		}
		while (p < jp->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < jp->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < jp->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= jp->end || *p < '0' || *p > '9') {
			jp->p = p;
			return fail(jp, "invalid number");
		}
		while (p < jp->end && *p >= '0' && *p <= '9')
			p++;
	}
done:
	*raw = jp->p;
	*rlen = (size_t)(p - jp->p);
	jp->p = p;
	return RM_OK;
}

static int literal(struct jp *jp, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n))
		return fail(jp, "invalid literal");
	jp->p += n;
	return RM_OK;
}

/* After a member or element: sets *closed on the closing character, steps
 * over a ',' otherwise, and fails on anything else. */
static int after_item(struct jp *jp, char close, int *closed, const char *what)
{
	ws(jp);
	*closed = jp->p < jp->end && *jp->p == close;
	if (*closed || (jp->p < jp->end && *jp->p == ',')) {
		jp->p++;
		return RM_OK;
	}
	return fail(jp, what);
}

static int parse_value(struct jp *jp, const char *key, size_t klen, int copy);

static struct rm_field *add(struct jp *jp, const char *key, size_t klen, int copy, enum rm_ftype t)
{
	struct rm_field *f = rm_row_add(jp->row, key, klen, copy);
	f->type = (uint8_t)t;
	return f;
}

static int parse_object(struct jp *jp, int top)
{
	size_t first_field = jp->row->n, first_num = jp->row->nn, base = jp->plen;
	int media = 0;
	if (++jp->depth > MAX_DEPTH)
		return fail(jp, "nesting too deep");
	jp->p++; /* '{' */
	ws(jp);
	if (jp->p < jp->end && *jp->p == '}') {
		jp->p++;
		goto out;
	}
	for (;;) {
		const char *kraw;
		size_t klen;
		int esc, rc;
		ws(jp);
		if (jp->p >= jp->end || *jp->p != '"')
			return fail(jp, "expected a string key");
		if ((rc = scan_string(jp, &kraw, &klen, &esc)))
			return rc;
		if (!esc && klen == 5 && !memcmp(kraw, "_type", 5) && !top)
			media = 1;
		ws(jp);
		if (jp->p >= jp->end || *jp->p != ':')
			return fail(jp, "expected ':' after key");
		jp->p++;
		ws(jp);
		if (jp->p >= jp->end)
			return fail(jp, "expected a value");
		if (!esc && top) {
			rc = parse_value(jp, kraw, klen, 0);
		} else {
			jp->plen = base;
			if (esc)
				unescape_into_pfx(jp, kraw, klen);
			else
				pfx_put(jp, kraw, klen);
			size_t full = jp->plen;
			rc = parse_value(jp, jp->pfx, full, 1);
		}
		int closed;
		if (rc || (rc = after_item(jp, '}', &closed, "expected ',' or '}' after value")))
			return rc;
		if (closed)
			break;
	}
out:
	jp->plen = base;
	jp->depth--;
	if (media) { /* W&B media and histograms: not metrics */
		jp->row->n = first_field;
		jp->row->nn = first_num;
	}
	return RM_OK;
}

static int parse_array(struct jp *jp, const char *key, size_t klen, int copy)
{
	size_t first_num = jp->row->nn, first_span = jp->row->ns;
	int numeric = 1, strings = 1, any = 0;
	/* A nested key lives in pfx, which objects in the array may move. */
	int key_in_pfx = key == jp->pfx;
	if (++jp->depth > MAX_DEPTH)
		return fail(jp, "nesting too deep");
	jp->p++; /* '[' */
	jp->skip++;
	ws(jp);
	if (jp->p < jp->end && *jp->p == ']') {
		jp->p++;
	} else {
		for (;;) {
			ws(jp);
			if (jp->p >= jp->end)
				return fail(jp, "unterminated array");
			char c = *jp->p;
			struct rm_row *r = jp->row;
			any = 1;
			if (numeric && (c == '-' || c == 'N' || c == 'I' || (c >= '0' && c <= '9'))) {
				const char *raw;
				size_t rlen;
				int rc = c == 'N' ? literal(jp, "NaN") : scan_number(jp, &raw, &rlen);
				if (rc)
					return rc;
				if (c == 'N') {
					raw = "NaN";
					rlen = 3;
				}
				if (r->nn == r->ncap) {
					r->ncap = r->ncap ? r->ncap * 2 : 64;
					r->nums = rm_xrealloc(r->nums, r->ncap * sizeof(double));
				}
				rm_parse_double(raw, rlen, &r->nums[r->nn++]);
				strings = 0;
			} else if (strings && c == '"' && jp->skip == 1) {
				const char *raw;
				size_t rlen;
				int esc, rc = scan_string(jp, &raw, &rlen, &esc);
				if (rc)
					return rc;
				if (r->ns == r->scap) {
					r->scap = r->scap ? r->scap * 2 : 256;
					r->spans = rm_xrealloc(r->spans, r->scap * sizeof(*r->spans));
				}
				r->spans[r->ns++] = (struct rm_span){raw, (uint32_t)rlen, (uint8_t)esc};
				numeric = 0;
			} else {
				numeric = strings = 0;
				int rc = parse_value(jp, "", 0, 0);
				if (rc)
					return rc;
			}
			int closed, rc = after_item(jp, ']', &closed, "expected ',' or ']' in array");
			if (rc)
				return rc;
			if (closed)
				break;
		}
	}
	jp->skip--;
	jp->depth--;
	if (jp->skip)
		return RM_OK;
	enum rm_ftype t = numeric ? RM_F_NUMARR : strings && any ? RM_F_STRARR : RM_F_OTHER;
	struct rm_field *f = add(jp, key_in_pfx ? jp->pfx : key, klen, copy, t);
	if (t == RM_F_NUMARR) {
		f->arr_off = (uint32_t)first_num;
		f->arr_len = (uint32_t)(jp->row->nn - first_num);
	} else {
		jp->row->nn = first_num;
	}
	if (t == RM_F_STRARR) {
		f->arr_off = (uint32_t)first_span;
		f->arr_len = (uint32_t)(jp->row->ns - first_span);
	} else {
		jp->row->ns = first_span;
	}
	return RM_OK;
}

static int parse_value(struct jp *jp, const char *key, size_t klen, int copy)
{
	const char *raw;
	size_t rlen;
	int rc, esc;
	enum rm_ftype t;
	char c = *jp->p;
	if (c == '{') {
		if (jp->skip) {
			size_t save = jp->plen;
			rc = parse_object(jp, 0);
			jp->plen = save;
			return rc;
		}
		/* Nested object: its keys become "key.child". A nested key
		 * already sits at the start of pfx; a top-level one is copied. */
		if (key == jp->pfx) {
			jp->plen = klen;
		} else {
			jp->plen = 0;
			pfx_put(jp, key, klen);
		}
		pfx_put(jp, ".", 1);
		return parse_object(jp, 0);
	}
	if (c == '[')
		return parse_array(jp, key, klen, copy);
	if (c == '"') {
		if ((rc = scan_string(jp, &raw, &rlen, &esc)))
			return rc;
		t = RM_F_STR;
	} else if (c == 't' || c == 'f') {
		if ((rc = literal(jp, c == 't' ? "true" : "false")))
			return rc;
		raw = c == 't' ? "1" : "0";
		rlen = 1;
		t = RM_F_BOOL;
	} else if (c == 'n') {
		if ((rc = literal(jp, "null")))
			return rc;
		raw = "";
		rlen = 0;
		t = RM_F_NULL;
	} else if (c == 'N') {
		if ((rc = literal(jp, "NaN")))
			return rc;
		raw = "NaN";
		rlen = 3;
		t = RM_F_NUM;
	} else {
		if ((rc = scan_number(jp, &raw, &rlen)))
			return rc;
		t = RM_F_NUM;
	}
	if (jp->skip)
		return RM_OK;
	struct rm_field *f = add(jp, key, klen, copy, t);
	f->raw = raw;
	f->rlen = (uint32_t)rlen;
	return RM_OK;
}

int rm_jsonrow_parse(struct rm_row *row, const char *line, size_t len, struct rm_err *err)
{
	struct jp jp = {.s = line, .p = line, .end = line + len, .row = row, .err = err};
	int rc;
	rm_row_clear(row);
	ws(&jp);
	if (jp.p >= jp.end || *jp.p != '{') {
		rc = fail(&jp, "expected a JSON object");
		goto out;
	}
	if ((rc = parse_object(&jp, 1)))
		goto out;
	ws(&jp);
	if (jp.p != jp.end)
		rc = fail(&jp, "unexpected text after the object");
out:
	free(jp.pfx);
	rm_row_fix_keys(row);
	return rc;
}
