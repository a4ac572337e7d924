/*
 * import.c - the dispatcher: the table of formats (names, detection, the
 * reader and the follower of each), directories and streams, and the one
 * transaction an import is (what each file gave is checked and logged, or
 * nothing is kept). The formats sit below it and never call it.
 */
#define _GNU_SOURCE /* mkostemp */
#include <fcntl.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import_internal.h"
#include "runmon/parse.h"

/* The formats, in the order detection tries them: the first whose detect
 * claims a file reads it. Plain CSV claims any file with a line, so it
 * comes last; tail is NULL where a growing file makes no sense. */
static const struct import_format formats[] = {
    {RM_FMT_WANDB_LOG, "wandb-log", rm_sniff_wandb_log, rm_read_wandb_log, rm_tail_wandb_log,
     "a W&B run file's header"},
    {RM_FMT_TFEVENTS, "tfevents", rm_sniff_tfevents, rm_read_tfevents, rm_tail_tfevents,
     "a TFRecord whose length checksum matches (a TensorBoard event file)"},
    {RM_FMT_HF_STATE, "hf-trainer-state", rm_sniff_hf_state, rm_read_hf_state, NULL, "a JSON object with log_history"},
    {RM_FMT_WANDB_HISTORY, "wandb-history", rm_sniff_wandb_history, rm_read_jsonl, rm_tail_jsonl,
     "JSON lines with W&B's _step"},
    {RM_FMT_SIDECAR_JSONL, "sidecar-jsonl", rm_sniff_sidecar_jsonl, rm_read_jsonl, rm_tail_jsonl,
     "JSON lines of batch statistics and no loss"},
    {RM_FMT_JSONL, "jsonl", rm_sniff_jsonl, rm_read_jsonl, rm_tail_jsonl, "JSON lines"},
    {RM_FMT_JSON_ARRAY, "json-array", rm_sniff_json_array, rm_read_json_array, NULL,
     "a JSON array of objects (Chainer's LogReport)"},
    {RM_FMT_JSON_COLUMNS, "json-columns", rm_sniff_json_columns, rm_read_json_columns, NULL,
     "a JSON document of arrays side by side (NVIDIA's nvlog)"},
    {RM_FMT_TB_CSV, "tensorboard-csv", rm_sniff_tb_csv, rm_read_csv, NULL, "a CSV header Wall time,Step,Value"},
    {RM_FMT_WANDB_CSV, "wandb-csv", rm_sniff_wandb_csv, rm_read_csv, NULL,
     "a CSV header of Step and \"<run> - <metric>\" columns"},
    {RM_FMT_SIDECAR_CSV, "sidecar-csv", rm_sniff_sidecar_csv, rm_read_csv, rm_tail_csv,
     "a CSV header of batch statistics and no loss"},
    {RM_FMT_LOG, "log", rm_sniff_log, rm_read_log, rm_tail_log,
     "lines of text that are neither JSON lines nor CSV under a header"},
    {RM_FMT_CSV, "csv", rm_sniff_csv, rm_read_csv, rm_tail_csv, "a CSV header"},
};
#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static const struct import_format *format_of(enum rm_format f)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (formats[i].fmt == f)
			return &formats[i];
	return NULL;
}

const char *rm_format_name(enum rm_format f)
{
	const struct import_format *e = format_of(f);
	return e ? e->name : NULL;
}

int rm_format_parse(const char *name, enum rm_format *out)
{
	if (!strcmp(name, "auto")) {
		*out = RM_FMT_AUTO;
		return 0;
	}
	for (size_t i = 0; i < NFORMATS; i++)
		if (!strcmp(name, formats[i].name)) {
			*out = formats[i].fmt;
			return 0;
		}
	return -1;
}

/* ---- detection ------------------------------------------------------------ */

/* A console log may open with the training script itself (modded-nanoGPT
 * prints it whole) before its first record. */
#define SNIFF_BYTES (256 * 1024)

/* Formats known from their first bytes: nothing else reads them. */
static int is_binary(enum rm_format f)
{
	return f == RM_FMT_WANDB_LOG || f == RM_FMT_TFEVENTS;
}

