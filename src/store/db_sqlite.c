/*
 * db_sqlite.c - the driver on SQLite: a file opened in WAL mode with a
 * busy timeout, so `watch` writes while `diagnose` and Grafana read;
 * migrations counted by PRAGMA user_version. Foreign keys are declared in
 * sql/ but not enforced: every writer creates the run first, and the
 * per-row parent lookup would cost ~8% of an import; deleting a run
 * deletes its rows explicitly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "runmon/pg.h"
#include "store_internal.h"

int rm_db_fail(struct rm_db *db, struct rm_err *err, const char *what)
{
	if (db->pg)
		return rm_pgdb_fail(db, err, what);
	return rm_err_set(err, RM_E_STORE, "%s in database '%s': %s", what, db->name, sqlite3_errmsg(db->lite));
}

static int lite_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what)
{
	char *msg = NULL;
	if (sqlite3_exec(db->lite, sql, NULL, NULL, &msg) == SQLITE_OK)
		return RM_OK;
	rm_err_set(err, RM_E_STORE, "%s in database '%s': %s", what, db->name, msg ? msg : sqlite3_errmsg(db->lite));
	sqlite3_free(msg);
	return RM_E_STORE;
}

int rm_db_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what)
{
	return db->pg ? rm_pgdb_exec(db, sql, err, what) : lite_exec(db, sql, err, what);
}

/* The integer a one-row query answers, or -1 when it cannot be read. */
static int query_int(struct rm_db *db, const char *sql)
{
	sqlite3_stmt *s;
	int v = -1;
	if (sqlite3_prepare_v2(db->lite, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

int rm_db_schema_version(struct rm_db *db)
{
	return db->pg ? rm_pgdb_schema_version(db) : query_int(db, "PRAGMA user_version");
}

int rm_db_latest_version(const struct rm_db *db)
{
	return db->pg ? rm_pg_migrations[rm_pg_migrations_count - 1].version
	              : rm_migrations[rm_migrations_count - 1].version;
}

/* Applies each migration newer than the database in its own transaction,
 * so a failed step leaves the database at the previous version. */
static int migrate(struct rm_db *db, int max_version, struct rm_err *err)
{
	int rc;
	if ((rc = lite_exec(db, "BEGIN IMMEDIATE", err, "cannot lock for migration")))
		return rc;
	int v = rm_db_schema_version(db), latest = rm_db_latest_version(db);
	if (v < 0) {
		rc = rm_db_fail(db, err, "cannot read schema version");
		goto fail;
	}
	if (v > latest) {
		rc = rm_err_set(err, RM_E_STORE,
		                "database '%s' has schema version %d, newer than this runmon knows (%d)", db->name, v,
		                latest);
		goto fail;
	}
	for (int i = 0; i < rm_migrations_count; i++) {
		const struct rm_migration *m = &rm_migrations[i];
		if (m->version <= v || m->version > max_version)
			continue;
		char what[128], pragma[64];
		snprintf(what, sizeof(what), "migration %s failed", m->name);
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", m->version);
		if ((rc = lite_exec(db, m->sql, err, what)) ||
		    (rc = lite_exec(db, pragma, err, "cannot set schema version")))
			goto fail;
	}
	return lite_exec(db, "COMMIT", err, "cannot commit migration");
fail:
	sqlite3_exec(db->lite, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static int lite_open(struct rm_db *db, int max_version, unsigned flags, struct rm_err *err)
{
	/* NOMUTEX: a handle is used by one thread at a time (the importer's
	 * writer thread takes it over while the reader waits), so SQLite's
	 * per-call mutex is pure cost (~8% of an import). */
	int oflags = SQLITE_OPEN_NOMUTEX | (flags & RM_DB_READ_ONLY    ? SQLITE_OPEN_READONLY
	                                    : flags & RM_DB_MUST_EXIST ? SQLITE_OPEN_READWRITE
	                                                               : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	if (sqlite3_open_v2(db->spec, &db->lite, oflags, NULL) != SQLITE_OK) {
		if (db->lite && sqlite3_errcode(db->lite) == SQLITE_CANTOPEN && (flags & RM_DB_MUST_EXIST))
			return rm_err_set(err, RM_E_NOTFOUND, "no database at '%s' (import or sync a run first)",
			                  db->name);
		return rm_err_set(err, RM_E_STORE, "cannot open database '%s': %s", db->name,
		                  db->lite ? sqlite3_errmsg(db->lite) : "out of memory");
	}
	sqlite3_busy_timeout(db->lite, 10000);
	sqlite3_extended_result_codes(db->lite, 1);
	if (flags & RM_DB_READ_ONLY)
		return RM_OK;
	/* Before anything writes (WAL, migrations): another program's database
	 * is never touched. Schema version 0 with objects is not runmon's, which
	 * sets the version in the transaction that creates its tables. */
	int objects = query_int(db, "SELECT COUNT(*) FROM sqlite_schema"), version = rm_db_schema_version(db);
	if (objects < 0)
		return rm_db_fail(db, err, "cannot open");
	if (version == 0 && objects > 0)
		return rm_err_set(err, RM_E_STORE,
		                  "'%s' is not a runmon database (it holds %d tables or indexes of another program);"
		                  " give another --db",
		                  db->name, objects);
	if (sqlite3_db_readonly(db->lite, "main") == 1) {
		db->readonly = 1;
		if (version < max_version)
			return rm_err_set(err, RM_E_STORE,
			                  "database '%s' is read-only and at schema version %d; this runmon needs %d",
			                  db->name, version, max_version);
		return RM_OK;
	}
	int rc;
	/* journal_mode answers with a row; running it catches "not a database". */
	if ((rc = lite_exec(db, "PRAGMA journal_mode = WAL", err, "cannot open")) ||
	    (rc = lite_exec(db,
	                    "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
	                    " PRAGMA cache_size = -8192; PRAGMA temp_store = MEMORY",
	                    err, "cannot configure")))
		return rc;
	return migrate(db, max_version, err);
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
		rc = lite_open(db, max_version < rm_db_latest_version(db) ? max_version : rm_db_latest_version(db),
		               flags, err);
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
	sqlite3_close(db->lite);
	free(db->spec);
	free(db);
}

int rm_db_begin(struct rm_db *db, struct rm_err *err)
{
	return db->pg ? rm_pgdb_exec(db, "BEGIN", err, "cannot start transaction")
	              : lite_exec(db, "BEGIN IMMEDIATE", err, "cannot start transaction");
}

int rm_db_commit(struct rm_db *db, struct rm_err *err)
{
	return db->pg ? rm_pgdb_commit(db, err) : lite_exec(db, "COMMIT", err, "cannot commit");
}

void rm_db_rollback(struct rm_db *db)
{
	if (db->pg)
		rm_pgdb_rollback(db);
	else if (!sqlite3_get_autocommit(db->lite))
		sqlite3_exec(db->lite, "ROLLBACK", NULL, NULL, NULL);
}

int rm_db_data_version(struct rm_db *db, int64_t *v, struct rm_err *err)
{
	if (db->pg)
		return rm_pgdb_data_version(db, v, err);
	struct rm_dbq *q = rm_dbq_prepare(db, "PRAGMA data_version", 0, err);
	if (!q)
		return RM_E_STORE;
	int rc = rm_dbq_step(q, err);
	*v = rc == RM_DB_ROW ? rm_dbq_col_int(q, 0) : 0;
	rm_dbq_finalize(q);
	return rc < 0 ? -rc : RM_OK;
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
	else if (sqlite3_prepare_v3(db->lite, sql, -1, SQLITE_PREPARE_PERSISTENT, &q->s, NULL) != SQLITE_OK)
		rm_db_fail(db, err, "cannot prepare statement");
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
	if (db->pg) {
		struct rm_dbq *q = rm_xcalloc(1, sizeof(*q));
		q->db = db;
		if (!(q->p = rm_pgq_stage(db, table, cols, ncols, nkeys, err))) {
			free(q);
			return NULL;
		}
		return q;
	}
	char sql[1024];
	size_t k = 0;
#define ADD(...) (k += (size_t)snprintf(sql + k, k < sizeof(sql) ? sizeof(sql) - k : 0, __VA_ARGS__))
	ADD("INSERT INTO %s(", table);
	for (int i = 0; i < ncols; i++)
		ADD("%s%s", i ? ", " : "", cols[i]);
	ADD(") VALUES (");
	for (int i = 0; i < ncols; i++)
		ADD("%s?%d", i ? ", " : "", i + 1);
	ADD(") ON CONFLICT(");
	for (int i = 0; i < nkeys; i++)
		ADD("%s%s", i ? ", " : "", cols[i]);
	ADD(") DO UPDATE SET ");
	for (int i = nkeys; i < ncols; i++)
		ADD("%s%s = excluded.%s", i > nkeys ? ", " : "", cols[i], cols[i]);
#undef ADD
	if (k >= sizeof(sql)) {
		rm_err_set(err, RM_E_STORE, "an upsert into %s too long to write (runmon's own bug)", table);
		return NULL;
	}
	return rm_dbq_prepare(db, sql, 0, err);
}
