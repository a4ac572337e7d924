/*
 * jsonl_csv.c - streaming drivers for JSON lines and CSV files.
 *
 * Each line becomes a struct rm_row; the mapper and the sink do the rest.
 * A W&B chart export holds one series per "<run> - <metric>" column, so it
 * feeds one sink per run.
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
	rm_row_init(&row);
	int rc = rm_read_lines(st, opts, path, fmt, pos, rep, jsonl_parse, &row, err);
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

/* One W&B export series: the columns "<run> - <metric>" of one run. */
struct series {
	char *run;
	size_t *cols; /* column indexes */
	char **metric;
	size_t n;
	struct rm_sink sink;
	size_t res_index;
};

static void series_release(struct series *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < s[i].n; j++)
			free(s[i].metric[j]);
		free(s[i].metric);
		free(s[i].cols);
		free(s[i].run);
		rm_sink_release(&s[i].sink);
	}
	free(s);
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n >= m && !memcmp(s + n - m, suffix, m);
}

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* Groups export columns by run, through a hash of run names: an export of
 * a sweep has tens of thousands of runs. Columns ending in __MIN / __MAX
 * are the chart's aggregation band and are left out. */
static struct series *group_series(const struct rm_csv *hdr, size_t *nseries)
{
	struct series *s = NULL;
	size_t n = 0, cap = 0, tcap = 16;
	while (tcap < hdr->n * 2)
		tcap *= 2;
	size_t *table = rm_xmalloc(tcap * sizeof(size_t)); /* 1 + series index, 0 empty */
	memset(table, 0, tcap * sizeof(size_t));
	for (size_t c = 1; c < hdr->n; c++) {
		const char *h = hdr->cell[c];
		size_t hl = hdr->len[c];
		if (ends_with(h, hl, "__MIN") || ends_with(h, hl, "__MAX"))
			continue;
		const char *sep = NULL;
		for (const char *p = strstr(h, " - "); p; p = strstr(p + 1, " - "))
			sep = p;
		if (!sep)
			continue;
		size_t rl = (size_t)(sep - h), slot = (size_t)name_hash(h, rl) & (tcap - 1), i;
		for (; table[slot]; slot = (slot + 1) & (tcap - 1)) {
			i = table[slot] - 1;
			if (strlen(s[i].run) == rl && !memcmp(s[i].run, h, rl))
				break;
		}
		if (!table[slot]) {
			if (n == cap)
				s = rm_xrealloc(s, (cap = cap ? cap * 2 : 16) * sizeof(*s));
			memset(&s[n], 0, sizeof(*s));
			s[n].run = rm_xstrndup(h, rl);
			table[slot] = ++n;
		}
		i = table[slot] - 1;
		s[i].cols = rm_xrealloc(s[i].cols, (s[i].n + 1) * sizeof(size_t));
		s[i].metric = rm_xrealloc(s[i].metric, (s[i].n + 1) * sizeof(char *));
		s[i].cols[s[i].n] = c;
		s[i].metric[s[i].n] = rm_xstrdup(sep + 3);
		s[i].n++;
	}
	free(table);
	*nseries = n;
	return s;
}

static void add_cell(struct rm_row *row, const char *key, size_t klen, const char *cell, size_t clen)
{
	struct rm_field *f = rm_row_add(row, key, klen, 0);
	f->type = clen ? RM_F_CELL : RM_F_NULL;
	f->raw = cell;
	f->rlen = (uint32_t)clen;
}

/* Imports a CSV file, or with pos (a sidecar being written) the complete
 * lines past pos; the header is read from the top each time. */
