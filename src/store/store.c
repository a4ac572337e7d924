/*
 * store.c - the store runmon's commands call, written once over the driver
 * (db.h) for SQLite and PostgreSQL alike: runs, upserts of steps, batches
 * and evals, the series the detectors read, findings, reports and the
 * positions and logs beside them. Statements used per row are prepared
 * once per connection and reused. Nothing here prints.
 */
#include "runmon/store.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "runmon/changes.h"
#include "runmon/pg.h"
#include "runmon/text.h"
#include "store_internal.h"

enum stmt_id { ST_RUN_FIND, ST_RUN_INSERT, ST_COUNT };

static const char *const stmt_sql[ST_COUNT] = {
    [ST_RUN_FIND] = "SELECT id FROM runs WHERE entity = ?1 AND project = ?2 AND name = ?3",
    /* Two collectors may create the run at once: the second gets no row and looks again. */
    [ST_RUN_INSERT] = "INSERT INTO runs(source, entity, project, name) VALUES (?1, ?2, ?3, ?4)"
                      " ON CONFLICT(entity, project, name) DO NOTHING RETURNING id",
};

/* The upserts of an import (and the length effect's table of up to 2000
 * rows), keyed by their first columns. */
enum upsert_id { UP_STEP, UP_BATCH, UP_EVAL, UP_FACTOR, UP_COUNT };
static const struct {
	const char *table;
	int nkeys, ncols;
	const char *cols[12];
} upserts[UP_COUNT] = {
    [UP_STEP] = {"steps", 2, 9, {"run_id", "step", "loss", "lr", "epoch", "grad_norm", "runtime", "ts", "nan_mask"}},
    [UP_BATCH] = {"batches",
                  4,
                  12,
                  {"run_id", "step", "rank", "micro", "bucket", "n", "min_len", "max_len", "mean_len", "tokens",
                   "padded_tokens", "lens"}},
    [UP_EVAL] = {"evals", 3, 4, {"run_id", "step", "key", "value"}},
    [UP_FACTOR] = {"length_factors", 2, 4, {"run_id", "lo", "hi", "effect"}},
};

struct rm_store {
	struct rm_db *db;
	const char *path; /* for messages: the file, or the URI redacted */
	struct rm_dbq *stmt[ST_COUNT], *up[UP_COUNT];
	void (*wait)(void *arg, const char *run, const char *holder);
	void *wait_arg;
	int64_t told; /* the run the wait function was last called for */
};

static int db_err(struct rm_store *st, struct rm_err *err, const char *what)
{
	return rm_db_fail(st->db, err, what);
}

static struct rm_dbq *stmt(struct rm_store *st, enum stmt_id id, struct rm_err *err)
{
	if (!st->stmt[id])
		st->stmt[id] = rm_dbq_prepare(st->db, stmt_sql[id], 0, err);
	return st->stmt[id];
}

static struct rm_dbq *upsert(struct rm_store *st, enum upsert_id id, struct rm_err *err)
{
	if (!st->up[id])
		st->up[id] = rm_dbq_upsert(st->db, upserts[id].table, upserts[id].cols, upserts[id].ncols,
		                           upserts[id].nkeys, err);
	return st->up[id];
}

int rm_store_schema_version(struct rm_store *st)
{
	return rm_db_schema_version(st->db);
}

int rm_store_latest_version(void)
{
	return rm_migrations[rm_migrations_count - 1].version;
}

static int open_store(struct rm_store **out, const char *path, int max_version, unsigned flags, struct rm_err *err)
{
	struct rm_db *db;
	int rc = rm_db_open(&db, path, max_version, flags & RM_STORE_MUST_EXIST ? RM_DB_MUST_EXIST : 0, err);
	*out = NULL;
	if (rc)
		return rc;
	struct rm_store *st = rm_xcalloc(1, sizeof(*st));
	st->db = db;
	st->path = db->name;
	*out = st;
	return RM_OK;
}

int rm_store_open_version(struct rm_store **out, const char *path, int max_version, struct rm_err *err)
{
	return open_store(out, path, max_version, 0, err);
}

int rm_store_open(struct rm_store **out, const char *path, struct rm_err *err)
{
	return open_store(out, path, INT_MAX, 0, err);
}

int rm_store_open_flags(struct rm_store **out, const char *path, unsigned flags, struct rm_err *err)
{
	return open_store(out, path, INT_MAX, flags, err);
}

struct sqlite3 *rm_store_sqlite(struct rm_store *st)
{
	return st->db->lite;
}

int rm_store_readonly(const struct rm_store *st)
{
	return st->db->readonly;
}

int rm_store_is_postgres(const struct rm_store *st)
{
	return st->db->pg != NULL;
}

const char *rm_store_name(const struct rm_store *st)
{
	return st->path;
}

void rm_store_close(struct rm_store *st)
{
	if (!st)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		rm_dbq_finalize(st->stmt[i]);
	for (int i = 0; i < UP_COUNT; i++)
		rm_dbq_finalize(st->up[i]);
	rm_db_close(st->db);
	free(st);
}

int rm_store_begin(struct rm_store *st, struct rm_err *err)
{
	return rm_db_begin(st->db, err);
}

int rm_store_commit(struct rm_store *st, struct rm_err *err)
{
	return rm_db_commit(st->db, err);
}

void rm_store_rollback(struct rm_store *st)
{
	rm_db_rollback(st->db);
}

void rm_store_on_wait(struct rm_store *st, void (*wait)(void *arg, const char *run, const char *holder), void *arg)
{
	st->wait = wait;
	st->wait_arg = arg;
}

struct waiting {
	struct rm_store *st;
	int64_t run_id;
};

/* Tells the wait function once per run, by the run's name. */
static void waiting(void *arg, const char *holder)
{
	struct waiting *w = arg;
	struct rm_run_info info;
	struct rm_err err;
	if (!w->st->wait || w->st->told == w->run_id)
		return;
	w->st->told = w->run_id;
	if (rm_store_get_run_brief(w->st, w->run_id, &info, &err)) {
		w->st->wait(w->st->wait_arg, "?", holder);
		return;
	}
	char *name = *info.entity ? rm_xasprintf("%s/%s/%s", info.entity, info.project, info.name) : NULL;
	w->st->wait(w->st->wait_arg, name ? name : info.name, holder);
	free(name);
	rm_run_info_release(&info);
}

int rm_store_lock_run(struct rm_store *st, int64_t run_id, struct rm_err *err)
{
	struct waiting w = {st, run_id};
	return rm_db_lock_run(st->db, run_id, waiting, &w, err);
}

/* Runs a bound statement to completion and resets it. */
static int run(struct rm_store *st, struct rm_dbq *s, struct rm_err *err, const char *what)
{
	int rc = rm_dbq_step(s, err);
	rm_dbq_reset(s);
	return rc < 0 ? db_err(st, err, what) : RM_OK;
}

/* The first column of the statement's first row into *v; 0 without a row. */
static int run_int(struct rm_store *st, struct rm_dbq *s, int64_t *v, struct rm_err *err, const char *what)
{
	int rc = rm_dbq_step(s, err);
	*v = rc == RM_DB_ROW ? rm_dbq_col_int(s, 0) : 0;
	while (rc == RM_DB_ROW)
		rc = rm_dbq_step(s, err);
	rm_dbq_reset(s);
	return rc < 0 ? db_err(st, err, what) : RM_OK;
}

int rm_store_run_ensure(struct rm_store *st, const struct rm_run_key *key, int64_t *run_id, struct rm_err *err)
{
	struct rm_dbq *s = stmt(st, ST_RUN_FIND, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, key->entity, -1);
	rm_dbq_text(s, 2, key->project, -1);
	rm_dbq_text(s, 3, key->name, -1);
	int rc = run_int(st, s, run_id, err, "cannot look up run");
	if (rc || *run_id)
		return rc;
	if (!(s = stmt(st, ST_RUN_INSERT, err)))
		return RM_E_STORE;
	rm_dbq_text(s, 1, key->source, -1);
	rm_dbq_text(s, 2, key->entity, -1);
	rm_dbq_text(s, 3, key->project, -1);
	rm_dbq_text(s, 4, key->name, -1);
	if ((rc = run_int(st, s, run_id, err, "cannot create run")) || *run_id)
		return rc;
	if (!(s = stmt(st, ST_RUN_FIND, err)))
		return RM_E_STORE;
	rm_dbq_text(s, 1, key->entity, -1);
	rm_dbq_text(s, 2, key->project, -1);
	rm_dbq_text(s, 3, key->name, -1);
	if ((rc = run_int(st, s, run_id, err, "cannot look up run")) || *run_id)
		return rc;
	return rm_err_set(err, RM_E_STORE, "run '%s' was created and is gone in database '%s'", key->name, st->path);
}

