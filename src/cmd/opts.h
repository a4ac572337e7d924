/*
 * opts.h - one table per command: its options (name, value, kind, help,
 * default) and its help's prose and examples. The parser, --help, the man
 * pages, shell completion and `runmon help --json` (which the option
 * contract test reads) are all made from it.
 */
#ifndef RUNMON_OPTS_H
#define RUNMON_OPTS_H

#include <stddef.h>
#include <stdio.h>

struct rm_ctx;

/* What an option's value is: completion and the man page say so. */
enum rm_arg_kind {
	RM_ARG_NONE,     /* a flag */
	RM_ARG_COUNT,    /* a whole number */
	RM_ARG_STEP,     /* a training step */
	RM_ARG_DURATION, /* 500ms, 2s, 5m, 24h, 7d */
	RM_ARG_WHEN,     /* a duration or a date (2026-12-01[T06:00:00Z]) */
	RM_ARG_DATE,     /* YYYY-MM-DD */
	RM_ARG_PATH,     /* a file or directory */
	RM_ARG_URI,      /* an http(s) URL or host:port */
	RM_ARG_CHOICE,   /* one of .choices */
	RM_ARG_TEXT,     /* a name, key, list or pattern */
	RM_ARG_NUMBER,   /* a non-negative real number */
};

/* What a command's arguments name, so completion offers the right words. */
enum rm_operands {
	RM_OPERANDS_NONE,       /* none, or words no list holds (ENTITY/PROJECT) */
	RM_OPERANDS_FILES,      /* files or directories */
	RM_OPERANDS_RUNS,       /* stored runs */
	RM_OPERANDS_RUNS_FILES, /* stored runs, or files to read first */
};

struct rm_opt {
	const char *name; /* matched whole: --name, --name=VALUE */
	int key;          /* what rm_opt_next returns for it */
	const char *arg;  /* the value's name in help; NULL for a flag */
	enum rm_arg_kind kind;
	const char *help;    /* one sentence or a few; wrapped when shown */
	const char *dflt;    /* the default as help says it; NULL: none to say */
	const char *choices; /* RM_ARG_CHOICE: the values, blank-separated */
	char short_name;     /* -X as well (report's -o); 0: none */
};

struct rm_cmd {
	const char *name;
	const char *summary;                                   /* one line for `runmon --help` */
	const char *synopsis;                                  /* after "runmon NAME "; a second form after '\n' */
	const char *about;                                     /* what it does: paragraphs, lines as written */
	const struct rm_opt *opts;                             /* ends with {0}; --db and --help are added */
	const char *notes;                                     /* after the options, or NULL */
	const char *const *examples;                           /* ends with NULL; "CMD  # why" */
	const char *exit_status;                               /* "0 ..., 1 ..." */
	int no_store;                                          /* reads no store: no --db */
	enum rm_operands operands;                             /* what its arguments are, for completion */
	int (*run)(int argc, char **argv, struct rm_ctx *ctx); /* returns an exit code */
};

/* Every command, in the order `runmon --help` lists them (main.c). */
struct rm_cmd_list {
	const struct rm_cmd *const *cmd;
	size_t n;
};

/* Reading a command's arguments: options anywhere, positionals kept in
 * order after them (argv is permuted: argv[ind..argc) once done). */
struct rm_optparse {
	const struct rm_cmd *cmd;
	int argc;
	char **argv;
	int i, ind;
	const char *arg;  /* the value of the option just returned */
	const char *name; /* and its name, for messages */
	int npos;         /* positionals so far */
};

void rm_optparse_init(struct rm_optparse *p, const struct rm_cmd *cmd, int argc, char **argv);
/* The next option's key ('D' for --db, 'h' for --help), -1 at the end,
 * RM_OPT_ERROR once it has said what is wrong (an unknown option with
 * the nearest one, a missing value). */
#define RM_OPT_ERROR (-2)
int rm_opt_next(struct rm_optparse *p);
/* argv[ind] .. argv[argc - 1] are the positionals (valid after -1). */

/* Prints the command's help (usage, about, options, notes, examples and
 * exit status), lines at most 80 columns. */
void rm_cmd_help_write(FILE *fp, const struct rm_cmd *cmd);
/* The man page runmon-NAME(1) in roff; NULL: runmon(1), which lists all. */
void rm_man_write(FILE *fp, const struct rm_cmd *cmd, const struct rm_cmd_list *all, const char *version);
/* Bash completion for every command and option. */
/* The options every command of a store takes besides its own (--db,
 * --help), or only --help (no_store). */
const struct rm_opt *rm_cmd_common_opts(const struct rm_cmd *cmd);
/* Completion for shell ("bash", "zsh" or "fish") from the command tables;
 * run names come from `runmon runs --names` as the user types. Returns -1
 * for a shell it does not know. */
int rm_completion_write(FILE *fp, const char *shell, const struct rm_cmd_list *all);
/* Every table as JSON, for tools and the option contract test. */
int rm_tables_json(FILE *fp, const struct rm_cmd_list *all);
/* `runmon help terms [--markdown]`: the glossary as text, or as
 * docs/terms.md. Returns an exit status (2: another word after terms). */
int rm_help_terms(FILE *fp, const char *form);

#endif
