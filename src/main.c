/*
 * main.c - runmon's entry point: the command table, global options and
 * dispatch. What commands share lives in cmd/cli.c.
 *
 * Command names match exactly (no abbreviations): runmon runs from cron
 * and CI, where a prefix that later becomes ambiguous would break jobs.
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/common.h"

static const struct rm_cmd *const commands[] = {
    &cmd_import, &cmd_runs,    &cmd_sync,    &cmd_diagnose, &cmd_report, &cmd_watch, &cmd_simulate,
    &cmd_demo,   &cmd_compare, &cmd_buckets, &cmd_copy,     &cmd_rm,     &cmd_mv,    &cmd_export,
};
static const size_t ncommands = sizeof(commands) / sizeof(commands[0]);
static const struct rm_cmd_list all_commands = {commands, sizeof(commands) / sizeof(commands[0])};

static const struct rm_cmd *command_named(const char *name)
{
	for (size_t i = 0; i < ncommands; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static void usage(FILE *fp)
{
	fputs("usage: runmon [--db PATH] [--quiet] COMMAND [ARGS]\n"
	      "       runmon help [COMMAND] | version | --version\n"
	      "       runmon help --man [COMMAND] | --completion bash|zsh|fish | --json\n"
	      "       runmon help terms [--markdown]   (what each statistic shown means)\n\n"
	      "Training-run monitor: finds the loss signatures of homogeneous length-bucketed\n"
	      "batching (trimodal split, ladders, same-bucket streaks, loss resets).\n\n"
	      "Commands:\n",
	      fp);
	for (size_t i = 0; i < ncommands; i++)
		fprintf(fp, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fputs("\nOptions:\n"
	      "  --db PATH   database file (env RUNMON_DB; default\n"
	      "              $XDG_DATA_HOME/runmon/runmon.db or ~/.local/share/runmon/runmon.db)\n"
	      "  --quiet     no progress line on stderr (it is drawn only on a terminal)\n\n"
	      "Exit status: 0 done/healthy, 1 findings at the failing severity, 2 usage or\n"
	      "input error, 3 network or server error, 4 database or file system error,\n"
	      "5 compare: resolved at a price (padding or throughput beyond --max-cost).\n",
	      fp);
}

/* "unknown command 'diagnos'; did you mean 'diagnose'?" in one line. */
static int unknown_command(const char *name)
{
	const char *names[16];
	for (size_t i = 0; i < ncommands; i++)
		names[i] = commands[i]->name;
	const char *near = rm_nearest(name, names, ncommands);
	if (near)
		fprintf(stderr, "runmon: error: unknown command '%s'; did you mean '%s'?\n", rm_tx(name), near);
	else
		fprintf(stderr, "runmon: error: unknown command '%s' (runmon --help lists them)\n", rm_tx(name));
	return RM_EXIT_USAGE;
}

/* runmon help [COMMAND], and what is made from the command tables: man
 * pages, bash completion, the tables as JSON. */
static int help(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : NULL;
	if (what && !strcmp(what, "--json"))
		return rm_tables_json(stdout, &all_commands) ? RM_EXIT_STORE : RM_EXIT_OK;
	if (what && !strcmp(what, "--completion")) {
		if (argc < 3 || rm_completion_write(stdout, argv[2], &all_commands)) {
			fprintf(stderr, "runmon: error: help --completion wants a shell: bash, zsh or fish\n");
			return RM_EXIT_USAGE;
		}
		return RM_EXIT_OK;
	}
	if (what && !strcmp(what, "--man")) {
		const struct rm_cmd *c = argc > 2 ? command_named(argv[2]) : NULL;
		if (argc > 2 && !c)
			return unknown_command(argv[2]);
		/* On a terminal the page shows as man shows it (man -l - reads
		 * roff from its input); redirected, or without man, the roff. */
		FILE *man = isatty(STDOUT_FILENO) ? popen("man -l - 2>/dev/null", "w") : NULL;
		if (man) {
			rm_man_write(man, c, &all_commands, RM_VERSION);
			if (pclose(man) == 0)
				return RM_EXIT_OK;
		}
		rm_man_write(stdout, c, &all_commands, RM_VERSION);
		return RM_EXIT_OK;
	}
	if (!what) {
		usage(stdout);
		return RM_EXIT_OK;
	}
	if (!strcmp(what, "terms"))
		return argc > 3
		           ? (fprintf(stderr, "runmon: error: help terms takes one option at most\n"), RM_EXIT_USAGE)
		           : rm_help_terms(stdout, argc > 2 ? argv[2] : NULL);
	const struct rm_cmd *c = command_named(what);
	return c ? rm_cmd_help(c) : unknown_command(what);
}

