/*
 * cli.c - what every command shares: git-style messages, option value
 * parsing, colour, and opening the store named by the context.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/common.h"
#include "runmon/render.h"

/* Messages quote file contents and names: escaped for the terminal. */
static void vmsg(const char *level, const char *fmt, va_list ap) RM_PRINTF(2, 0);
static void vmsg(const char *level, const char *fmt, va_list ap)
{
	char msg[2048];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	rm_progress_clear();
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

/* What the layers below say: warnings as rm_warning, alert lines on
 * stdout at once (a log reader may be waiting), progress on stderr. */
static void cli_say(void *arg, enum rm_say_kind kind, const char *msg)
{
	(void)arg;
	rm_progress_clear();
	switch (kind) {
	case RM_SAY_WARNING: fprintf(stderr, "runmon: warning: %s\n", rm_tx(msg)); break;
	case RM_SAY_LINE:
		printf("%s\n", msg);
		fflush(stdout);
		break;
	case RM_SAY_INFO: fprintf(stderr, "%s\n", msg); break;
	}
}

const struct rm_voice rm_cli_voice = {cli_say, NULL};

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

int rm_parse_since(const char *s, struct rm_since *out)
{
	size_t n = strlen(s);
	memset(out, 0, sizeof(*out));
	if (n && strspn(s, "0123456789") == n) {
		out->kind = RM_SINCE_STEP;
		return rm_parse_int(s, 0, &out->step);
	}
	out->kind = RM_SINCE_AT;
	if (!rm_parse_utc(s, &out->secs))
		return 0;
	out->kind = RM_SINCE_AGO; /* a duration needs its unit: a bare number is a step */
	if (!n || strchr("0123456789.", s[n - 1]) || rm_parse_duration(s, &out->secs))
		return -1;
	return 0;
}

double rm_since_time(const struct rm_since *s, double now)
{
	return s->kind == RM_SINCE_AT ? s->secs : now - s->secs;
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

size_t rm_terminal_width(void)
{
	const char *c = getenv("COLUMNS");
	long v = c ? strtol(c, NULL, 10) : 0;
	if (v > 0)
		return (size_t)v;
	struct winsize ws;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
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

char *rm_cli_default_db(void)
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

char *rm_cli_default_demo_db(void)
{
	char *path = rm_cli_default_db();
	char *slash = strrchr(path, '/');
	char *demo = rm_xasprintf("%.*sdemo.db", slash ? (int)(slash - path + 1) : 0, path);
	free(path);
	return demo;
}

int rm_ctx_open_store(struct rm_ctx *ctx, struct rm_store **st)
{
	return rm_ctx_open_store_flags(ctx, st, 0);
}

/* A writer held up by another on the same run (PostgreSQL) says why it waits. */
static void tell_waiting(void *arg, const char *run, const char *holder)
{
	(void)arg;
	fprintf(stderr, "runmon: run '%s' is being written by %s; waiting for it to commit\n", rm_tx(run),
	        rm_tx(holder));
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

int rm_help_terms(FILE *fp, const char *form)
{
	if (form && strcmp(form, "--markdown")) {
		fprintf(stderr, "runmon: error: help terms takes --markdown or nothing, not '%s'\n", rm_tx(form));
		return RM_EXIT_USAGE;
	}
	if (form)
		rm_terms_md(fp);
	else
		rm_terms_text(fp);
	return RM_EXIT_OK;
}
