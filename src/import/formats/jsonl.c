/*
 * jsonl.c - JSON lines: each line one struct rm_row; the mapper and the
 * sink do the rest.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import/import_internal.h"
#include "runmon/parse.h"

static int blank(const char *s, size_t n)
{
	return strspn(s, " \t") == n;
}

/* A JSON line is one row; a line that does not parse is bad. */
static enum line_kind jsonl_parse(void *ctx, struct rm_mapper *m, char *line, size_t len, uint64_t *lineno,
                                  const struct rm_row **row, char *why, size_t whylen)
{
	struct rm_row *r = ctx;
	struct rm_err perr;
	(void)m;
	(void)lineno;
	if (!line || blank(line, len))
		return LINE_SKIP;
	if (rm_jsonrow_parse(r, line, len, &perr)) {
		snprintf(why, whylen, "%s", perr.msg);
		return LINE_BAD;
	}
	*row = r;
	return LINE_RECORD;
}

static int jsonl_read(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                      struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	struct rm_row row;
	struct rm_guess g = {0};
	struct rm_import_opts o = *opts;
	rm_row_init(&row);
	/* a sidecar's keys are runmon's own; other files may name their loss
	 * and step in words no list holds */
	int rc = fmt == RM_FMT_SIDECAR_JSONL ? RM_OK : rm_infer_file(opts, path, fmt, jsonl_parse, &row, &g, err);
	o.guess = &g;
	if (!rc)
		rc = rm_read_lines(st, &o, path, fmt, pos, rep, jsonl_parse, &row, err);
	rm_guess_release(&g);
	rm_row_release(&row);
	return rc;
}

int rm_read_jsonl(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                  struct rm_import_report *rep, struct rm_err *err)
{
	return jsonl_read(st, opts, path, fmt, NULL, rep, err);
}

int rm_tail_jsonl(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                  struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	return jsonl_read(st, opts, path, fmt, pos, rep, err);
}

/* ---- detection ------------------------------------------------------------ */

/* The first line as one JSON object: 1 and row filled, or 0. */
static int json_head(const struct sniff *s, struct rm_row *row)
{
	struct rm_err err;
	rm_row_init(row);
	if (rm_sniff_json_object(s) && !rm_jsonrow_parse(row, s->line, s->len, &err))
		return 1;
	rm_row_release(row);
	return 0;
}

int rm_sniff_wandb_history(const struct sniff *s)
{
	struct rm_row row;
	if (!json_head(s, &row))
		return 0;
	int yes = rm_row_get(&row, "_step") != NULL;
	rm_row_release(&row);
	return yes;
}

int rm_sniff_sidecar_jsonl(const struct sniff *s)
{
	struct rm_row row;
	if (!json_head(s, &row))
		return 0;
	int yes = rm_mapper_looks_like_sidecar(s->opts, &row);
	rm_row_release(&row);
	return yes;
}

int rm_sniff_jsonl(const struct sniff *s)
{
	return rm_sniff_json_object(s);
}

/* ---- a JSON array of records ----------------------------------------------
 * Chainer's LogReport (ESPnet1 keeps it as results/log) writes its records as
 * one pretty-printed JSON array, an object over many lines each. The
 * array is read element by element, never whole: an object's text is
 * gathered across lines up to its closing brace, then read as a row. */

struct json_array {
	struct rm_row row;
	char *obj; /* the current element's text */
	size_t len, cap;
	int depth;        /* of braces and brackets inside the element */
	int in_str, esc;  /* inside a string; after a backslash in one */
	int opened;       /* the array's '[' was seen */
	int closed;       /* its ']' was seen */
	uint64_t at;      /* the element's first line */
	const char *line; /* the line LINE_MORE left, and where in it */
	size_t off;
};

static void obj_add(struct json_array *a, const char *s, size_t n)
{
	if (a->len + n + 1 > a->cap)
		a->obj = rm_xrealloc(a->obj, a->cap = (a->len + n + 1) * 2);
	memcpy(a->obj + a->len, s, n);
	a->len += n;
}

