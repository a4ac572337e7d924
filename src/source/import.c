/*
 * import.c - import driver: format names and detection, run naming, and
 * the sink that writes one run's records while noting restarts (the step
 * counter going backwards) and replacements (a step logged again).
 */
#define _GNU_SOURCE /* mkostemp */
#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import_internal.h"
#include "runmon/csv.h"
#include "runmon/lines.h"
#include "runmon/wandbfile.h"

static const char *const format_names[RM_FMT_COUNT] = {
    [RM_FMT_AUTO] = NULL,
    [RM_FMT_WANDB_HISTORY] = "wandb-history",
    [RM_FMT_JSONL] = "jsonl",
    [RM_FMT_SIDECAR_JSONL] = "sidecar-jsonl",
    [RM_FMT_HF_STATE] = "hf-trainer-state",
    [RM_FMT_WANDB_CSV] = "wandb-csv",
    [RM_FMT_TB_CSV] = "tensorboard-csv",
    [RM_FMT_SIDECAR_CSV] = "sidecar-csv",
    [RM_FMT_CSV] = "csv",
    [RM_FMT_WANDB_LOG] = "wandb-log",
};

const char *rm_format_name(enum rm_format f)
{
	return f > RM_FMT_AUTO && f < RM_FMT_COUNT ? format_names[f] : NULL;
}

int rm_format_parse(const char *name, enum rm_format *out)
{
	if (!strcmp(name, "auto")) {
		*out = RM_FMT_AUTO;
		return 0;
	}
	for (int f = 1; f < RM_FMT_COUNT; f++)
		if (!strcmp(name, format_names[f])) {
			*out = (enum rm_format)f;
			return 0;
		}
	return -1;
}

int rm_bucket_of(const int64_t *bounds, int nbounds, double max_len, int *over)
{
	*over = 0;
	for (int i = 0; i + 1 < nbounds; i++)
		if (max_len <= (double)bounds[i + 1])
			return i;
	*over = 1;
	return nbounds - 2;
}

/* ---- report ------------------------------------------------------------ */

struct rm_import_result *report_add(struct rm_import_report *rep, const char *path, const char *run_name,
                                    enum rm_format fmt)
{
	if (rep->n == rep->cap) /* doubling: an export adds one result per run */
		rep->r = rm_xrealloc(rep->r, (rep->cap = rep->cap ? rep->cap * 2 : 4) * sizeof(*rep->r));
	struct rm_import_result *res = &rep->r[rep->n++];
	memset(res, 0, sizeof(*res));
	res->path = rm_xstrdup(path);
	res->run_name = rm_xstrdup(run_name);
	res->format = fmt;
	res->first_step = -1;
	res->last_step = -1;
	return res;
}

static void result_release(struct rm_import_result *r)
{
	free(r->path);
	free(r->run_name);
	free(r->loss_key);
	free(r->composition);
}

void rm_import_report_release(struct rm_import_report *rep)
{
	for (size_t i = 0; i < rep->n; i++)
		result_release(&rep->r[i]);
	free(rep->r);
	rep->r = NULL;
	rep->n = rep->cap = 0;
}

int bad_line(struct rm_import_result *res, const struct rm_import_opts *opts, uint64_t line, const char *why,
             struct rm_err *err)
{
	if (!opts->skip_bad) {
		rm_err_set(err, RM_E_INPUT, res->format == RM_FMT_WANDB_LOG ? "%s: record %llu: %s" : "%s:%llu: %s",
		           res->path, (unsigned long long)line, why);
		err->bad_line = 1;
		return RM_E_INPUT;
	}
	if (res->skipped < RM_IMPORT_NOTED)
		res->bad_line[res->skipped] = line;
	if (res->skipped == 0)
		snprintf(res->bad_msg, sizeof(res->bad_msg), "%s", why);
	res->skipped++;
	return RM_OK;
}

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

