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
#include "runmon/model.h"
#include "runmon/common.h"
#include "store_internal.h"

static const char *const stmt_sql[ST_COUNT] = {
    [ST_RUN_FIND] = "SELECT id FROM runs WHERE entity = ?1 AND project = ?2 AND name = ?3",
    /* Two collectors may create the run at once: the second gets no row and looks again. */
    [ST_RUN_INSERT] = "INSERT INTO runs(source, entity, project, name) VALUES (?1, ?2, ?3, ?4)"
                      " ON CONFLICT(entity, project, name) DO NOTHING RETURNING id",
};
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
    [UP_RANK_LOSS] = {"rank_losses", 3, 4, {"run_id", "step", "rank", "loss"}},
    [UP_OTHER_LOSS] = {"other_losses", 3, 4, {"run_id", "key", "step", "loss"}},
};

int rm_st_fail(struct rm_store *st, struct rm_err *err, const char *what)
{
	return rm_db_fail(st->db, err, what);
}

struct rm_dbq *rm_st_stmt(struct rm_store *st, enum stmt_id id, struct rm_err *err)
{
	if (!st->stmt[id])
		st->stmt[id] = rm_dbq_prepare(st->db, stmt_sql[id], 0, err);
	return st->stmt[id];
}

struct rm_dbq *rm_st_upsert(struct rm_store *st, enum upsert_id id, struct rm_err *err)
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

/* Runs a bound statement to completion and resets it. */
int rm_st_run(struct rm_store *st, struct rm_dbq *s, struct rm_err *err, const char *what)
{
	int rc = rm_dbq_step(s, err);
	rm_dbq_reset(s);
	return rc < 0 ? rm_st_fail(st, err, what) : RM_OK;
}

/* The first column of the statement's first row into *v; 0 without a row. */
int rm_st_run_int(struct rm_store *st, struct rm_dbq *s, int64_t *v, struct rm_err *err, const char *what)
{
	int rc = rm_dbq_step(s, err);
	*v = rc == RM_DB_ROW ? rm_dbq_col_int(s, 0) : 0;
	while (rc == RM_DB_ROW)
		rc = rm_dbq_step(s, err);
	rm_dbq_reset(s);
	return rc < 0 ? rm_st_fail(st, err, what) : RM_OK;
}

/* Binds a value that may be missing (NULL) or NaN (NULL, flagged by caller). */
void rm_st_bind_opt(struct rm_dbq *s, int i, int have, double v)
{
	if (!have || isnan(v))
		rm_dbq_null(s, i);
	else
		rm_dbq_double(s, i, v);
}

/* Prepares a one-off statement; the caller finalizes it. */
struct rm_dbq *rm_st_prepare(struct rm_store *st, const char *sql, struct rm_err *err)
{
	return rm_dbq_prepare(st->db, sql, 0, err);
}

int rm_st_run_once(struct rm_store *st, struct rm_dbq *s, struct rm_err *err, const char *what)
{
	int rc = rm_dbq_step(s, err);
	int ok = rc == RM_DB_DONE || rc == RM_DB_ROW;
	if (!ok)
		rm_st_fail(st, err, what);
	rm_dbq_finalize(s);
	return ok ? RM_OK : RM_E_STORE;
}

int rm_store_data_version(struct rm_store *st, int64_t *v, struct rm_err *err)
{
	return rm_db_data_version(st->db, v, err);
}

char *rm_st_col_text(struct rm_dbq *s, int i)
{
	const char *t = rm_dbq_col_text(s, i);
	return t ? rm_utf8_fix(t) : NULL; /* names from file names may not be UTF-8 */
}

double rm_st_col_opt(struct rm_dbq *s, int i)
{
	return rm_dbq_isnull(s, i) ? NAN : rm_dbq_col_double(s, i);
}
