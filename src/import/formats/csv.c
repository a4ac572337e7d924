/*
 * csv.c - CSV files: a header, then rows of as many cells. Cells may be
 * padded with blanks to align the columns (YOLOv5's results.csv). A W&B
 * chart export holds one series per "<run> - <metric>" column, so it
 * feeds one sink per run; any other CSV is one run, or the runs appended
 * under its one header.
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

/* A file's CSV: its lines, the header's cells and the current row's. */
struct csv_file {
	struct rm_lines lr;
	struct rm_csv hdr, cells;
	char *hdrline;
	uint64_t data_offset, data_lineno; /* where the rows begin */
	char *rec;                         /* a record over several lines (a quoted cell with newlines) */
	size_t rec_cap;
};

#define RECORD_MAX_LINES 1000       /* lines one quoted record may span */
#define RECORD_MAX_BYTES (16 << 20) /* and bytes */

/* An odd count of '"' leaves a quoted cell open ("" inside a cell counts
 * two). */
static int quote_parity(const char *s, size_t n)
{
	int odd = 0;
	for (const char *p = s; (p = memchr(p, '"', n - (size_t)(p - s))); p++)
		odd ^= 1;
	return odd;
}

/* A record whose quoted cell holds newlines, as pandas writes a text cell:
 * its lines joined by '\n' into f->rec. Returns 0 with *line, *len the
 * record; -1 with why set when the file ends or the record grows past
 * its bounds first. */
static int join_quoted(struct csv_file *f, char **line, size_t *len, char *why, size_t whylen, struct rm_err *err,
                       int *rc)
{
	size_t n = *len;
	uint64_t first = f->lr.lineno;
	if (n + 1 > f->rec_cap)
		f->rec = rm_xrealloc(f->rec, f->rec_cap = 2 * n + 64);
	memcpy(f->rec, *line, n);
	for (int lines = 1;; lines++) {
		char *next;
		size_t nl;
		if ((*rc = rm_lines_next(&f->lr, &next, &nl, err)))
			return -1;
		if (!next || lines == RECORD_MAX_LINES || n + 1 + nl > RECORD_MAX_BYTES) {
			snprintf(why, whylen, "a quoted cell opened on line %llu is not closed %s",
			         (unsigned long long)first,
			         next ? "within 1000 lines or 16 MiB" : "by the end of the file");
			return -1;
		}
		if (n + 1 + nl + 1 > f->rec_cap)
			f->rec = rm_xrealloc(f->rec, f->rec_cap = 2 * (n + 1 + nl) + 64);
		f->rec[n++] = '\n';
		memcpy(f->rec + n, next, nl);
		n += nl;
		if (quote_parity(next, nl))
			break;
	}
	f->rec[n] = '\0';
	*line = f->rec;
	*len = n;
	return 0;
}

/* Cells without the blanks that pad them. */
static void trim(struct rm_csv *c)
{
	for (size_t i = 0; i < c->n; i++) {
		char *s = c->cell[i];
		size_t n = c->len[i];
		while (n && (*s == ' ' || *s == '\t'))
			s++, n--;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
			n--;
		s[n] = 0;
		c->cell[i] = s;
		c->len[i] = n;
	}
}

/* Reads the header. Returns RM_OK, or 1 when a file being written has no
 * header yet. */
static int csv_header(struct csv_file *f, const char *path, int follow, struct rm_err *err)
{
	char *line;
	size_t len;
	int rc;
	do {
		if ((rc = rm_lines_next(&f->lr, &line, &len, err)))
			return rc;
	} while (line && blank(line, len));
	if (!line)
		return follow ? 1 : rm_err_set(err, RM_E_INPUT, "%s: no header line", path);
	f->hdrline = rm_xstrndup(line, len);
	f->hdr.sep = f->cells.sep = rm_csv_guess_sep(f->hdrline);
	if ((rc = rm_csv_split(&f->hdr, f->hdrline, len, err))) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s", err->msg);
		return rm_err_set(err, RM_E_INPUT, "%s:%llu: %s", path, (unsigned long long)f->lr.lineno, msg);
	}
	trim(&f->hdr);
	f->data_offset = f->lr.next_offset;
	f->data_lineno = f->lr.lineno;
	return RM_OK;
}

