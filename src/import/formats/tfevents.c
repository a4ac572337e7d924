/*
 * tfevents.c - TensorBoard event files (events.out.tfevents.*), as the
 * Hugging Face Trainer, Lightning's TensorBoardLogger and a plain
 * SummaryWriter leave them, and directories of them.
 *
 * A file is TFRecord-framed (parse/tfrecord.c); each record is a
 * tensorflow.Event (tensorflow/core/util/event.proto): wall_time 1
 * (double), step 2 (int64), file_version 3, summary 5, session_log 7. A
 * Summary holds repeated Value 1: tag 1, simple_value 2 (float), tensor 8
 * (a TensorProto, the form tf.summary and newer writers use), metadata 9;
 * images, histograms and text are not scalars and are passed over. Writers
 * log one tag per event, so the consecutive events of one step make one
 * row ({"_step", "_timestamp", tag: value, ...}) for the mapper.
 *
 * A directory is one run: its event files are read in name order (a
 * restarted writer starts a new file there). A tree of them (runs/,
 * lightning_logs/) is one run per directory that holds event files.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "import/import_internal.h"
#include "runmon/parse.h"

/* A live file's last step is held back while its newest event is this
 * recent: the writer may still be adding that step's other tags. */
#define SETTLE_SECONDS 5.0
/* Groups read from the head to infer the keys (as for line formats). */
#define INFER_GROUPS 4000
/* How deep a tree is searched for event files, and how many directories. */
#define TREE_DEPTH 8
#define TREE_DIRS  10000

enum { DT_FLOAT = 1, DT_DOUBLE = 2 }; /* tensorflow/core/framework/types.proto */

struct tb_val {
	size_t koff, klen; /* the tag in keys */
	double v;
};

/* The step being gathered, and where its first event began. */
struct tb_group {
	int active;
	int64_t step;
	double wall;
	struct tb_val *vals;
	size_t nvals, cvals;
	char *keys;
	size_t nkeys, ckeys;
	uint64_t start, start_recno;
	/* The tags' index into vals (1 + i, 0 empty), open addressing at most
	 * half full: a step of 160,000 tags was quadratic (53 s). */
	uint32_t *slot;
	size_t nslots;
};

struct tb_read {
	struct rm_store *st;
	const struct rm_import_opts *opts;
	struct rm_import_result *res; /* NULL: inferring */
	struct rm_infer *infer;
	uint64_t inferred;
	int64_t known_run; /* a followed file's run */
	struct rm_sink k;
	int sink_ready;
	struct rm_pipeline *p;
	struct rm_row row;
	struct tb_group g;
	uint64_t recno; /* records of this run read, across its files */
};

/* ---- decoding ------------------------------------------------------------- */

/* A float32 as the shortest decimal that reads back as it (0.7035, not
 * 0.703499972820282): what the writer was given, as TensorBoard shows it. */
static double f32_of(uint32_t bits)
{
	float f;
	char buf[32];
	memcpy(&f, &bits, sizeof(f));
	if (!isfinite(f))
		return f;
	for (int digits = 6; digits <= 9; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, (double)f);
		if (strtof(buf, NULL) == f)
			return strtod(buf, NULL);
	}
	return f;
}

