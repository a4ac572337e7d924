/*
 * linefmt.c - the line driver every line format reads through: a file's
 * lines (whole, or from a tail's position on) parsed by the format's line
 * function, fed through the pipeline into one run's sink; and the run name
 * a file gets when none is given.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "import_internal.h"

/* ---- run names ------------------------------------------------------------ */

/* "run-20240501_100000-ab12cd34" (a W&B run directory) gives "ab12cd34". */
static const char *wandb_dir_run_id(const char *dir, size_t n)
{
	const char *p = dir;
	if (n > 8 && !strncmp(p, "offline-", 8))
		p += 8;
	if (strncmp(p, "run-", 4))
		return NULL;
	const char *dash = memchr(p + 4, '-', n - (size_t)(p + 4 - dir));
	return dash && dash + 1 < dir + n ? dash + 1 : NULL;
}

char *rm_run_name_for(const struct rm_import_opts *opts, const char *path)
{
	if (opts->run_name)
		return rm_xstrdup(opts->run_name);
	path = rm_shown_path(opts, path);
	if (!strcmp(path, "-"))
		return rm_xstrdup("stdin");
	/* Split into components, newest last. */
	char *copy = rm_xstrdup(path), *parts[64];
	int n = 0;
	for (char *save, *tok = strtok_r(copy, "/", &save); tok && n < 64; tok = strtok_r(NULL, "/", &save))
		parts[n++] = tok;
	char *name = NULL;
	if (n == 0) {
		name = rm_xstrdup("run");
		goto out;
	}
	char *base = parts[n - 1], *dot = strrchr(base, '.');
	if (dot && dot != base)
		*dot = '\0';
	/* Generic file names say nothing: use the directory, skipping W&B's
	 * files/ and Hugging Face's checkpoint-N/. A sidecar's names are
	 * generic too, so a history and its sidecar in one directory (simulate
	 * --out, the recorder's files beside trainer_state.json) are one run. */
	if (!strcmp(base, "wandb-history") || !strcmp(base, "trainer_state") || !strcmp(base, "history") ||
	    !strcmp(base, "batches") || !strncmp(base, "runmon-batches", 14)) {
		for (int i = n - 2; i >= 0; i--) {
			if (!strcmp(parts[i], "files") || !strncmp(parts[i], "checkpoint-", 11) ||
			    !strcmp(parts[i], ".") || !strcmp(parts[i], ".."))
				continue;
			const char *id = wandb_dir_run_id(parts[i], strlen(parts[i]));
			name = rm_xstrdup(id ? id : parts[i]);
			break;
		}
	}
	if (!name)
		name = rm_xstrdup(base);
out:
	free(copy);
	return name;
}

/* Where a tail stopped in lr, and which file it read: the one opened, not
 * whatever the path names by now. */
void rm_tail_moved(struct rm_tail_pos *pos, const struct rm_lines *lr)
{
	struct stat sb;
	pos->offset = lr->next_offset;
	pos->lineno = lr->lineno;
	pos->partial = lr->partial;
	if (!fstat(fileno(lr->fp), &sb)) {
		pos->dev = (uint64_t)sb.st_dev;
		pos->ino = (uint64_t)sb.st_ino;
	}
}

/* ---- import --explain ---------------------------------------------------- */

#define EXPLAIN_RECORDS   5  /* records told field by field */
#define EXPLAIN_KINDS     8  /* kinds of lines that hold no record, each with its first example */
#define EXPLAIN_TEMPLATES 32 /* line templates counted (the rest as other) */
#define EXPLAIN_SHOWN     6  /* templates told, most lines first */