/* Where no reader explained anything of the file, what each found, for
 * the error the first one's reading will give ("" otherwise). */
static void say_none(const struct import_format *const *cand, const struct rm_trial *t, size_t n, char *out, size_t len)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		if (t[i].good)
			return;
	for (size_t i = 0; i < n && o + 1 < len; i++) {
		int w = t[i].failed ? snprintf(out + o, len - o, "%s%s: %.80s", i ? "; " : "", cand[i]->name, t[i].why)
		                    : snprintf(out + o, len - o, "%s%s: no record in %llu lines%s%.80s", i ? "; " : "",
		                               cand[i]->name, (unsigned long long)t[i].lines,
		                               t[i].why[0] ? ", first bad " : "", t[i].why);
		o += w > 0 ? (size_t)w : 0;
	}
}

/* The readers compete on a sample (compete.c); import --explain shows
 * what each found. */
static const struct import_format *compete(const struct rm_import_opts *opts, const char *path,
                                           const struct import_format *const *cand, size_t n, char *none,
                                           size_t nonelen, struct rm_err *err)
{
	struct rm_trial trials[NFORMATS];
	size_t best;
	if (rm_compete(opts, path, cand, n, trials, &best, err))
		return NULL;
	say_none(cand, trials, n, none, nonelen);
	for (size_t i = 0; opts->explain && i < n; i++) {
		const struct rm_trial *t = &trials[i];
		fprintf(opts->explain, "  reader %-16s %s", cand[i]->name, i == best ? "(chosen) " : "");
		if (t->failed)
			fprintf(opts->explain, "explains nothing: %s\n", rm_tx(t->why));
		else
			fprintf(opts->explain, "%llu records (%llu losses), %llu bad lines in %llu lines read%s%s\n",
			        (unsigned long long)t->good, (unsigned long long)t->points, (unsigned long long)t->bad,
			        (unsigned long long)t->lines, t->why[0] ? "; first bad " : "", rm_tx(t->why));
	}
	return cand[best];
}

/* Reads the head of path and its first non-blank line, then walks the
 * table. A file that cannot be read as lines (a binary log) still has its
 * head; the line's error is told only when no format claimed the file. */
static const struct import_format *detect_file(const struct rm_import_opts *opts, const char *path, char *none,
                                               size_t nonelen, struct rm_err *err)
{
	uint8_t *head = rm_xmalloc(SNIFF_BYTES);
	struct sniff sn = {.opts = opts, .head = head};
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		free(head);
		rm_err_set(err, errno == ENOENT || errno == EACCES ? RM_E_INPUT : RM_E_IO, "cannot read '%s': %s",
		           rm_shown_path(opts, path), strerror(errno));
		return NULL;
	}
	sn.nhead = fread(head, 1, SNIFF_BYTES, fp);
	fclose(fp);
	struct rm_lines lr;
	struct rm_err lerr = {0};
	char *line = NULL;
	size_t len = 0;
	int rc = rm_lines_open(&lr, path, &lerr), opened = !rc;
	if (!rc) {
		do
			rc = rm_lines_next(&lr, &line, &len, &lerr);
		while (!rc && line && strspn(line, " \t") == len);
	}
	if (!rc && line) {
		size_t lead = strspn(line, " \t\r\f\v");
		sn.line = line + lead;
		sn.len = len - lead;
	}
	/* Every format that claims the file is a candidate, the first line's
	 * suggestion first; a text file is also a candidate console log. */
	const struct import_format *cand[NFORMATS];
	size_t ncand = 0, has_log = 0;
	for (size_t i = 0; i < NFORMATS; i++)
		if (formats[i].detect(&sn)) {
			cand[ncand++] = &formats[i];
			has_log |= formats[i].fmt == RM_FMT_LOG;
		}
	if (opened)
		rm_lines_close(&lr);
	free(head);
	if (!ncand && rc)
		*err = lerr;
	else if (!ncand)
		rm_err_set(err, RM_E_INPUT, "%s: file is empty", rm_shown_path(opts, path));
	if (!ncand)
		return NULL;
	if (is_binary(cand[0]->fmt) || opts->pattern)
		return cand[0];
	if (!has_log && sn.line)
		cand[ncand++] = format_of(RM_FMT_LOG);
	return ncand > 1 ? compete(opts, path, cand, ncand, none, nonelen, err) : cand[0];
}