static double f64_of(uint64_t bits)
{
	double d;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* Counts the values of a repeated fixed-width field, packed or not, and
 * keeps the first. */
static void fixed_values(const struct rm_pb_field *f, int width, uint64_t *first, size_t *count)
{
	if (f->wire == (width == 4 ? RM_PB_I32 : RM_PB_I64)) {
		if (!(*count)++)
			*first = f->varint;
		return;
	}
	if (f->wire != RM_PB_LEN || f->len % (size_t)width)
		return;
	for (size_t i = 0; i < f->len; i += (size_t)width) {
		if (!(*count)++)
			for (int b = 0; b < width; b++)
				*first |= (uint64_t)f->data[i + (size_t)b] << (8 * b);
	}
}

/* A TensorProto holding one float or double (a scalar, or shape [1]):
 * dtype 1, tensor_content 4, float_val 5, double_val 6. */
static int tensor_scalar(const uint8_t *p, size_t n, double *out)
{
	struct rm_pb pb = {p, p + n};
	struct rm_pb_field f;
	uint64_t dtype = 0, first = 0;
	const uint8_t *content = NULL;
	size_t content_len = 0, count = 0;
	int rc;
	while ((rc = rm_pb_next(&pb, &f)) == 1) {
		if (f.num == 1 && f.wire == RM_PB_VARINT)
			dtype = f.varint;
		else if (f.num == 4 && f.wire == RM_PB_LEN)
			content = f.data, content_len = f.len;
		else if (f.num == 5 || f.num == 6)
			fixed_values(&f, f.num == 5 ? 4 : 8, &first, &count);
	}
	if (rc < 0 || (dtype != DT_FLOAT && dtype != DT_DOUBLE))
		return rc < 0 ? -1 : 0;
	size_t width = dtype == DT_FLOAT ? 4 : 8;
	if (content) {
		if (content_len != width)
			return 0;
		first = 0;
		for (size_t b = 0; b < width; b++)
			first |= (uint64_t)content[b] << (8 * b);
		count = 1;
	}
	if (count != 1)
		return 0;
	*out = width == 4 ? f32_of((uint32_t)first) : f64_of(first);
	return 1;
}

static uint64_t tag_hash(const uint8_t *tag, size_t n)
{
	uint64_t h = 14695981039346656037u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ tag[i]) * 1099511628211u;
	return h;
}

/* Puts vals[i] in the index (its size a power of two). */
static void slot_put(struct tb_group *g, size_t i)
{
	size_t mask = g->nslots - 1, at = (size_t)tag_hash((const uint8_t *)g->keys + g->vals[i].koff, g->vals[i].klen);
	while (g->slot[at & mask])
		at++;
	g->slot[at & mask] = (uint32_t)(i + 1);
}

/* Empties the step's values and their index. */
static void group_reset(struct tb_group *g)
{
	g->nvals = g->nkeys = 0;
	if (g->slot)
		memset(g->slot, 0, g->nslots * sizeof(*g->slot));
}

static void group_add(struct tb_group *g, const uint8_t *tag, size_t n, double v)
{
	if (g->nslots) {
		size_t mask = g->nslots - 1;
		for (size_t at = (size_t)tag_hash(tag, n);; at++) {
			uint32_t s = g->slot[at & mask];
			if (!s)
				break;
			struct tb_val *x = &g->vals[s - 1];
			if (x->klen == n && !memcmp(g->keys + x->koff, tag, n)) {
				x->v = v; /* written twice at one step (Lightning's epoch): the last */
				return;
			}
		}
	}
	if (g->nvals > UINT32_MAX - 2)
		return; /* more tags at one step than the index counts: the rest are left out */
	if (g->nkeys + n + 1 > g->ckeys) {
		g->ckeys = (g->nkeys + n + 1) * 2;
		g->keys = rm_xrealloc(g->keys, g->ckeys);
	}
	if (g->nvals == g->cvals) {
		g->cvals = g->cvals ? g->cvals * 2 : 16;
		g->vals = rm_xrealloc(g->vals, g->cvals * sizeof(*g->vals));
	}
	g->vals[g->nvals++] = (struct tb_val){g->nkeys, n, v};
	memcpy(g->keys + g->nkeys, tag, n);
	g->nkeys += n;
	g->keys[g->nkeys++] = '\0';
	if (g->nvals * 2 > g->nslots) { /* grow and index them all again */
		g->nslots = g->nslots ? g->nslots * 2 : 64;
		g->slot = rm_xrealloc(g->slot, g->nslots * sizeof(*g->slot));
		memset(g->slot, 0, g->nslots * sizeof(*g->slot));
		for (size_t i = 0; i < g->nvals; i++)
			slot_put(g, i);
	} else {
		slot_put(g, g->nvals - 1);
	}
}