/* Binds a value that may be missing (NULL) or NaN (NULL, flagged by caller). */
static void bind_opt(struct rm_dbq *s, int i, int have, double v)
{
	if (!have || isnan(v))
		rm_dbq_null(s, i);
	else
		rm_dbq_double(s, i, v);
}

int rm_store_put_step(struct rm_store *st, int64_t run_id, const struct rm_step *r, struct rm_err *err)
{
	struct rm_dbq *s = upsert(st, UP_STEP, err);
	if (!s)
		return RM_E_STORE;
	int nan_mask = 0;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, r->step);
	for (int f = 0; f < RM_S_COUNT; f++) {
		int have = (r->have >> f) & 1;
		bind_opt(s, 3 + f, have, r->v[f]);
		if (have && isnan(r->v[f]) && f <= RM_S_GRAD_NORM)
			nan_mask |= 1 << f;
	}
	rm_dbq_int(s, 9, nan_mask);
	return run(st, s, err, "cannot write step");
}

int rm_store_put_batch(struct rm_store *st, int64_t run_id, const struct rm_batch *b, struct rm_err *err)
{
	struct rm_dbq *s = upsert(st, UP_BATCH, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, b->step);
	rm_dbq_int(s, 3, b->rank);
	rm_dbq_int(s, 4, b->micro);
	for (int f = 0; f < RM_B_COUNT; f++) {
		int have = (b->have >> f) & 1;
		if (have && f != RM_B_MEAN_LEN && isfinite(b->v[f]))
			rm_dbq_int(s, 5 + f, (int64_t)llround(b->v[f]));
		else
			bind_opt(s, 5 + f, have, b->v[f]);
	}
	if (b->lens && b->lens_bytes)
		rm_dbq_blob(s, 12, b->lens, b->lens_bytes);
	else
		rm_dbq_null(s, 12);
	return run(st, s, err, "cannot write batch");
}

int rm_store_put_eval(struct rm_store *st, int64_t run_id, int64_t step, const char *key, double value,
                      struct rm_err *err)
{
	struct rm_dbq *s = upsert(st, UP_EVAL, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, step);
	rm_dbq_text(s, 3, key, -1);
	bind_opt(s, 4, 1, value);
	return run(st, s, err, "cannot write eval row");
}

/* Prepares a one-off statement; the caller finalizes it. */
static struct rm_dbq *prepare(struct rm_store *st, const char *sql, struct rm_err *err)
{
	return rm_dbq_prepare(st->db, sql, 0, err);
}

static int run_once(struct rm_store *st, struct rm_dbq *s, struct rm_err *err, const char *what)
{
	int rc = rm_dbq_step(s, err);
	int ok = rc == RM_DB_DONE || rc == RM_DB_ROW;
	if (!ok)
		db_err(st, err, what);
	rm_dbq_finalize(s);
	return ok ? RM_OK : RM_E_STORE;
}

int rm_store_put_buckets(struct rm_store *st, int64_t run_id, const int64_t *bounds, int nbounds, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st, "DELETE FROM buckets WHERE run_id = ?1", err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	if ((rc = run_once(st, s, err, "cannot replace buckets")))
		return rc;
	for (int i = 0; i + 1 < nbounds; i++) {
		if (!(s = prepare(st, "INSERT INTO buckets(run_id, bucket, lo, hi) VALUES (?1, ?2, ?3, ?4)", err)))
			return RM_E_STORE;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, i);
		rm_dbq_int(s, 3, bounds[i]);
		rm_dbq_int(s, 4, bounds[i + 1]);
		if ((rc = run_once(st, s, err, "cannot write bucket")))
			return rc;
	}
	return RM_OK;
}

int rm_store_run_touch(struct rm_store *st, int64_t run_id, const char *loss_key, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st,
	                           "UPDATE runs SET last_step = (SELECT MAX(step) FROM steps WHERE run_id = ?1),"
	                           " loss_key = COALESCE(?2, loss_key), synced_at = ?3 WHERE id = ?1",
	                           err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	if (loss_key)
		rm_dbq_text(s, 2, loss_key, -1);
	rm_dbq_double(s, 3, (double)time(NULL));
	return run_once(st, s, err, "cannot update run");
}

int rm_store_data_version(struct rm_store *st, int64_t *v, struct rm_err *err)
{
	return rm_db_data_version(st->db, v, err);
}

int rm_store_count_steps(struct rm_store *st, int64_t run_id, int64_t lo, int64_t hi, int64_t *n, struct rm_err *err)
{
	struct rm_dbq *s =
	    prepare(st, "SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND step >= ?2 AND step < ?3", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, lo);
	rm_dbq_int(s, 3, hi);
	*n = rm_dbq_step(s, err) == RM_DB_ROW ? rm_dbq_col_int(s, 0) : 0;
	return run_once(st, s, err, "cannot count steps");
}

int rm_store_log_import(struct rm_store *st, const struct rm_import_log *log, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st,
	                           "INSERT INTO imports(run_id, path, format, lines, steps, batches, replaced,"
	                           " restarts, skipped, imported_at, composition)"
	                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	                           err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, log->run_id);
	rm_dbq_text(s, 2, log->path, -1);
	rm_dbq_text(s, 3, log->format, -1);
	rm_dbq_int(s, 4, log->lines);
	rm_dbq_int(s, 5, log->steps);
	rm_dbq_int(s, 6, log->batches);
	rm_dbq_int(s, 7, log->replaced);
	rm_dbq_int(s, 8, log->restarts);
	rm_dbq_int(s, 9, log->skipped);
	rm_dbq_double(s, 10, (double)time(NULL));
	if (log->composition)
		rm_dbq_text(s, 11, log->composition, -1);
	return run_once(st, s, err, "cannot log import");
}

static char *col_text(struct rm_dbq *s, int i)
{
	const char *t = rm_dbq_col_text(s, i);
	return t ? rm_utf8_fix(t) : NULL; /* names from file names may not be UTF-8 */
}

/* The keys the run's latest import with batch composition read it from. */
#define RUN_COMPOSITION                                                                                                \
	"(SELECT composition FROM imports WHERE run_id = r.id AND composition IS NOT NULL ORDER BY id DESC LIMIT 1)"

static const char run_info_sql[] =
    "SELECT r.id, r.source, r.entity, r.project, r.name, r.display_name, r.state, r.loss_key,"
    " (SELECT COUNT(*) FROM steps WHERE run_id = r.id),"
    " (SELECT MIN(step) FROM steps WHERE run_id = r.id),"
    " (SELECT MAX(step) FROM steps WHERE run_id = r.id),"
    " (SELECT COUNT(DISTINCT step) FROM batches WHERE run_id = r.id),"
    " r.synced_at, " RUN_COMPOSITION " FROM runs r";

static void read_run_info(struct rm_dbq *s, struct rm_run_info *r)
{
	r->id = rm_dbq_col_int(s, 0);
	r->source = col_text(s, 1);
	r->entity = col_text(s, 2);
	r->project = col_text(s, 3);
	r->name = col_text(s, 4);
	r->display_name = col_text(s, 5);
	r->state = col_text(s, 6);
	r->loss_key = col_text(s, 7);
	r->steps = rm_dbq_col_int(s, 8);
	r->first_step = rm_dbq_col_int(s, 9);
	r->last_step = rm_dbq_col_int(s, 10);
	r->batch_steps = rm_dbq_col_int(s, 11);
	r->synced_at = rm_dbq_col_double(s, 12);
	r->composition = col_text(s, 13);
}

int rm_store_list_runs(struct rm_store *st, struct rm_run_info **out, size_t *n, struct rm_err *err)
{
	char sql[sizeof(run_info_sql) + 32];
	snprintf(sql, sizeof(sql), "%s ORDER BY r.id", run_info_sql);
	struct rm_dbq *s = prepare(st, sql, err);
	size_t cap = 0;
	int rc;
	*out = NULL;
	*n = 0;
	if (!s)
		return RM_E_STORE;
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = rm_xrealloc(*out, cap * sizeof(**out));
		}
		read_run_info(s, &(*out)[(*n)++]);
	}
	if (rc != RM_DB_DONE) {
		db_err(st, err, "cannot list runs");
		rm_dbq_finalize(s);
		rm_run_info_free(*out, *n);
		*out = NULL;
		*n = 0;
		return RM_E_STORE;
	}
	rm_dbq_finalize(s);
	return RM_OK;
}