/* The next data line split into cells: LINE_RECORD, LINE_SKIP for a
 * blank line, LINE_BAD (why set) for a line that does not split into the
 * header's columns; *line NULL at the end. */
static enum line_kind csv_row(struct csv_file *f, char **line, char *why, size_t whylen, struct rm_err *err, int *rc)
{
	size_t len;
	struct rm_err perr;
	if ((*rc = rm_lines_next(&f->lr, line, &len, err)) || !*line)
		return LINE_SKIP;
	if (blank(*line, len))
		return LINE_SKIP;
	if (quote_parity(*line, len) && join_quoted(f, line, &len, why, whylen, err, rc)) {
		if (*rc)
			return LINE_SKIP;
		*line = f->rec; /* not NULL: the end of the file is the bad record's */
		return LINE_BAD;
	}
	if (rm_csv_split(&f->cells, *line, len, &perr)) {
		snprintf(why, whylen, "%s", perr.msg);
		return LINE_BAD;
	}
	if (f->cells.n != f->hdr.n) {
		snprintf(why, whylen, "expected %zu columns as in the header, found %zu", f->hdr.n, f->cells.n);
		return LINE_BAD;
	}
	trim(&f->cells);
	return LINE_RECORD;
}

static void fill_row(struct csv_file *f, struct rm_row *row)
{
	rm_row_clear(row);
	for (size_t c = 0; c < f->hdr.n; c++)
		add_cell(row, f->hdr.cell[c], f->hdr.len[c], f->cells.cell[c], f->cells.len[c]);
}

#define INFER_ROWS 4000

/* What the first rows imply of columns no known name says; then back to
 * the first row. */
static int csv_infer(struct csv_file *f, const struct rm_import_opts *opts, enum rm_format fmt, struct rm_guess *g,
                     struct rm_err *err)
{
	struct rm_infer *in = rm_infer_new(fmt, opts);
	struct rm_row row;
	char *line = NULL, why[512];
	int rc = RM_OK;
	rm_row_init(&row);
	for (uint64_t n = 0; n < INFER_ROWS;) {
		enum line_kind kind = csv_row(f, &line, why, sizeof(why), err, &rc);
		if (rc || !line)
			break;
		if (kind == LINE_RECORD) {
			fill_row(f, &row);
			rm_infer_row(in, &row, 0);
			n++;
		}
	}
	rm_row_release(&row);
	rm_infer_decide(in, g);
	rm_infer_free(in);
	return rc ? rc : rm_lines_seek(&f->lr, f->data_offset, f->data_lineno, err);
}

/* Any CSV but an export: one run, or the runs appended under one header. */
static int csv_rows(struct csv_file *f, struct rm_store *st, const struct rm_import_opts *opts, int whole,
                    struct rm_import_report *rep, struct rm_err *err)
{
	struct run_chain c;
	struct rm_row row;
	char *line, why[512];
	int rc = rm_chain_open(&c, st, opts, rep, rep->n - 1, whole, err);
	rm_row_init(&row);
	while (!rc) {
		enum line_kind kind = csv_row(f, &line, why, sizeof(why), err, &rc);
		if (rc || !line)
			break;
		if (kind == LINE_BAD)
			rc = rm_bad_line(rm_chain_result(&c), opts, f->lr.lineno, why, err);
		else if (kind == LINE_RECORD) {
			fill_row(f, &row);
			rc = rm_chain_feed(&c, &row, f->lr.lineno, err);
		}
		rm_chain_result(&c)->lines++; /* the run's, once a row that starts one is in it */
	}
	rm_row_release(&row);
	return rm_chain_close(&c, rc, err);
}