/* Summary.Value: tag 1, simple_value 2, tensor 8. Returns 1 and the
 * scalar, 0 for a value that is none (an image, text, a histogram). */
static int summary_value(const uint8_t *p, size_t n, const uint8_t **tag, size_t *tlen, double *v)
{
	struct rm_pb pb = {p, p + n};
	struct rm_pb_field f;
	int rc, have = 0;
	*tag = NULL;
	while ((rc = rm_pb_next(&pb, &f)) == 1) {
		if (f.num == 1 && f.wire == RM_PB_LEN) {
			*tag = f.data;
			*tlen = f.len;
		} else if (f.num == 2 && f.wire == RM_PB_I32) {
			*v = f32_of((uint32_t)f.varint);
			have = 1;
		} else if (f.num == 8 && f.wire == RM_PB_LEN && !have) {
			int t = tensor_scalar(f.data, f.len, v);
			if (t < 0)
				return -1;
			have = t;
		}
	}
	return rc < 0 ? -1 : have && *tag && *tlen;
}

struct tb_event {
	double wall;
	int64_t step;
	const uint8_t *summary;
	size_t slen;
};

static int decode_event(const uint8_t *p, size_t n, struct tb_event *e)
{
	struct rm_pb pb = {p, p + n};
	struct rm_pb_field f;
	int rc;
	memset(e, 0, sizeof(*e));
	while ((rc = rm_pb_next(&pb, &f)) == 1) {
		if (f.num == 1 && f.wire == RM_PB_I64)
			e->wall = f64_of(f.varint);
		else if (f.num == 2 && f.wire == RM_PB_VARINT)
			e->step = (int64_t)f.varint;
		else if (f.num == 5 && f.wire == RM_PB_LEN)
			e->summary = f.data, e->slen = f.len;
	}
	return rc;
}

/* ---- rows ------------------------------------------------------------------ */

static int open_sink(struct tb_read *t, struct rm_err *err)
{
	int rc;
	t->sink_ready = 1;
	if (t->known_run && !t->opts->run_name) {
		struct rm_run_info info;
		if ((rc = rm_store_get_run(t->st, t->known_run, &info, err)))
			return rc;
		struct rm_run_key key = {info.source, info.entity, info.project, info.name};
		rc = rm_sink_open_key(&t->k, t->st, t->opts, t->res, &key, err);
		rm_run_info_release(&info);
	} else {
		rc = rm_sink_open(&t->k, t->st, t->opts, t->res, err);
	}
	if (!rc)
		t->p = rm_pipeline_start(NULL, NULL);
	return rc;
}

static int flush(struct tb_read *t, struct rm_err *err)
{
	struct tb_group *g = &t->g;
	int rc;
	if (!g->active)
		return RM_OK;
	g->active = 0;
	rm_row_clear(&t->row);
	struct rm_field *f = rm_row_add(&t->row, "_step", 5, 0);
	f->type = RM_F_NUM;
	f->have_num = 1;
	f->num = (double)g->step;
	f = rm_row_add(&t->row, "_timestamp", 10, 0);
	f->type = RM_F_NUM;
	f->have_num = 1;
	f->num = g->wall;
	for (size_t i = 0; i < g->nvals; i++) {
		f = rm_row_add(&t->row, g->keys + g->vals[i].koff, g->vals[i].klen, 0);
		f->type = RM_F_NUM;
		f->have_num = 1;
		f->num = g->vals[i].v;
	}
	if (t->infer) {
		rm_infer_row(t->infer, &t->row, 0);
		t->inferred++;
		return RM_OK;
	}
	if (!t->sink_ready && (rc = open_sink(t, err)))
		return rc;
	return rm_pipeline_feed(t->p, &t->k, &t->row, g->start_recno + 1, err);
}