/* The same columns without the counts, which read the whole run; and the
 * run's last step, which the (run_id, step) key gives in O(log n). */
static const char run_brief_sql[] =
    "SELECT r.id, r.source, r.entity, r.project, r.name, r.display_name, r.state, r.loss_key, 0,"
    " (SELECT MIN(step) FROM steps WHERE run_id = r.id), (SELECT MAX(step) FROM steps WHERE run_id = r.id),"
    " 0, r.synced_at, " RUN_COMPOSITION " FROM runs r";

static int get_run(struct rm_store *st, const char *base, int64_t run_id, struct rm_run_info *out, struct rm_err *err)
{
	char sql[sizeof(run_info_sql) + 32];
	snprintf(sql, sizeof(sql), "%s WHERE r.id = ?1", base);
	struct rm_dbq *s = prepare(st, sql, err);
	memset(out, 0, sizeof(*out));
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	int rc = rm_dbq_step(s, err);
	if (rc == RM_DB_ROW)
		read_run_info(s, out);
	rm_dbq_finalize(s);
	if (rc == RM_DB_ROW)
		return RM_OK;
	if (rc == RM_DB_DONE)
		return rm_err_set(err, RM_E_NOTFOUND, "no run with id %lld", (long long)run_id);
	return db_err(st, err, "cannot read run");
}

int rm_store_get_run(struct rm_store *st, int64_t run_id, struct rm_run_info *out, struct rm_err *err)
{
	return get_run(st, run_info_sql, run_id, out, err);
}

int rm_store_get_run_brief(struct rm_store *st, int64_t run_id, struct rm_run_info *out, struct rm_err *err)
{
	return get_run(st, run_brief_sql, run_id, out, err);
}

void rm_run_info_release(struct rm_run_info *r)
{
	free(r->source);
	free(r->entity);
	free(r->project);
	free(r->name);
	free(r->display_name);
	free(r->state);
	free(r->loss_key);
	free(r->composition);
	memset(r, 0, sizeof(*r));
}

int rm_store_clear_run(struct rm_store *st, int64_t run_id, struct rm_err *err)
{
	static const char *const tables[] = {"steps",         "batches",       "evals",
	                                     "buckets",       "findings",      "bucket_levels",
	                                     "bucket_labels", "length_levels", "length_factors"};
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char sql[64];
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE run_id = ?1", tables[i]);
		struct rm_dbq *s = prepare(st, sql, err);
		if (!s)
			return RM_E_STORE;
		rm_dbq_int(s, 1, run_id);
		int rc = run_once(st, s, err, "cannot clear run");
		if (rc)
			return rc;
	}
	return RM_OK;
}

int rm_store_drop_run_if_empty(struct rm_store *st, int64_t run_id, struct rm_err *err)
{
	struct rm_dbq *s =
	    prepare(st,
	            "DELETE FROM runs WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM steps WHERE run_id = ?1)"
	            " AND NOT EXISTS (SELECT 1 FROM batches WHERE run_id = ?1)"
	            " AND NOT EXISTS (SELECT 1 FROM evals WHERE run_id = ?1)",
	            err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	return run_once(st, s, err, "cannot drop an empty run");
}

void rm_run_info_free(struct rm_run_info *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rm_run_info_release(&runs[i]);
	free(runs);
}

int rm_store_find_run(struct rm_store *st, const char *spec, int64_t *run_id, struct rm_err *err)
{
	const char *s1 = strchr(spec, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	struct rm_dbq *s;
	int found = 0, rank[2] = {0, 0}, rc;
	if (s1 && s2 && !strchr(s2 + 1, '/')) {
		s = prepare(st, "SELECT id, 2 FROM runs WHERE entity = ?1 AND project = ?2 AND name = ?3", err);
		if (!s)
			return RM_E_STORE;
		rm_dbq_text(s, 1, spec, (int)(s1 - spec));
		rm_dbq_text(s, 2, s1 + 1, (int)(s2 - s1 - 1));
		rm_dbq_text(s, 3, s2 + 1, -1);
	} else {
		/* Rank 2: a local run of that name; 1: a W&B run id; 0: a display
		 * name. The best rank wins; a tie is ambiguous. */
		s = prepare(
		    st,
		    "SELECT id, CASE WHEN entity = '' AND name = ?1 THEN 2 WHEN name = ?1 THEN 1 ELSE 0 END AS r"
		    " FROM runs WHERE name = ?1 OR display_name = ?1 ORDER BY r DESC, id LIMIT 2",
		    err);
		if (!s)
			return RM_E_STORE;
		rm_dbq_text(s, 1, spec, -1);
	}
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW && found < 2) {
		if (found == 0)
			*run_id = rm_dbq_col_int(s, 0);
		rank[found++] = (int)rm_dbq_col_int(s, 1);
	}
	rm_dbq_finalize(s);
	if (rc != RM_DB_DONE && rc != RM_DB_ROW)
		return db_err(st, err, "cannot look up run");
	if (!found)
		return rm_err_set(err, RM_E_NOTFOUND, "no run '%s' in database '%s' (see 'runmon runs')", spec,
		                  st->path);
	if (found == 2 && rank[0] == rank[1] && rank[0] < 2)
		return rm_err_set(err, RM_E_USAGE,
		                  "run '%s' is ambiguous in database '%s': name it as ENTITY/PROJECT/ID", spec,
		                  st->path);
	return RM_OK;
}

static double col_opt(struct rm_dbq *s, int i)
{
	return rm_dbq_isnull(s, i) ? NAN : rm_dbq_col_double(s, i);
}

/* Rows of table from step `since` that also meet `and` (SQL, "" for
 * none): what a load will read, so arrays are sized once. */
static size_t count_rows(struct rm_db *db, const char *table, const char *and, int64_t run_id, int64_t since)
{
	char sql[256];
	struct rm_err err;
	struct rm_dbq *s;
	size_t n = 0;
	snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s WHERE run_id = ?1 AND step >= ?2%s", table, and);
	if (!(s = rm_dbq_prepare(db, sql, 0, &err)))
		return 0;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, since);
	if (rm_dbq_step(s, &err) == RM_DB_ROW)
		n = (size_t)rm_dbq_col_int(s, 0);
	rm_dbq_finalize(s);
	return n;
}

/* About how many rows of table (steps or batches) the run has from step
 * `since`: the rows of its first step, times the steps of its range at the
 * spacing of its first two (a run logged every K steps has rows every K
 * steps). Indexed lookups, where COUNT(*) (and MIN with MAX in one query)
 * scan every row: 8M rows for a run of 1M steps on 8 ranks. The step range
 * comes back in lo, hi (hi < lo when there is none). */
static size_t estimate_rows(struct rm_db *db, const char *table, int64_t run_id, int64_t since, int64_t *lo,
                            int64_t *hi)
{
	static const char *const sql[4][2] = {
	    {"SELECT step FROM ", " WHERE run_id = ?1 AND step >= ?2 ORDER BY step LIMIT 1"},
	    {"SELECT step FROM ", " WHERE run_id = ?1 AND step >= ?2 ORDER BY step DESC LIMIT 1"},
	    {"SELECT COUNT(*) FROM ", " WHERE run_id = ?1 AND step = ?2"},
	    {"SELECT step FROM ", " WHERE run_id = ?1 AND step > ?2 ORDER BY step LIMIT 1"}};
	int64_t v[4] = {0, -1, 0, 0};
	*lo = since;
	*hi = -1;
	for (int i = 0; i < 4; i++) {
		struct rm_err err;
		char q[160];
		snprintf(q, sizeof(q), "%s%s%s", sql[i][0], table, sql[i][1]);
		struct rm_dbq *s = rm_dbq_prepare(db, q, 0, &err);
		if (!s)
			return 0;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, i >= 2 ? v[0] : since);
		v[i] = i == 3 ? v[1] : v[i]; /* no second step: the first is the last */
		if (rm_dbq_step(s, &err) == RM_DB_ROW)
			v[i] = rm_dbq_col_int(s, 0);
		rm_dbq_finalize(s);
		if (i == 1 && v[1] < v[0])
			return 0;
	}
	*lo = v[0];
	*hi = v[1];
	double gap = v[3] > v[0] ? (double)v[3] - (double)v[0] : 1;
	double est = (((double)v[1] - (double)v[0]) / gap + 1) * (double)(v[2] > 0 ? v[2] : 1);
	return est < 16777216 ? (size_t)est : 16777216; /* a starting size, not a bound */
}

