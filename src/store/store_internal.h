/*
 * store_internal.h - what the store's own files share: the embedded
 * migrations (generated from sql/ at build time).
 */
#ifndef RUNMON_STORE_INTERNAL_H
#define RUNMON_STORE_INTERNAL_H

#include <stddef.h>

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

#endif