/* Takes one record: its scalars join the step being gathered, or start
 * the next one. */
static int on_record(struct tb_read *t, const struct rm_tfrec *r, const uint8_t *p, size_t n, uint64_t start,
                     struct rm_err *err)
{
	struct tb_event e;
	struct rm_pb pb;
	struct rm_pb_field f;
	int rc;
	if (r->bad_crc)
		return t->res ? rm_bad_line(t->res, t->opts, t->recno, "the record's checksum does not match (damaged)",
		                            err)
		              : RM_OK;
	if (decode_event(p, n, &e) < 0)
		return t->res ? rm_bad_line(t->res, t->opts, t->recno, "not a readable Event record", err) : RM_OK;
	if (!e.summary)
		return RM_OK; /* file_version, a graph, a session log: no scalar */
	pb = (struct rm_pb){e.summary, e.summary + e.slen};
	while ((rc = rm_pb_next(&pb, &f)) == 1) {
		const uint8_t *tag;
		size_t tlen = 0;
		double v = 0;
		int s = f.num == 1 && f.wire == RM_PB_LEN ? summary_value(f.data, f.len, &tag, &tlen, &v) : 0;
		if (s < 0)
			break;
		if (!s)
			continue;
		if (t->g.active && t->g.step != e.step && (rc = flush(t, err)))
			return rc;
		if (!t->g.active) {
			t->g.active = 1;
			t->g.step = e.step;
			group_reset(&t->g);
			t->g.start = start;
			t->g.start_recno = t->recno - 1;
		}
		t->g.wall = e.wall;
		group_add(&t->g, tag, tlen, v);
	}
	if (rc < 0 && t->res)
		return rm_bad_line(t->res, t->opts, t->recno, "not a readable Summary in an Event record", err);
	return RM_OK;
}

/* Reads path from *offset; live: a cut-off record and a step written in
 * the last seconds are left for the next read, and *offset is where it
 * goes on. */
static int read_file(struct tb_read *t, const char *path, uint64_t *offset, int live, int *partial, struct rm_err *err)
{
	struct rm_tfrec r;
	const uint8_t *p;
	size_t n;
	int rc = rm_tfrec_open(&r, path, *offset, err);
	if (rc)
		return rc;
	for (;;) {
		uint64_t start = r.pos;
		if (t->infer && t->inferred >= INFER_GROUPS)
			break;
		if (t->opts->tail_stop && t->recno + 1 >= t->opts->tail_stop)
			break; /* a followed file's damaged record: the records before it are kept */
		if ((rc = rm_tfrec_next(&r, &p, &n, err)) != 1)
			break;
		t->recno++;
		if (t->res)
			t->res->lines++;
		if ((rc = on_record(t, &r, p, n, start, err)))
			break;
		if (!(t->recno & 1023))
			rm_progress_at((double)r.pos);
	}
	*partial = r.partial;
	*offset = r.pos;
	if (!rc && t->res && r.partial && !live)
		t->res->tail_bytes = r.size - r.pos; /* a writer killed mid-record */
	rm_tfrec_close(&r);
	if (rc)
		return rc;
	if (live && t->g.active && t->g.wall > (double)time(NULL) - SETTLE_SECONDS) {
		*offset = t->g.start; /* read this step again once it has settled */
		if (t->res)
			t->res->lines -= t->recno - t->g.start_recno;
		t->recno = t->g.start_recno;
		t->g.active = 0;
		*partial = 1;
		return RM_OK;
	}
	return flush(t, err);
}

static void tb_init(struct tb_read *t, struct rm_store *st, const struct rm_import_opts *opts)
{
	memset(t, 0, sizeof(*t));
	t->st = st;
	t->opts = opts;
	rm_row_init(&t->row);
}