/* A failed write to stdout (a full disk, a closed pipe) is an error. */
static int finish(int code)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "runmon: error: cannot write output: %s\n", strerror(errno));
		return code ? code : RM_EXIT_STORE;
	}
	return code;
}

int main(int argc, char **argv)
{
#ifdef __GLIBC__
	/* Arrays of 1 MiB and more get pages of their own, returned when freed.
	 * glibc otherwise raises this threshold after the first such free, and a
	 * diagnosis's short-lived arrays (a batch row's worth each, 8M rows on
	 * a run of 1M steps x 8 ranks) then stay resident: 427 against 392 MiB
	 * of peak RSS there. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
	/* Past a file-size limit (ulimit -f) a write fails with EFBIG, which
	 * every writer reports and cleans up after; the default, SIGXFSZ,
	 * killed runmon with no word and left its temporary files. */
	signal(SIGXFSZ, SIG_IGN);
	struct rm_ctx ctx = {0};
	char *db_default = NULL;
	int i = 1, code;
	const char *db = getenv("RUNMON_DB");
	if (db && !*db) /* set but empty is unset, as shells treat it; --db "" is an error */
		db = NULL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--db") && i + 1 < argc) {
			db = argv[++i];
		} else if (!strncmp(argv[i], "--db=", 5)) {
			db = argv[i] + 5;
		} else if (!strcmp(argv[i], "--quiet")) {
			rm_progress_set_quiet(1);
		} else if (!strcmp(argv[i], "--version")) {
			printf("runmon %s\n", RM_VERSION);
			return finish(RM_EXIT_OK);
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return finish(RM_EXIT_OK);
		} else {
			/* an option of the command written before it: say where it goes */
			const char *near = NULL;
			for (size_t c = 0; !near && c < ncommands; c++)
				for (const struct rm_opt *o = commands[c]->opts; o->name; o++)
					if (!strncmp(argv[i], "--", 2) && !strcmp(argv[i] + 2, o->name)) {
						near = commands[c]->name;
						break;
					}
			if (!strcmp(argv[i], "--man")) /* help's own option, asked of runmon itself */
				fprintf(stderr,
				        "runmon: error: unknown option '--man': the manual is 'runmon help --man'"
				        " (or man runmon)\n");
			else if (near)
				fprintf(stderr,
				        "runmon: error: '%s' before the command: a command's options go after it"
				        " (runmon %s %s, say)\n",
				        rm_tx(argv[i]), near, rm_tx(argv[i]));
			else
				fprintf(stderr, "runmon: error: unknown option '%s' (runmon --help lists them)\n",
				        rm_tx(argv[i]));
			return RM_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help"))
		return finish(help(argc - i, argv + i));
	if (!strcmp(argv[i], "version") && i + 1 == argc) {
		printf("runmon %s\n", RM_VERSION);
		return finish(RM_EXIT_OK);
	}
	const struct rm_cmd *cmd = command_named(argv[i]);
	if (!cmd)
		return unknown_command(argv[i]);
	ctx.db_given = db != NULL;
	if (!db)
		db = db_default = rm_cli_default_db();
	ctx.db_path = db;
	code = cmd->run(argc - i, argv + i, &ctx);
	free(db_default);
	return finish(code);
}