/* Grows the parallel arrays of a series to hold cap entries. */
#define GROW(arr, cap) ((arr) = rm_xrealloc((arr), (cap) * sizeof(*(arr))))

/* Loss rows of the run. */
static int load_steps(struct rm_db *db, int64_t run_id, int64_t since, struct rm_store_series *out, struct rm_err *err)
{
	int64_t lo, hi;
	size_t cap = estimate_rows(db, "steps", run_id, since, &lo, &hi); /* the arrays grow when it is short */
	struct rm_dbq *s = rm_dbq_prepare(db,
	                                  "SELECT step, loss, nan_mask, lr, epoch FROM steps"
	                                  " WHERE run_id = ?1 AND step >= ?2 ORDER BY step",
	                                  RM_DBQ_STREAM, err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, since);
	GROW(out->step, cap + 1);
	GROW(out->loss, cap + 1);
	GROW(out->nonfinite, cap + 1);
	GROW(out->lr, cap + 1);
	GROW(out->epoch, cap + 1);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (out->n == cap) { /* rows added since the count */
			cap = cap ? cap * 2 : 4096;
			GROW(out->step, cap);
			GROW(out->loss, cap);
			GROW(out->nonfinite, cap);
			GROW(out->lr, cap);
			GROW(out->epoch, cap);
		}
		size_t i = out->n++;
		out->step[i] = rm_dbq_col_int(s, 0);
		double v = col_opt(s, 1);
		int nan = (int)rm_dbq_col_int(s, 2) & 1;
		out->nonfinite[i] = nan ? 1 : isnan(v) ? 3 : isinf(v) ? 2 : 0;
		out->loss[i] = out->nonfinite[i] ? NAN : v;
		out->lr[i] = col_opt(s, 3);
		out->epoch[i] = col_opt(s, 4);
	}
	rm_dbq_finalize(s);
	return rc < 0 ? -rc : RM_OK;
}

/* Dense buckets for the loaded batches, with the run's text labels:
 * out->bucket holds each row's index into ids and becomes its dense
 * bucket. */
