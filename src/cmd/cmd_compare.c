/*
 * cmd_compare.c - `runmon compare`: two stored runs, or one run before and
 * after a step, diagnosed and set side by side; exit 1 when AFTER got worse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/analyze.h"
#include "runmon/parse.h"
#include "runmon/render.h"

static const char about[] = "Diagnoses two stored runs, BEFORE and AFTER (or one run before and after a\n"
                            "step, with --at), and sets them side by side: the verdict and each cause\n"
                            "(resolved, new, better, worse, unchanged; not tested when a side is too\n"
                            "short to test), same-bucket streaks, the loss split\n"
                            "and each bucket's level, ladders, loss resets, the bucket-adjusted loss over\n"
                            "the steps both cover, padding efficiency and tokens per second: what the\n"
                            "change fixed, and its price. The result weighs both sides: \"resolved\"\n"
                            "when a cause went and nothing got worse, \"resolved at a price\" when\n"
                            "padding or throughput got worse beyond --max-cost, \"worse\" when a cause\n"
                            "rose or the adjusted loss rose beyond --max-loss. Nothing is stored.";

static const struct rm_opt options[] = {
    {"at", 'a', "STEP", RM_ARG_STEP, "compare one run's steps before STEP with its steps from STEP on", NULL, NULL, 0},
    {"json", 'j', NULL, RM_ARG_NONE, "print the comparison as JSON (schema runmon.compare/1)", NULL, NULL, 0},
    {"max-cost", 'c', "POINTS", RM_ARG_NUMBER,
     "the price AFTER may cost before it counts: padding efficiency falling by more than POINTS points, or "
     "tokens per second by more than POINTS percent, makes a fix \"resolved at a price\" (exit 5)",
     "5", NULL, 0},
    {"max-loss", 'l', "PERCENT", RM_ARG_NUMBER,
     "the bucket-adjusted loss may rise this many percent (and beyond two standard errors) before AFTER is "
     "worse; judged only when neither run's buckets come in streaks",
     "1", NULL, 0},
    {"seed", 'S', "N", RM_ARG_COUNT, "seed of the permutation tests", "fixed", NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon compare demo-homogeneous demo-interleaved",
    "runmon compare my-run --at 12000",
    "runmon compare acme/llm/ab12cd34 acme/llm/ef56gh78 --json",
    NULL,
};

struct side {
	char name[300];
	int64_t run_id;
	struct rm_diagnosis d;
	struct rm_run_info info;
	int done;
};

static int compare_sides(struct rm_store *st, struct side s[2], const char *a, const char *b, int64_t at,
                         const struct rm_analyze_opts *base, struct rm_err *err)
{
	if (rm_store_find_run(st, a, &s[0].run_id, err) || (!at && rm_store_find_run(st, b, &s[1].run_id, err)))
		return err->code;
	if (at) {
		s[1].run_id = s[0].run_id;
		snprintf(s[0].name, sizeof(s[0].name), "%s, steps < %lld", a, (long long)at);
		snprintf(s[1].name, sizeof(s[1].name), "%s, steps >= %lld", a, (long long)at);
	} else {
		snprintf(s[0].name, sizeof(s[0].name), "%s", a);
		snprintf(s[1].name, sizeof(s[1].name), "%s", b);
	}
	/* Runs without bucket ids are compared by one bucketing, derived from
	 * both runs' lengths: per-bucket rows then line up. */
	int64_t run[2] = {s[0].run_id, s[1].run_id}, zero[2] = {0, 0}, bounds[RM_MAX_BUCKETS + 1];
	int nbounds;
	if (rm_analyze_common_bounds(st, run, zero, zero, at ? 1 : 2, bounds, &nbounds, err))
		return err->code;
	for (int i = 0; i < 2; i++) {
		struct rm_analyze_opts o = *base;
		if (at && i == 0)
			o.until = at;
		if (at && i == 1)
			o.since = at;
		o.derive_bounds = nbounds ? bounds : NULL;
		o.nderive_bounds = nbounds;
		if (rm_analyze_run(st, s[i].run_id, &o, &s[i].d, &s[i].info, err))
			return err->code;
		s[i].done = 1;
		if (!s[i].d.points)
			return rm_err_set(err, RM_E_USAGE, "%s holds no loss to compare", s[i].name);
	}
	return RM_OK;
}