struct explain {
	FILE *fp;
	uint64_t records;
	int nkinds;
	struct {
		char why[80], example[121];
		uint64_t count, line;
	} kind[EXPLAIN_KINDS];
	/* The last two lines as read, before the format edits them: a format
	 * that joins continuation lines answers for the line before. */
	char *line[2];
	size_t cap[2];
	uint64_t lineno[2];
	int tpl_of[2]; /* each kept line's template, -1 for none */
	/* Lines grouped by their template: the fixed words and punctuation,
	 * each number a '#' (Drain's token shapes, He et al., ICWS 2017, in
	 * their simplest form); the one giving most records is the training
	 * record's. Templates past the table count as "other". */
	int ntpl;
	uint64_t other;
	struct {
		char sig[76];
		uint64_t lines, records, first;
	} tpl[EXPLAIN_TEMPLATES];
};

/* A line's template: numbers as '#', blanks as one, colour codes and a
 * progress bar's redraws ('\r' on) left out, the first 72 bytes. */
static void template_of(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0, i = 0;
	while (i < n && (s[i] == '\r' || s[i] == ' ')) /* a bar's line opens with its first frame */
		i++;
	while (i < n && o + 4 < cap && s[i] != '\r') {
		unsigned char c = (unsigned char)s[i];
		if (c == 0x1b) { /* ESC [ ... letter */
			i++;
			while (i < n && !isalpha((unsigned char)s[i]))
				i++;
			i++;
		} else if (isdigit(c)) {
			while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.' || s[i] == ',' ||
			                 ((s[i] == 'e' || s[i] == 'E') && i + 1 < n &&
			                  (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '-' || s[i + 1] == '+'))))
				i += (s[i] == 'e' || s[i] == 'E') ? 2 : 1;
			out[o++] = '#';
		} else if (isspace(c)) {
			while (i < n && isspace((unsigned char)s[i]))
				i++;
			if (o && out[o - 1] != ' ')
				out[o++] = ' ';
		} else {
			out[o++] = (char)c;
			i++;
		}
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = 0;
}

static int explain_template(struct explain *x, const char *line, size_t len, uint64_t lineno)
{
	char sig[sizeof(x->tpl[0].sig)];
	template_of(line, len, sig, sizeof(sig));
	if (!sig[0])
		return -1;
	int i = 0;
	while (i < x->ntpl && strcmp(x->tpl[i].sig, sig))
		i++;
	if (i == x->ntpl && i == EXPLAIN_TEMPLATES) {
		/* full: a template seen once and giving nothing (a banner) makes room */
		for (i = 0; i < x->ntpl && (x->tpl[i].lines > 1 || x->tpl[i].records); i++)
			;
		if (i == x->ntpl || (x->lineno[0] && x->tpl_of[0] == i) || (x->lineno[1] && x->tpl_of[1] == i)) {
			x->other++;
			return -1;
		}
		x->other += x->tpl[i].lines;
		x->tpl[i].lines = 0;
		memcpy(x->tpl[i].sig, sig, sizeof(sig));
		x->tpl[i].first = lineno;
	} else if (i == x->ntpl) {
		x->ntpl++;
		memcpy(x->tpl[i].sig, sig, sizeof(sig));
		x->tpl[i].first = lineno;
	}
	x->tpl[i].lines++;
	return i;
}

static void explain_keep(struct explain *x, const char *line, size_t len, uint64_t lineno)
{
	int i = x->lineno[0] > x->lineno[1]; /* replace the older */
	if (len + 1 > x->cap[i])
		x->line[i] = rm_xrealloc(x->line[i], x->cap[i] = len + 1);
	memcpy(x->line[i], line, len);
	x->line[i][len] = 0;
	x->lineno[i] = lineno;
	x->tpl_of[i] = explain_template(x, line, len, lineno);
}

static void explain_record(struct explain *x, struct rm_mapper *m, const struct rm_row *row, uint64_t at)
{
	int k = x->lineno[1] == at; /* the record's first line: its template gives a record */
	if (x->lineno[k] == at && x->tpl_of[k] >= 0)
		x->tpl[x->tpl_of[k]].records++;
	if (x->records++ >= EXPLAIN_RECORDS)
		return;
	fprintf(x->fp, "  record at line %llu:\n", (unsigned long long)at);
	for (size_t i = 0; i < row->n; i++) {
		const struct rm_field *f = &row->f[i];
		char key[64], raw[48];
		snprintf(key, sizeof(key), "%.*s", (int)(f->klen < 60 ? f->klen : 60), f->key);
		snprintf(raw, sizeof(raw), "%.*s", (int)(f->rlen < 40 ? f->rlen : 40), f->raw ? f->raw : "");
		fprintf(x->fp, "    %-28s %-16s -> %s\n", rm_tx(key), rm_tx(raw), rm_mapper_role(m, f->key, f->klen));
	}
}