static int map_buckets(struct rm_db *db, int64_t run_id, const struct rm_bucket_ids *ids, struct rm_store_series *out,
                       struct rm_err *err)
{
	struct rm_dbq *s =
	    rm_dbq_prepare(db, "SELECT bucket, label FROM bucket_labels WHERE run_id = ?1 ORDER BY bucket", 0, err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	size_t n = 0, cap = 0;
	int64_t *id = NULL;
	char **label = NULL;
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			GROW(id, cap);
			GROW(label, cap);
		}
		id[n] = rm_dbq_col_int(s, 0);
		label[n++] = col_text(s, 1);
	}
	rm_dbq_finalize(s);
	if (rc == RM_DB_DONE) {
		struct rm_bucket_texts texts = {n, id, label};
		int *dense_of = rm_xmalloc((ids->n ? ids->n : 1) * sizeof(int));
		rm_bucket_map_from_ids(&out->map, ids, &texts, dense_of);
		for (size_t i = 0; i < out->nb; i++)
			out->bucket[i] = out->bucket[i] < 0 ? -1 : dense_of[out->bucket[i]];
		free(dense_of);
		if (out->map.labels == 0) { /* no bucket ids: the lengths are the composition */
			rm_bucket_map_release(&out->map);
			rm_bucket_map_derive(&out->map, out->max_len, out->nb, out->bucket);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(label[i]);
	free(label);
	free(id);
	return rc < 0 ? -rc : RM_OK;
}

size_t rm_store_split_rows = 2000000;

/* The batch rows of steps [from, to), as load_batches needs them. */
struct batch_part {
	int64_t run_id, from, to;
	size_t nb, cap;
	int64_t *bstep;
	int *bucket; /* index into ids, -1 none */
	double *max_len;
	int *brank;
	struct rm_bucket_ids ids;
	/* Recorded lengths: row i's are at lens + lens_at[i] - 1 (lens_at[i]
	 * 0: none), lens_at made at the first row that has them. */
	uint8_t *lens;
	size_t lens_len, lens_cap;
	uint32_t *lens_at;
	size_t unknown; /* rows with neither a length nor a bucket */
	int multi;
	int64_t top_rank;
	struct rm_db *db;
	int rc;
	struct rm_err err;
};

/* Keeps row i's encoded lengths for the composition of mixed batches. */
static void keep_lens(struct batch_part *p, size_t i, const void *blob, size_t n)
{
	if (!blob || !n || p->lens_len + n >= UINT32_MAX) /* offsets are 32-bit: beyond, lengths go unread */
		return;
	if (!p->lens_at)
		p->lens_at = rm_xcalloc(p->cap + 1, sizeof(*p->lens_at));
	if (p->lens_len + n > p->lens_cap) {
		p->lens_cap = (p->lens_len + n) * 2;
		p->lens = rm_xrealloc(p->lens, p->lens_cap);
	}
	memcpy(p->lens + p->lens_len, blob, n);
	p->lens_at[i] = (uint32_t)p->lens_len + 1;
	p->lens_len += n;
}

static void *scan_batches(void *arg)
{
	struct batch_part *p = arg;
	struct rm_dbq *s = rm_dbq_prepare(p->db,
	                                  "SELECT step, bucket, COALESCE(max_len, mean_len), rank, lens FROM batches"
	                                  " WHERE run_id = ?1 AND step >= ?2 AND step < ?3 ORDER BY step, rank, micro",
	                                  RM_DBQ_STREAM, &p->err);
	int rc;
	if (!s) {
		p->rc = RM_E_STORE;
		return NULL;
	}
	rm_dbq_int(s, 1, p->run_id);
	rm_dbq_int(s, 2, p->from);
	rm_dbq_int(s, 3, p->to);
	GROW(p->bstep, p->cap + 1);
	GROW(p->bucket, p->cap + 1);
	GROW(p->max_len, p->cap + 1);
	GROW(p->brank, p->cap + 1);
	while ((rc = rm_dbq_step(s, &p->err)) == RM_DB_ROW) {
		int64_t step = rm_dbq_col_int(s, 0);
		int64_t bucket = !rm_dbq_isnull(s, 1) ? rm_dbq_col_int(s, 1) : RM_BUCKET_NONE;
		double ml = col_opt(s, 2);
		int64_t rank = rm_dbq_col_int(s, 3);
		p->unknown += isnan(ml) && bucket == RM_BUCKET_NONE;
		size_t i = p->nb;
		if (p->nb == p->cap) {
			p->cap = p->cap ? p->cap * 2 : 4096;
			GROW(p->bstep, p->cap);
			GROW(p->bucket, p->cap);
			GROW(p->max_len, p->cap);
			GROW(p->brank, p->cap);
			if (p->lens_at) {
				GROW(p->lens_at, p->cap + 1);
				memset(p->lens_at + i, 0, (p->cap + 1 - i) * sizeof(*p->lens_at));
			}
		}
		size_t nlens;
		const void *lens = rm_dbq_col_blob(s, 4, &nlens);
		if (lens)
			keep_lens(p, i, lens, nlens);
		p->multi |= i > 0 && p->bstep[i - 1] == step; /* another rank or micro-batch of the step */
		p->nb++;
		p->bstep[i] = step;
		p->bucket[i] = rm_bucket_ids_add(&p->ids, bucket, ml);
		p->max_len[i] = ml;
		p->brank[i] = rank >= 0 && rank < RM_MAX_RANKS ? (int)rank : RM_MAX_RANKS - 1;
		if (rank > p->top_rank)
			p->top_rank = rank;
	}
	rm_dbq_finalize(s);
	p->rc = rc < 0 ? -rc : RM_OK;
	return NULL;
}

/* b's rows copied after a's, whose arrays were made for both halves
 * (grown only when the estimate fell short), and freed. */
#define JOIN(x, y)                                                                                                     \
	do {                                                                                                           \
		if (n + 1 > a->cap)                                                                                    \
			(x) = rm_xrealloc((x), (n + 1) * sizeof(*(x)));                                                \
		memcpy((x) + a->nb, (y), b->nb * sizeof(*(x)));                                                        \
		free(y);                                                                                               \
	} while (0)

/* Appends b's rows to a's. */
static void join_parts(struct batch_part *a, struct batch_part *b)
{
	size_t n = a->nb + b->nb;
	int *remap = rm_xmalloc((b->ids.n ? b->ids.n : 1) * sizeof(int));
	rm_bucket_ids_merge(&a->ids, &b->ids, remap);
	for (size_t i = 0; i < b->nb; i++)
		b->bucket[i] = b->bucket[i] < 0 ? -1 : remap[b->bucket[i]];
	free(remap);
	JOIN(a->bstep, b->bstep);
	JOIN(a->bucket, b->bucket);
	JOIN(a->max_len, b->max_len);
	JOIN(a->brank, b->brank);
	if (b->lens_at && a->lens_len + b->lens_len < UINT32_MAX) { /* beyond: b's lengths go unread */
		if (!a->lens_at)
			a->lens_at = rm_xcalloc(a->cap > n ? a->cap + 1 : n + 1, sizeof(*a->lens_at));
		else if (n + 1 > a->cap)
			GROW(a->lens_at, n + 1);
		for (size_t i = 0; i < b->nb; i++)
			a->lens_at[a->nb + i] = b->lens_at[i] ? b->lens_at[i] + (uint32_t)a->lens_len : 0;
		a->lens = rm_xrealloc(a->lens, a->lens_len + b->lens_len + 1);
		memcpy(a->lens + a->lens_len, b->lens, b->lens_len);
		a->lens_len += b->lens_len;
	} else if (a->lens_at) {
		if (n + 1 > a->cap)
			GROW(a->lens_at, n + 1);
		memset(a->lens_at + a->nb, 0, b->nb * sizeof(*a->lens_at));
	}
	free(b->lens);
	free(b->lens_at);
	a->nb = n;
	a->cap = n + 1 > a->cap ? n + 1 : a->cap;
	a->unknown += b->unknown;
	a->multi |= b->multi;
	a->top_rank = b->top_rank > a->top_rank ? b->top_rank : a->top_rank;
}
#undef JOIN

/* The run's recorded bucket boundaries, if any. */
static int load_bounds(struct rm_db *db, int64_t run_id, struct rm_store_series *out, struct rm_err *err)
{
	struct rm_dbq *s = rm_dbq_prepare(db, "SELECT lo, hi FROM buckets WHERE run_id = ?1 ORDER BY bucket", 0, err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		out->bounds = rm_xrealloc(out->bounds, (size_t)(out->nbounds + 2) * sizeof(*out->bounds));
		if (out->nbounds == 0)
			out->bounds[out->nbounds++] = rm_dbq_col_int(s, 0);
		out->bounds[out->nbounds++] = rm_dbq_col_int(s, 1);
	}
	rm_dbq_finalize(s);
	return rc < 0 ? -rc : RM_OK;
}

/* With recorded lengths and boundaries, and ids that are the boundaries'
 * indexes (an import with --buckets): every bucket of the boundaries gets
 * a dense bucket, for the shares of mixed batches, even one that is no
 * batch's longest. */
static void reserve_buckets(struct rm_bucket_ids *ids, const struct rm_store_series *out)
{
	if (out->nbounds - 1 > RM_MAX_BUCKETS)
		return;
	for (size_t i = 0; i < ids->n; i++)
		if (ids->id[i] < 0 || ids->id[i] > out->nbounds - 2)
			return;
	for (int b = 0; b + 1 < out->nbounds && ids->n; b++)
		rm_bucket_ids_reserve(ids, b, ((double)out->bounds[b] + (double)out->bounds[b + 1]) / 2);
}

/* The rows whose recorded lengths fall in more than one bucket, with the
 * token share of each (a batch's loss is a mean over its tokens). */
static void mixed_batches(const struct batch_part *a, struct rm_store_series *out)
{
	struct rm_length_cuts cuts;
	if (!rm_bucket_map_cuts(&out->map, out->bounds, out->nbounds, &cuts))
		return;
	uint8_t bucket[RM_MAX_BUCKETS];
	float share[RM_MAX_BUCKETS];
	/* Rows' lengths lie end to end in row order: a row's end where the
	 * next row with lengths starts. */
	size_t row = SIZE_MAX, from = 0;
	for (size_t i = 0; i <= out->nb; i++) {
		if (i < out->nb && !a->lens_at[i])
			continue;
		size_t at = i < out->nb ? a->lens_at[i] - 1 : a->lens_len;
		if (row != SIZE_MAX) {
			int parts = rm_lens_shares(a->lens + from, at - from, &cuts, bucket, share);
			if (parts >= 2)
				rm_mix_add(&out->mix, row, bucket, share, parts);
		}
		row = i;
		from = at;
	}
}

/* Batch composition: one entry per stored row, in (step, rank, micro)
 * order, so that a data-parallel step keeps what each rank and micro-batch
 * drew (the detectors read the mixture; see detect_mixture.c). A run of
 * many rows (8M for 1M steps on 8 ranks) is read in two halves at once,
 * the second on a connection of its own. */
static int load_batches(struct rm_db *db, int64_t run_id, int64_t since, struct rm_store_series *out,
                        struct rm_err *err)
{
	int64_t lo, hi;
	size_t rows = estimate_rows(db, "batches", run_id, since, &lo, &hi); /* parts grow when it is short */
	struct batch_part a = {.run_id = run_id, .from = since, .to = INT64_MAX, .cap = rows, .db = db};
	struct batch_part b = {.run_id = run_id, .to = INT64_MAX};
	pthread_t th;
	int split = rows >= rm_store_split_rows && hi > lo && !rm_db_open_again(db, &b.db, &b.err);
	if (split) {
		b.from = a.to = lo + (hi - lo + 1) / 2;
		b.cap = rows / 2 + 1; /* a's arrays take b's rows after its own */
		split = pthread_create(&th, NULL, scan_batches, &b) == 0;
		if (!split) {
			a.to = INT64_MAX;
			a.cap = rows;
		}
	}
	scan_batches(&a);
	if (split) {
		pthread_join(th, NULL);
		if (!a.rc && b.rc) {
			a.rc = b.rc;
			a.err = b.err;
		}
		join_parts(&a, &b);
	}
	rm_bucket_ids_release(&b.ids);
	rm_db_close(b.db);
	out->bstep = a.bstep;
	out->bucket = a.bucket;
	out->max_len = a.max_len;
	out->brank = a.brank;
	out->nb = a.nb;
	out->multi = a.multi;
	out->nranks = a.top_rank < RM_MAX_RANKS ? (int)a.top_rank + 1 : RM_MAX_RANKS;
	int rc = a.rc;
	if (rc)
		*err = a.err;
	if (!rc && a.unknown)
		out->tokens_only = count_rows(db, "batches", /* a token count and nothing to place it by */
		                              " AND bucket IS NULL AND max_len IS NULL AND mean_len IS NULL"
		                              " AND tokens IS NOT NULL",
		                              run_id, since);
	if (!rc)
		rc = load_bounds(db, run_id, out, err);
	if (!rc && a.lens_at)
		reserve_buckets(&a.ids, out);
	if (!rc)
		rc = map_buckets(db, run_id, &a.ids, out, err);
	if (!rc && a.lens_at)
		mixed_batches(&a, out);
	rm_bucket_ids_release(&a.ids);
	free(a.lens);
	free(a.lens_at);
	return rc;
}

struct batch_job {
	struct rm_db *db;
	int64_t run_id, since;
	struct rm_store_series *out;
	int rc;
	struct rm_err err;
};

static void *batch_thread(void *arg)
{
	struct batch_job *j = arg;
	j->rc = load_batches(j->db, j->run_id, j->since, j->out, &j->err);
	return NULL;
}

int rm_store_load_series(struct rm_store *st, int64_t run_id, int64_t since, struct rm_store_series *out,
                         struct rm_err *err)
{
	memset(out, 0, sizeof(*out));
	/* Steps and batches are read at once, on two connections: each is a
	 * long scan, and the second core is otherwise idle. (Both engines let
	 * them read while a writer commits; they may see a step more or less.) */
	struct batch_job job = {.run_id = run_id, .since = since, .out = out};
	pthread_t th;
	int threaded =
	    !rm_db_open_again(st->db, &job.db, &job.err) && pthread_create(&th, NULL, batch_thread, &job) == 0;
	int rc = load_steps(st->db, run_id, since, out, err);
	if (threaded)
		pthread_join(th, NULL);
	else
		job.rc = load_batches(st->db, run_id, since, out, &job.err);
	rm_db_close(job.db);
	if (!rc && job.rc) {
		*err = job.err;
		rc = job.rc;
	}
	struct rm_dbq *s = rc ? NULL : prepare(st, "SELECT config_json FROM runs WHERE id = ?1", err);
	if (s) {
		rm_dbq_int(s, 1, run_id);
		if (rm_dbq_step(s, err) == RM_DB_ROW)
			out->config_json = col_text(s, 0);
		rm_dbq_finalize(s);
		return RM_OK;
	}
	rm_store_series_release(out);
	return RM_E_STORE;
}

void rm_store_series_release(struct rm_store_series *s)
{
	free(s->step);
	free(s->loss);
	free(s->nonfinite);
	free(s->lr);
	free(s->epoch);

	free(s->bstep);
	free(s->bucket);
	free(s->max_len);
	free(s->brank);
	rm_bucket_map_release(&s->map);
	rm_mix_release(&s->mix);

	free(s->bounds);
	free(s->config_json);
	memset(s, 0, sizeof(*s));
}

int rm_store_replace_findings(struct rm_store *st, int64_t run_id, const struct rm_finding_row *rows, size_t n,
                              struct rm_err *err)
{
	int rc;
	if ((rc = rm_store_begin(st, err)))
		return rc;
	struct rm_dbq *s = prepare(st, "DELETE FROM findings WHERE run_id = ?1", err);
	if (!s)
		goto fail;
	rm_dbq_int(s, 1, run_id);
	if ((rc = run_once(st, s, err, "cannot replace findings")))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct rm_finding_row *f = &rows[i];
		s = prepare(st,
		            "INSERT INTO findings(run_id, detector, severity, first_step, last_step, statistic,"
		            " p_value, evidence_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
		            err);
		if (!s)
			goto fail;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_text(s, 2, f->detector, -1);
		rm_dbq_text(s, 3, f->severity, -1);
		if (f->first_step >= 0)
			rm_dbq_int(s, 4, f->first_step);
		if (f->last_step >= 0)
			rm_dbq_int(s, 5, f->last_step);
		bind_opt(s, 6, 1, f->statistic);
		bind_opt(s, 7, 1, f->p_value);
		if (f->evidence_json)
			rm_dbq_text(s, 8, f->evidence_json, -1);
		rm_dbq_double(s, 9, (double)time(NULL));
		if ((rc = run_once(st, s, err, "cannot write finding")))
			goto fail;
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

int rm_store_set_config(struct rm_store *st, int64_t run_id, const char *config_json, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st, "UPDATE runs SET config_json = ?2 WHERE id = ?1", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, config_json, -1);
	return run_once(st, s, err, "cannot set run config");
}

/* RFC 7396 (JSON Merge Patch): an object merges member by member, a null
 * member removes, anything else replaces. Takes target's reference. */
static json_t *merge_patch(json_t *target, json_t *patch)
{
	const char *k;
	json_t *v;
	if (!json_is_object(patch)) {
		json_decref(target);
		return json_incref(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		target = json_object();
	}
	json_object_foreach (patch, k, v) {
		if (json_is_null(v))
			json_object_del(target, k);
		else
			json_object_set_new(target, k, merge_patch(json_incref(json_object_get(target, k)), v));
	}
	return target;
}

int rm_store_merge_config(struct rm_store *st, int64_t run_id, const char *patch_json, struct rm_err *err)
{
	json_error_t jerr;
	json_t *patch = json_loads(patch_json, JSON_DECODE_ANY, &jerr), *config = NULL;
	if (!patch)
		return rm_err_set(err, RM_E_INPUT, "a run config that is not JSON: %s", jerr.text);
	struct rm_dbq *s = prepare(st, "SELECT config_json FROM runs WHERE id = ?1", err);
	int rc = s ? rm_dbq_step(s, err) : -RM_E_STORE;
	if (rc == RM_DB_ROW && rm_dbq_col_text(s, 0))
		config = json_loads(rm_dbq_col_text(s, 0), JSON_DECODE_ANY, NULL);
	rm_dbq_finalize(s);
	char *text = NULL;
	if (rc >= 0) {
		config = merge_patch(config, patch);
		text = json_dumps(config, JSON_COMPACT | JSON_ENCODE_ANY);
		rc = rm_store_set_config(st, run_id, text, err);
	} else {
		rc = db_err(st, err, "cannot merge run config");
	}
	free(text);
	json_decref(config);
	json_decref(patch);
	return rc;
}

int rm_store_set_run_state(struct rm_store *st, int64_t run_id, const char *display_name, const char *state,
                           struct rm_err *err)
{
	struct rm_dbq *s = prepare(
	    st, "UPDATE runs SET display_name = COALESCE(?2, display_name), state = COALESCE(?3, state) WHERE id = ?1",
	    err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, display_name, -1);
	rm_dbq_text(s, 3, state, -1);
	return run_once(st, s, err, "cannot update run");
}

int rm_store_set_run_meta(struct rm_store *st, int64_t run_id, const struct rm_run_meta *m, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st,
	                           "UPDATE runs SET source = 'wandb', display_name = COALESCE(?2, display_name),"
	                           " state = COALESCE(?3, state), config_json = COALESCE(?4, config_json),"
	                           " created_at = COALESCE(?5, created_at), heartbeat_at = COALESCE(?6, heartbeat_at),"
	                           " remote_last_step = COALESCE(?7, remote_last_step),"
	                           " history_lines = COALESCE(?8, history_lines) WHERE id = ?1",
	                           err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	if (m->display_name)
		rm_dbq_text(s, 2, m->display_name, -1);
	if (m->state)
		rm_dbq_text(s, 3, m->state, -1);
	if (m->config_json)
		rm_dbq_text(s, 4, m->config_json, -1);
	if (m->created_at > 0)
		rm_dbq_double(s, 5, m->created_at);
	if (m->heartbeat_at > 0)
		rm_dbq_double(s, 6, m->heartbeat_at);
	if (m->remote_last_step >= 0)
		rm_dbq_int(s, 7, m->remote_last_step);
	if (m->history_lines >= 0)
		rm_dbq_int(s, 8, m->history_lines);
	return run_once(st, s, err, "cannot update run");
}

int rm_store_sync_cursor(struct rm_store *st, int64_t run_id, int64_t *cursor, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st, "SELECT COALESCE(sync_cursor, 0) FROM runs WHERE id = ?1", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	*cursor = rm_dbq_step(s, err) == RM_DB_ROW ? rm_dbq_col_int(s, 0) : 0;
	return run_once(st, s, err, "cannot read sync cursor");
}

int rm_store_set_sync_cursor(struct rm_store *st, int64_t run_id, int64_t cursor, struct rm_err *err)
{
	struct rm_dbq *s = prepare(
	    st, "UPDATE runs SET sync_cursor = CASE WHEN sync_cursor > ?2 THEN sync_cursor ELSE ?2 END WHERE id = ?1",
	    err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, cursor);
	return run_once(st, s, err, "cannot set sync cursor");
}

int rm_store_load_cost(struct rm_store *st, int64_t run_id, int64_t since, size_t max_batches,
                       const struct rm_bucket_map *map, struct rm_store_cost *out, struct rm_err *err)
{
	enum { BLOCKS = 10 };
	memset(out, 0, sizeof(*out));
	int64_t lo, hi;
	size_t total = estimate_rows(st->db, "batches", run_id, since, &lo, &hi), cap = 0;
	out->stride = total > max_batches && max_batches ? (int64_t)((total + max_batches - 1) / max_batches) : 1;
	/* Ten evenly spaced blocks of consecutive steps: range scans on the
	 * primary key read only the sample. */
	struct rm_dbq *s;
	if (hi < lo)
		return RM_OK;
	s = prepare(st,
	            "SELECT b.step, b.bucket, b.n, b.min_len, b.max_len, b.tokens, b.padded_tokens,"
	            " COALESCE(s.runtime - (SELECT p.runtime FROM steps p WHERE p.run_id = ?1 AND p.step = b.step - 1),"
	            "          s.ts - (SELECT p.ts FROM steps p WHERE p.run_id = ?1 AND p.step = b.step - 1))"
	            " FROM batches b LEFT JOIN steps s ON s.run_id = b.run_id AND s.step = b.step"
	            " WHERE b.run_id = ?1 AND b.step >= ?2 AND b.step < ?3 ORDER BY b.step, b.rank, b.micro",
	            err);
	if (!s)
		return RM_E_STORE;
	int64_t span = hi - lo + 1, width = out->stride > 1 ? span / out->stride / BLOCKS + 1 : span;
	int rc = RM_DB_DONE;
	for (int blk = 0; blk < (out->stride > 1 ? BLOCKS : 1) && rc == RM_DB_DONE; blk++) {
		int64_t a = lo + (int64_t)((double)span / BLOCKS * blk); /* span may be near 2^62 (fuzz_diagnose) */
		rm_dbq_reset(s);
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, out->stride > 1 ? a : lo);
		rm_dbq_int(s, 3, out->stride > 1 ? a + width : hi + 1);
		while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
			int64_t step = rm_dbq_col_int(s, 0);
			double v[6];
			for (int i = 0; i < 6; i++)
				v[i] = col_opt(s, 2 + i);
			int bucket = map->derived           ? rm_bucket_map_of_length(map, v[2]) /* v[2]: max_len */
			             : !rm_dbq_isnull(s, 1) ? rm_bucket_map_dense(map, rm_dbq_col_int(s, 1))
			                                    : -1;
			size_t i = out->nb;
			if (i > 0 && out->step[i - 1] == step) { /* another rank: add its sequences */
				i--;
				out->n[i] += v[0];
				out->min_len[i] = fmin(out->min_len[i], v[1]);
				out->max_len[i] = fmax(out->max_len[i], v[2]);
				out->tokens[i] += v[3];
				out->padded[i] += v[4];
				continue;
			}
			if (out->nb == cap) {
				cap = cap ? cap * 2 : 4096;
				GROW(out->step, cap);
				GROW(out->bucket, cap);
				GROW(out->n, cap);
				GROW(out->min_len, cap);
				GROW(out->max_len, cap);
				GROW(out->tokens, cap);
				GROW(out->padded, cap);
				GROW(out->dt, cap);
			}
			out->step[i] = step;
			out->bucket[i] = bucket;
			out->n[i] = v[0];
			out->min_len[i] = v[1];
			out->max_len[i] = v[2];
			out->tokens[i] = v[3];
			out->padded[i] = v[4];
			out->dt[i] = v[5];
			out->nb++;
		}
	}
	rm_dbq_finalize(s);
	if (rc != RM_DB_DONE) {
		rm_store_cost_release(out);
		return db_err(st, err, "cannot load batch statistics");
	}
	return RM_OK;
}