char *rm_wandb_dir_log(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *found = NULL;
	while (d && !found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 10 && !strncmp(e->d_name, "run-", 4) && !strcmp(e->d_name + n - 6, ".wandb")) {
			found = rm_xasprintf("%s/%s", dir, e->d_name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* A W&B run directory holds its history in run-<id>.wandb; SDKs before
 * 0.10 wrote wandb-history.jsonl instead. */
static int import_dir(struct rm_store *st, const struct rm_import_opts *opts, const char *dir,
                      struct rm_import_report *rep, struct rm_err *err)
{
	char *log = rm_wandb_dir_log(dir);
	if (log) {
		int rc = rm_read_wandb_log(st, opts, log, RM_FMT_WANDB_LOG, rep, err);
		free(log);
		return rc;
	}
	char *old = rm_xasprintf("%s/wandb-history.jsonl", dir);
	int rc = !access(old, R_OK)      ? rm_read_jsonl(st, opts, old, RM_FMT_WANDB_HISTORY, rep, err)
	         : rm_tfevents_tree(dir) ? rm_read_tfevents_tree(st, opts, dir, rep, err)
	                                 : rm_err_set(err, RM_E_INPUT,
	                                              "%s: a directory without run-*.wandb, wandb-history.jsonl or"
	                                              " TensorBoard event files; give a file, a W&B run directory"
	                                              " or a TensorBoard log directory",
	                                              dir);
	free(old);
	return rc;
}

static int foreign_error(const struct rm_import_opts *opts, const char *path, const uint8_t *head, size_t n,
                         struct rm_err *err);

/* The most a stream is spooled: an endless one (/dev/zero, `yes`) would
 * fill the disk. RUNMON_SPOOL_MAX (bytes) changes it. */
static uint64_t spool_max(void)
{
	const char *e = getenv("RUNMON_SPOOL_MAX");
	char *end;
	unsigned long long v = e && *e ? strtoull(e, &end, 10) : 0;
	return v && !*end ? (uint64_t)v : (uint64_t)16 << 30;
}

/* Copies a stream that can be read only once (stdin, a pipe, a FIFO) to
 * an unlinked temporary file, so that detection and the importer read the
 * same bytes like any file's; returns its descriptor, or -1 with err set.
 * Binary data is refused from its first bytes, before anything is
 * written, and the copy stops at spool_max. */
static int spool(const struct rm_import_opts *opts, const char *path, struct rm_err *err)
{
	enum { HEAD = 4608 }; /* what refuse_foreign reads of a file */
	const char *dir = getenv("TMPDIR");
	char *tmp = rm_xasprintf("%s/runmon-stream-XXXXXX", dir && *dir ? dir : "/tmp");
	int in = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	int fd = in < 0 ? -1 : mkostemp(tmp, O_CLOEXEC);
	if (in < 0 || fd < 0) {
		rm_err_set(err, in < 0 ? RM_E_INPUT : RM_E_IO, "cannot read '%s': %s", in < 0 ? path : tmp,
		           strerror(errno));
		goto out;
	}
	unlink(tmp);
	char buf[65536];
	size_t have = 0;
	int decided = 0;
	uint64_t total = 0, most = spool_max();
	for (;;) {
		ssize_t n = read(in, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rm_err_set(err, RM_E_IO, "cannot read '%s': %s", path, strerror(errno));
			goto fail;
		}
		have += (size_t)n;
		if (!decided && n > 0 && have < HEAD)
			continue; /* the first bytes decide, read whole */
		if (!decided && foreign_error(opts, path, (const uint8_t *)buf, have, err))
			goto fail;
		decided = 1;
		if ((total += have) > most) {
			rm_err_set(
			    err, RM_E_INPUT,
			    "%s: more than %llu bytes from a stream (RUNMON_SPOOL_MAX); save it to a file and import"
			    " that",
			    rm_shown_path(opts, path), (unsigned long long)most);
			goto fail;
		}
		for (size_t off = 0; off < have;) {
			ssize_t w = write(fd, buf + off, have - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				rm_err_set(err, RM_E_IO, "cannot spool '%s' to %s: %s", path,
				           dir && *dir ? dir : "/tmp", strerror(errno));
				goto fail;
			}
			off += (size_t)w;
		}
		have = 0;
		if (n == 0)
			break;
	}
	goto out;
fail:
	close(fd);
	fd = -1;
out:
	if (in > STDIN_FILENO)
		close(in);
	free(tmp);
	return fd;
}

static int import_path(struct rm_store *st, const struct rm_import_opts *opts, const char *path,
                       struct rm_import_report *rep, struct rm_err *err);

static int import_file(struct rm_store *st, const struct rm_import_opts *opts, const char *path,
                       struct rm_import_report *rep, struct rm_err *err)
{
	struct stat sb;
	int is_stream = !strcmp(path, "-");
	if (!is_stream && stat(path, &sb))
		return rm_err_set(err, errno == ENOENT || errno == EACCES ? RM_E_INPUT : RM_E_IO,
		                  "cannot read '%s': %s", path, strerror(errno));
	if (!is_stream && S_ISDIR(sb.st_mode))
		return import_dir(st, opts, path, rep, err);
	if (!is_stream && !S_ISREG(sb.st_mode))
		is_stream = S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode) || S_ISSOCK(sb.st_mode);
	if (!is_stream)
		return import_path(st, opts, path, rep, err);
	int fd = spool(opts, path, err);
	if (fd < 0)
		return err->code;
	char io[32];
	snprintf(io, sizeof(io), "/dev/fd/%d", fd); /* opening it starts again at byte 0 */
	struct rm_import_opts o = *opts;
	o.shown_path = path;
	int rc = import_path(st, &o, io, rep, err);
	close(fd);
	return rc;
}

/* A page, an image, an archive or binary data is refused before any
 * reader runs (exit 2), whatever --format says: no reader makes sense of it. */
static int foreign_error(const struct rm_import_opts *opts, const char *path, const uint8_t *head, size_t n,
                         struct rm_err *err)
{
	int ours = (n >= RM_WLOG_HEADER && !memcmp(head, rm_wlog_magic, 6)) || rm_tfrec_sniff(head, n);
	const char *kind = ours ? NULL : rm_foreign_kind(head, n);
	if (!kind)
		return RM_OK;
	const char *hint =
	    !strcmp(kind, "a gzip archive")       ? "decompress it first: zcat FILE | runmon import --run NAME -"
	    : !strcmp(kind, "an SQLite database") ? "a database is given with --db"
	                                          : "runmon reads console logs, JSON lines, CSV, W&B run"
	                                            " files, TensorBoard event files and trainer_state.json";
	return rm_err_set(err, RM_E_INPUT, "%s: %s, not a training log; %s", rm_shown_path(opts, path), kind, hint);
}

static int refuse_foreign(const struct rm_import_opts *opts, const char *path, struct rm_err *err)
{
	uint8_t head[4096 + 512];
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return RM_OK; /* the reader says why it cannot open it */
	size_t n = fread(head, 1, sizeof(head), fp);
	fclose(fp);
	return foreign_error(opts, path, head, n, err);
}

/* A reading that failed where no reader explained anything: its error,
 * then what the others found, as far as the message holds. */
static void append_none(struct rm_err *err, const char *none)
{
	size_t n = strlen(err->msg);
	if (n + 40 < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - n, " (no reader explains the file: %s)", none);
}

static int import_path(struct rm_store *st, const struct rm_import_opts *opts, const char *path,
                       struct rm_import_report *rep, struct rm_err *err)
{
	int rc = refuse_foreign(opts, path, err);
	if (rc)
		return rc;
	char none[400] = "";
	const struct import_format *f =
	    opts->format == RM_FMT_AUTO ? detect_file(opts, path, none, sizeof(none), err) : format_of(opts->format);
	if (!f && opts->format != RM_FMT_AUTO)
		return rm_err_set(err, RM_E_USAGE, "unknown format");
	if (!f)
		return err->code;
	if (opts->explain)
		fprintf(opts->explain, "%s: read as %s (%s)\n", rm_tx(rm_shown_path(opts, path)), f->name,
		        opts->format == RM_FMT_AUTO ? f->why : "given with --format");
	rc = f->read(st, opts, path, f->fmt, rep, err);
	if (rc == RM_E_INPUT && none[0])
		append_none(err, none);
	return rc;
}

/* A file that gave nothing is an error, not an exit 0 a cron job would
 * take for success: a mistyped --loss-key, or --skip-bad with no good line. */
static int check_contributed(const struct rm_import_result *r, const struct rm_import_opts *opts, struct rm_err *err)
{
	int sidecar = r->format == RM_FMT_SIDECAR_JSONL || r->format == RM_FMT_SIDECAR_CSV;
	if (opts->loss_key && !sidecar && !r->loss_key)
		return rm_err_set(err, RM_E_INPUT, "%s: no loss key '%s' (given with --loss-key) in any row", r->path,
		                  opts->loss_key);
	/* Evals or batches but no loss: the loss is under a name runmon does not
	 * know. Committing would leave a run with nothing to diagnose. (A
	 * --pattern says itself what a line holds: evals alone are its wish.) */
	if (!sidecar && !r->loss_key && !opts->pattern && (r->batches || r->evals))
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: no loss key found among the keys read (%s); name the loss with --loss-key KEY",
		                  r->path, r->unmapped ? r->unmapped : "none");
	if (r->steps || r->batches || r->evals || r->kept_stored)
		return RM_OK;
	if (r->skipped)
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: no good line: %llu bad line%s skipped, the first (line %llu): %s", r->path,
		                  (unsigned long long)r->skipped, r->skipped > 1 ? "s" : "",
		                  (unsigned long long)r->bad_line[0], r->bad_msg);
	/* a log's lines may hold a record no reading found: --pattern spells it */
	const char *pattern = r->format == RM_FMT_LOG && !opts->pattern
	                          ? ", or spell a record's line with --pattern 'step {step} ... loss {loss}'"
	                          : "";
	if (!sidecar && !opts->loss_key && r->unmapped)
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: nothing to import: no row has a loss, eval or batch value (keys read: %s;"
		                  " name the loss with --loss-key KEY%s)",
		                  r->path, r->unmapped, pattern);
	if (!sidecar && !opts->loss_key)
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: nothing to import: no row has a loss, eval or batch value (name the loss with"
		                  " --loss-key KEY%s)",
		                  r->path, pattern);
	return rm_err_set(err, RM_E_INPUT, "%s: nothing to import: no row has a loss, eval or batch value", r->path);
}

