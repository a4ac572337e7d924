/*
 * cmd_report.c - `runmon report`: nightly health reports over stored runs.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/analyze.h"
#include "runmon/render.h"
#include "runmon/common.h"
#include "runmon/wandb.h"

static const char about[] = "Diagnoses runs and writes one report: a self-contained HTML file (inline SVG\n"
                            "you can zoom and read, offline), Markdown for chat or a pull request, or JSON\n"
                            "(the diagnosis schema, for several runs). Per run: the verdict and fix, the\n"
                            "loss coloured by bucket with the bucket-adjusted curve over it, ladders and\n"
                            "spikes marked, per-bucket loss distributions, the bucket of each batch, and\n"
                            "the evidence. Findings are stored as by diagnose. Reports read the database:\n"
                            "run `runmon sync` first for W&B runs.";

static const char notes[] = "A report of --all is kept in the database (its runs' severities, verdicts\n"
                            "and findings) as the next report's baseline; a report of named runs or\n"
                            "--compare is not, unless --keep. Every report opens with what changed\n"
                            "since its baseline.\n"
                            "SOURCE_DATE_EPOCH, when set, is used as the generation time.";

static const struct rm_opt options[] = {
    {"all", 'a', NULL, RM_ARG_NONE, "every run (with --since: those updated recently)", NULL, NULL, 0},
    {"since", 's', "WHEN", RM_ARG_WHEN,
     "with --all: runs imported or synced since WHEN, a duration ago (30m, 24h, 7d) or a date (2026-12-01)", NULL, NULL,
     0},
    {"format", 'f', "FMT", RM_ARG_CHOICE, "html, md or json", "from -o's extension, else html", "html md json", 0},
    {"output", 'o', "FILE", RM_ARG_PATH,
     "write FILE (atomically; - is standard output; without -o, HTML for a terminal goes to runmon-report-RUN.html)",
     NULL, NULL, 'o'},
    {"fail-on", 'F', "LEVEL", RM_ARG_CHOICE, "exit 1 when a run reaches info, warn (default) or critical", NULL,
     "info warn critical", 0},
    {"fail-on-new", 'N', "LEVEL", RM_ARG_CHOICE,
     "exit 1 only when something reached LEVEL since the baseline: a new or risen run, a finding that appeared", NULL,
     "info warn critical", 0},
    {"since-report", 'S', "WHEN", RM_ARG_WHEN,
     "compare with the latest report at least WHEN old (a duration: 20h, 7d; or a time: 2026-12-01, "
     "2026-12-01T06:00:00Z)",
     "the latest report", NULL, 0},
    {"baseline", 'B', "FILE", RM_ARG_PATH, "compare with a JSON report written earlier", NULL, NULL, 0},
    {"compare", 'c', NULL, RM_ARG_NONE,
     "two runs, BEFORE AFTER: the report opens with runmon compare's table of the two", NULL, NULL, 0},
    {"overlay", 'O', NULL, RM_ARG_NONE,
     "the named runs (2 to 4, HTML) on one chart: adjusted loss by step, each bucket's loss side by side", NULL, NULL,
     0},
    {"keep", 'k', NULL, RM_ARG_NONE, "keep this report as the next one's baseline", "with --all", NULL, 0},
    {"no-keep", 'K', NULL, RM_ARG_NONE, "do not keep this report as a baseline (an ad-hoc --all)", NULL, NULL, 0},
    {"jobs", 'j', "N", RM_ARG_COUNT,
     "diagnose N runs at once, each on a connection of its own (the report is the same file for any N)", "the cores",
     NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon report --all -o report.html",
    "runmon report --all --since 24h --format md -o digest.md",
    "runmon report demo-homogeneous demo-interleaved -o two.html",
    "runmon report --all --fail-on-new warn -o /dev/null",
    "runmon report --compare demo-homogeneous demo-interleaved -o fix.html",
    "runmon report --overlay demo-homogeneous demo-interleaved -o both.html",
    NULL,
};

/* Where the report went and why the exit is what it is: a cron job's log
 * and a user at a terminal both see it (stderr; stdout may be the report). */