char *run_name_for(const struct rm_import_opts *opts, const char *path)
{
	if (opts->run_name)
		return rm_xstrdup(opts->run_name);
	path = shown_path(opts, path);
	if (!strcmp(path, "-"))
		return rm_xstrdup("stdin");
	/* Split into components, newest last. */
	char *copy = rm_xstrdup(path), *parts[64];
	int n = 0;
	for (char *tok = strtok(copy, "/"); tok && n < 64; tok = strtok(NULL, "/"))
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

/* ---- sink ------------------------------------------------------------ */

#define SEEN_MAX_STEP (1ll << 27) /* steps tracked exactly (16 MiB of bits) */

int sink_open_key(struct sink *k, struct rm_store *st, const struct rm_import_opts *opts, struct rm_import_result *res,
                  const struct rm_run_key *key, struct rm_err *err)
{
	memset(k, 0, sizeof(*k));
	k->res = res;
	k->st = st;
	k->opts = opts;
	mapper_init(&k->map, res->format, opts);
	int rc = rm_store_run_ensure(st, key, &k->run_id, err);
	if (!rc && opts->nbounds >= 2)
		rc = rm_store_put_buckets(st, k->run_id, opts->bounds, opts->nbounds, err);
	res->run_id = k->run_id;
	return rc;
}

int sink_open(struct sink *k, struct rm_store *st, const struct rm_import_opts *opts, struct rm_import_result *res,
              struct rm_err *err)
{
	/* "entity/project/id" attaches the file to that W&B run's record. */
	char *name = rm_xstrdup(res->run_name), *s1 = strchr(name, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	struct rm_run_key key = {.source = "file", .entity = "", .project = "", .name = name};
	if (s1 && s2 && !strchr(s2 + 1, '/')) {
		*s1 = *s2 = '\0';
		key.entity = name;
		key.project = s1 + 1;
		key.name = s2 + 1;
	}
	int rc = sink_open_key(k, st, opts, res, &key, err);
	free(name);
	return rc;
}

static struct track *track_for(struct sink *k, int64_t rank)
{
	for (size_t i = 0; i < k->ntracks; i++)
		if (k->tracks[i].rank == rank)
			return &k->tracks[i];
	k->tracks = rm_xrealloc(k->tracks, (k->ntracks + 1) * sizeof(*k->tracks));
	struct track *t = &k->tracks[k->ntracks++];
	memset(t, 0, sizeof(*t));
	t->rank = rank;
	t->max_step = -1;
	return t;
}

/* Marks step seen; returns 1 if it was seen before in this file. */
static int track_seen(struct track *t, int64_t step)
{
	if (step >= SEEN_MAX_STEP)
		return step <= t->max_step;
	size_t w = (size_t)(step >> 6);
	if (w >= t->words) {
		size_t nw = t->words ? t->words : 4; /* small: an export has a sink per run */
		while (nw <= w)
			nw *= 2;
		t->seen = rm_xrealloc(t->seen, nw * sizeof(uint64_t));
		memset(t->seen + t->words, 0, (nw - t->words) * sizeof(uint64_t));
		t->words = nw;
	}
	uint64_t bit = 1ull << (step & 63);
	int was = (t->seen[w] & bit) != 0;
	t->seen[w] |= bit;
	return was;
}

static void note_step(struct sink *k, int64_t rank, int64_t step, uint64_t line)
{
	struct rm_import_result *res = k->res;
	struct track *t = track_for(k, rank);
	res->step_rows++;
	if (t->has_prev && step < t->prev) {
		if (res->restarts < RM_IMPORT_NOTED)
			res->restart[res->restarts] = (struct rm_restart){line, step, t->prev};
		res->restarts++;
		res->back_steps += (uint64_t)(t->prev - step);
	}
	if (track_seen(t, step))
		res->replaced++;
	t->prev = step;
	t->has_prev = 1;
	if (step > t->max_step)
		t->max_step = step;
	if (res->first_step < 0 || step < res->first_step)
		res->first_step = step;
	if (step > res->last_step)
		res->last_step = step;
}

static int resolve_text_label(struct sink *k, uint32_t i, struct rm_batch *b, struct rm_err *err)
{
	if (!k->text_id)
		k->text_id = rm_xcalloc(MAX_TEXT_LABELS, sizeof(int64_t));
	int rc;
	if (!k->text_id[i] && (rc = rm_store_bucket_text_id(k->st, k->run_id, k->map.texts[i], &k->text_id[i], err)))
		return rc;
	b->v[RM_B_BUCKET] = (double)k->text_id[i];
	b->have |= 1u << RM_B_BUCKET;
	return RM_OK;
}

int sink_put(struct sink *k, struct record *rec, const struct eval_kv *ev, size_t nev, uint64_t line,
             struct rm_err *err)
{
	struct rm_import_result *res = k->res;
	int rc;
	if (rec->is_summary || (!rec->has_step_row && !rec->has_batch && !rec->is_eval)) {
		res->ignored++;
		return RM_OK;
	}
	if (rec->has_step_row) {
		if (!k->has_low || rec->step < k->low) { /* once, and again after a restart below it */
			int64_t n;
			if ((rc = rm_store_count_steps(k->st, k->run_id, rec->step, k->has_low ? k->low : INT64_MAX, &n,
			                               err)))
				return rc;
			k->steps_before += n;
			k->low = rec->step;
			k->has_low = 1;
		}
		note_step(k, -1, rec->step, line);
		if ((rc = rm_store_put_step(k->st, k->run_id, &rec->s, err)))
			return rc;
		res->steps++;
	}
	if (rec->has_batch) {
		struct rm_batch *b = &rec->b;
		if (rec->bucket_text && (rc = resolve_text_label(k, rec->bucket_text - 1, b, err)))
			return rc;
		if (!((b->have >> RM_B_BUCKET) & 1) && ((b->have >> RM_B_MAX_LEN) & 1) && k->opts->nbounds >= 2) {
			int over;
			b->v[RM_B_BUCKET] = rm_bucket_of(k->opts->bounds, k->opts->nbounds, b->v[RM_B_MAX_LEN], &over);
			b->have |= 1u << RM_B_BUCKET;
			res->over_bounds += (uint64_t)over;
		}
		if (!rec->has_step_row)
			note_step(k, b->rank, rec->step, line);
		if ((rc = rm_store_put_batch(k->st, k->run_id, b, err)))
			return rc;
		res->batches++;
	}
	if (rec->is_eval && nev) {
		for (size_t i = 0; i < nev; i++)
			if ((rc = rm_store_put_eval(k->st, k->run_id, rec->step, ev[i].key, ev[i].value, err)))
				return rc;
		res->evals++;
	}
	return RM_OK;
}

/* Two processes appending to one log write every step twice, a little
 * apart: the counter then "restarts" on most lines, by a few steps each
 * time. A real restart (a resume from a checkpoint) is rare and goes back
 * far. Returns the number of writers when the file looks like that, else 0. */
static int interleaved_writers(const struct rm_import_result *r)
{
	uint64_t distinct = r->step_rows - r->replaced;
	if (r->restarts < 10 || distinct == 0 || r->replaced < distinct * 3 / 4 || r->restarts < distinct / 4)
		return 0;
	double span = (double)(r->last_step - r->first_step) + 1;
	if ((double)r->back_steps / (double)r->restarts > fmax(50, span / 100))
		return 0;
	return (int)lround((double)r->step_rows / (double)distinct);
}

int sink_finish(struct sink *k, struct rm_err *err)
{
	int64_t after = 0;
	const char *loss_key = k->map.locked[T_LOSS];
	int rc = k->has_low ? rm_store_count_steps(k->st, k->run_id, k->low, INT64_MAX, &after, err) : RM_OK;
	if (rc)
		return rc;
	k->res->new_steps = after - k->steps_before;
	k->res->writers = interleaved_writers(k->res);
	if (loss_key && !k->res->loss_key)
		k->res->loss_key = rm_xstrdup(loss_key);
	if (!k->res->composition)
		k->res->composition = mapper_composition(&k->map);
	return rm_store_run_touch(k->st, k->run_id, loss_key, err);
}

void sink_release(struct sink *k)
{
	for (size_t i = 0; i < k->ntracks; i++)
		free(k->tracks[i].seen);
	free(k->tracks);
	free(k->text_id);
	mapper_release(&k->map);
	memset(k, 0, sizeof(*k));
}

/* ---- detection ------------------------------------------------------------ */

static int row_has_any(struct mapper *m, const struct rm_row *row, enum target lo, enum target hi)
{
	for (size_t i = 0; i < row->n; i++) {
		int prio;
		enum target t = mapper_target(m, row->f[i].key, row->f[i].klen, &prio);
		if (t >= lo && t <= hi)
			return 1;
	}
	return 0;
}

/* A row is a sidecar row when it has batch statistics under their bare
 * names and no loss. */
static int looks_like_sidecar(const struct rm_import_opts *opts, const struct rm_row *row)
{
	struct mapper plain, side;
	mapper_init(&plain, RM_FMT_JSONL, opts);
	mapper_init(&side, RM_FMT_SIDECAR_JSONL, opts);
	int yes = row_has_any(&side, row, T_BUCKET, T_LENS) && !row_has_any(&plain, row, T_LOSS, T_LOSS) &&
	          !row_has_any(&plain, row, T_BUCKET, T_LENS);
	mapper_release(&plain);
	mapper_release(&side);
	return yes;
}

static enum rm_format detect(const struct rm_import_opts *opts, char *line, size_t len)
{
	struct rm_row row;
	struct rm_err err;
	enum rm_format f;
	while (len && isspace((unsigned char)*line))
		line++, len--;
	rm_row_init(&row);
	if (len && *line == '{') {
		if (rm_jsonrow_parse(&row, line, len, &err))
			f = RM_FMT_HF_STATE; /* a multi-line document */
		else if (rm_row_get(&row, "log_history"))
			f = RM_FMT_HF_STATE;
		else if (rm_row_get(&row, "_step"))
			f = RM_FMT_WANDB_HISTORY;
		else
			f = looks_like_sidecar(opts, &row) ? RM_FMT_SIDECAR_JSONL : RM_FMT_JSONL;
		rm_row_release(&row);
		return f;
	}
	struct rm_csv csv;
	rm_csv_init(&csv, rm_csv_guess_sep(line));
	char *copy = rm_xstrndup(line, len);
	f = RM_FMT_CSV;
	if (!rm_csv_split(&csv, copy, len, &err)) {
		int dash = 0;
		for (size_t i = 0; i < csv.n; i++) {
			rm_row_add(&row, csv.cell[i], csv.len[i], 0)->type = RM_F_CELL;
			dash |= strstr(csv.cell[i], " - ") != NULL;
		}
		if (csv.n == 3 && !strcmp(csv.cell[0], "Wall time") && !strcmp(csv.cell[1], "Step") &&
		    !strcmp(csv.cell[2], "Value"))
			f = RM_FMT_TB_CSV;
		else if (csv.n >= 2 && !strcmp(csv.cell[0], "Step") && dash)
			f = RM_FMT_WANDB_CSV;
		else if (looks_like_sidecar(opts, &row))
			f = RM_FMT_SIDECAR_CSV;
	}
	free(copy);
	rm_csv_release(&csv);
	rm_row_release(&row);
	return f;
}

/* Does path start with the .wandb file header? */
static int is_wandb_log(const char *path)
{
	uint8_t head[RM_WLOG_HEADER];
	FILE *fp = fopen(path, "rb");
	int yes = fp && fread(head, 1, sizeof(head), fp) == sizeof(head) && !memcmp(head, rm_wlog_magic, 6);
	if (fp)
		fclose(fp);
	return yes;
}

/* Reads the first non-blank line of path to pick its format. */
static int detect_file(const struct rm_import_opts *opts, const char *path, enum rm_format *out, struct rm_err *err)
{
	struct rm_lines lr;
	char *line;
	size_t len;
	if (is_wandb_log(path)) {
		*out = RM_FMT_WANDB_LOG;
		return RM_OK;
	}
	int rc = rm_lines_open(&lr, path, err);
	if (rc)
		return rc;
	do {
		if ((rc = rm_lines_next(&lr, &line, &len, err)))
			goto out;
	} while (line && strspn(line, " \t") == len);
	if (!line) {
		rc = rm_err_set(err, RM_E_INPUT, "%s: file is empty", shown_path(opts, path));
		goto out;
	}
	*out = detect(opts, line, len);
out:
	rm_lines_close(&lr);
	return rc;
}

char *rm_wandb_dir_log(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *found = NULL;
	while (d && !found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 10 && !strncmp(e->d_name, "run-", 4) && !strcmp(e->d_name + n - 6, ".wandb")) {
			found = rm_xmalloc(strlen(dir) + n + 2);
			sprintf(found, "%s/%s", dir, e->d_name);
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
		int rc = import_wandb_log(st, opts, log, rep, err);
		free(log);
		return rc;
	}
	char *old = rm_xmalloc(strlen(dir) + 32);
	sprintf(old, "%s/wandb-history.jsonl", dir);
	int rc = access(old, R_OK) ? rm_err_set(err, RM_E_INPUT,
	                                        "%s: a directory without run-*.wandb or wandb-history.jsonl;"
	                                        " give a file, or a W&B run directory",
	                                        dir)
	                           : import_jsonl(st, opts, old, RM_FMT_WANDB_HISTORY, rep, err);
	free(old);
	return rc;
}

/* Copies a stream that can be read only once (stdin, a pipe, a FIFO) to
 * an unlinked temporary file, so that detection and the importer read the
 * same bytes like any file's; returns its descriptor, or -1 with err set. */
static int spool(const char *path, struct rm_err *err)
{
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
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		for (ssize_t off = 0; n > 0 && off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0) {
				rm_err_set(err, RM_E_IO, "cannot spool '%s' to %s: %s", path,
				           dir && *dir ? dir : "/tmp", strerror(errno));
				close(fd);
				fd = -1;
				goto out;
			}
			off += w;
		}
	if (n < 0) {
		rm_err_set(err, RM_E_IO, "cannot read '%s': %s", path, strerror(errno));
		close(fd);
		fd = -1;
	}
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
	int fd = spool(path, err);
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

static int import_path(struct rm_store *st, const struct rm_import_opts *opts, const char *path,
                       struct rm_import_report *rep, struct rm_err *err)
{
	enum rm_format fmt = opts->format;
	int rc;
	if (fmt == RM_FMT_AUTO && (rc = detect_file(opts, path, &fmt, err)))
		return rc;
	switch (fmt) {
	case RM_FMT_HF_STATE: return import_hf_state(st, opts, path, rep, err);
	case RM_FMT_WANDB_HISTORY:
	case RM_FMT_JSONL:
	case RM_FMT_SIDECAR_JSONL: return import_jsonl(st, opts, path, fmt, rep, err);
	case RM_FMT_WANDB_LOG: return import_wandb_log(st, opts, path, rep, err);
	default: return import_csv(st, opts, path, fmt, rep, err);
	}
}

/* A file that gave nothing is an error, not an exit 0 a cron job would
 * take for success: a mistyped --loss-key, or --skip-bad with no good line. */
static int check_contributed(const struct rm_import_result *r, const struct rm_import_opts *opts, struct rm_err *err)
{
	int sidecar = r->format == RM_FMT_SIDECAR_JSONL || r->format == RM_FMT_SIDECAR_CSV;
	if (opts->loss_key && !sidecar && !r->loss_key)
		return rm_err_set(err, RM_E_INPUT, "%s: no loss key '%s' (given with --loss-key) in any row", r->path,
		                  opts->loss_key);
	if (r->steps || r->batches || r->evals)
		return RM_OK;
	if (r->skipped)
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: no good line: %llu bad line%s skipped, the first (line %llu): %s", r->path,
		                  (unsigned long long)r->skipped, r->skipped > 1 ? "s" : "",
		                  (unsigned long long)r->bad_line[0], r->bad_msg);
	return rm_err_set(err, RM_E_INPUT, "%s: nothing to import: no row has a loss, eval or batch value%s", r->path,
	                  sidecar || opts->loss_key ? "" : " (name the loss with --loss-key)");
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
		                            r->composition};
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
			result_release(r);
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
		rc = import_file(st, opts, files[i], rep, err);
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
	return log_and_commit(st, rep, 0, err);
}