static int run_compare(int argc, char **argv, struct rm_ctx *ctx)
{
	int c, json = 0, code;
	int64_t at = 0, seed = -1;
	struct rm_optparse op;
	struct rm_compare_tolerance tol;
	rm_compare_tolerance_default(&tol);
	rm_optparse_init(&op, &cmd_compare, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'a':
			if (rm_parse_int(op.arg, 1, &at))
				return rm_cmd_usage_error(&cmd_compare, "--at wants a step above 0, not '%s'", op.arg);
			break;
		case 'j': json = 1; break;
		case 'c':
		case 'l': {
			double v;
			if (!rm_parse_double(op.arg, strlen(op.arg), &v) || !(v >= 0) || v > 100)
				return rm_cmd_usage_error(&cmd_compare, "--%s wants a number from 0 to 100, not '%s'",
				                          c == 'c' ? "max-cost" : "max-loss", op.arg);
			if (c == 'c')
				tol.max_cost = v;
			else
				tol.max_loss = v / 100;
			break;
		}
		case 'S':
			if (rm_parse_int(op.arg, 0, &seed))
				return rm_cmd_usage_error(&cmd_compare, "--seed wants a non-negative integer, not '%s'",
				                          op.arg);
			break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_compare);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	int want = at ? 1 : 2;
	if (argc - op.ind != want)
		return rm_cmd_usage_error(
		    &cmd_compare, at ? "--at wants one run, not %d" : "compare wants BEFORE and AFTER, not %d run%s",
		    argc - op.ind, argc - op.ind == 1 ? "" : "s");
	struct rm_analyze_opts o;
	rm_analyze_opts_default(&o);
	o.store_findings = 0;
	if (seed >= 0)
		o.detect.seed = (uint64_t)seed;
	struct rm_store *st;
	if ((code = rm_ctx_open_store_flags(ctx, &st, RM_STORE_MUST_EXIST)))
		return code;
	struct side s[2];
	memset(s, 0, sizeof(s));
	struct rm_err err;
	rm_progress_start("compare", NULL, 0);
	int rc = compare_sides(st, s, argv[op.ind], at ? NULL : argv[op.ind + 1], at, &o, &err);
	rm_progress_end();
	if (rc) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
		goto out;
	}
	struct rm_comparison cmp;
	rm_compare(&s[0].d, &s[1].d, &tol, &cmp);
	struct rm_compare_side view[2] = {{s[0].name, &s[0].d}, {s[1].name, &s[1].d}};
	if (json) {
		json_t *doc = rm_render_compare_json(view, &cmp);
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		putchar('\n');
		json_decref(doc);
	} else {
		rm_render_compare_text(stdout, view, &cmp,
		                       isatty(STDOUT_FILENO) || getenv("COLUMNS") ? (int)rm_terminal_width() : 0);
	}
	code = rm_compare_exit(&cmp);
out:
	for (int i = 0; i < 2; i++)
		if (s[i].done) {
			rm_diagnosis_release(&s[i].d);
			rm_run_info_release(&s[i].info);
		}
	rm_store_close(st);
	return code;
}

const struct rm_cmd cmd_compare = {
    .name = "compare",
    .summary = "set two runs (or one before and after a step) side by side",
    .synopsis = "BEFORE AFTER [options] | RUN --at STEP [options]",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 AFTER is no worse than BEFORE and costs no more, 1 something got worse (the verdict rose, a "
                   "cause reached warn that was below it, or the adjusted loss rose beyond --max-loss), 2 usage "
                   "error or unknown run, 4 database error, 5 no worse in loss but costlier beyond --max-cost "
                   "(\"resolved at a price\" when it fixed a cause).",
    .operands = RM_OPERANDS_RUNS,
    .run = run_compare,
};