static int csv_import(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                      struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	struct rm_lines lr;
	struct rm_csv hdr, cells;
	struct rm_row row;
	struct series *ser = NULL;
	size_t nser = 0, ncols = 0;
	char *line, *hdrline = NULL;
	size_t len;
	uint64_t lines = 0;
	int rc;
	if ((rc = rm_lines_open(&lr, path, err)))
		return rc;
	rm_row_init(&row);
	rm_csv_init(&hdr, ',');
	rm_csv_init(&cells, ',');
	lr.complete_only = pos != NULL;
	do {
		if ((rc = rm_lines_next(&lr, &line, &len, err)))
			goto out;
		lines++;
	} while (line && blank(line, len));
	if (!line && pos) { /* the header is not written yet */
		char *name = rm_run_name_for(opts, path);
		rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
		free(name);
		goto out;
	}
	if (!line) {
		rc = rm_err_set(err, RM_E_INPUT, "%s: no header line", path);
		goto out;
	}
	hdrline = rm_xstrndup(line, len);
	hdr.sep = cells.sep = rm_csv_guess_sep(hdrline);
	if ((rc = rm_csv_split(&hdr, hdrline, len, err))) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s", err->msg);
		rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: %s", path, (unsigned long long)lr.lineno, msg);
		goto out;
	}
	ncols = hdr.n;
	/* One sink per run: every series of an export, else the whole file. */
	if (fmt == RM_FMT_WANDB_CSV) {
		ser = group_series(&hdr, &nser);
		if (nser == 0) {
			rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: no \"<run> - <metric>\" columns", path,
			                (unsigned long long)lr.lineno);
			goto out;
		}
		if (nser > 1 && opts->run_name) {
			rc = rm_err_set(err, RM_E_USAGE,
			                "%s holds %zu runs (\"%s\", \"%s\", ...); --run names only one: import it"
			                " without --run",
			                path, nser, ser[0].run, ser[1].run);
			goto out;
		}
	} else {
		ser = rm_xcalloc(1, sizeof(*ser));
		nser = 1;
	}
	for (size_t i = 0; i < nser; i++) {
		char *name = opts->run_name ? rm_xstrdup(opts->run_name)
		             : ser[i].run   ? rm_xstrdup(ser[i].run)
		                            : rm_run_name_for(opts, path);
		ser[i].res_index = rep->n;
		rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
		free(name);
	}
	for (size_t i = 0; i < nser; i++)
		if ((rc = rm_sink_open(&ser[i].sink, st, opts, &rep->r[ser[i].res_index], err)))
			goto out;
	if (pos) { /* go on where the last read stopped; count data lines only */
		if (pos->offset > lr.next_offset && (rc = rm_lines_seek(&lr, pos->offset, pos->lineno, err)))
			goto out;
		lines = 0;
	}
	struct rm_pipeline *p = rm_pipeline_start(NULL, NULL);
	while (!(rc = rm_lines_next(&lr, &line, &len, err)) && line) {
		struct rm_err perr;
		lines++;
		if (blank(line, len))
			continue;
		if (rm_csv_split(&cells, line, len, &perr)) {
			if ((rc = rm_bad_line(&rep->r[ser[0].res_index], opts, lr.lineno, perr.msg, err)))
				break;
			continue;
		}
		if (cells.n != ncols) {
			char why[96];
			snprintf(why, sizeof(why), "expected %zu columns as in the header, found %zu", ncols, cells.n);
			if ((rc = rm_bad_line(&rep->r[ser[0].res_index], opts, lr.lineno, why, err)))
				break;
			continue;
		}
		for (size_t i = 0; i < nser && !rc; i++) {
			struct series *s = &ser[i];
			rm_row_clear(&row);
			if (fmt != RM_FMT_WANDB_CSV) {
				for (size_t c = 0; c < ncols; c++)
					add_cell(&row, hdr.cell[c], hdr.len[c], cells.cell[c], cells.len[c]);
			} else {
				int any = 0;
				add_cell(&row, hdr.cell[0], hdr.len[0], cells.cell[0], cells.len[0]);
				for (size_t j = 0; j < s->n; j++) {
					size_t c = s->cols[j];
					any |= cells.len[c] > 0;
					add_cell(&row, s->metric[j], strlen(s->metric[j]), cells.cell[c], cells.len[c]);
				}
				if (!any)
					continue; /* this run has no value at this step */
			}
			rc = rm_pipeline_feed(p, &s->sink, &row, lr.lineno, err);
		}
		if (rc)
			break;
	}
	int wrc = rm_pipeline_finish(p, rc ? NULL : err);
	if (!rc)
		rc = wrc;
	for (size_t i = 0; i < nser && !rc; i++)
		rc = rm_sink_finish(&ser[i].sink, err);
	for (size_t i = 0; i < nser; i++)
		rep->r[ser[i].res_index].lines = lines;
out:
	if (pos && !rc)
		rm_tail_moved(pos, &lr);
	series_release(ser, nser);
	free(hdrline);
	rm_csv_release(&hdr);
	rm_csv_release(&cells);
	rm_row_release(&row);
	rm_lines_close(&lr);
	return rc;
}

int rm_read_csv(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                struct rm_import_report *rep, struct rm_err *err)
{
	return csv_import(st, opts, path, fmt, NULL, rep, err);
}

int rm_tail_csv(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	return csv_import(st, opts, path, fmt, pos, rep, err);
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

/* The first line as a CSV header (its cells also as a row's keys): 1, or 0
 * when it does not split. Release with csv_head_release. */
struct csv_head {
	struct rm_csv csv;
	struct rm_row row;
	char *copy;
};

static void csv_head_release(struct csv_head *h)
{
	rm_csv_release(&h->csv);
	rm_row_release(&h->row);
	free(h->copy);
}

static int csv_head(const struct sniff *s, struct csv_head *h)
{
	struct rm_err err;
	if (!s->line || (s->len && *s->line == '{'))
		return 0;
	h->copy = rm_xstrndup(s->line, s->len);
	rm_csv_init(&h->csv, rm_csv_guess_sep(h->copy));
	rm_row_init(&h->row);
	if (!rm_csv_split(&h->csv, h->copy, s->len, &err)) {
		for (size_t i = 0; i < h->csv.n; i++)
			rm_row_add(&h->row, h->csv.cell[i], h->csv.len[i], 0)->type = RM_F_CELL;
		return 1;
	}
	csv_head_release(h);
	return 0;
}

int rm_sniff_tb_csv(const struct sniff *s)
{
	struct csv_head h;
	if (!csv_head(s, &h))
		return 0;
	int yes = h.csv.n == 3 && !strcmp(h.csv.cell[0], "Wall time") && !strcmp(h.csv.cell[1], "Step") &&
	          !strcmp(h.csv.cell[2], "Value");
	csv_head_release(&h);
	return yes;
}

int rm_sniff_wandb_csv(const struct sniff *s)
{
	struct csv_head h;
	if (!csv_head(s, &h))
		return 0;
	int dash = 0;
	for (size_t i = 0; i < h.csv.n; i++)
		dash |= strstr(h.csv.cell[i], " - ") != NULL;
	int yes = h.csv.n >= 2 && !strcmp(h.csv.cell[0], "Step") && dash;
	csv_head_release(&h);
	return yes;
}

int rm_sniff_sidecar_csv(const struct sniff *s)
{
	struct csv_head h;
	if (!csv_head(s, &h))
		return 0;
	int yes = rm_mapper_looks_like_sidecar(s->opts, &h.row);
	csv_head_release(&h);
	return yes;
}

/* Anything with a line that is not JSON: the reader tells what is wrong. */
int rm_sniff_csv(const struct sniff *s)
{
	return s->line != NULL;
}
