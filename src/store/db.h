/*
 * db.h - the store's driver: one SQL dialect over SQLite or PostgreSQL,
 * so that store.c is written once. The dialect is SQLite's as both
 * engines read it: ?N parameters (rewritten to $N for PostgreSQL),
 * INSERT ... ON CONFLICT ... DO UPDATE, RETURNING, CAST(x AS BIGINT |
 * DOUBLE PRECISION | TEXT), COALESCE; nothing engine-specific (no
 * PRAGMA, no rowid, no json_patch, no INSERT OR REPLACE).
 *
 * A statement binds, steps and reads columns as SQLite's API does. The
 * SQLite calls are inline, so a scan of 8M rows pays one predictable
 * branch per call; PostgreSQL's live in db_pg.c. Values bound are copied
 * (no lifetime to keep), and columns read stay valid until the next step.
 */
#ifndef RUNMON_DB_H
#define RUNMON_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"

struct rm_pgq;
struct rm_pgdb;

struct rm_db {
	char name[512]; /* for messages: the path, or the URI with its password redacted */
	char *spec;     /* what was opened, for a second connection */
	int readonly;   /* SQLite: the file cannot be written */
	sqlite3 *lite;  /* one of these two */
	struct rm_pgdb *pg;
};

struct rm_dbq {
	struct rm_db *db;
	sqlite3_stmt *s; /* SQLite; else p */
	struct rm_pgq *p;
};

/* Return values of rm_dbq_step. */
#define RM_DB_ROW  1
#define RM_DB_DONE 0

/* ---- Connections: db_sqlite.c and db_pg.c ------------------------------- */

/* Flags of rm_db_open. */
#define RM_DB_MUST_EXIST 1u /* SQLite: a missing file is RM_E_NOTFOUND */
#define RM_DB_READ_ONLY  2u /* a second connection that only reads */

/* Opens the database spec names (a path, or a postgresql:// URI),
 * migrated to max_version; *out is closed with rm_db_close. */
int rm_db_open(struct rm_db **out, const char *spec, int max_version, unsigned flags, struct rm_err *err);
/* Another connection to the same database, for reading on a second thread. */
int rm_db_open_again(struct rm_db *db, struct rm_db **out, struct rm_err *err);
void rm_db_close(struct rm_db *db);

int rm_db_schema_version(struct rm_db *db);
int rm_db_latest_version(const struct rm_db *db);

/* Runs SQL without parameters or rows (several statements on SQLite). */
int rm_db_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what);
int rm_db_begin(struct rm_db *db, struct rm_err *err);
int rm_db_commit(struct rm_db *db, struct rm_err *err);
void rm_db_rollback(struct rm_db *db);

/* A number that changes when another connection commits (watch rereads
 * the store then). On PostgreSQL it may change on this one's commits too. */
int rm_db_data_version(struct rm_db *db, int64_t *v, struct rm_err *err);

/* Sets err to "<what> in database '<name>': <the engine's message>". */
int rm_db_fail(struct rm_db *db, struct rm_err *err, const char *what);

/* Writers of one run take turns: on PostgreSQL a transaction-scoped
 * advisory lock keyed by the run's entity/project/name (`runmon copy`
 * takes the same), tried first so that a writer that must wait can be
 * told who holds it (wait(arg, holder) is called before waiting). On
 * SQLite a write transaction already excludes every other writer. */
int rm_db_lock_run(struct rm_db *db, int64_t run_id, void (*wait)(void *arg, const char *holder), void *arg,
                   struct rm_err *err);

/* ---- Statements ---------------------------------------------------------- */

/* A statement of one or more rows; NULL (err set) when it cannot be
 * prepared. RM_DBQ_STREAM: rows are read as they arrive (a long scan)
 * rather than held whole; no other statement may run on the connection
 * until it is done. */
#define RM_DBQ_STREAM 1u
struct rm_dbq *rm_dbq_prepare(struct rm_db *db, const char *sql, unsigned flags, struct rm_err *err);
void rm_dbq_finalize(struct rm_dbq *q);

/* An upsert: INSERT INTO table(cols) VALUES (?1...) whose first nkeys
 * columns are the conflict key, the others updated. On PostgreSQL the rows
 * are staged and land, COPY'd and upserted, before the connection's next
 * statement or commit (so errors may show there). */
struct rm_dbq *rm_dbq_upsert(struct rm_db *db, const char *table, const char *const *cols, int ncols, int nkeys,
                             struct rm_err *err);

/* ---- The SQLite engine (db_sqlite.c), for the calls above ----------------- */

int rm_litedb_open(struct rm_db *db, int max_version, unsigned flags, struct rm_err *err);
void rm_litedb_close(struct rm_db *db);
int rm_litedb_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what);
void rm_litedb_rollback(struct rm_db *db);
int rm_litedb_fail(struct rm_db *db, struct rm_err *err, const char *what);
int rm_litedb_schema_version(struct rm_db *db);
int rm_litedb_latest_version(void);
int rm_litedb_data_version(struct rm_db *db, int64_t *v, struct rm_err *err);
sqlite3_stmt *rm_liteq_prepare(struct rm_db *db, const char *sql, struct rm_err *err);
sqlite3_stmt *rm_liteq_upsert(struct rm_db *db, const char *table, const char *const *cols, int ncols, int nkeys,
                              struct rm_err *err);

