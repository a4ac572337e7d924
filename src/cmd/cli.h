/*
 * cli.h - the command table's entry type and what commands share: the
 * global context, opening the store, option parsing and git-style messages.
 */
#ifndef RUNMON_CLI_H
#define RUNMON_CLI_H

#include "runmon/common.h"
#include "runmon/store.h"

struct rm_ctx {
	const char *db_path; /* --db, RUNMON_DB, or the default */
	int db_given;        /* --db or RUNMON_DB named it (demo keeps to its own file otherwise) */
};

#include "cmd/opts.h"

extern const struct rm_cmd cmd_import;
extern const struct rm_cmd cmd_runs;
extern const struct rm_cmd cmd_sync;
extern const struct rm_cmd cmd_diagnose;
extern const struct rm_cmd cmd_report;
extern const struct rm_cmd cmd_watch;
extern const struct rm_cmd cmd_simulate;
extern const struct rm_cmd cmd_demo;
extern const struct rm_cmd cmd_compare;
extern const struct rm_cmd cmd_buckets;
extern const struct rm_cmd cmd_copy;
extern const struct rm_cmd cmd_rm;
extern const struct rm_cmd cmd_mv;
extern const struct rm_cmd cmd_export;

/* "runmon: error: ..." and "runmon: warning: ..." on stderr. */
void rm_error(const char *fmt, ...) RM_PRINTF(1, 2);
void rm_warning(const char *fmt, ...) RM_PRINTF(1, 2);

/* The voice the layers below speak through (alerts, watch). */
extern const struct rm_voice rm_cli_voice;

/* Opens the context's database, printing the error; returns an exit code. */
int rm_ctx_open_store(struct rm_ctx *ctx, struct rm_store **st);
/* The same with rm_store_open_flags' flags (RM_STORE_MUST_EXIST). */
int rm_ctx_open_store_flags(struct rm_ctx *ctx, struct rm_store **st, unsigned flags);

/* Prints the command's help to stdout (asked for) and returns 0. */
int rm_cmd_help(const struct rm_cmd *cmd);
/* Prints the error and a pointer to --help; returns RM_EXIT_USAGE. */
int rm_cmd_usage_error(const struct rm_cmd *cmd, const char *fmt, ...) RM_PRINTF(2, 3);

/* Parses a whole decimal integer >= min; returns 0 on success. */
int rm_parse_int(const char *s, int64_t min, int64_t *out);
/* Parses a duration: a number (seconds) with an optional unit, ms, s, m,
 * h or d ("500ms", "2s", "5m", "24h", "7d", "90"); returns 0 on success. */
int rm_parse_duration(const char *s, double *secs);
/* --since, one meaning wherever it is: a whole number is a step; a
 * number with a unit (500ms, 2s, 5m, 24h, 7d) is that long before now; a
 * date or UTC time (2026-12-01, 2026-12-01T06:00:00Z) is that moment.
 * Returns 0 with the kind and its value (a step, seconds, a unix time). */
enum rm_since_kind { RM_SINCE_STEP, RM_SINCE_AGO, RM_SINCE_AT };
struct rm_since {
	enum rm_since_kind kind;
	int64_t step;
	double secs; /* RM_SINCE_AGO: seconds; RM_SINCE_AT: unix time */
};
int rm_parse_since(const char *s, struct rm_since *out);
/* The moment a time --since names, given what now is. */
double rm_since_time(const struct rm_since *s, double now);
#define RM_SINCE_KINDS "a step (12000), a duration (24h, 7d) or a date (2026-12-01[T06:00:00Z])"

/* Parses "0,770,1216,...": 2 to RM_MAX_BUCKETS + 1 increasing lengths
 * into a new array (caller frees); returns 0 on success. */
int rm_parse_bounds(const char *s, int64_t **out, int *n);
/* The default database: $XDG_DATA_HOME/runmon/runmon.db, else
 * ~/.local/share/runmon/runmon.db (its directory made), else runmon.db. */
char *rm_cli_default_db(void);
/* The file runmon demo writes when no database is named: demo.db beside
 * the default database, so a demo never mixes with the user's runs. */
char *rm_cli_default_demo_db(void);
/* Colour on stdout: a terminal, and NO_COLOR unset or empty. */
int rm_use_color(void);
/* stdout's terminal width in columns: COLUMNS, else the terminal's, else 80. */
size_t rm_terminal_width(void);

#endif