static void tb_release(struct tb_read *t)
{
	if (t->p)
		rm_pipeline_finish(t->p, NULL);
	if (t->sink_ready)
		rm_sink_release(&t->k);
	rm_row_release(&t->row);
	free(t->g.vals);
	free(t->g.keys);
	free(t->g.slot);
}

/* What the first steps of the first file imply of keys no known name says. */
static void infer_keys(const struct rm_import_opts *opts, const char *path, struct rm_guess *g)
{
	struct tb_read t;
	struct rm_err ignored;
	uint64_t off = 0;
	int partial;
	tb_init(&t, NULL, opts);
	t.infer = rm_infer_new(RM_FMT_TFEVENTS, opts);
	read_file(&t, path, &off, 0, &partial, &ignored);
	rm_infer_decide(t.infer, g);
	rm_infer_free(t.infer);
	tb_release(&t);
}

static int finish(struct tb_read *t, int rc, struct rm_err *err)
{
	if (t->p) {
		int wrc = rm_pipeline_finish(t->p, rc ? NULL : err);
		t->p = NULL;
		if (!rc)
			rc = wrc;
	}
	if (!rc && t->sink_ready)
		rc = rm_sink_finish(&t->k, err);
	return rc;
}

/* ---- runs: a file, a directory of files, a tree ----------------------------- */

static int is_event_file(const char *name)
{
	return strstr(name, "tfevents") != NULL;
}

/* A run's name: --run, else the event file's directory ("version_0",
 * "May19_15-55-37_host"), or a renamed file's own name. */
/* A run directory's name from its resolved path: its own name, but a
 * Lightning "version_N" (which every experiment has) goes with its
 * experiment: exp1/lightning_logs/version_0 is exp1-version_0, so that two
 * experiments' version_0 stay two runs. NULL for the root. */
static char *dir_name(const char *real)
{
	const char *base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (!*base)
		return NULL;
	if (strncmp(base, "version_", 8) || !base[8] || strspn(base + 8, "0123456789") != strlen(base + 8) ||
	    base - real < 2)
		return rm_xstrdup(base);
	const char *up = base - 1, *p = up; /* the parent's name ends at up */
	while (p > real && p[-1] != '/')
		p--;
	if ((size_t)(up - p) == 14 && !strncmp(p, "lightning_logs", 14) && p - real >= 2) {
		up = p - 1;
		for (p = up; p > real && p[-1] != '/';)
			p--;
	}
	return up > p ? rm_xasprintf("%.*s-%s", (int)(up - p), p, base) : rm_xstrdup(base);
}