static void tell_outcome(const struct rm_report_spec *spec, size_t n, const struct rm_report_outcome *got)
{
	if (spec->output && strcmp(spec->output, "-"))
		fprintf(stderr, "report: wrote %s (%s, %zu run%s; worst: %s)\n", spec->output, spec->format, n,
		        n == 1 ? "" : "s", rm_verdict_word(got->worst));
	if (!got->failed)
		return;
	if (got->new_hit)
		fprintf(stderr, "report: exit 1: something new since the baseline reached %s (--fail-on-new)\n",
		        rm_severity_name(spec->fail_on_new));
	if (spec->fail_worst && got->at_fail_on)
		fprintf(stderr, "report: exit 1: %zu run%s at %s or worse (--fail-on %s)\n", got->at_fail_on,
		        got->at_fail_on == 1 ? "" : "s", rm_severity_name(spec->fail_on),
		        rm_severity_name(spec->fail_on));
}

/* The runs a report covers: those named (names[0..nnames)), else every
 * run, updated since *since when given. *ids is malloc'd. */
static int run_ids(struct rm_store *st, char **names, int nnames, const struct rm_since *since, double now,
                   int64_t **ids, size_t *n, struct rm_err *err)
{
	*n = 0;
	if (names) {
		*ids = rm_xmalloc((size_t)(nnames ? nnames : 1) * sizeof(int64_t));
		for (int i = 0; i < nnames; i++)
			if (rm_store_find_run(st, names[i], &(*ids)[(*n)++], err)) {
				free(*ids);
				return err->code;
			}
		return RM_OK;
	}
	struct rm_run_info *list;
	size_t ln;
	if (rm_store_list_runs(st, &list, &ln, err))
		return err->code;
	*ids = rm_xmalloc((ln ? ln : 1) * sizeof(int64_t));
	for (size_t i = 0; i < ln; i++)
		if (!since || list[i].synced_at >= rm_since_time(since, now))
			(*ids)[(*n)++] = list[i].id;
	rm_run_info_free(list, ln);
	return RM_OK;
}