/* A W&B chart export: a sink per run's series. */
static int csv_export(struct csv_file *f, struct rm_store *st, const struct rm_import_opts *opts,
                      struct rm_import_report *rep, struct series *ser, size_t nser, struct rm_err *err)
{
	struct rm_row row;
	char *line, why[512];
	uint64_t lines = 0;
	int rc = RM_OK;
	rm_row_init(&row);
	for (size_t i = 0; i < nser && !rc; i++)
		rc = rm_sink_open(&ser[i].sink, st, opts, &rep->r[ser[i].res_index], err);
	struct rm_pipeline *p = rm_pipeline_start(NULL, NULL);
	while (!rc) {
		enum line_kind kind = csv_row(f, &line, why, sizeof(why), err, &rc);
		if (rc || !line)
			break;
		lines++;
		if (kind == LINE_BAD) {
			rc = rm_bad_line(&rep->r[ser[0].res_index], opts, f->lr.lineno, why, err);
			continue;
		}
		if (kind != LINE_RECORD)
			continue;
		for (size_t i = 0; i < nser && !rc; i++) {
			struct series *s = &ser[i];
			int any = 0;
			rm_row_clear(&row);
			add_cell(&row, f->hdr.cell[0], f->hdr.len[0], f->cells.cell[0], f->cells.len[0]);
			for (size_t j = 0; j < s->n; j++) {
				size_t col = s->cols[j];
				any |= f->cells.len[col] > 0;
				add_cell(&row, s->metric[j], strlen(s->metric[j]), f->cells.cell[col],
				         f->cells.len[col]);
			}
			if (any) /* else this run has no value at this step */
				rc = rm_pipeline_feed(p, &s->sink, &row, f->lr.lineno, err);
		}
	}
	int wrc = rm_pipeline_finish(p, rc ? NULL : err);
	if (!rc)
		rc = wrc;
	for (size_t i = 0; i < nser && !rc; i++)
		rc = rm_sink_finish(&ser[i].sink, err);
	for (size_t i = 0; i < nser; i++)
		rep->r[ser[i].res_index].lines = lines;
	rm_row_release(&row);
	return rc;
}

/* Imports a CSV file, or with pos (a sidecar being written) the complete
 * lines past pos; the header is read from the top each time. */
static int csv_import(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                      struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	struct csv_file f = {0};
	struct series *ser = NULL;
	struct rm_guess g = {0};
	struct rm_import_opts o = *opts;
	size_t nser = 1;
	int rc;
	if ((rc = rm_lines_open(&f.lr, path, err)))
		return rc;
	rm_csv_init(&f.hdr, ',');
	rm_csv_init(&f.cells, ',');
	f.lr.complete_only = pos != NULL;
	f.lr.stop_before = pos ? opts->tail_stop : 0;
	if ((rc = csv_header(&f, path, pos != NULL, err))) {
		if (rc == 1) { /* a file being written: its header is not there yet */
			char *name = rm_run_name_for(opts, path);
			rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
			free(name);
			rc = RM_OK;
		}
		goto out;
	}
	if (fmt == RM_FMT_WANDB_CSV) {
		ser = group_series(&f.hdr, &nser);
		if (nser == 0) {
			rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: no \"<run> - <metric>\" columns", path,
			                (unsigned long long)f.lr.lineno);
			goto out;
		}
		if (nser > 1 && opts->run_name) {
			rc = rm_err_set(err, RM_E_USAGE,
			                "%s holds %zu runs (\"%s\", \"%s\", ...); --run names only one: import it"
			                " without --run",
			                path, nser, ser[0].run, ser[1].run);
			goto out;
		}
	} else if (fmt != RM_FMT_SIDECAR_CSV && fmt != RM_FMT_TB_CSV && (rc = csv_infer(&f, opts, fmt, &g, err)))
		goto out;
	o.guess = &g;
	for (size_t i = 0; i < nser; i++) {
		char *name = opts->run_name      ? rm_xstrdup(opts->run_name)
		             : ser && ser[i].run ? rm_xstrdup(ser[i].run)
		                                 : rm_run_name_for(opts, path);
		if (ser)
			ser[i].res_index = rep->n;
		rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
		free(name);
	}
	if (pos && pos->offset > f.lr.next_offset && (rc = rm_lines_seek(&f.lr, pos->offset, pos->lineno, err)))
		goto out;
	rc = ser ? csv_export(&f, st, &o, rep, ser, nser, err) : csv_rows(&f, st, &o, pos == NULL, rep, err);
out:
	if (pos && !rc)
		rm_tail_moved(pos, &f.lr);
	if (ser)
		series_release(ser, nser);
	rm_guess_release(&g);
	free(f.hdrline);
	free(f.rec);
	rm_csv_release(&f.hdr);
	rm_csv_release(&f.cells);
	rm_lines_close(&f.lr);
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