static char *run_name(const struct rm_import_opts *opts, const char *path)
{
	if (opts->run_name)
		return rm_xstrdup(opts->run_name);
	path = rm_shown_path(opts, path);
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	if (strncmp(base, "events.out.tfevents", 19)) {
		char *name = rm_xstrdup(base), *ext = strstr(name, ".tfevents");
		if (ext && ext != name)
			*ext = '\0';
		return name;
	}
	/* the directory as it is (".", "..", a link say nothing of it) */
	char *where = slash ? rm_xstrndup(path, (size_t)(slash - path)) : rm_xstrdup("."),
	     *real = realpath(where, NULL);
	free(where);
	char *name = real ? dir_name(real) : NULL;
	free(real);
	return name ? name : rm_xstrdup("tensorboard");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The event files in dir, sorted; *n of them. */
static char **event_files(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **files = NULL;
	size_t cap = 0;
	*n = 0;
	while (d && (e = readdir(d))) {
		struct stat sb;
		char *path = rm_xasprintf("%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' && is_event_file(e->d_name) && !stat(path, &sb) && S_ISREG(sb.st_mode)) {
			if (*n == cap) {
				cap = cap ? cap * 2 : 4;
				files = rm_xrealloc(files, cap * sizeof(*files));
			}
			files[(*n)++] = path;
		} else {
			free(path);
		}
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(files, *n, sizeof(*files), by_name);
	return files;
}

static void free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Reads files (sorted) as one run named name, shown as path. */
static int read_run(struct rm_store *st, const struct rm_import_opts *opts, char **files, size_t n, const char *shown,
                    const char *name, struct rm_import_report *rep, struct rm_err *err)
{
	struct tb_read t;
	struct rm_guess guess = {0};
	struct rm_import_opts o = *opts;
	infer_keys(opts, files[0], &guess);
	o.guess = &guess;
	tb_init(&t, st, &o);
	t.res = rm_import_result_add(rep, shown, name, RM_FMT_TFEVENTS);
	int rc = RM_OK, partial;
	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t off = 0;
		rc = read_file(&t, files[i], &off, 0, &partial, err);
	}
	rc = finish(&t, rc, err);
	tb_release(&t);
	rm_guess_release(&guess);
	return rc;
}

int rm_sniff_tfevents(const struct sniff *s)
{
	return rm_tfrec_sniff(s->head, s->nhead);
}

int rm_read_tfevents(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                     struct rm_import_report *rep, struct rm_err *err)
{
	(void)fmt;
	char *name = run_name(opts, path), *files[1] = {(char *)path};
	int rc = read_run(st, opts, files, 1, rm_shown_path(opts, path), name, rep, err);
	free(name);
	return rc;
}

int rm_tail_tfevents(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                     struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	(void)fmt;
	struct tb_read t;
	struct rm_guess guess = {0};
	struct rm_import_opts o = *opts;
	struct stat sb;
	char *name = run_name(opts, path);
	infer_keys(opts, path, &guess);
	o.guess = &guess;
	tb_init(&t, st, &o);
	t.res = rm_import_result_add(rep, rm_shown_path(opts, path), name, RM_FMT_TFEVENTS);
	t.known_run = pos->run_id;
	t.recno = pos->lineno;
	free(name);
	uint64_t off = pos->offset;
	int partial = 0, rc = read_file(&t, path, &off, 1, &partial, err);
	rc = finish(&t, rc, err);
	if (!rc) {
		if (!t.res->run_id)
			t.res->run_id = t.known_run;
		if (!stat(path, &sb)) {
			pos->dev = (uint64_t)sb.st_dev;
			pos->ino = (uint64_t)sb.st_ino;
		}
		pos->offset = off;
		pos->lineno = t.recno;
		pos->partial = partial;
	}
	tb_release(&t);
	rm_guess_release(&guess);
	return rc;
}

/* ---- trees --------------------------------------------------------------- */

struct tree {
	char **dirs; /* directories holding event files, relative to the root ("" for it) */
	size_t n, cap, seen;
	int cut; /* directories past TREE_DIRS or below TREE_DEPTH were left unread */
};

/* Does dir hold a directory (one TREE_DEPTH leaves unread)? */
static int has_subdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		struct stat sb;
		char *path = rm_xasprintf("%s/%s", dir, e->d_name);
		found = e->d_name[0] != '.' && !lstat(path, &sb) && S_ISDIR(sb.st_mode);
		free(path);
	}
	if (d)
		closedir(d);
	return found;
}