static void explain_none(struct explain *x, const char *why, uint64_t at)
{
	const char *kind = *why ? why : "no record (no step with a loss, eval or composition)";
	int i = 0;
	while (i < x->nkinds && strcmp(x->kind[i].why, kind))
		i++;
	if (i == x->nkinds) {
		if (i == EXPLAIN_KINDS)
			i = EXPLAIN_KINDS - 1; /* the rest count with the last kind */
		else {
			x->nkinds++;
			snprintf(x->kind[i].why, sizeof(x->kind[i].why), "%s", kind);
			int w = x->lineno[1] == at;
			rm_utf8_copy(x->kind[i].example, sizeof(x->kind[i].example),
			             x->lineno[w] == at && x->line[w] ? x->line[w] : "");
			x->kind[i].line = at;
		}
	}
	x->kind[i].count++;
}

/* The templates with most lines, and which one holds the training record. */
static void explain_templates(struct explain *x)
{
	int best = -1, shown[EXPLAIN_SHOWN], nshown = 0;
	for (int i = 0; i < x->ntpl; i++)
		if (x->tpl[i].records && (best < 0 || x->tpl[i].records > x->tpl[best].records))
			best = i;
	fprintf(x->fp, "  line templates (# a number), most lines first:\n");
	while (nshown < EXPLAIN_SHOWN) {
		int top = -1;
		for (int i = 0; i < x->ntpl; i++) {
			int seen = 0;
			for (int j = 0; j < nshown; j++)
				seen |= shown[j] == i;
			if (!seen && (top < 0 || x->tpl[i].lines > x->tpl[top].lines))
				top = i;
		}
		if (top < 0)
			break;
		shown[nshown++] = top;
		fprintf(x->fp, "    %8llu lines, %llu records%s: %s\n", (unsigned long long)x->tpl[top].lines,
		        (unsigned long long)x->tpl[top].records, top == best ? " (the training record)" : "",
		        rm_tx(x->tpl[top].sig));
	}
	if (x->ntpl > nshown || x->other)
		fprintf(x->fp, "    and %d more templates%s\n", x->ntpl - nshown,
		        x->other ? " (and lines of others)" : "");
}

static void explain_finish(struct explain *x)
{
	if (!x->records)
		fputs("  no line held a record\n", x->fp);
	else if (x->records > EXPLAIN_RECORDS)
		fprintf(x->fp, "  ... %llu records in all\n", (unsigned long long)x->records);
	for (int i = 0; i < x->nkinds; i++)
		fprintf(x->fp, "  %llu line%s: %s; the first, line %llu: %s\n", (unsigned long long)x->kind[i].count,
		        x->kind[i].count == 1 ? "" : "s", x->kind[i].why, (unsigned long long)x->kind[i].line,
		        rm_tx(x->kind[i].example));
	explain_templates(x);
	free(x->line[0]);
	free(x->line[1]);
}

