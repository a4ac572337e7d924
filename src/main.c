/*
 * main.c - runmon's entry point: global options, then the command table.
 *
 * Command names match exactly (no abbreviations): runmon runs from cron
 * and CI, where a prefix that later becomes ambiguous would break jobs.
 */
#include <ctype.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "runmon/text.h"

static const struct rm_cmd *const commands[] = {
    &cmd_import, &cmd_runs,     &cmd_sync, &cmd_diagnose, &cmd_report,
    &cmd_watch,  &cmd_simulate, &cmd_demo, &cmd_buckets,  &cmd_copy,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Messages quote file contents and names: escaped for the terminal. */
static void vmsg(const char *level, const char *fmt, va_list ap)
{
	char msg[2048];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "runmon: %s: %s\n", level, rm_tx(msg));
}

void rm_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("error", fmt, ap);
	va_end(ap);
}

void rm_warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning", fmt, ap);
	va_end(ap);
}

int rm_cmd_help(const struct rm_cmd *cmd)
{
	fputs(cmd->usage, stdout);
	return RM_EXIT_OK;
}

int rm_cmd_usage_error(const struct rm_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("error", fmt, ap);
	va_end(ap);
	fprintf(stderr, "see 'runmon %s --help'\n", cmd->name);
	return RM_EXIT_USAGE;
}

int rm_parse_int(const char *s, int64_t min, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < min)
		return -1;
	*out = v;
	return 0;
}

int rm_parse_duration(const char *s, double *secs)
{
	static const struct {
		const char *suffix;
		double secs;
	} units[] = {{"", 1}, {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0 || isspace((unsigned char)*s))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix)) {
			*secs = v * units[i].secs;
			return 0;
		}
	return -1;
}

int rm_parse_bounds(const char *s, int64_t **out, int *n)
{
	int cap = 8;
	int64_t *b = rm_xmalloc((size_t)cap * sizeof(*b));
	*n = 0;
	for (const char *p = s; *p;) {
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p || (*end && *end != ',') || v < 0 || (*n && v <= b[*n - 1])) {
			free(b);
			return -1;
		}
		if (*n == cap)
			b = rm_xrealloc(b, (size_t)(cap *= 2) * sizeof(*b));
		b[(*n)++] = v;
		p = *end ? end + 1 : end;
	}
	if (*n < 2 || *n > RM_MAX_BUCKETS + 1) { /* more buckets would be grouped: refuse instead */
		free(b);
		return -1;
	}
	*out = b;
	return 0;
}

int rm_use_color(void)
{
	const char *nc = getenv("NO_COLOR");
	return isatty(STDOUT_FILENO) && !(nc && *nc);
}

/* mkdir -p for the default database's directory. */
static void make_parents(const char *path)
{
	char *p = rm_xstrdup(path);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	free(p);
}

static char *default_db_path(void)
{
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	char *path;
	if (xdg && *xdg)
		path = rm_xasprintf("%s/runmon/runmon.db", xdg);
	else if (home && *home)
		path = rm_xasprintf("%s/.local/share/runmon/runmon.db", home);
	else
		return rm_xstrdup("runmon.db");
	make_parents(path);
	return path;
}

int rm_ctx_open_store(struct rm_ctx *ctx, struct rm_store **st)
{
	return rm_ctx_open_store_flags(ctx, st, 0);
}

/* A writer held up by another on the same run (PostgreSQL) says why it waits. */
static void tell_waiting(void *arg, const char *run, const char *holder)
{
	(void)arg;
	fprintf(stderr, "runmon: run '%s' is being written by %s; waiting for it to commit\n", run, holder);
}

int rm_ctx_open_store_flags(struct rm_ctx *ctx, struct rm_store **st, unsigned flags)
{
	struct rm_err err;
	if (rm_store_open_flags(st, ctx->db_path, flags, &err)) {
		rm_error("%s", err.msg);
		return rm_exit_code(err.code);
	}
	rm_store_on_wait(*st, tell_waiting, NULL);
	return RM_EXIT_OK;
}

static void usage(FILE *fp)
{
	fputs("usage: runmon [--db PATH] COMMAND [ARGS]\n"
	      "       runmon help COMMAND | --version\n\n"
	      "Training-run monitor: finds the loss signatures of homogeneous length-bucketed\n"
	      "batching (trimodal split, ladders, same-bucket runs, loss resets).\n\n"
	      "Commands:\n",
	      fp);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(fp, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fputs("\nOptions:\n"
	      "  --db PATH   database file (env RUNMON_DB; default\n"
	      "              $XDG_DATA_HOME/runmon/runmon.db or ~/.local/share/runmon/runmon.db)\n\n"
	      "Exit status: 0 done/healthy, 1 findings at the failing severity, 2 usage or\n"
	      "input error, 3 network or server error, 4 database or file system error.\n",
	      fp);
}

static const struct rm_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
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
		} else if (!strcmp(argv[i], "--version")) {
			printf("runmon %s\n", RM_VERSION);
			return finish(RM_EXIT_OK);
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return finish(RM_EXIT_OK);
		} else {
			fprintf(stderr, "runmon: error: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return RM_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		const struct rm_cmd *c = i + 1 < argc ? find_command(argv[i + 1]) : NULL;
		if (i + 1 < argc && !c) {
			fprintf(stderr, "runmon: error: unknown command '%s'\n", argv[i + 1]);
			return RM_EXIT_USAGE;
		}
		if (c)
			rm_cmd_help(c);
		else
			usage(stdout);
		return finish(RM_EXIT_OK);
	}
	const struct rm_cmd *cmd = find_command(argv[i]);
	if (!cmd) {
		fprintf(stderr, "runmon: error: unknown command '%s'\n", argv[i]);
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (!db)
		db = db_default = default_db_path();
	ctx.db_path = db;
	code = cmd->run(argc - i, argv + i, &ctx);
	free(db_default);
	return finish(code);
}