static int run_report(int argc, char **argv, struct rm_ctx *ctx)
{
	int c, all = 0, code, fail_on_given = 0, new_given = 0, compare = 0, overlay = 0, keep = -1;
	double report_age = 0, report_at = -1;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t jobs = cores > 0 ? (cores < 256 ? cores : 256) : 1;
	struct rm_since since;
	int has_since = 0;
	const char *format = NULL, *output = NULL, *baseline = NULL, *since_report = NULL;
	enum rm_severity fail_on = RM_SEV_WARN, fail_on_new = RM_SEV_WARN;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_report, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'a': all = 1; break;
		case 's':
			if (rm_parse_since(op.arg, &since) || since.kind == RM_SINCE_STEP)
				return rm_cmd_usage_error(
				    &cmd_report,
				    "--since wants a duration (30m, 24h, 7d) or a date (2026-12-01), not"
				    " '%s'%s",
				    op.arg, since.kind == RM_SINCE_STEP ? ": a report has no steps" : "");
			has_since = 1;
			break;
		case 'f': format = op.arg; break;
		case 'o': output = op.arg; break;
		case 'F':
			fail_on_given = 1;
			if (rm_severity_parse(op.arg, &fail_on))
				return rm_cmd_usage_error(&cmd_report, "--fail-on wants info, warn or critical");
			break;
		case 'N':
			if (rm_severity_parse(op.arg, &fail_on_new))
				return rm_cmd_usage_error(&cmd_report, "--fail-on-new wants info, warn or critical");
			new_given = 1;
			break;
		case 'S':
			since_report = op.arg;
			if (rm_parse_duration(op.arg, &report_age) && rm_parse_utc(op.arg, &report_at))
				return rm_cmd_usage_error(&cmd_report,
				                          "--since-report wants a duration (20h, 7d) or a UTC time "
				                          "(2026-12-01, 2026-12-01T06:00:00Z), not '%s'",
				                          op.arg);
			break;
		case 'B': baseline = op.arg; break;
		case 'c': compare = 1; break;
		case 'O': overlay = 1; break;
		case 'k': keep = 1; break;
		case 'K': keep = 0; break;
		case 'j':
			if (rm_parse_int(op.arg, 1, &jobs) || jobs > 256)
				return rm_cmd_usage_error(&cmd_report, "--jobs wants 1..256, not '%s'", op.arg);
			break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_report);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (!format && output && strcmp(output, "-")) {
		static const char *const ext[][2] = {
		    {".html", "html"}, {".htm", "html"}, {".md", "md"}, {".markdown", "md"}, {".json", "json"}};
		const char *base = strrchr(output, '/'), *dot = strrchr(base ? base : output, '.');
		for (size_t i = 0; dot && i < sizeof(ext) / sizeof(ext[0]); i++)
			if (!strcmp(dot, ext[i][0]))
				format = ext[i][1];
		if (!dot) /* no extension: /dev/null, a FIFO */
			format = "html";
		else if (!format)
			return rm_cmd_usage_error(
			    &cmd_report, "cannot tell the format from '%s' (.html, .md or .json): give --format",
			    output);
	}
	if (!format)
		format = "html";
	if (strcmp(format, "html") && strcmp(format, "md") && strcmp(format, "json"))
		return rm_cmd_usage_error(&cmd_report, "--format wants html, md or json");
	if (all && op.ind < argc)
		return rm_cmd_usage_error(&cmd_report, "name runs, or --all (not both)");
	if (!all && op.ind >= argc)
		return rm_cmd_usage_error(&cmd_report, "no run given: name runs, or --all");
	if (compare && (all || argc - op.ind != 2))
		return rm_cmd_usage_error(&cmd_report, "--compare wants two runs, BEFORE AFTER");
	if (overlay && (all || argc - op.ind < 2 || argc - op.ind > RM_OVERLAY_MAX || strcmp(format, "html")))
		return rm_cmd_usage_error(&cmd_report, "--overlay wants 2 to %d named runs and an HTML report",
		                          RM_OVERLAY_MAX);
	/* HTML on a terminal is 100 KB of noise: it goes to a file named for
	 * the run, in the current directory, and the line below says where. */
	char named[300];
	if (!strcmp(format, "html") && (!output || !strcmp(output, "-")) && isatty(STDOUT_FILENO)) {
		snprintf(named, sizeof(named), "runmon-report%s%.200s.html", all || argc - op.ind > 1 ? "" : "-",
		         all || argc - op.ind > 1 ? "" : argv[op.ind]);
		for (char *p = named + strlen("runmon-report"); *p; p++)
			if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_'))
				*p = '-';
		output = named;
	}
	if (baseline && since_report)
		return rm_cmd_usage_error(&cmd_report,
		                          "--baseline and --since-report both choose the baseline: give one");
	int fail_worst = fail_on_given || !new_given; /* --fail-on-new alone: only what is new fails */
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	double now = sde && *sde ? strtod(sde, NULL) : (double)time(NULL);

	struct rm_store *st;
	struct rm_err err;
	if ((code = rm_ctx_open_store_flags(ctx, &st, RM_STORE_MUST_EXIST)))
		return code;
	int64_t *ids;
	size_t n;
	if (run_ids(st, all ? NULL : argv + op.ind, all ? 0 : argc - op.ind, has_since ? &since : NULL, now, &ids, &n,
	            &err)) {
		rm_error("%s", err.msg);
		rm_store_close(st);
		return rm_exit_code(err.code);
	}
	struct rm_report_outcome got;
	struct rm_report_spec spec = {.compare = compare,
	                              .overlay = overlay,
	                              .format = format,
	                              .output = output,
	                              .baseline = baseline,
	                              .cutoff = report_at >= 0 ? report_at : now - report_age,
	                              .now = now,
	                              .fail_on = fail_on,
	                              .fail_on_new = fail_on_new,
	                              .fail_worst = fail_worst,
	                              .fail_new = new_given,
	                              .keep = keep < 0 ? all : keep,
	                              .jobs = (int)jobs,
	                              .db = ctx->db_path};
	if (rm_report_write(st, ids, n, &spec, &rm_cli_voice, &got, &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
	} else {
		code = got.failed ? RM_EXIT_FINDINGS : RM_EXIT_OK;
		tell_outcome(&spec, n, &got);
	}
	free(ids);
	rm_store_close(st);
	return code;
}

const struct rm_cmd cmd_report = {
    .name = "report",
    .summary = "write an HTML, Markdown or JSON health report of runs",
    .synopsis = "[RUN...|--all] [options]",
    .about = about,
    .opts = options,
    .notes = notes,
    .examples = examples,
    .exit_status = "0 no run at the failing level, 1 a run at or above it (or, with --fail-on-new, something new "
                   "there), 2 usage error or unknown run, 4 database or file system error.",
    .operands = RM_OPERANDS_RUNS,
    .run = run_report,
};