/* Scans line from *i: 1 when an element is complete (in a->obj). */
static int array_scan(struct json_array *a, const char *line, size_t len, size_t *i, uint64_t lineno, char *why,
                      size_t whylen, int *bad)
{
	size_t start = *i;
	for (; *i < len; (*i)++) {
		char c = line[*i];
		if (a->depth == 0) { /* between elements */
			if (c == ' ' || c == '\t' || c == '\r' || c == ',' || (c == '[' && !a->opened)) {
				a->opened |= c == '[';
				continue;
			}
			if (c == ']' && a->opened && !a->closed) {
				a->closed = 1;
				continue;
			}
			if (c != '{' || !a->opened || a->closed) {
				snprintf(why, whylen, "expected %s, found '%c'",
				         !a->opened  ? "a JSON array ('[')"
				         : a->closed ? "nothing after the array's end"
				                     : "an object in the array",
				         c);
				*bad = 1;
				return 0;
			}
			a->len = 0;
			a->at = lineno;
			start = *i;
			a->depth = 1;
			continue;
		}
		if (a->in_str) {
			if (a->esc)
				a->esc = 0;
			else if (c == '\\')
				a->esc = 1;
			else if (c == '"')
				a->in_str = 0;
		} else if (c == '"') {
			a->in_str = 1;
		} else if (c == '{' || c == '[') {
			a->depth++;
		} else if ((c == '}' || c == ']') && --a->depth == 0) {
			(*i)++;
			obj_add(a, line + start, *i - start);
			return 1;
		}
	}
	if (a->depth > 0) {
		obj_add(a, line + start, len - start);
		obj_add(a, "\n", 1);
	}
	return 0;
}

static enum line_kind array_parse(void *ctx, struct rm_mapper *m, char *line, size_t len, uint64_t *lineno,
                                  const struct rm_row **row, char *why, size_t whylen)
{
	struct json_array *a = ctx;
	(void)m;
	if (!line) {
		if (a->depth || !a->opened || !a->closed) {
			snprintf(why, whylen, "the JSON array ends early (no closing ']')");
			return a->opened ? LINE_BAD : LINE_SKIP;
		}
		return LINE_SKIP;
	}
	size_t i = a->line == line ? a->off : 0;
	int bad = 0;
	a->line = NULL;
	if (!array_scan(a, line, len, &i, *lineno, why, whylen, &bad))
		return bad ? LINE_BAD : LINE_SKIP;
	struct rm_err perr;
	*lineno = a->at;
	a->obj[a->len] = 0;
	if (rm_jsonrow_parse(&a->row, a->obj, a->len, &perr)) {
		snprintf(why, whylen, "%s", perr.msg);
		return LINE_BAD;
	}
	*row = &a->row;
	a->line = line; /* the rest of the line may hold more elements */
	a->off = i;
	return i < len ? LINE_RECORD | LINE_MORE : LINE_RECORD;
}

static void array_reset(struct json_array *a)
{
	struct rm_row row = a->row;
	char *obj = a->obj;
	size_t cap = a->cap;
	memset(a, 0, sizeof(*a));
	a->row = row;
	a->obj = obj;
	a->cap = cap;
}

int rm_read_json_array(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                       struct rm_import_report *rep, struct rm_err *err)
{
	struct json_array a = {0};
	struct rm_guess g = {0};
	struct rm_import_opts o = *opts;
	rm_row_init(&a.row);
	int rc = rm_infer_file(opts, path, fmt, array_parse, &a, &g, err);
	array_reset(&a);
	o.guess = &g;
	if (!rc)
		rc = rm_read_lines(st, &o, path, fmt, NULL, rep, array_parse, &a, err);
	rm_guess_release(&g);
	rm_row_release(&a.row);
	free(a.obj);
	return rc;
}

/* A JSON array whose first element is an object (or an empty one). */
int rm_sniff_json_array(const struct sniff *s)
{
	size_t i = 0;
	const uint8_t *h = s->head;
	if (s->nhead >= 3 && h[0] == 0xef && h[1] == 0xbb && h[2] == 0xbf)
		i = 3;
	while (i < s->nhead && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'))
		i++;
	if (i >= s->nhead || h[i++] != '[')
		return 0;
	while (i < s->nhead && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'))
		i++;
	return i < s->nhead && (h[i] == '{' || h[i] == ']');
}