void rm_store_cost_release(struct rm_store_cost *c)
{
	free(c->step);
	free(c->bucket);
	free(c->n);
	free(c->min_len);
	free(c->max_len);
	free(c->tokens);
	free(c->padded);
	free(c->dt);
	memset(c, 0, sizeof(*c));
}

int rm_store_replace_levels(struct rm_store *st, int64_t run_id, const struct rm_bucket_map *map, const int *bucket,
                            const double *shift, const double *level, int k, int log_scale, struct rm_err *err)
{
	int rc = rm_store_begin(st, err);
	if (rc)
		return rc;
	struct rm_dbq *s = prepare(st, "DELETE FROM bucket_levels WHERE run_id = ?1", err);
	if (!s)
		goto fail;
	rm_dbq_int(s, 1, run_id);
	if (run_once(st, s, err, "cannot replace bucket levels"))
		goto fail;
	/* One row per stored id: a grouped bucket's level goes to each of its labels. */
	for (size_t r = 0; r < map->nraw; r++) {
		int i = 0;
		while (i < k && bucket[i] != map->dense[r])
			i++;
		if (i == k)
			continue;
		s = prepare(
		    st, "INSERT INTO bucket_levels(run_id, bucket, scale, shift, level) VALUES (?1, ?2, ?3, ?4, ?5)",
		    err);
		if (!s)
			goto fail;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, map->raw[r]);
		rm_dbq_text(s, 3, log_scale ? "log" : "linear", -1);
		rm_dbq_double(s, 4, shift[i]);
		rm_dbq_double(s, 5, level[i]);
		if (run_once(st, s, err, "cannot write bucket level"))
			goto fail;
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

int rm_store_replace_length(struct rm_store *st, int64_t run_id, const struct rm_length_fit *f, struct rm_err *err)
{
	int rc = rm_store_begin(st, err);
	if (rc)
		return rc;
	static const char *const clear[] = {"DELETE FROM length_levels WHERE run_id = ?1",
	                                    "DELETE FROM length_factors WHERE run_id = ?1"};
	struct rm_dbq *s;
	for (size_t i = 0; i < 2; i++) {
		if (!(s = prepare(st, clear[i], err)))
			goto fail;
		rm_dbq_int(s, 1, run_id);
		if (run_once(st, s, err, "cannot replace the length effect"))
			goto fail;
	}
	if (!f->ok || !(f->min_len > 0 && f->max_len >= f->min_len && isfinite(f->max_len) && f->ref_len > 0))
		return rm_store_commit(st, err);
	if (!(s = prepare(
	          st, "INSERT INTO length_levels(run_id, scale, slope, ref_len, r2) VALUES (?1, ?2, ?3, ?4, ?5)", err)))
		goto fail;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, f->log_scale ? "log" : "linear", -1);
	rm_dbq_double(s, 3, f->slope);
	rm_dbq_double(s, 4, f->ref_len);
	rm_dbq_double(s, 5, f->r2);
	if (run_once(st, s, err, "cannot write the length effect"))
		goto fail;
	/* Bins 1% wide from just below the shortest length past the longest;
	 * wider when the range is absurd (a corrupt length of 1e300 would
	 * otherwise write 70,000 rows), so there are never more than 2000. */
	double ratio = exp(fmax(log(1.01), (log(f->max_len) - log(f->min_len)) / 2000));
	for (double lo = f->min_len / ratio; lo < f->max_len; lo *= ratio) {
		double hi = lo * ratio, mid = log(sqrt(lo) * sqrt(hi) / f->ref_len);
		if (!(s = upsert(st, UP_FACTOR, err)))
			goto fail;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_double(s, 2, lo);
		rm_dbq_double(s, 3, hi);
		rm_dbq_double(s, 4, f->log_scale ? exp(f->slope * mid) : f->slope * mid);
		if (run(st, s, err, "cannot write the length effect"))
			goto fail;
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

int rm_store_alert_sent(struct rm_store *st, const char *fingerprint, const char *channel, int *severity,
                        struct rm_err *err)
{
	struct rm_dbq *s = prepare(st,
	                           "SELECT COALESCE(MAX(CASE severity WHEN 'info' THEN 1 WHEN 'warn' THEN 2"
	                           " WHEN 'critical' THEN 3 END), 0) FROM alerts"
	                           " WHERE fingerprint = ?1 AND channel = ?2 AND status = 'sent'",
	                           err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, fingerprint, -1);
	rm_dbq_text(s, 2, channel, -1);
	*severity = rm_dbq_step(s, err) == RM_DB_ROW ? (int)rm_dbq_col_int(s, 0) : 0;
	return run_once(st, s, err, "cannot read the alert log");
}

int rm_store_log_alert(struct rm_store *st, const char *fingerprint, const char *channel, const char *severity,
                       const char *status, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st,
	                           "INSERT INTO alerts(fingerprint, channel, severity, sent_at, status)"
	                           " VALUES (?1, ?2, ?3, ?4, ?5)",
	                           err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, fingerprint, -1);
	rm_dbq_text(s, 2, channel, -1);
	rm_dbq_text(s, 3, severity, -1);
	rm_dbq_double(s, 4, (double)time(NULL));
	rm_dbq_text(s, 5, status, -1);
	return run_once(st, s, err, "cannot log alert");
}

int rm_store_bucket_text_id(struct rm_store *st, int64_t run_id, const char *label, int64_t *id, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st, "SELECT bucket FROM bucket_labels WHERE run_id = ?1 AND label = ?2", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, label, -1);
	int rc = rm_dbq_step(s, err);
	if (rc == RM_DB_ROW)
		*id = rm_dbq_col_int(s, 0);
	rm_dbq_finalize(s);
	if (rc == RM_DB_ROW)
		return RM_OK;
	if (rc != RM_DB_DONE)
		return db_err(st, err, "cannot read bucket labels");
	s = prepare(st,
	            "INSERT INTO bucket_labels(run_id, bucket, label)"
	            " SELECT CAST(?1 AS BIGINT), COALESCE(MAX(bucket) + 1, CAST(?3 AS BIGINT)), CAST(?2 AS TEXT)"
	            " FROM bucket_labels WHERE run_id = ?1 RETURNING bucket",
	            err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, label, -1);
	rm_dbq_int(s, 3, RM_BUCKET_TEXT_ID);
	rc = rm_dbq_step(s, err);
	if (rc == RM_DB_ROW)
		*id = rm_dbq_col_int(s, 0);
	if (rc == RM_DB_ROW)
		rc = rm_dbq_step(s, err);
	rm_dbq_finalize(s);
	return rc == RM_DB_DONE ? RM_OK : db_err(st, err, "cannot write bucket label");
}

