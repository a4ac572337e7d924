/*
 * db.c - the driver's dispatcher: each call goes to the engine the
 * connection was opened on, SQLite (db_sqlite.c) or PostgreSQL
 * (db_pg.c). The engines never call each other or back into here; the
 * per-row calls (bind, step, read a column) are inline in db.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "runmon/store.h"
#include "store_internal.h"

int rm_db_fail(struct rm_db *db, struct rm_err *err, const char *what)
{
	return db->pg ? rm_pgdb_fail(db, err, what) : rm_litedb_fail(db, err, what);
}

int rm_db_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what)
{
	return db->pg ? rm_pgdb_exec(db, sql, err, what) : rm_litedb_exec(db, sql, err, what);
}

int rm_db_schema_version(struct rm_db *db)
{
	return db->pg ? rm_pgdb_schema_version(db) : rm_litedb_schema_version(db);
}

int rm_db_latest_version(const struct rm_db *db)
{
	return db->pg ? rm_pgdb_latest_version() : rm_litedb_latest_version();
}

int rm_db_open(struct rm_db **out, const char *spec, int max_version, unsigned flags, struct rm_err *err)
{
	struct rm_db *db = rm_xcalloc(1, sizeof(*db));
	int rc;
	*out = NULL;
	db->spec = rm_xstrdup(spec);
	rm_db_redact(spec, db->name, sizeof(db->name));
	if (!*spec)
		rc = rm_err_set(err, RM_E_USAGE, "an empty database path (--db or RUNMON_DB)");
	else if (rm_db_is_postgres(spec))
		rc = rm_pgdb_open(db, max_version, flags, err);
	else
		rc = rm_litedb_open(db, max_version, flags, err);
	if (rc) {
		rm_db_close(db);
		return rc;
	}
	*out = db;
	return RM_OK;
}

int rm_db_open_again(struct rm_db *db, struct rm_db **out, struct rm_err *err)
{
	return rm_db_open(out, db->spec, rm_db_latest_version(db), RM_DB_READ_ONLY, err);
}

void rm_db_close(struct rm_db *db)
{
	if (!db)
		return;
	if (db->pg)
		rm_pgdb_close(db);
	else
		rm_litedb_close(db);
	free(db->spec);
	free(db);
}

int rm_db_begin(struct rm_db *db, struct rm_err *err)
{
	return db->pg ? rm_pgdb_exec(db, "BEGIN", err, "cannot start transaction")
	              : rm_litedb_exec(db, "BEGIN IMMEDIATE", err, "cannot start transaction");
}

int rm_db_commit(struct rm_db *db, struct rm_err *err)
{
	return db->pg ? rm_pgdb_commit(db, err) : rm_litedb_exec(db, "COMMIT", err, "cannot commit");
}

void rm_db_rollback(struct rm_db *db)
{
	if (db->pg)
		rm_pgdb_rollback(db);
	else
		rm_litedb_rollback(db);
}

int rm_db_data_version(struct rm_db *db, int64_t *v, struct rm_err *err)
{
	return db->pg ? rm_pgdb_data_version(db, v, err) : rm_litedb_data_version(db, v, err);
}

int rm_db_lock_run(struct rm_db *db, int64_t run_id, void (*wait)(void *arg, const char *holder), void *arg,
                   struct rm_err *err)
{
	return db->pg ? rm_pgdb_lock_run(db, run_id, wait, arg, err) : RM_OK;
}

struct rm_dbq *rm_dbq_prepare(struct rm_db *db, const char *sql, unsigned flags, struct rm_err *err)
{
	struct rm_dbq *q = rm_xcalloc(1, sizeof(*q));
	q->db = db;
	if (db->pg)
		q->p = rm_pgq_prepare(db, sql, flags, err);
	else
		q->s = rm_liteq_prepare(db, sql, err);
	if (!q->s && !q->p) {
		free(q);
		return NULL;
	}
	return q;
}

void rm_dbq_finalize(struct rm_dbq *q)
{
	if (!q)
		return;
	sqlite3_finalize(q->s);
	rm_pgq_finalize(q->p);
	free(q);
}

struct rm_dbq *rm_dbq_upsert(struct rm_db *db, const char *table, const char *const *cols, int ncols, int nkeys,
                             struct rm_err *err)
{
	struct rm_dbq *q = rm_xcalloc(1, sizeof(*q));
	q->db = db;
	if (db->pg)
		q->p = rm_pgq_stage(db, table, cols, ncols, nkeys, err);
	else
		q->s = rm_liteq_upsert(db, table, cols, ncols, nkeys, err);
	if (!q->s && !q->p) {
		free(q);
		return NULL;
	}
	return q;
}

void rm_dbq_text(struct rm_dbq *q, int i, const char *v, int n)
{
	if (!v) {
		q->s ? (void)sqlite3_bind_null(q->s, i) : rm_pgq_bind_null(q->p, i);
		return;
	}
	size_t len = n < 0 ? strlen(v) : (size_t)n, at = 0, c;
	while (at < len && (c = rm_utf8_len((const unsigned char *)v + at, len - at)))
		at += c;
	char *copy = NULL, *fixed = NULL;
	if (at < len) { /* not UTF-8 throughout */
		copy = rm_xstrndup(v, len);
		v = fixed = rm_utf8_fix(copy);
		n = -1;
	}
	q->s ? (void)sqlite3_bind_text(q->s, i, v, n, SQLITE_TRANSIENT) : rm_pgq_bind_text(q->p, i, v, n);
	free(copy);
	free(fixed);
}
