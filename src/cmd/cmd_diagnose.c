/*
 * cmd_diagnose.c - `runmon diagnose`: verdict, evidence and fix for a run.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/analyze.h"
#include "runmon/import.h"
#include "runmon/parse.h"
#include "runmon/render.h"
#include "runmon/wandb.h"

static const char usage_text[] = "usage: runmon diagnose RUN [options]\n"
                                 "\n"
                                 "Runs the detectors on a stored run and prints the verdict first, then the\n"
                                 "evidence: same-bucket runs, the loss split by bucket (with the bucket-adjusted\n"
                                 "loss), ladders and length ramps, and loss resets with their likely cause.\n"
                                 "RUN is ENTITY/PROJECT/ID, a local run name, a unique display name, or a W&B\n"
                                 "run directory (or its run-ID.wandb file), read up to its last complete record.\n"
                                 "A full diagnosis replaces the run's findings in the database; one with\n"
                                 "--since is printed only.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --since STEP            diagnose steps >= STEP only (findings not stored)\n"
                                 "  --json                  print the diagnosis as JSON (schema runmon.diagnosis/3)\n"
                                 "  --offline               do not sync a W&B run (ENTITY/PROJECT/ID) first\n"
                                 "  --fail-on LEVEL         exit 1 when the verdict reaches info, warn (default)\n"
                                 "                          or critical\n"
                                 "  --checkpoint-every N    steps between checkpoint saves (default: save_steps\n"
                                 "                          or similar in the run config)\n"
                                 "  --steps-per-epoch N     epoch length (default: the config, else the epoch column)\n"
                                 "  --ladder-interval N     loss points per reported interval (default: automatic)\n"
                                 "  --seed N                seed of the permutation test (default fixed)\n"
                                 "  --lengths-from PATH     re-pack the training data's real lengths for the\n"
                                 "                          padding figures: a saved dataset, an Arrow file or a\n"
                                 "                          lengths file (as `buckets` reads them)\n"
                                 "  --lengths-column NAME   its column of lengths (default as `buckets`)\n"
                                 "  --db PATH               database file\n"
                                 "\n"
                                 "Exit status: 0 below the failing level, 1 at or above it, 2 usage error or\n"
                                 "unknown run, 4 database error.\n";

/* Brings a W&B run up to date; a failure is only a warning. */
static void sync_first(struct rm_store *st, const struct rm_run_path *rp)
{
	struct rm_wandb_opts wo = {.retry_max = 3};
	struct rm_sync_opts so;
	struct rm_sync_result res;
	struct rm_wandb *w;
	struct rm_err err;
	rm_sync_opts_default(&so);
	if (rm_wandb_open(&w, &wo, &err) || rm_sync_run(st, w, rp->entity, rp->project, rp->id, &so, &res, &err))
		rm_warning("not synced, diagnosing what is stored: %s", err.msg);
	rm_wandb_close(w);
}

/* RUN may be a W&B run directory or its run-ID.wandb log, still being
 * written or not: what it gained since the last read is imported first.
 * Returns 1 with *run_id set, 0 when spec is no such path, -1 on error. */
static int read_wandb_log(struct rm_store *st, const char *spec, int64_t *run_id, struct rm_err *err)
{
	struct stat sb;
	size_t n = strlen(spec);
	*run_id = 0;
	if (stat(spec, &sb))
		return 0;
	char *log = S_ISDIR(sb.st_mode)                        ? rm_wandb_dir_log(spec)
	            : n > 6 && !strcmp(spec + n - 6, ".wandb") ? rm_xstrdup(spec)
	                                                       : NULL;
	if (!log)
		return 0;
	char *path = rm_path_absolute(log);
	struct rm_import_opts opts = {.format = RM_FMT_WANDB_LOG};
	struct rm_import_report rep;
	struct rm_tail_pos pos;
	int rc = rm_import_tail(st, &opts, path, &rep, &pos, err);
	if (!rc && !pos.run_id)
		rc = rm_err_set(err, RM_E_INPUT, "%s: no run record yet; try again once the run has started", log);
	if (!rc)
		rm_import_report_release(&rep);
	*run_id = pos.run_id;
	free(path);
	free(log);
	return rc ? -1 : 1;
}

