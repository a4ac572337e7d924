/*
 * store_internal.h - what the store's own files share: the embedded
 * migrations (generated from sql/ at build time), the store's handle and
 * its statement helpers (store.c), and the copier's access to the
 * connections.
 */
#ifndef RUNMON_STORE_INTERNAL_H
#define RUNMON_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "runmon/store.h"

struct rm_migration {
	int version;      /* user_version after applying it */
	const char *name; /* file name without .sql */
	const char *sql;
};

extern const struct rm_migration rm_migrations[];
extern const int rm_migrations_count;
/* The same for PostgreSQL (sql/postgresql/). */
extern const struct rm_migration rm_pg_migrations[];
extern const int rm_pg_migrations_count;

/* Batch rows from which a run's batches are read in two halves at once
 * (default 2M); tests lower it to read small runs that way. */
extern size_t rm_store_split_rows;

/* The connections under the stores, for the copier that reads and writes
 * tables of either engine. */
struct sqlite3;
struct rm_store;
struct sqlite3 *rm_store_sqlite(struct rm_store *st);
struct pg_conn;
struct rm_pg;
struct pg_conn *rm_pg_conn(struct rm_pg *pg);

/* ---- the store's handle and helpers (store.c) ---------------------------- */

enum stmt_id { ST_RUN_FIND, ST_RUN_INSERT, ST_COUNT };

/* The upserts of an import (and the length effect's table of up to 2000
 * rows), keyed by their first columns. */
enum upsert_id { UP_STEP, UP_BATCH, UP_EVAL, UP_FACTOR, UP_RANK_LOSS, UP_OTHER_LOSS, UP_COUNT };

struct rm_store {
	struct rm_db *db;
	const char *path; /* for messages: the file, or the URI redacted */
	struct rm_dbq *stmt[ST_COUNT], *up[UP_COUNT];
	void (*wait)(void *arg, const char *run, const char *holder);
	void *wait_arg;
	int64_t told; /* the run the wait function was last called for */
};

/* Grows the parallel arrays of a series to hold cap entries. */
#define GROW(arr, cap) ((arr) = rm_xrealloc((arr), (cap) * sizeof(*(arr))))

/* Sets err from the connection's last error ("<what> in database ..."). */
int rm_st_fail(struct rm_store *st, struct rm_err *err, const char *what);
/* The prepared statement id or upsert id, made on first use per connection. */
struct rm_dbq *rm_st_stmt(struct rm_store *st, enum stmt_id id, struct rm_err *err);
struct rm_dbq *rm_st_upsert(struct rm_store *st, enum upsert_id id, struct rm_err *err);
/* Runs a bound statement to completion and resets it. */
int rm_st_run(struct rm_store *st, struct rm_dbq *s, struct rm_err *err, const char *what);
/* The first column of the statement's first row into *v; 0 without a row. */
int rm_st_run_int(struct rm_store *st, struct rm_dbq *s, int64_t *v, struct rm_err *err, const char *what);
/* Binds a value that may be missing (NULL) or NaN (NULL, flagged by caller). */
void rm_st_bind_opt(struct rm_dbq *s, int i, int have, double v);
/* Prepares a one-off statement; the caller finalizes it (rm_st_run_once does). */
struct rm_dbq *rm_st_prepare(struct rm_store *st, const char *sql, struct rm_err *err);
int rm_st_run_once(struct rm_store *st, struct rm_dbq *s, struct rm_err *err, const char *what);
/* A text column as a new string (made valid UTF-8), NULL for NULL. */
char *rm_st_col_text(struct rm_dbq *s, int i);
/* A nullable number column: NaN for NULL. */
double rm_st_col_opt(struct rm_dbq *s, int i);

#endif
