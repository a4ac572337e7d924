/*
 * store_internal.h - what the store's own files share: the embedded
 * migrations (generated from sql/ at build time).
 */
#ifndef RUNMON_STORE_INTERNAL_H
#define RUNMON_STORE_INTERNAL_H

struct rm_migration {
	int version;      /* user_version after applying it */
	const char *name; /* file name without .sql */
	const char *sql;
};

extern const struct rm_migration rm_migrations[];
extern const int rm_migrations_count;

#endif
