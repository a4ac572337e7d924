/*
 * cmd_report.c - `runmon report`: nightly health reports over stored runs.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "runmon/analyze.h"
#include "runmon/changes.h"
#include "runmon/outfile.h"
#include "runmon/render.h"
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
                                 "  -o, --output FILE  write FILE (atomically; - is standard output)\n"
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
	if (all == (optind < argc))
		return rm_cmd_usage_error(&cmd_report, "name runs, or --all (not both)");
	if (baseline && since_report)
		return rm_cmd_usage_error(&cmd_report,
		                          "--baseline and --since-report both choose the baseline: give one");
	int fail_worst = fail_on_given || !new_given; /* --fail-on-new alone: only what is new fails */
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	double now = sde && *sde ? atof(sde) : (double)time(NULL);

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
	struct rm_diagnosis *ds = rm_xcalloc(n ? n : 1, sizeof(*ds));
	struct rm_run_info *infos = rm_xcalloc(n ? n : 1, sizeof(*infos));
	struct rm_report_run *runs = rm_xcalloc(n ? n : 1, sizeof(*runs));
	char **urls = rm_xcalloc(n ? n : 1, sizeof(char *));
	struct rm_analyze_opts o;
	rm_analyze_opts_default(&o);
	enum rm_severity worst = RM_SEV_NONE;
	size_t done = 0;
	code = RM_EXIT_OK;
	for (; done < n; done++) {
		if (rm_analyze_run(st, ids[done], &o, &ds[done], &infos[done], &err)) {
			rm_error("%s", err.msg);
			code = rm_exit_code(err.code);
			goto out;
		}
		/* Charts need the plot data only: drop the per-point arrays. */
		free(ds[done].split.trend);
		free(ds[done].split.adjusted);
		ds[done].split.trend = ds[done].split.adjusted = NULL;
		if (infos[done].entity && *infos[done].entity) {
			const char *base = getenv("WANDB_BASE_URL");
			urls[done] = rm_wandb_run_url(base && *base ? base : RM_WANDB_DEFAULT_URL, infos[done].entity,
			                              infos[done].project, infos[done].name);
		}
		runs[done] = (struct rm_report_run){&ds[done], &infos[done], urls[done], NULL};
		if (ds[done].severity > worst)
			worst = ds[done].severity;
	}
	/* What this report sees, and what the baseline saw of the same runs. */
	rm_report_order(runs, n);
	struct rm_seen seen = {0}, was = {0};
	struct rm_changes changes = {0};
	char **names = rm_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		char name[512];
		rm_report_run_name(runs[i].info, name, sizeof(name));
		names[i] = rm_xstrdup(name);
		rm_seen_add(&seen, name, runs[i].d);
	}
	double latest = 0;
	if (baseline ? rm_seen_read_report(baseline, &was, &latest, &err)
	             : rm_store_get_seen(st, (const char *const *)names, n,
	                                 report_at >= 0 ? report_at : now - report_age, &was, &latest, &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
		goto out_seen;
	}
	rm_changes_compute(&seen, &was, &changes);
	changes.file = baseline;
	changes.baseline = baseline || latest > 0;
	changes.baseline_at = latest;
	if (!baseline && was.n) { /* the newest report that saw these runs */
		changes.baseline_at = 0;
		for (size_t i = 0; i < was.n; i++)
			if (was.runs[i].at > changes.baseline_at)
				changes.baseline_at = was.runs[i].at;
	}
	for (size_t i = 0; i < n; i++)
		runs[i].change = &changes.runs[i];
	struct rm_report report = {runs, n, now, &changes};
	struct rm_outfile of;
	if (rm_outfile_open(&of, output ? output : "-", &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
		goto out_seen;
	}
	FILE *fp = of.fp;
	if (!strcmp(format, "html")) {
		rm_render_report_html(fp, &report);
	} else if (!strcmp(format, "md")) {
		rm_render_report_md(fp, &report);
	} else {
		json_t *doc = rm_render_report_json(&report);
		json_dumpf(doc, fp, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		fputc('\n', fp);
		json_decref(doc);
	}
	if (rm_outfile_commit(&of, &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
		goto out_seen;
	}
	if (rm_store_readonly(st))
		rm_warning("read-only database: this report is not kept as the next one's baseline");
	else if (rm_store_put_report(st, now, &seen, &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
		goto out_seen;
	}
	if ((fail_worst && worst >= fail_on) || (new_given && rm_changes_new_at(&changes, fail_on_new)))
		code = RM_EXIT_FINDINGS;
out_seen:
	rm_changes_release(&changes);
	rm_seen_release(&seen);
	rm_seen_release(&was);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
out:
	for (size_t i = 0; i < done; i++) {
		rm_diagnosis_release(&ds[i]);
		rm_run_info_release(&infos[i]);
		free(urls[i]);
	}
	free(ds);
	free(infos);
	free(runs);
	free(urls);
	free(ids);
	rm_store_close(st);
	return code;
}

const struct rm_cmd cmd_report = {"report", "write an HTML, Markdown or JSON health report of runs", usage_text,
                                  run_report};
