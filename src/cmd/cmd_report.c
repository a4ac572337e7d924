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
                                 "  --db PATH          database file\n"
                                 "\n"
                                 "SOURCE_DATE_EPOCH, when set, is used as the generation time.\n";

static int run_report(int argc, char **argv, struct rm_ctx *ctx)
{
	static const struct option longopts[] = {
	    {"all", no_argument, NULL, 'a'},           {"since", required_argument, NULL, 's'},
	    {"format", required_argument, NULL, 'f'},  {"output", required_argument, NULL, 'o'},
	    {"fail-on", required_argument, NULL, 'F'}, {"db", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	int c, all = 0, code;
	double since = -1;
	const char *format = NULL, *output = NULL;
	enum rm_severity fail_on = RM_SEV_WARN;
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
			if (rm_severity_parse(optarg, &fail_on))
				return rm_cmd_usage_error(&cmd_report, "--fail-on wants info, warn or critical");
			break;
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
		runs[done] = (struct rm_report_run){&ds[done], &infos[done], urls[done]};
		if (ds[done].severity > worst)
			worst = ds[done].severity;
	}
	struct rm_outfile of;
	if (rm_outfile_open(&of, output ? output : "-", &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
		goto out;
	}
	FILE *fp = of.fp;
	if (!strcmp(format, "html")) {
		rm_render_report_html(fp, runs, n, now);
	} else if (!strcmp(format, "md")) {
		rm_render_report_md(fp, runs, n, now);
	} else {
		json_t *doc = rm_render_report_json(runs, n, now);
		json_dumpf(doc, fp, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		fputc('\n', fp);
		json_decref(doc);
	}
	if (rm_outfile_commit(&of, &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
	}
	if (!code && worst >= fail_on)
		code = RM_EXIT_FINDINGS;
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