static void walk(struct tree *tr, const char *root, const char *rel, int depth)
{
	char *dir = *rel ? rm_xasprintf("%s/%s", root, rel) : rm_xstrdup(root);
	size_t nfiles;
	char **files = event_files(dir, &nfiles);
	free_list(files, nfiles);
	if (nfiles) {
		if (tr->n == tr->cap) {
			tr->cap = tr->cap ? tr->cap * 2 : 8;
			tr->dirs = rm_xrealloc(tr->dirs, tr->cap * sizeof(*tr->dirs));
		}
		tr->dirs[tr->n++] = rm_xstrdup(rel);
	}
	DIR *d = depth < TREE_DEPTH ? opendir(dir) : NULL;
	if (depth >= TREE_DEPTH && !tr->cut)
		tr->cut = has_subdir(dir);
	struct dirent *e;
	char **subs = NULL;
	size_t nsubs = 0, cap = 0;
	while (d && (e = readdir(d))) {
		struct stat sb;
		char *path = rm_xasprintf("%s/%s", dir, e->d_name);
		/* lstat: a link to a directory above would loop */
		if (e->d_name[0] != '.' && !lstat(path, &sb) && S_ISDIR(sb.st_mode) && tr->seen >= TREE_DIRS) {
			tr->cut = 1;
			free(path);
			break;
		}
		if (e->d_name[0] != '.' && !lstat(path, &sb) && S_ISDIR(sb.st_mode)) {
			if (nsubs == cap) {
				cap = cap ? cap * 2 : 8;
				subs = rm_xrealloc(subs, cap * sizeof(*subs));
			}
			subs[nsubs++] = *rel ? rm_xasprintf("%s/%s", rel, e->d_name) : rm_xstrdup(e->d_name);
			tr->seen++;
		}
		free(path);
	}
	if (d)
		closedir(d);
	if (nsubs)
		qsort(subs, nsubs, sizeof(*subs), by_name);
	for (size_t i = 0; i < nsubs; i++)
		walk(tr, root, subs[i], depth + 1);
	free_list(subs, nsubs);
	free(dir);
}

/* A run of a tree: --run, else its directory's name; in a tree of several
 * runs, the path below the root with "-" for "/" (and --run before it),
 * so that two version_0 of two experiments stay apart. */
static char *tree_run_name(const struct rm_import_opts *opts, const char *root, const char *rel, size_t nruns)
{
	if (!*rel) {
		char *files[] = {rm_xasprintf("%s/events.out.tfevents", root)};
		char *name = run_name(opts, files[0]);
		free(files[0]);
		return name;
	}
	char *flat = rm_xstrdup(rel);
	for (char *c = flat; *c; c++)
		if (*c == '/')
			*c = '-';
	char *name = nruns == 1 && opts->run_name ? rm_xstrdup(opts->run_name)
	             : opts->run_name             ? rm_xasprintf("%s-%s", opts->run_name, flat)
	                                          : rm_xstrdup(flat);
	free(flat);
	return name;
}

int rm_tfevents_tree(const char *dir)
{
	struct tree tr = {0};
	walk(&tr, dir, "", 0);
	free_list(tr.dirs, tr.n);
	return tr.n > 0 || tr.cut; /* a tree too big is one: its reading says so */
}

int rm_read_tfevents_tree(struct rm_store *st, const struct rm_import_opts *opts, const char *root,
                          struct rm_import_report *rep, struct rm_err *err)
{
	struct tree tr = {0};
	int rc = RM_OK;
	walk(&tr, root, "", 0);
	if (tr.cut) /* a part of a tree, taken for the whole, would be wrong without a word */
		rc = rm_err_set(err, RM_E_INPUT,
		                "%s: a tree of more than %d directories, or deeper than %d levels: none of it was read;"
		                " import the directory of the runs you want, or their event files by name",
		                root, TREE_DIRS, TREE_DEPTH);
	for (size_t i = 0; i < tr.n && !rc; i++) {
		char *dir = *tr.dirs[i] ? rm_xasprintf("%s/%s", root, tr.dirs[i]) : rm_xstrdup(root);
		char *name = tree_run_name(opts, root, tr.dirs[i], tr.n);
		size_t nfiles;
		char **files = event_files(dir, &nfiles);
		if (nfiles)
			rc = read_run(st, opts, files, nfiles, dir, name, rep, err);
		free_list(files, nfiles);
		free(name);
		free(dir);
	}
	if (!rc && !tr.n)
		rc = rm_err_set(err, RM_E_INPUT, "%s: no TensorBoard event files (events.out.tfevents.*) under it",
		                root);
	free_list(tr.dirs, tr.n);
	return rc;
}