/* ---- The PostgreSQL engine (db_pg.c), for the calls above ----------------- */

int rm_pgdb_open(struct rm_db *db, int max_version, unsigned flags, struct rm_err *err);
void rm_pgdb_close(struct rm_db *db);
int rm_pgdb_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what);
void rm_pgdb_rollback(struct rm_db *db);
int rm_pgdb_commit(struct rm_db *db, struct rm_err *err);
int rm_pgdb_fail(struct rm_db *db, struct rm_err *err, const char *what);
int rm_pgdb_schema_version(struct rm_db *db);
int rm_pgdb_latest_version(void);
int rm_pgdb_data_version(struct rm_db *db, int64_t *v, struct rm_err *err);
int rm_pgdb_lock_run(struct rm_db *db, int64_t run_id, void (*wait)(void *arg, const char *holder), void *arg,
                     struct rm_err *err);
struct rm_pgq *rm_pgq_prepare(struct rm_db *db, const char *sql, unsigned flags, struct rm_err *err);
struct rm_pgq *rm_pgq_stage(struct rm_db *db, const char *table, const char *const *cols, int ncols, int nkeys,
                            struct rm_err *err);
void rm_pgq_finalize(struct rm_pgq *p);
int rm_pgq_step(struct rm_pgq *p, struct rm_err *err);
void rm_pgq_reset(struct rm_pgq *p);
void rm_pgq_bind_int(struct rm_pgq *p, int i, int64_t v);
void rm_pgq_bind_double(struct rm_pgq *p, int i, double v);
void rm_pgq_bind_text(struct rm_pgq *p, int i, const char *v, int n);
void rm_pgq_bind_blob(struct rm_pgq *p, int i, const void *v, size_t n);
void rm_pgq_bind_null(struct rm_pgq *p, int i);
int rm_pgq_null(struct rm_pgq *p, int i);
int64_t rm_pgq_int(struct rm_pgq *p, int i);
double rm_pgq_double(struct rm_pgq *p, int i);
const char *rm_pgq_text(struct rm_pgq *p, int i);
const void *rm_pgq_blob(struct rm_pgq *p, int i, size_t *n);

/* RM_DB_ROW, RM_DB_DONE, or an error (< 0, err set). */
static inline int rm_dbq_step(struct rm_dbq *q, struct rm_err *err)
{
	if (!q->s)
		return rm_pgq_step(q->p, err);
	int rc = sqlite3_step(q->s);
	return rc == SQLITE_ROW ? RM_DB_ROW : rc == SQLITE_DONE ? RM_DB_DONE : -rm_db_fail(q->db, err, "cannot run");
}

/* Ready to run again; the bindings are cleared (NULL). */
static inline void rm_dbq_reset(struct rm_dbq *q)
{
	if (!q->s)
		return rm_pgq_reset(q->p);
	sqlite3_reset(q->s);
	sqlite3_clear_bindings(q->s);
}

static inline void rm_dbq_int(struct rm_dbq *q, int i, int64_t v)
{
	q->s ? (void)sqlite3_bind_int64(q->s, i, v) : rm_pgq_bind_int(q->p, i, v);
}

static inline void rm_dbq_double(struct rm_dbq *q, int i, double v)
{
	q->s ? (void)sqlite3_bind_double(q->s, i, v) : rm_pgq_bind_double(q->p, i, v);
}

/* Text of n bytes, or up to its NUL when n < 0; NULL binds NULL. Bytes
 * that are not UTF-8 are stored as U+FFFD on both backends (PostgreSQL
 * refuses them; a key or run name from a Latin-1 log must not). */
void rm_dbq_text(struct rm_dbq *q, int i, const char *v, int n);

static inline void rm_dbq_blob(struct rm_dbq *q, int i, const void *v, size_t n)
{
	q->s ? (void)sqlite3_bind_blob(q->s, i, v, (int)n, SQLITE_TRANSIENT) : rm_pgq_bind_blob(q->p, i, v, n);
}

static inline void rm_dbq_null(struct rm_dbq *q, int i)
{
	q->s ? (void)sqlite3_bind_null(q->s, i) : rm_pgq_bind_null(q->p, i);
}

static inline int rm_dbq_isnull(struct rm_dbq *q, int i)
{
	return q->s ? sqlite3_column_type(q->s, i) == SQLITE_NULL : rm_pgq_null(q->p, i);
}

static inline int64_t rm_dbq_col_int(struct rm_dbq *q, int i)
{
	return q->s ? sqlite3_column_int64(q->s, i) : rm_pgq_int(q->p, i);
}

static inline double rm_dbq_col_double(struct rm_dbq *q, int i)
{
	return q->s ? sqlite3_column_double(q->s, i) : rm_pgq_double(q->p, i);
}

/* NULL for NULL. */
static inline const char *rm_dbq_col_text(struct rm_dbq *q, int i)
{
	return q->s ? (const char *)sqlite3_column_text(q->s, i) : rm_pgq_text(q->p, i);
}

/* NULL with *n 0 for NULL or empty. */
static inline const void *rm_dbq_col_blob(struct rm_dbq *q, int i, size_t *n)
{
	if (!q->s)
		return rm_pgq_blob(q->p, i, n);
	const void *b = sqlite3_column_blob(q->s, i);
	*n = (size_t)sqlite3_column_bytes(q->s, i);
	return b;
}

#endif