int rm_import_tail(struct rm_store *st, const struct rm_import_opts *opts, const char *path,
                   struct rm_import_report *rep, struct rm_tail_pos *pos, struct rm_err *err)
{
	struct stat sb;
	int found, rc;
	int (*tail)(struct rm_store *, const struct rm_import_opts *, const char *, struct rm_tail_pos *,
	            struct rm_import_report *, struct rm_err *) = opts->format == RM_FMT_WANDB_LOG ? import_wandb_tail
	                                                          : opts->format == RM_FMT_SIDECAR_CSV
	                                                              ? import_csv_tail
	                                                              : import_jsonl_tail;
	memset(rep, 0, sizeof(*rep));
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
	if (found && ((uint64_t)sb.st_dev != pos->dev || (uint64_t)sb.st_ino != pos->ino)) {
		/* Rotated: logrotate renames the old file to PATH.1. */
		char *old = rm_xmalloc(strlen(path) + 3);
		struct stat ob;
		sprintf(old, "%s.1", path);
		if (!stat(old, &ob) && (uint64_t)ob.st_dev == pos->dev && (uint64_t)ob.st_ino == pos->ino &&
		    (uint64_t)ob.st_size >= pos->offset)
			rc = tail(st, opts, old, pos, rep, err);
		free(old);
		if (rc)
			goto fail;
		pos->offset = pos->lineno = 0;
	} else if (found && (uint64_t)sb.st_size < pos->offset) {
		pos->offset = pos->lineno = 0; /* truncated in place (copytruncate) */
	}
	if ((rc = tail(st, opts, path, pos, rep, err)))
		goto fail;
	pos->run_id = rep->n ? rep->r[rep->n - 1].run_id : 0;
	if (pos->run_id && (rc = rm_store_tail_put(st, path, pos->run_id, pos, err)))
		goto fail;
	return log_and_commit(st, rep, 1, err);
fail:
	rm_store_rollback(st);
	rm_import_report_release(rep);
	return rc;
}
