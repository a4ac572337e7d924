/*
 * cmd_diagnose.c - `runmon diagnose`: verdict, evidence and fix for a run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/analyze.h"
#include "runmon/import.h"
#include "runmon/parse.h"
#include "runmon/render.h"
#include "runmon/wandb.h"

static const char about[] = "Runs the detectors on a stored run and prints the verdict first, then the\n"
                            "evidence: same-bucket streaks, the loss split by bucket (with the bucket-\n"
                            "adjusted loss), ladders and length ramps, and loss resets with their likely\n"
                            "cause.\n"
                            "RUN is ENTITY/PROJECT/ID, a local run name, a unique display name, or a W&B\n"
                            "run directory (or its run-ID.wandb file), read up to its last complete record.\n"
                            "A full diagnosis replaces the run's findings in the database; one with\n"
                            "--since is printed only.";

static const struct rm_opt options[] = {
    {"since", 's', "WHEN", RM_ARG_WHEN,
     "diagnose only the steps since WHEN: a step (12000), a duration ago (24h), or a date (2026-12-01) by the steps'"
     " logged times; the findings are printed, not stored",
     NULL, NULL, 0},
    {"json", 'j', NULL, RM_ARG_NONE, "print the diagnosis as JSON (schema runmon.diagnosis/4)", NULL, NULL, 0},
    {"offline", 'o', NULL, RM_ARG_NONE, "do not sync a W&B run (ENTITY/PROJECT/ID) first", NULL, NULL, 0},
    {"fail-on", 'f', "LEVEL", RM_ARG_CHOICE, "exit 1 when the verdict reaches info, warn (default) or critical", NULL,
     "info warn critical", 0},
    {"checkpoint-every", 'c', "N", RM_ARG_COUNT, "steps between checkpoint saves",
     "save_steps or similar in the run config", NULL, 0},
    {"steps-per-epoch", 'e', "N", RM_ARG_COUNT, "epoch length", "the config, else the epoch column", NULL, 0},
    {"ladder-interval", 'l', "N", RM_ARG_COUNT, "loss points per reported interval", "automatic", NULL, 0},
    {"seed", 'S', "N", RM_ARG_COUNT, "seed of the permutation test", "fixed", NULL, 0},
    {"lengths-from", 'L', "PATH", RM_ARG_PATH,
     "re-pack the training data's real lengths for the padding figures: a saved dataset, an Arrow file or a lengths "
     "file (as `buckets` reads them)",
     NULL, NULL, 0},
    {"lengths-column", 'C', "NAME", RM_ARG_TEXT, "its column of lengths", "as `buckets`", NULL, 0},
    {"loss-is", 'I', "WHAT", RM_ARG_CHOICE,
     "what a logged loss point is: step (one step's loss, joined to its own batch) or mean (of the steps since the "
     "previous point); auto starts from the loss key's convention, else the mean, and moves only where the batch "
     "composition decides",
     "auto", "auto step mean", 0},
    {0},
};

static const char *const examples[] = {
    "runmon diagnose demo-homogeneous",
    "runmon diagnose acme/llm/ab12cd34 --json",
    "runmon diagnose wandb/latest-run --offline",
    "runmon diagnose my-run --checkpoint-every 500 --fail-on critical",
    NULL,
};

/* Brings a W&B run up to date; a failure is kept in *err (code 0: synced)
 * for the caller: only a warning when the store has the run. */
static void sync_first(struct rm_store *st, const struct rm_run_path *rp, struct rm_err *err)
{
	struct rm_wandb_opts wo = {.retry_max = 3};
	struct rm_sync_opts so;
	struct rm_sync_result res;
	struct rm_wandb *w;
	memset(err, 0, sizeof(*err));
	rm_sync_opts_default(&so);
	if (!rm_wandb_open(&w, &wo, err))
		rm_sync_run(st, w, rp->entity, rp->project, rp->id, &so, &res, err);
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
	if (!rc)
		rm_import_report_release(&rep);
	else if (rc == RM_E_INPUT && err->bad_line && pos.run_id) { /* the records before it were kept */
		rm_warning("%s; diagnosing the records before it", err->msg);
		rc = RM_OK;
	}
	if (!rc && !pos.run_id)
		rc = rm_err_set(err, RM_E_INPUT, "%s: no run record yet; try again once the run has started", log);
	*run_id = pos.run_id;
	free(path);
	free(log);
	return rc ? -1 : 1;
}