int rm_store_tail_get(struct rm_store *st, const char *path, struct rm_tail_pos *pos, int *found, struct rm_err *err)
{
	struct rm_dbq *s = prepare(st, "SELECT dev, ino, \"offset\", lineno, run_id FROM tails WHERE path = ?1", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, path, -1);
	memset(pos, 0, sizeof(*pos));
	*found = rm_dbq_step(s, err) == RM_DB_ROW;
	if (*found) {
		pos->dev = (uint64_t)rm_dbq_col_int(s, 0);
		pos->ino = (uint64_t)rm_dbq_col_int(s, 1);
		pos->offset = (uint64_t)rm_dbq_col_int(s, 2);
		pos->lineno = (uint64_t)rm_dbq_col_int(s, 3);
		pos->run_id = rm_dbq_col_int(s, 4);
	}
	return run_once(st, s, err, "cannot read the sidecar position");
}

int rm_store_tail_put(struct rm_store *st, const char *path, int64_t run_id, const struct rm_tail_pos *pos,
                      struct rm_err *err)
{
	struct rm_dbq *s =
	    prepare(st,
	            "INSERT INTO tails(path, run_id, dev, ino, \"offset\", lineno, updated_at)"
	            " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(path) DO UPDATE SET"
	            " run_id = excluded.run_id, dev = excluded.dev, ino = excluded.ino,"
	            " \"offset\" = excluded.\"offset\", lineno = excluded.lineno, updated_at = excluded.updated_at",
	            err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, path, -1);
	rm_dbq_int(s, 2, run_id);
	rm_dbq_int(s, 3, (int64_t)pos->dev);
	rm_dbq_int(s, 4, (int64_t)pos->ino);
	rm_dbq_int(s, 5, (int64_t)pos->offset);
	rm_dbq_int(s, 6, (int64_t)pos->lineno);
	rm_dbq_double(s, 7, (double)time(NULL));
	return run_once(st, s, err, "cannot save the sidecar position");
}

