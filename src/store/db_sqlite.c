/*
 * db_sqlite.c - the SQLite engine under the driver (db.c dispatches): a file opened in WAL mode with a
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
#include "runmon/store.h"
#include "store_internal.h"

/* A file that is no SQLite database at all gets a sentence of its own, not
 * "cannot open in database 'x': file is not a database". */
static int not_a_database(struct rm_db *db, struct rm_err *err)
{
	return rm_err_set(err, RM_E_STORE, "'%s' is not an SQLite database; give another --db", db->name);
}

int rm_litedb_fail(struct rm_db *db, struct rm_err *err, const char *what)
{
	if ((sqlite3_errcode(db->lite) & 0xff) == SQLITE_NOTADB)
		return not_a_database(db, err);
	return rm_err_set(err, RM_E_STORE, "%s in database '%s': %s", what, db->name, sqlite3_errmsg(db->lite));
}

int rm_litedb_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what)
{
	char *msg = NULL;
	if (sqlite3_exec(db->lite, sql, NULL, NULL, &msg) == SQLITE_OK)
		return RM_OK;
	if ((sqlite3_errcode(db->lite) & 0xff) == SQLITE_NOTADB) {
		sqlite3_free(msg);
		return not_a_database(db, err);
	}
	rm_err_set(err, RM_E_STORE, "%s in database '%s': %s", what, db->name, msg ? msg : sqlite3_errmsg(db->lite));
	sqlite3_free(msg);
	return RM_E_STORE;
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

int rm_litedb_schema_version(struct rm_db *db)
{
	return query_int(db, "PRAGMA user_version");
}

int rm_litedb_latest_version(void)
{
	return rm_migrations[rm_migrations_count - 1].version;
}

/* Applies each migration newer than the database in its own transaction,
 * so a failed step leaves the database at the previous version. */
static int migrate(struct rm_db *db, int max_version, struct rm_err *err)
{
	int rc;
	if ((rc = rm_litedb_exec(db, "BEGIN IMMEDIATE", err, "cannot lock for migration")))
		return rc;
	int v = rm_litedb_schema_version(db), latest = rm_litedb_latest_version();
	if (v < 0) {
		rc = rm_litedb_fail(db, err, "cannot read schema version");
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
		if ((rc = rm_litedb_exec(db, m->sql, err, what)) ||
		    (rc = rm_litedb_exec(db, pragma, err, "cannot set schema version")))
			goto fail;
	}
	return rm_litedb_exec(db, "COMMIT", err, "cannot commit migration");
fail:
	sqlite3_exec(db->lite, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* What configure returns beyond the store's codes: the file answered BUSY
 * (try again), or it is read-only and at the version needed (use it). */
enum { OPEN_BUSY = -100, OPEN_READ_ONLY = -101 };

/* rc, or OPEN_BUSY when the last call failed because another connection
 * held the file. */
static int busy(struct rm_db *db, int rc)
{
	int code = sqlite3_errcode(db->lite) & 0xff;
	return code == SQLITE_BUSY || code == SQLITE_LOCKED ? OPEN_BUSY : rc;
}

/* Checks the file is runmon's (or new) and sets WAL and the pragmas. */
static int configure(struct rm_db *db, int max_version, struct rm_err *err)
{
	/* Before anything writes (WAL, migrations): another program's database
	 * is never touched. Schema version 0 with objects is not runmon's, which
	 * sets the version in the transaction that creates its tables. */
	int objects = query_int(db, "SELECT COUNT(*) FROM sqlite_schema"), version = rm_litedb_schema_version(db);
	if (objects < 0 || version < 0)
		return busy(db, rm_litedb_fail(db, err, "cannot open"));
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
		return OPEN_READ_ONLY;
	}
	int rc;
	/* journal_mode answers with a row; running it catches "not a database". */
	if ((rc = rm_litedb_exec(db, "PRAGMA journal_mode = WAL", err, "cannot open")) ||
	    (rc = rm_litedb_exec(db,
	                         "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
	                         " PRAGMA cache_size = -8192; PRAGMA temp_store = MEMORY",
	                         err, "cannot configure")))
		return busy(db, rc);
	return RM_OK;
}

static int lite_open_at(struct rm_db *db, int max_version, unsigned flags, struct rm_err *err)
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
	/* Several processes may open a new file at once (four importers started
	 * together): while one turns on WAL it holds the file alone, and SQLite
	 * answers BUSY at once instead of waiting where a wait could deadlock
	 * (a read lock held while asking to write). Those first steps are
	 * retried as long as the busy timeout would have waited. */
	double give_up = rm_monotonic() + 10;
	int rc;
	/* RUNMON_TEST_OPEN_BUSY=N (tests only): the first N tries answer BUSY,
	 * as a file another process is turning to WAL does */
	const char *fake = getenv("RUNMON_TEST_OPEN_BUSY");
	long fake_busy = fake ? strtol(fake, NULL, 10) : 0;
	for (int delay = 2;; delay = delay < 64 ? delay * 2 : 64) {
		rc = fake_busy-- > 0 ? OPEN_BUSY : configure(db, max_version, err);
		if (rc != OPEN_BUSY)
			break;
		if (rm_monotonic() > give_up) {
			rc = rm_err_set(err, RM_E_STORE,
			                "database '%s' stayed busy for 10 s while opening (another process holds it)",
			                db->name);
			break;
		}
		sqlite3_sleep(delay);
	}
	if (rc == OPEN_READ_ONLY)
		return RM_OK;
	if (rc)
		return rc;
	return migrate(db, max_version, err);
}

int rm_litedb_open(struct rm_db *db, int max_version, unsigned flags, struct rm_err *err)
{
	return lite_open_at(db, max_version < rm_litedb_latest_version() ? max_version : rm_litedb_latest_version(),
	                    flags, err);
}

void rm_litedb_close(struct rm_db *db)
{
	sqlite3_close(db->lite);
}

void rm_litedb_rollback(struct rm_db *db)
{
	if (!sqlite3_get_autocommit(db->lite))
		sqlite3_exec(db->lite, "ROLLBACK", NULL, NULL, NULL);
}

int rm_litedb_data_version(struct rm_db *db, int64_t *v, struct rm_err *err)
{
	int got = query_int(db, "PRAGMA data_version");
	if (got < 0)
		return rm_litedb_fail(db, err, "cannot read the data version");
	*v = got;
	return RM_OK;
}

sqlite3_stmt *rm_liteq_prepare(struct rm_db *db, const char *sql, struct rm_err *err)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v3(db->lite, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
		rm_litedb_fail(db, err, "cannot prepare statement");
		sqlite3_finalize(s);
		return NULL;
	}
	return s;
}

sqlite3_stmt *rm_liteq_upsert(struct rm_db *db, const char *table, const char *const *cols, int ncols, int nkeys,
                              struct rm_err *err)
{
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
	return rm_liteq_prepare(db, sql, err);
}
