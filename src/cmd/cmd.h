/*
 * cmd.h - the command table's entry type and what commands share: the
 * global context, opening the store, and git-style messages.
 */
#ifndef RUNMON_CMD_H
#define RUNMON_CMD_H

#include "runmon/common.h"
#include "runmon/store.h"

struct rm_ctx {
	const char *db_path; /* --db, RUNMON_DB, or the default */
};

struct rm_cmd {
	const char *name;
	const char *summary;                                   /* one line for `runmon --help` */
	const char *usage;                                     /* full text for `runmon help CMD` and `CMD --help` */
	int (*run)(int argc, char **argv, struct rm_ctx *ctx); /* returns an exit code */
};

extern const struct rm_cmd cmd_import;
extern const struct rm_cmd cmd_runs;

/* "runmon: error: ..." on stderr. */
void rm_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void rm_warning(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Opens the context's database, printing the error; returns an exit code. */
int rm_ctx_open_store(struct rm_ctx *ctx, struct rm_store **st);

/* Prints usage to stdout (asked for) and returns 0. */
int rm_cmd_help(const struct rm_cmd *cmd);
/* Prints "usage error" hint for cmd and returns RM_EXIT_USAGE. */
int rm_cmd_usage_error(const struct rm_cmd *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