/* Logs what each file contributed (skip_empty: files that gave no line
 * are not logged, so an idle tail leaves no trace) and commits; rolls back
 * on failure. */
static int log_and_commit(struct rm_store *st, struct rm_import_report *rep, int skip_empty, struct rm_err *err)
{
	int rc = RM_OK;
	for (size_t i = 0; i < rep->n && !rc; i++) {
		struct rm_import_result *r = &rep->r[i];
		struct rm_import_log log = {r->run_id,
		                            r->path,
		                            rm_format_name(r->format),
		                            (int64_t)r->lines,
		                            (int64_t)r->steps,
		                            (int64_t)r->batches,
		                            (int64_t)r->replaced,
		                            (int64_t)r->restarts,
		                            (int64_t)r->skipped,
		                            r->composition,
		                            r->first_step,
		                            r->last_step};
		if (r->lines || !skip_empty)
			rc = rm_store_log_import(st, &log, err);
	}
	if (!rc)
		rc = rm_store_commit(st, err);
	if (rc) {
		rm_store_rollback(st);
		rm_import_report_release(rep);
	}
	return rc;
}

static int gave_nothing(const struct rm_import_result *r)
{
	return !r->steps && !r->batches && !r->evals;
}

/* A chart export of a sweep holds runs with no value in the chart's range:
 * those are left out (their run is removed unless it held data before),
 * and counted on the file's first result. The file as a whole must still
 * give something, which check_contributed sees in the one kept. */
