/*
 * common.h - error reporting, exit codes and aborting allocators shared by
 * every runmon module.
 *
 * Core functions never print: they return an rm_status and fill a
 * caller-provided struct rm_err. Only the command layer prints and picks the
 * process exit code.
 */
#ifndef RUNMON_COMMON_H
#define RUNMON_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define RM_VERSION "0.1.0"

#if defined(__GNUC__)
#define RM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define RM_PRINTF(fmt, args)
#endif

#define RM_MAX_BUCKETS      32   /* dense buckets the detectors count (more labels are grouped) */
#define RM_MAX_RANKS        1024 /* data-parallel ranks told apart; higher ones share the last */
#define RM_BUCKET_LABEL_LEN 40   /* a bucket label kept for display, with its NUL */

/* Status of a core call. RM_OK is zero so `if (rc)` reads naturally. */
enum rm_status {
	RM_OK = 0,
	RM_E_USAGE,   /* bad option or argument */
	RM_E_INPUT,   /* malformed input file or row */
	RM_E_IO,      /* file system error */
	RM_E_STORE,   /* database error (SQLite or PostgreSQL) */
	RM_E_NET,     /* network or server error */
	RM_E_NOTFOUND /* the named run or object does not exist */
};

/* Process exit codes, documented in the README and in `runmon --help`. */
enum rm_exit {
	RM_EXIT_OK = 0,       /* healthy / done */
	RM_EXIT_FINDINGS = 1, /* findings at or above the failing severity */
	RM_EXIT_USAGE = 2,    /* usage or input error */
	RM_EXIT_NET = 3,      /* network or server error */
	RM_EXIT_STORE = 4     /* database or file system error */
};

struct rm_err {
	enum rm_status code;
	int bad_line; /* a malformed input line, which --skip-bad would skip */
	char msg[512];
};

/* Fills err (if not NULL) and returns code, so `return rm_err_set(...)`. */
int rm_err_set(struct rm_err *err, enum rm_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Maps a status to the exit code a command should return. */
int rm_exit_code(enum rm_status code);

/* Allocators that abort on out-of-memory: a CLI has no recovery path. */
void *rm_xmalloc(size_t n);
void *rm_xcalloc(size_t n, size_t size);
void *rm_xrealloc(void *p, size_t n);
char *rm_xstrdup(const char *s);

/* A UTC time as runmon writes it (2026-12-01T06:00:00Z) or a date
 * (2026-12-01, its midnight) into unix seconds; -1 when it is neither. */
int rm_parse_utc(const char *s, double *t);

/* Seconds on the monotonic clock, for intervals and deadlines. */
double rm_monotonic(void);

/* path made absolute and, when it exists, free of symlinks: the key of a
 * position kept in the database, so a restart from elsewhere (or through
 * wandb/latest-run) finds it. Caller frees. */
char *rm_path_absolute(const char *path);
char *rm_xstrndup(const char *s, size_t n);
/* printf into a new string owned by the caller. */
char *rm_xasprintf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
