/*
 * linefmt.c - the line driver every line format reads through: a file's
 * lines (whole, or from a tail's position on) parsed by the format's line
 * function, fed through the pipeline into one run's sink; and the run name
 * a file gets when none is given.
 */
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
	 * files/ and Hugging Face's checkpoint-N/. */
	if (!strcmp(base, "wandb-history") || !strcmp(base, "trainer_state") || !strcmp(base, "history")) {
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

static int feed_lines(struct rm_store *st, const struct rm_import_opts *opts, struct rm_lines *lr,
                      struct rm_import_result *res, line_parse_fn *parse, void *ctx, struct rm_err *err)
{
	struct rm_sink k;
	char *line;
	size_t len;
	int rc = rm_sink_open(&k, st, opts, res, err);
	if (rc) {
		rm_sink_release(&k);
		return rc;
	}
	struct rm_pipeline *p = rm_pipeline_start(NULL, NULL);
	/* After the last line, parse is called once more with NULL: a record
	 * spread over several lines is complete only then. */
	while (!(rc = rm_lines_next(lr, &line, &len, err))) {
		char why[256];
		const struct rm_row *row;
		uint64_t at = lr->lineno;
		res->lines += line != NULL;
		switch (parse(ctx, &k.map, line, len, &at, &row, why, sizeof(why))) {
		case LINE_BAD: rc = rm_bad_line(res, opts, at, why, err); break;
		case LINE_RECORD: rc = rm_pipeline_feed(p, &k, row, at, err); break;
		case LINE_NONE: res->not_records++; break;
		case LINE_SKIP: break;
		}
		if (rc || !line)
			break;
	}
	int wrc = rm_pipeline_finish(p, rc ? NULL : err);
	if (!rc)
		rc = wrc;
	if (!rc)
		rc = rm_sink_finish(&k, err);
	rm_sink_release(&k);
	return rc;
}

int rm_read_lines(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                  struct rm_tail_pos *pos, struct rm_import_report *rep, line_parse_fn *parse, void *ctx,
                  struct rm_err *err)
{
	struct rm_lines lr;
	char *name = rm_run_name_for(opts, path);
	struct rm_import_result *res = rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
	free(name);
	int rc = rm_lines_open(&lr, path, err);
	if (!rc && pos) {
		rc = rm_lines_seek(&lr, pos->offset, pos->lineno, err);
		lr.complete_only = 1;
	}
	if (!rc)
		rc = feed_lines(st, opts, &lr, res, parse, ctx, err);
	if (!rc && pos)
		rm_tail_moved(pos, &lr);
	rm_lines_close(&lr);
	return rc;
}
