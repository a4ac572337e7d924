/*
 * cmd_report.c - `runmon report`: nightly health reports over stored runs.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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

static const char usage_text[] = "usage: runmon report [RUN...|--all] [options]\n"
                                 "\n"
                                 "Diagnoses runs and writes one report: a self-contained HTML file (inline SVG,\n"
                                 "no scripts), Markdown for chat or a pull request, or JSON (the diagnosis\n"
                                 "schema, for several runs). Per run: the verdict and fix, the loss coloured by\n"
                                 "bucket with the bucket-adjusted curve over it, ladders and spikes marked,\n"
                                 "per-bucket loss distributions, the bucket of each batch, and the evidence.\n"
                                 "Findings are stored as by diagnose. Reports read the database: run `runmon\n"
                                 "sync` first for W&B runs.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --all              every run (with --since: those updated recently)\n"
                                 "  --since DURATION   with --all: runs imported or synced in the last\n"
                                 "                     DURATION (30m, 24h, 7d)\n"
                                 "  --format FMT       html, md or json (default: from -o's extension, else html)\n"
                                 "  -o, --output FILE  write FILE (atomically; - is standard output; without\n"
                                 "                     -o, HTML for a terminal goes to runmon-report-RUN.html)\n"
                                 "  --fail-on LEVEL    exit 1 when a run reaches info, warn (default) or critical\n"
                                 "  --fail-on-new LEVEL\n"
                                 "                     exit 1 only when something reached LEVEL since the\n"
                                 "                     baseline: a new or risen run, a finding that appeared\n"
                                 "  --since-report WHEN compare with the latest report at least WHEN old\n"
                                 "                     (a duration: 20h, 7d; or a time: 2026-12-01,\n"
                                 "                     2026-12-01T06:00:00Z); default: the latest report\n"
                                 "  --baseline FILE    compare with a JSON report written earlier\n"
                                 "  --db PATH          database file\n"
                                 "\n"
                                 "Each report is kept in the database (its runs' severities, verdicts and\n"
                                 "findings) and opens with what changed since the baseline.\n"
                                 "SOURCE_DATE_EPOCH, when set, is used as the generation time.\n";

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

static int run_report(int argc, char **argv, struct rm_ctx *ctx)
{
	static const struct option longopts[] = {
	    {"all", no_argument, NULL, 'a'},
	    {"since", required_argument, NULL, 's'},
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"fail-on", required_argument, NULL, 'F'},
	    {"db", required_argument, NULL, 'D'},
	    {"fail-on-new", required_argument, NULL, 'N'},
	    {"since-report", required_argument, NULL, 'S'},
	    {"baseline", required_argument, NULL, 'B'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, all = 0, code, fail_on_given = 0, new_given = 0;
	double since = -1, report_age = 0, report_at = -1;
	const char *format = NULL, *output = NULL, *baseline = NULL, *since_report = NULL;
	enum rm_severity fail_on = RM_SEV_WARN, fail_on_new = RM_SEV_WARN;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': all = 1; break;
		case 's':
			if (rm_parse_duration(optarg, &since))
				return rm_cmd_usage_error(
				    &cmd_report, "--since wants a duration like 30m, 24h or 7d, not '%s'", optarg);
			break;
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
		case 'F':
			fail_on_given = 1;
			if (rm_severity_parse(optarg, &fail_on))
				return rm_cmd_usage_error(&cmd_report, "--fail-on wants info, warn or critical");
			break;
		case 'N':
			if (rm_severity_parse(optarg, &fail_on_new))
				return rm_cmd_usage_error(&cmd_report, "--fail-on-new wants info, warn or critical");
			new_given = 1;
			break;
		case 'S':
			since_report = optarg;
			if (rm_parse_duration(optarg, &report_age) && rm_parse_utc(optarg, &report_at))
				return rm_cmd_usage_error(&cmd_report,
				                          "--since-report wants a duration (20h, 7d) or a UTC time "
				                          "(2026-12-01, 2026-12-01T06:00:00Z), not '%s'",
				                          optarg);
			break;
		case 'B': baseline = optarg; break;
		case 'D': ctx->db_path = optarg; break;
		case 'h': return rm_cmd_help(&cmd_report);
		default: return rm_cmd_usage_error(&cmd_report, "bad option");
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
	if (all && optind < argc)
		return rm_cmd_usage_error(&cmd_report, "name runs, or --all (not both)");
	if (!all && optind >= argc)
		return rm_cmd_usage_error(&cmd_report, "no run given: name runs, or --all");
	/* HTML on a terminal is 100 KB of noise: it goes to a file named for
	 * the run, in the current directory, and the line below says where. */
	char named[300];
	if (!strcmp(format, "html") && (!output || !strcmp(output, "-")) && isatty(STDOUT_FILENO)) {
		snprintf(named, sizeof(named), "runmon-report%s%.200s.html", all || argc - optind > 1 ? "" : "-",
		         all || argc - optind > 1 ? "" : argv[optind]);
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
	int64_t *ids = NULL;
	size_t n = 0;
	if (all) {
		struct rm_run_info *list;
		size_t ln;
		if (rm_store_list_runs(st, &list, &ln, &err)) {
			rm_error("%s", err.msg);
			rm_store_close(st);
			return rm_exit_code(err.code);
		}
		ids = rm_xmalloc((ln ? ln : 1) * sizeof(int64_t));
		for (size_t i = 0; i < ln; i++)
			if (since < 0 || list[i].synced_at >= now - since)
				ids[n++] = list[i].id;
		rm_run_info_free(list, ln);
	} else {
		ids = rm_xmalloc((size_t)(argc - optind) * sizeof(int64_t));
		for (int i = optind; i < argc; i++)
			if (rm_store_find_run(st, argv[i], &ids[n++], &err)) {
				rm_error("%s", err.msg);
				free(ids);
				rm_store_close(st);
				return rm_exit_code(err.code);
			}
	}
	struct rm_report_outcome got;
	struct rm_report_spec spec = {.format = format,
	                              .output = output,
	                              .baseline = baseline,
	                              .cutoff = report_at >= 0 ? report_at : now - report_age,
	                              .now = now,
	                              .fail_on = fail_on,
	                              .fail_on_new = fail_on_new,
	                              .fail_worst = fail_worst,
	                              .fail_new = new_given};
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

const struct rm_cmd cmd_report = {"report", "write an HTML, Markdown or JSON health report of runs", usage_text,
                                  run_report};
