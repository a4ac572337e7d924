/*
 * jsoncols.c - a JSON document of parallel arrays: a logger that keeps
 * each metric as a list and dumps the document whole (NVIDIA's 2019
 * "nvlog": {"iter": {"x": [[0, 1, ...], ...], "train_iteration_loss":
 * [[...], ...]}, "epoch": {...}}). The arrays of one object that share a
 * shape are one table, element i of each a row; a list of lists is one
 * list per epoch, its outer index the epoch. The table with the most rows
 * is the training record's (an epoch table beside it holds a row an
 * epoch). "x", the axis a plot of the table takes, is the step.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"

#define MAX_COLS  64
#define MAX_DEPTH 4

struct table {
	json_t *col[MAX_COLS];
	const char *name[MAX_COLS];
	int ncol;
	int nested;    /* a list per epoch */
	size_t rows;   /* values in each column */
	size_t shape0; /* the outer length */
};

static int numbers(json_t *a)
{
	size_t i;
	json_t *v;
	json_array_foreach (a, i, v)
		if (!json_is_number(v) && !json_is_null(v))
			return 0;
	return json_array_size(a) > 0;
}

/* A column's shape: its length and, for a list of lists of numbers, the
 * sum of the inner lengths; 0 when it is no column. */
static size_t shape(json_t *a, int *nested)
{
	size_t i, rows = 0;
	json_t *v;
	*nested = json_array_size(a) > 0 && json_is_array(json_array_get(a, 0));
	if (!*nested)
		return numbers(a) ? json_array_size(a) : 0;
	json_array_foreach (a, i, v) {
		if (!json_is_array(v) || (json_array_size(v) && !numbers(v)))
			return 0;
		rows += json_array_size(v);
	}
	return rows;
}

static int same_inner(json_t *a, json_t *b)
{
	for (size_t i = 0; i < json_array_size(a); i++)
		if (json_array_size(json_array_get(a, i)) != json_array_size(json_array_get(b, i)))
			return 0;
	return 1;
}

/* The largest table of obj and the objects under it, into best. Each
 * member's shape is taken once; the first MAX_MEMBERS arrays of an object
 * are looked at (a document of metrics holds a few dozen). */
#define MAX_MEMBERS 1024
static void find_table(json_t *obj, int depth, struct table *best)
{
	struct member {
		const char *key;
		json_t *a;
		size_t rows;
		int nested;
	} *m = rm_xmalloc(MAX_MEMBERS * sizeof(*m));
	int n = 0;
	const char *key;
	json_t *v;
	json_object_foreach (obj, key, v) {
		if (n == MAX_MEMBERS || !json_is_array(v))
			continue;
		m[n] = (struct member){key, v, 0, 0};
		if ((m[n].rows = shape(v, &m[n].nested)))
			n++;
	}
	for (int i = 0; i < n; i++) {
		if (m[i].rows <= best->rows)
			continue;
		struct table t = {.nested = m[i].nested, .rows = m[i].rows, .shape0 = json_array_size(m[i].a)};
		for (int j = 0; j < n && t.ncol < MAX_COLS; j++)
			if (m[j].rows == t.rows && m[j].nested == t.nested && json_array_size(m[j].a) == t.shape0 &&
			    (!t.nested || same_inner(m[i].a, m[j].a))) {
				t.col[t.ncol] = m[j].a;
				t.name[t.ncol++] = m[j].key;
			}
		if (t.ncol >= 2)
			*best = t;
	}
	free(m);
	if (depth < MAX_DEPTH)
		json_object_foreach (obj, key, v)
			if (json_is_object(v))
				find_table(v, depth + 1, best);
}

/* Row r of the table: (epoch e, index i) for a nested one. */
static void table_row(const struct table *t, size_t e, size_t i, struct rm_row *row)
{
	rm_row_clear(row);
	int has_epoch = 0;
	for (int c = 0; c < t->ncol; c++) {
		json_t *v = t->nested ? json_array_get(json_array_get(t->col[c], e), i) : json_array_get(t->col[c], i);
		const char *name = strcmp(t->name[c], "x") ? t->name[c] : "step";
		has_epoch |= !strcmp(name, "epoch");
		struct rm_field *f = rm_row_add(row, name, strlen(name), 0);
		f->type = json_is_number(v) ? RM_F_NUM : RM_F_NULL;
		f->have_num = json_is_number(v);
		f->num = json_is_number(v) ? json_number_value(v) : NAN;
	}
	if (t->nested && !has_epoch) {
		struct rm_field *f = rm_row_add(row, "epoch", 5, 0);
		f->type = RM_F_NUM;
		f->have_num = 1;
		f->num = (double)e;
	}
}

/* Calls fn on each row in order; stops at its first error. */
static int each_row(const struct table *t, struct rm_row *row, int (*fn)(void *, const struct rm_row *, uint64_t),
                    void *arg)
{
	uint64_t n = 0;
	size_t outer = t->nested ? t->shape0 : 1;
	for (size_t e = 0; e < outer; e++) {
		size_t inner = t->nested ? json_array_size(json_array_get(t->col[0], e)) : t->rows;
		for (size_t i = 0; i < inner; i++) {
			table_row(t, e, i, row);
			int rc = fn(arg, row, ++n);
			if (rc)
				return rc;
		}
	}
	return RM_OK;
}

static int infer_one(void *in, const struct rm_row *row, uint64_t n)
{
	(void)n;
	rm_infer_row(in, row, 0);
	return RM_OK;
}

struct feed {
	struct run_chain *c;
	struct rm_err *err;
};

static int feed_one(void *arg, const struct rm_row *row, uint64_t n)
{
	struct feed *f = arg;
	rm_chain_result(f->c)->lines++;
	return rm_chain_feed(f->c, row, n, f->err);
}

/* A JSON object over several lines (its first line is no whole object):
 * a document, read whole. JSON lines are not one. */
int rm_sniff_json_columns(const struct sniff *s)
{
	struct rm_row row;
	struct rm_err err;
	if (!rm_sniff_json_object(s))
		return 0;
	rm_row_init(&row);
	int whole = !rm_jsonrow_parse(&row, s->line, s->len, &err);
	rm_row_release(&row);
	return !whole;
}

int rm_read_json_columns(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                         struct rm_import_report *rep, struct rm_err *err)
{
	json_t *doc = NULL;
	struct rm_row row;
	struct rm_guess g = {0};
	struct table t = {0};
	int rc = rm_read_json_doc(opts, path, &doc, err);
	if (rc)
		return rc;
	if (json_is_object(doc))
		find_table(doc, 0, &t);
	if (!t.rows) {
		json_decref(doc);
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: no arrays of numbers side by side (a table of columns) in the document",
		                  rm_shown_path(opts, path));
	}
	rm_row_init(&row);
	struct rm_infer *in = rm_infer_new(fmt, opts);
	each_row(&t, &row, infer_one, in);
	rm_infer_decide(in, &g);
	rm_infer_free(in);
	struct rm_import_opts o = *opts;
	o.guess = &g;
	if (opts->explain && g.why[0])
		fprintf(opts->explain, "  inferred from the file: %s\n", rm_tx(g.why));
	char *name = rm_run_name_for(opts, path);
	rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
	free(name);
	struct run_chain c;
	if (!(rc = rm_chain_open(&c, st, &o, rep, rep->n - 1, 1, err))) {
		struct feed f = {&c, err};
		rc = rm_chain_close(&c, each_row(&t, &row, feed_one, &f), err);
	}
	rm_guess_release(&g);
	rm_row_release(&row);
	json_decref(doc);
	return rc;
}
