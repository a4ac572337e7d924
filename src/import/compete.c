/*
 * compete.c - which reader explains a text file: every reader that could
 * (the one its first line suggests, the others that claim it, and the
 * console-log reader, which claims any text) reads the same sample of the
 * file into a scratch store, and the one that explains it best wins. A
 * reader that fails on line 2 has explained nothing: a first guess can no
 * longer fail a whole file (issue 63).
 */
#define _GNU_SOURCE /* mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import_internal.h"

/* The sample: the file's first bytes up to a line's end. Enough lines for
 * the trainers' banners and a few hundred records; bounded so that a
 * competition costs the same on a file of any length. */
#define SAMPLE_BYTES (512 * 1024)

/* Formats read as one document (a JSON object or array) cannot be cut:
 * they try the file itself, which their own reading holds whole anyway. */
static int reads_whole(enum rm_format f)
{
	return f == RM_FMT_HF_STATE || f == RM_FMT_JSON_ARRAY || f == RM_FMT_JSON_COLUMNS;
}

/* Copies path's first SAMPLE_BYTES, cut after the last newline, to a new
 * temporary file, unlinked at once (an interrupted import leaves nothing
 * behind); returns its descriptor, or -1 when the file is no longer than
 * the sample (path itself serves) or the copy failed (*failed set). The
 * readers open it as /dev/fd/N, which starts again at byte 0. */
static int cut_sample(const char *path, int *failed, struct rm_err *err)
{
	struct stat sb;
	*failed = 0;
	if (stat(path, &sb) || !S_ISREG(sb.st_mode) || sb.st_size <= SAMPLE_BYTES)
		return -1;
	char *buf = rm_xmalloc(SAMPLE_BYTES);
	FILE *in = fopen(path, "rb");
	size_t n = in ? fread(buf, 1, SAMPLE_BYTES, in) : 0;
	if (in)
		fclose(in);
	while (n && buf[n - 1] != '\n')
		n--;
	const char *dir = getenv("TMPDIR");
	char *tmp = rm_xasprintf("%s/runmon-sample-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = n ? mkostemp(tmp, O_CLOEXEC) : -1;
	if (fd >= 0)
		unlink(tmp);
	if (fd >= 0 && write(fd, buf, n) != (ssize_t)n) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 && n)
		*failed = rm_err_set(err, RM_E_IO, "cannot write a sample of '%s' to %s: %s", path,
		                     dir && *dir ? dir : "/tmp", strerror(errno));
	free(buf);
	free(tmp);
	return fd;
}

/* Reads path as f into a scratch store with bad lines skipped, and sums
 * what it explained. A reader that stops with an error explained nothing. */
static void try_reader(const struct rm_import_opts *opts, const struct import_format *c, const char *path,
                       struct rm_trial *t)
{
	struct rm_store *st = NULL;
	struct rm_import_report rep = {0};
	struct rm_err err = {0};
	struct rm_import_opts o = *opts;
	o.run_name = NULL; /* the content competes, not the options: --run is the real read's */
	o.skip_bad = 1;
	o.explain = NULL;
	o.guess = NULL;
	o.format = c->fmt;
	memset(t, 0, sizeof(*t));
	if (rm_store_open(&st, ":memory:", &err) || rm_store_begin(st, &err)) {
		snprintf(t->why, sizeof(t->why), "%s", err.msg);
		t->failed = 1;
		rm_store_close(st);
		return;
	}
	int rc = c->read(st, &o, path, c->fmt, &rep, &err);
	if (rc) {
		snprintf(t->why, sizeof(t->why), "%s", err.msg);
		t->failed = 1;
	}
	for (size_t i = 0; i < rep.n && !rc; i++) {
		const struct rm_import_result *r = &rep.r[i];
		t->lines += r->lines;
		t->points += r->steps;
		t->good += r->steps + r->evals + r->batches;
		t->bad += r->skipped;
		t->unnamed |= r->loss_key && !strcmp(r->loss_key, RM_GUESS_UNNAMED);
		if (r->skipped && !t->why[0])
			snprintf(t->why, sizeof(t->why), "line %llu: %s", (unsigned long long)r->bad_line[0],
			         r->bad_msg);
	}
	t->score = t->failed ? -1 : (double)t->good - 2.0 * (double)t->bad;
	rm_import_report_release(&rep);
	rm_store_rollback(st);
	rm_store_close(st);
}

/* The first candidate is the one the file's first line suggested: another
 * wins only by explaining more than twice its records. A file that reads
 * as what it says it is keeps that reading, and its bad lines are told as
 * they were (a JSON-lines file with one broken line is no console log);
 * a first guess that explains little of the file loses. A loss the file
 * names explains more than one taken unnamed ("step<TAB>loss" over rows of
 * two numbers is a table with its header). */
static int beats(const struct rm_trial *a, const struct rm_trial *first)
{
	if (a->failed || a->good == 0)
		return 0;
	if (first->failed || (first->unnamed && !a->unnamed && a->points >= first->points))
		return 1;
	return a->good > 2 * first->good + 2;
}

int rm_compete(const struct rm_import_opts *opts, const char *path, const struct import_format *const *c, size_t n,
               struct rm_trial *trials, size_t *winner, struct rm_err *err)
{
	int failed, fd = cut_sample(path, &failed, err);
	if (failed)
		return failed;
	char sample[32];
	snprintf(sample, sizeof(sample), "/dev/fd/%d", fd);
	size_t best = 0;
	for (size_t i = 0; i < n; i++) {
		try_reader(opts, c[i], fd >= 0 && !reads_whole(c[i]->fmt) ? sample : path, &trials[i]);
		if (i && beats(&trials[i], &trials[0]) && (best == 0 || trials[i].score > trials[best].score))
			best = i;
	}
	if (fd >= 0)
		close(fd);
	*winner = best;
	return RM_OK;
}