static int feed_lines(struct rm_store *st, const struct rm_import_opts *opts, struct rm_lines *lr,
                      struct rm_import_report *rep, int split, line_parse_fn *parse, void *ctx, struct rm_err *err)
{
	struct explain x = {.fp = opts->explain};
	struct run_chain c;
	char *line;
	size_t len;
	int rc = rm_chain_open(&c, st, opts, rep, rep->n - 1, split, err);
	/* After the last line, parse is called once more with NULL: a record
	 * spread over several lines is complete only then. */
	while (!rc && !(rc = rm_lines_next(lr, &line, &len, err))) {
		if (lr->overlong) { /* --skip-bad: read past, counted */
			char why[96];
			snprintf(why, sizeof(why), "line longer than %zu bytes", lr->max_line);
			rc = rm_bad_line(rm_chain_result(&c), opts, lr->lineno, why, err);
			rm_chain_result(&c)->lines++;
			continue;
		}
		if (x.fp && line)
			explain_keep(&x, line, len, lr->lineno);
		for (int more = 1; more && !rc;) {
			char why[256];
			const struct rm_row *row;
			uint64_t at = lr->lineno;
			why[0] = 0;
			int kind = (int)parse(ctx, &c.k.map, line, len, &at, &row, why, sizeof(why));
			more = kind & LINE_MORE;
			switch ((enum line_kind)(kind & ~LINE_MORE)) {
			case LINE_BAD: rc = rm_bad_line(rm_chain_result(&c), opts, at, why, err); break;
			case LINE_RECORD:
				rc = rm_chain_feed(&c, row, at, err);
				if (x.fp) /* after the mapper has read it: the keys it settled on */
					explain_record(&x, &c.k.map, row, at);
				break;
			case LINE_NONE:
				rm_chain_result(&c)->not_records++;
				if (x.fp)
					explain_none(&x, why, at);
				break;
			default: break;
			}
		}
		if (rc || !line)
			break;
		rm_chain_result(&c)->lines++; /* the run's, once a line that starts one is in it */
	}
	if (x.fp)
		explain_finish(&x);
	return rm_chain_close(&c, rc, err);
}

int rm_read_lines(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                  struct rm_tail_pos *pos, struct rm_import_report *rep, line_parse_fn *parse, void *ctx,
                  struct rm_err *err)
{
	struct rm_lines lr;
	char *name = rm_run_name_for(opts, path);
	rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
	free(name);
	int rc = rm_lines_open(&lr, path, err);
	lr.skip_long = opts->skip_bad;
	if (!rc && pos) {
		rc = rm_lines_seek(&lr, pos->offset, pos->lineno, err);
		lr.complete_only = 1;
		lr.stop_before = opts->tail_stop;
	}
	if (!rc)
		rc = feed_lines(st, opts, &lr, rep, pos == NULL, parse, ctx, err);
	if (!rc && pos)
		rm_tail_moved(pos, &lr);
	rm_lines_close(&lr);
	return rc;
}

/* ---- inferring a file's keys ---------------------------------------------- */

/* Rows and bytes of a file's head read to infer its keys: enough for the
 * records to show how their fields behave, a moment on any file. */
#define INFER_ROWS  4000
#define INFER_BYTES (16u << 20)

int rm_infer_file(const struct rm_import_opts *opts, const char *path, enum rm_format fmt, line_parse_fn *parse,
                  void *ctx, struct rm_guess *g, struct rm_err *err)
{
	struct rm_lines lr;
	struct rm_mapper m;
	char *line;
	size_t len;
	uint64_t rows = 0;
	int rc = rm_lines_open(&lr, path, err);
	if (rc)
		return rc;
	struct rm_infer *in = rm_infer_new(fmt, opts);
	rm_mapper_init(&m, fmt, opts);
	while (rows < INFER_ROWS && lr.offset < INFER_BYTES && !rm_lines_next(&lr, &line, &len, err)) {
		for (int more = 1; more;) {
			char why[256];
			const struct rm_row *row;
			uint64_t at = lr.lineno;
			int kind = (int)parse(ctx, &m, line, len, &at, &row, why, sizeof(why));
			more = kind & LINE_MORE;
			if ((kind & ~LINE_MORE) == LINE_RECORD) {
				rm_infer_row(in, row, 0);
				rows++;
			}
		}
		if (!line)
			break;
	}
	rm_mapper_release(&m);
	rm_lines_close(&lr);
	rm_infer_decide(in, g);
	rm_infer_free(in);
	return RM_OK; /* what the head could not show, the reading tells */
}