static int drop_empty_series(struct rm_store *st, struct rm_import_report *rep, size_t first, struct rm_err *err)
{
	size_t kept = first, dropped = 0;
	for (size_t j = first; j < rep->n; j++) {
		struct rm_import_result *r = &rep->r[j];
		int last_chance = kept == first && j == rep->n - 1; /* keep one, to report the file */
		if (gave_nothing(r) && !r->skipped && !last_chance) {
			int rc = rm_store_drop_run_if_empty(st, r->run_id, err);
			if (rc)
				return rc;
			rm_import_result_release(r);
			dropped++;
			continue;
		}
		rep->r[kept++] = *r;
	}
	rep->n = kept;
	rep->r[first].empty_series += dropped;
	return RM_OK;
}

int rm_import(struct rm_store *st, const struct rm_import_opts *opts, char *const *files, int nfiles,
              struct rm_import_report *rep, struct rm_err *err)
{
	int rc;
	memset(rep, 0, sizeof(*rep));
	if ((rc = rm_store_begin(st, err)))
		return rc;
	for (int i = 0; i < nfiles && !rc; i++) {
		size_t first = rep->n;
		struct stat sb;
		char what[200];
		snprintf(what, sizeof(what), "import %s", files[i]);
		rm_progress_start(what, "B", !stat(files[i], &sb) && S_ISREG(sb.st_mode) ? (double)sb.st_size : 0);
		rc = import_file(st, opts, files[i], rep, err);
		rm_progress_end();
		if (!rc && rep->n - first > 1)
			rc = drop_empty_series(st, rep, first, err);
		for (size_t j = first; j < rep->n && !rc; j++)
			rc = check_contributed(&rep->r[j], opts, err);
	}
	if (rc) {
		rm_store_rollback(st);
		rm_import_report_release(rep);
		return rc;
	}
	rm_progress_start("import: committing", NULL, 0);
	rc = log_and_commit(st, rep, 0, err);
	rm_progress_end();
	return rc;
}