/* ---- What reports saw (changes since the last report) -------------------- */

int rm_store_put_report(struct rm_store *st, double generated, const struct rm_seen *seen, struct rm_err *err)
{
	int rc;
	if ((rc = rm_store_begin(st, err)))
		return rc;
	struct rm_dbq *s = prepare(st, "INSERT INTO reports(generated_at) VALUES (?1) RETURNING id", err);
	int64_t id;
	if (!s)
		goto fail;
	rm_dbq_double(s, 1, generated);
	rc = run_int(st, s, &id, err, "cannot keep the report");
	rm_dbq_finalize(s);
	if (rc)
		goto fail;
	for (size_t i = 0; i < seen->n; i++) {
		const struct rm_seen_run *r = &seen->runs[i];
		if (!(s = prepare(
		          st,
		          "INSERT INTO report_runs(report_id, run, severity, verdict, last_step)"
		          " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(run, report_id) DO UPDATE SET"
		          " severity = excluded.severity, verdict = excluded.verdict, last_step = excluded.last_step",
		          err)))
			goto fail;
		rm_dbq_int(s, 1, id);
		rm_dbq_text(s, 2, r->run, -1);
		rm_dbq_text(s, 3, rm_severity_name(r->severity), -1);
		rm_dbq_text(s, 4, r->verdict, -1);
		if (r->last_step >= 0)
			rm_dbq_int(s, 5, r->last_step);
		if (run_once(st, s, err, "cannot keep the report's runs"))
			goto fail;
		for (size_t j = 0; j < r->nf; j++) {
			if (!(s = prepare(
			          st,
			          "INSERT INTO report_findings(report_id, run, detector, severity, first_step)"
			          " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(run, report_id, detector) DO UPDATE SET"
			          " severity = excluded.severity, first_step = excluded.first_step",
			          err)))
				goto fail;
			rm_dbq_int(s, 1, id);
			rm_dbq_text(s, 2, r->run, -1);
			rm_dbq_text(s, 3, r->f[j].detector, -1);
			rm_dbq_text(s, 4, rm_severity_name(r->f[j].severity), -1);
			if (r->f[j].first_step >= 0)
				rm_dbq_int(s, 5, r->f[j].first_step);
			if (run_once(st, s, err, "cannot keep the report's findings"))
				goto fail;
		}
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

static enum rm_severity col_severity(struct rm_dbq *s, int i)
{
	const char *t = rm_dbq_col_text(s, i);
	enum rm_severity sev = RM_SEV_NONE;
	if (t)
		rm_severity_parse(t, &sev); /* "none" and anything unknown: none */
	return sev;
}

int rm_store_get_seen(struct rm_store *st, const char *const *runs, size_t n, double cutoff, struct rm_seen *out,
                      double *latest, struct rm_err *err)
{
	struct rm_dbq *r = prepare(st,
	                           "SELECT rr.report_id, p.generated_at, rr.severity, rr.verdict, rr.last_step"
	                           " FROM report_runs rr JOIN reports p ON p.id = rr.report_id"
	                           " WHERE rr.run = ?1 AND p.generated_at <= ?2"
	                           " ORDER BY p.generated_at DESC, p.id DESC LIMIT 1",
	                           err),
	              *f = prepare(st,
	                           "SELECT detector, severity, first_step FROM report_findings"
	                           " WHERE run = ?1 AND report_id = ?2 ORDER BY detector",
	                           err),
	              *t = prepare(st, "SELECT MAX(generated_at) FROM reports WHERE generated_at <= ?1", err);
	int rc = r && f && t ? RM_OK : RM_E_STORE;
	for (size_t i = 0; !rc && i < n; i++) {
		rm_dbq_text(r, 1, runs[i], -1);
		rm_dbq_double(r, 2, cutoff);
		int step = rm_dbq_step(r, err);
		if (step == RM_DB_ROW) {
			const char *verdict = rm_dbq_col_text(r, 3);
			struct rm_seen_run *sr =
			    rm_seen_push(out, runs[i], col_severity(r, 2), verdict ? verdict : "",
			                 rm_dbq_isnull(r, 4) ? -1 : rm_dbq_col_int(r, 4), rm_dbq_col_double(r, 1));
			rm_dbq_text(f, 1, runs[i], -1);
			rm_dbq_int(f, 2, rm_dbq_col_int(r, 0));
			while ((step = rm_dbq_step(f, err)) == RM_DB_ROW)
				rm_seen_push_finding(sr, rm_dbq_col_text(f, 0), col_severity(f, 1),
				                     rm_dbq_isnull(f, 2) ? -1 : rm_dbq_col_int(f, 2));
			rm_dbq_reset(f);
		}
		if (step != RM_DB_DONE)
			rc = db_err(st, err, "cannot read earlier reports");
		rm_dbq_reset(r);
	}
	if (!rc) {
		rm_dbq_double(t, 1, cutoff);
		if (rm_dbq_step(t, err) != RM_DB_ROW)
			rc = db_err(st, err, "cannot read earlier reports");
		else
			*latest = rm_dbq_col_double(t, 0); /* NULL: 0 */
	}
	rm_dbq_finalize(r);
	rm_dbq_finalize(f);
	rm_dbq_finalize(t);
	return rc;
}