/* RUN may be a TensorBoard event file or a directory of them (one run):
 * it is imported again first (a later row replaces the same step's).
 * Returns as read_wandb_log. */
static int read_tfevents(struct rm_store *st, const char *spec, int64_t *run_id, struct rm_err *err)
{
	struct stat sb;
	const char *base = strrchr(spec, '/');
	*run_id = 0;
	if (stat(spec, &sb) ||
	    (S_ISDIR(sb.st_mode) ? !rm_tfevents_tree(spec) : !strstr(base ? base + 1 : spec, "tfevents")))
		return 0;
	struct rm_import_opts opts = {.format = RM_FMT_AUTO};
	struct rm_import_report rep;
	char *files[] = {(char *)spec};
	if (rm_import(st, &opts, files, 1, &rep, err))
		return -1;
	int rc = RM_OK;
	if (rep.n != 1) { /* stored now: say their names */
		char names[256] = "";
		for (size_t i = 0, len = 0; i < rep.n && len < sizeof(names); i++)
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
			                        rep.r[i].run_name);
		rc = rm_err_set(err, RM_E_USAGE, "%s holds %zu TensorBoard runs, now stored (%s): diagnose one by name",
		                spec, rep.n, names);
	}
	*run_id = rep.n ? rep.r[0].run_id : 0;
	rm_import_report_release(&rep);
	return rc ? -1 : 1;
}

/* The diagnosis on standard output: JSON, or text whose prose wraps at
 * the terminal's width (its tables were made to fit it). */
static void print_diagnosis(const struct rm_diagnosis *d, const struct rm_render_ctx *rc, int json)
{
	if (json) {
		json_t *doc = rm_render_json(d, rc);
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		putchar('\n');
		json_decref(doc);
	} else if (rc->width) { /* prose wraps at the terminal's width; tables were made to fit it */
		char *text = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);
		if (mem) {
			rm_render_text(mem, d, rc);
			fclose(mem);
			rm_wrap(stdout, text, len, (size_t)rc->width);
			free(text);
		}
	} else {
		rm_render_text(stdout, d, rc);
	}
}