/* A file followed from its first byte has nothing to detect from yet: its
 * name tells, and a sidecar is what runmon follows most. */
static enum rm_format tail_format(const char *path)
{
	static const struct {
		const char *ext;
		enum rm_format fmt;
	} by_name[] = {{".wandb", RM_FMT_WANDB_LOG}, {".csv", RM_FMT_SIDECAR_CSV}, {".log", RM_FMT_LOG},
	               {".txt", RM_FMT_LOG},         {".out", RM_FMT_LOG},         {".err", RM_FMT_LOG}};
	size_t n = strlen(path);
	const char *base = strrchr(path, '/');
	if (strstr(base ? base + 1 : path, "tfevents"))
		return RM_FMT_TFEVENTS;
	for (size_t i = 0; i < sizeof(by_name) / sizeof(by_name[0]); i++) {
		size_t e = strlen(by_name[i].ext);
		if (n > e && !strcmp(path + n - e, by_name[i].ext))
			return by_name[i].fmt;
	}
	return RM_FMT_SIDECAR_JSONL;
}

/* FNV-1a, 64 bits, of the file's first head_len bytes, or 0 and *len 0
 * when they cannot be read. */
static uint64_t head_hash(int fd, uint32_t *len)
{
	unsigned char buf[RM_TAIL_HEAD];
	ssize_t n = *len ? pread(fd, buf, *len, 0) : 0;
	if (n != (ssize_t)*len) {
		*len = 0;
		return 0;
	}
	uint64_t h = 14695981039346656037u;
	for (ssize_t i = 0; i < n; i++)
		h = (h ^ buf[i]) * 1099511628211u;
	return h;
}

/* Was the file rewritten in place since pos was taken? Its size may have
 * grown past the offset again (copytruncate, then writes before the next
 * tick; a trainer reopening it with "w"), so the signs are its first bytes
 * hashing otherwise, or, for lines, the byte before the offset ending no
 * line. */
static int rewritten(int fd, const struct rm_tail_pos *pos, int lines)
{
	uint32_t len = pos->head_len;
	if (len && (head_hash(fd, &len) != pos->head_hash || len != pos->head_len))
		return 1;
	char c;
	return lines && pos->offset > 0 && pread(fd, &c, 1, (off_t)pos->offset - 1) == 1 && c != '\n';
}