static int run_diagnose(int argc, char **argv, struct rm_ctx *ctx)
{
	static const struct option longopts[] = {
	    {"since", required_argument, NULL, 's'},
	    {"json", no_argument, NULL, 'j'},
	    {"offline", no_argument, NULL, 'o'},
	    {"fail-on", required_argument, NULL, 'f'},
	    {"checkpoint-every", required_argument, NULL, 'c'},
	    {"steps-per-epoch", required_argument, NULL, 'e'},
	    {"ladder-interval", required_argument, NULL, 'l'},
	    {"seed", required_argument, NULL, 'S'},
	    {"db", required_argument, NULL, 'D'},
	    {"lengths-from", required_argument, NULL, 'L'},
	    {"lengths-column", required_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct rm_analyze_opts o;
	enum rm_severity fail_on = RM_SEV_WARN;
	int c, json = 0, offline = 0, code;
	int64_t v;
	struct rm_arrow_opts lo = {NULL, NULL, NULL};
	const char *lengths_from = NULL;
	rm_analyze_opts_default(&o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (rm_parse_int(optarg, 0, &o.since))
				return rm_cmd_usage_error(&cmd_diagnose, "--since wants a step number, not '%s'",
				                          optarg);
			break;
		case 'j': json = 1; break;
		case 'o': offline = 1; break;
		case 'f':
			if (rm_severity_parse(optarg, &fail_on))
				return rm_cmd_usage_error(&cmd_diagnose, "--fail-on wants info, warn or critical");
			break;
		case 'c':
			if (rm_parse_int(optarg, 2, &o.checkpoint_every))
				return rm_cmd_usage_error(&cmd_diagnose, "--checkpoint-every wants a step count >= 2");
			break;
		case 'e':
			if (rm_parse_int(optarg, 1, &o.steps_per_epoch))
				return rm_cmd_usage_error(&cmd_diagnose, "--steps-per-epoch wants a step count");
			break;
		case 'l':
			if (rm_parse_int(optarg, 1, &v) || v > 100000)
				return rm_cmd_usage_error(&cmd_diagnose, "--ladder-interval wants 1..100000");
			o.detect.ladder_interval = (int)v;
			break;
		case 'S':
			if (rm_parse_int(optarg, 0, &v))
				return rm_cmd_usage_error(&cmd_diagnose, "--seed wants a non-negative integer");
			o.detect.seed = (uint64_t)v;
			break;
		case 'D': ctx->db_path = optarg; break;
		case 'L': lengths_from = optarg; break;
		case 'C': lo.column = optarg; break;
		case 'h': return rm_cmd_help(&cmd_diagnose);
		default: return rm_cmd_usage_error(&cmd_diagnose, "bad option");
		}
	}
	if (optind != argc - 1)
		return rm_cmd_usage_error(&cmd_diagnose, optind >= argc ? "no run given" : "one run at a time");
	if (lo.column && !lengths_from)
		return rm_cmd_usage_error(&cmd_diagnose, "--lengths-column goes with --lengths-from");
	struct rm_store *st;
	struct rm_err err;
	int64_t *lens = NULL;
	if (lengths_from) {
		struct rm_length_source src;
		if (rm_lengths_read(lengths_from, &lo, &lens, &o.nlengths, &src, &err)) {
			rm_error("%s", err.msg);
			return rm_exit_code(err.code);
		}
		rm_length_source_note(&src, lengths_from, o.nlengths, stderr);
		o.lengths = lens;
	}
	struct rm_diagnosis d;
	struct rm_run_info info;
	int64_t run_id;
	const char *spec = argv[optind];
	char *url = NULL;
	struct rm_run_path rp;
	/* Only a run file to import or a W&B run to sync may start a database;
	 * a name to look up never creates one (the file would hold nothing). */
	int may_create = access(spec, F_OK) == 0;
	if (!may_create && !offline && rm_run_path_parse(spec, &rp)) {
		may_create = 1;
		rm_run_path_release(&rp);
	}
	if ((code = rm_ctx_open_store_flags(ctx, &st, may_create ? 0 : RM_STORE_MUST_EXIST))) {
		free(lens);
		return code;
	}
	int is_log = read_wandb_log(st, spec, &run_id, &err);
	if (!is_log && !offline && rm_run_path_parse(spec, &rp)) {
		sync_first(st, &rp);
		rm_run_path_release(&rp);
	}
	char what[200];
	snprintf(what, sizeof(what), "diagnose %s", spec);
	rm_progress_start(what, NULL, 0);
	int failed = is_log < 0 || (!is_log && rm_store_find_run(st, spec, &run_id, &err)) ||
	             rm_analyze_run(st, run_id, &o, &d, &info, &err);
	rm_progress_end();
	if (failed) {
		rm_error("%s", err.msg);
		rm_store_close(st);
		free(lens);
		return rm_exit_code(err.code);
	}
	free(lens);
	url = rm_run_page(&info);
	struct rm_render_ctx rc = {.run = &info, .since = o.since, .color = !json && rm_use_color(), .run_url = url};
	if (json) {
		json_t *doc = rm_render_json(&d, &rc);
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		putchar('\n');
		json_decref(doc);
	} else if (isatty(STDOUT_FILENO)) { /* prose wraps at the terminal's width */
		char *text = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);
		if (mem) {
			rm_render_text(mem, &d, &rc);
			fclose(mem);
			rm_wrap(stdout, text, len, rm_terminal_width());
			free(text);
		}
	} else {
		rm_render_text(stdout, &d, &rc);
	}
	code = d.severity >= fail_on ? RM_EXIT_FINDINGS : RM_EXIT_OK;
	free(url);
	rm_diagnosis_release(&d);
	rm_run_info_release(&info);
	rm_store_close(st);
	return code;
}

const struct rm_cmd cmd_diagnose = {"diagnose", "find homogeneous batching in a run and say what to do", usage_text,
                                    run_diagnose};