static int run_diagnose(int argc, char **argv, struct rm_ctx *ctx)
{
	struct rm_analyze_opts o;
	enum rm_severity fail_on = RM_SEV_WARN;
	int c, json = 0, offline = 0, code;
	struct rm_since since = {RM_SINCE_STEP, 0, 0};
	const char *since_arg = NULL;
	int64_t v;
	struct rm_arrow_opts lo = {NULL, NULL, NULL};
	const char *lengths_from = NULL;
	rm_analyze_opts_default(&o);
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_diagnose, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 's':
			if (rm_parse_since(op.arg, &since))
				return rm_cmd_usage_error(&cmd_diagnose, "--since wants %s, not '%s'", RM_SINCE_KINDS,
				                          op.arg);
			since_arg = op.arg;
			if (since.kind == RM_SINCE_STEP)
				o.since = since.step;
			break;
		case 'j': json = 1; break;
		case 'o': offline = 1; break;
		case 'f':
			if (rm_severity_parse(op.arg, &fail_on))
				return rm_cmd_usage_error(&cmd_diagnose, "--fail-on wants info, warn or critical");
			break;
		case 'c':
			if (rm_parse_int(op.arg, 2, &o.checkpoint_every))
				return rm_cmd_usage_error(&cmd_diagnose, "--checkpoint-every wants a step count >= 2");
			break;
		case 'e':
			if (rm_parse_int(op.arg, 1, &o.steps_per_epoch))
				return rm_cmd_usage_error(&cmd_diagnose, "--steps-per-epoch wants a step count");
			break;
		case 'l':
			if (rm_parse_int(op.arg, 1, &v) || v > 100000)
				return rm_cmd_usage_error(&cmd_diagnose, "--ladder-interval wants 1..100000");
			o.detect.ladder_interval = (int)v;
			break;
		case 'S':
			if (rm_parse_int(op.arg, 0, &v))
				return rm_cmd_usage_error(&cmd_diagnose, "--seed wants a non-negative integer");
			o.detect.seed = (uint64_t)v;
			break;
		case 'D': ctx->db_path = op.arg; break;
		case 'L': lengths_from = op.arg; break;
		case 'C': lo.column = op.arg; break;
		case 'I':
			o.detect.reading = !strcmp(op.arg, "step")   ? RM_READ_STEP
			                   : !strcmp(op.arg, "mean") ? RM_READ_MEAN
			                                             : RM_READ_AUTO;
			break;
		case 'h': return rm_cmd_help(&cmd_diagnose);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (op.ind != argc - 1)
		return rm_cmd_usage_error(&cmd_diagnose, op.ind >= argc ? "no run given" : "one run at a time");
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
	const char *spec = argv[op.ind];
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
	if (!is_log)
		is_log = read_tfevents(st, spec, &run_id, &err);
	struct rm_err sync_err = {0};
	if (!is_log && !offline && rm_run_path_parse(spec, &rp)) {
		sync_first(st, &rp, &sync_err);
		rm_run_path_release(&rp);
	}
	char what[200];
	snprintf(what, sizeof(what), "diagnose %s", spec);
	rm_progress_start(what, NULL, 0);
	int failed = is_log < 0 || (!is_log && rm_store_find_run(st, spec, &run_id, &err));
	/* Said once: a warning when the stored run is diagnosed, else the error. */
	if (failed && is_log == 0 && sync_err.code && err.code == RM_E_NOTFOUND) /* the sync's failure is the cause */
		rm_err_set(&err, sync_err.code, "cannot diagnose '%s': not in the store, and not synced: %s", spec,
		           sync_err.msg);
	else if (!failed && sync_err.code)
		rm_warning("not synced, diagnosing what is stored: %s", sync_err.msg);
	if (!failed && since.kind != RM_SINCE_STEP &&
	    rm_store_step_at(st, run_id, rm_since_time(&since, (double)time(NULL)), &o.since, &err)) {
		char msg[sizeof(err.msg)];
		snprintf(msg, sizeof(msg), "%s", err.msg);
		rm_err_set(&err, RM_E_USAGE, "--since %s: %s", since_arg, msg);
		failed = 1;
	}
	failed = failed || rm_analyze_run(st, run_id, &o, &d, &info, &err);
	rm_progress_end();
	if (failed) {
		rm_error("%s", err.msg);
		rm_store_close(st);
		free(lens);
		return rm_exit_code(err.code);
	}
	free(lens);
	url = rm_run_page(&info);
	struct rm_render_ctx rc = {.run = &info,
	                           .since = o.since,
	                           .color = !json && rm_use_color(),
	                           .run_url = url,
	                           .width = isatty(STDOUT_FILENO) || getenv("COLUMNS") ? (int)rm_terminal_width() : 0};
	print_diagnosis(&d, &rc, json);
	code = d.severity >= fail_on ? RM_EXIT_FINDINGS : RM_EXIT_OK;
	free(url);
	rm_diagnosis_release(&d);
	rm_run_info_release(&info);
	rm_store_close(st);
	return code;
}

const struct rm_cmd cmd_diagnose = {
    .name = "diagnose",
    .summary = "find homogeneous batching in a run and say what to do",
    .synopsis = "RUN [options]",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 below the failing level, 1 at or above it, 2 usage error or unknown run, 3 a W&B run neither "
                   "stored nor reachable (network or server error), 4 database error.",
    .operands = RM_OPERANDS_RUNS_FILES,
    .run = run_diagnose,
};