/* Notes the file's first bytes (up to RM_TAIL_HEAD, within what was read). */
static void take_head(const char *path, struct rm_tail_pos *pos)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	pos->head_len = (uint32_t)(pos->offset < RM_TAIL_HEAD ? pos->offset : RM_TAIL_HEAD);
	pos->head_hash = fd >= 0 ? head_hash(fd, &pos->head_len) : 0;
	if (fd < 0)
		pos->head_len = 0;
	else
		close(fd);
}

int rm_import_tail(struct rm_store *st, const struct rm_import_opts *opts, const char *path,
                   struct rm_import_report *rep, struct rm_tail_pos *pos, struct rm_err *err)
{
	struct stat sb;
	int found, rc;
	const struct import_format *f = format_of(opts->format == RM_FMT_AUTO ? tail_format(path) : opts->format);
	memset(rep, 0, sizeof(*rep));
	if (!f || !f->tail)
		return rm_err_set(err, RM_E_USAGE, "%s: a %s file cannot be followed as it grows", path,
		                  f ? f->name : "format-less");
	if ((rc = rm_store_begin(st, err)))
		return rc;
	if ((rc = rm_store_tail_get(st, path, pos, &found, err)))
		goto fail;
	if (stat(path, &sb)) {
		if (errno != ENOENT) {
			rc = rm_err_set(err, RM_E_IO, "cannot stat '%s': %s", path, strerror(errno));
			goto fail;
		}
		return log_and_commit(st, rep, 1, err); /* not written yet */
	}
	if (!S_ISREG(sb.st_mode)) { /* a FIFO would block the tick, and open again after a signal */
		rc = rm_err_set(err, RM_E_INPUT, "%s: not a regular file: watch follows files as they grow", path);
		goto fail;
	}
	if (found && ((uint64_t)sb.st_dev != pos->dev || (uint64_t)sb.st_ino != pos->ino)) {
		/* Rotated: logrotate renames the old file to PATH.1. */
		char *old = rm_xasprintf("%s.1", path);
		struct stat ob;
		if (!stat(old, &ob) && (uint64_t)ob.st_dev == pos->dev && (uint64_t)ob.st_ino == pos->ino &&
		    (uint64_t)ob.st_size >= pos->offset)
			rc = f->tail(st, opts, old, f->fmt, pos, rep, err);
		free(old);
		if (rc)
			goto fail;
		pos->offset = pos->lineno = 0;
	} else if (found && (uint64_t)sb.st_size < pos->offset) {
		pos->offset = pos->lineno = 0; /* truncated in place (copytruncate) */
	} else if (found && S_ISREG(sb.st_mode)) {
		int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && rewritten(fd, pos, f->fmt != RM_FMT_WANDB_LOG && f->fmt != RM_FMT_TFEVENTS))
			pos->offset = pos->lineno = 0; /* rewritten in place: read again from the start */
		if (fd >= 0)
			close(fd);
	}
	if ((rc = f->tail(st, opts, path, f->fmt, pos, rep, err)))
		goto bad;
	take_head(path, pos);
	pos->run_id = rep->n ? rep->r[rep->n - 1].run_id : 0;
	if (pos->run_id && (rc = rm_store_tail_put(st, path, pos->run_id, pos, err)))
		goto fail;
	return log_and_commit(st, rep, 1, err);
bad:
	/* A bad line (a .wandb file's bad record) of a followed file: the lines
	 * before it are kept and the position stays before it
	 * (docs/watching.md), read again once more up to it; the error still
	 * says which line. */
	if (rc == RM_E_INPUT && err->bad_line > 1 && !opts->tail_stop) {
		struct rm_import_opts upto = *opts;
		struct rm_err why = *err, e2;
		upto.tail_stop = err->bad_line;
		rm_store_rollback(st);
		rm_import_report_release(rep);
		if (!rm_import_tail(st, &upto, path, rep, pos, &e2))
			rm_import_report_release(rep);
		*err = why;
		return rc;
	}
fail:
	rm_store_rollback(st);
	rm_import_report_release(rep);
	return rc;
}
