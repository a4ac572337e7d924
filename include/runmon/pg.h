/*
 * pg.h - the PostgreSQL connection behind `--db postgresql://...`: opened
 * by libpq with its own conventions (PGPASSWORD, ~/.pgpass, PGSERVICE,
 * sslmode), migrated to the newest schema of sql/postgresql/, and a
 * password never shown: every message names the database redacted.
 */
#ifndef RUNMON_PG_H
#define RUNMON_PG_H

#include <stddef.h>

#include "runmon/common.h"

/* 1 when spec names a PostgreSQL database (postgresql:// or postgres://)
 * rather than a SQLite file. */
int rm_db_is_postgres(const char *spec);

/* spec with any password replaced by "***": the userinfo of a URI
 * (user:secret@) and password=... in its query or in a key=value string. */
void rm_db_redact(const char *spec, char *buf, size_t n);

struct rm_pg;

/* Connects and migrates (one transaction, under an advisory lock, so
 * collectors starting together migrate once). A database holding tables
 * but no runmon schema, or a newer runmon's, is refused before anything is
 * written. *out is closed with rm_pg_close. */
int rm_pg_open(struct rm_pg **out, const char *uri, struct rm_err *err);
/* As rm_pg_open, migrating no further than max_version (tests). */
int rm_pg_open_version(struct rm_pg **out, const char *uri, int max_version, struct rm_err *err);
void rm_pg_close(struct rm_pg *pg);

/* The schema version of the open database, and the newest this binary knows. */
int rm_pg_schema_version(struct rm_pg *pg);
int rm_pg_latest_version(void);

/* The database as messages name it (redacted). */
const char *rm_pg_name(const struct rm_pg *pg);

#endif
