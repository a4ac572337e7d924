/*
 * cmd_demo.c - `runmon demo`: the same data batched two ways, diagnosed
 * side by side. No W&B account and no files needed.
 */
#include <stdio.h>

#include "cmd/cli.h"
#include "runmon/analyze.h"
#include "runmon/render.h"
#include "runmon/sim.h"

static const char about[] = "Simulates one dataset batched three ways, diagnoses each and compares them:\n"
                            "  demo-homogeneous  streaks of one bucket at a time, with loss resets in the\n"
                            "                    longest bucket (what teams run into)\n"
                            "  demo-interleaved  the fix: the stride sampler (contrib/python/\n"
                            "                    runmon_sampler.py) interleaves buckets by their size\n"
                            "  demo-random       fully random batches, for the price: every batch pads\n"
                            "                    to its longest sequence\n"
                            "then `runmon compare` of the first two. The runs stay in the database: the\n"
                            "one --db or RUNMON_DB names, else demo.db beside the default database, so\n"
                            "that a demo never mixes with your own runs.";

static const struct rm_opt options[] = {
    {"steps", 'n', "N", RM_ARG_COUNT, "steps per run", "20000", NULL, 0},
    {"seed", 's', "N", RM_ARG_COUNT, "random seed", "1", NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon demo",
    "runmon --db /tmp/demo.db demo --steps 5000",
    NULL,
};

enum { SIDES = 3 };

struct side {
	const char *name;
	struct rm_sim_opts sim;
	struct rm_diagnosis d;
	struct rm_run_info info;
};

static void row(const char *label, char cell[SIDES][64])
{
	printf("  %-26s %-22s %-22s %s\n", label, cell[0], cell[1], cell[2]);
}

static void table(const struct side *s)
{
	char c[SIDES][64];
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%s", s[i].name);
	row("", c);
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%s",
		         i == 0   ? "one bucket at a time"
		         : i == 1 ? "stride-interleaved"
		                  : "fully random");
	row("batching", c);
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%s", rm_verdict_word(s[i].d.severity));
	row("verdict", c);
	for (int i = 0; i < SIDES; i++) { /* z below 0: fewer, longer streaks than random order gives */
		double z = s[i].d.runs.z;
		snprintf(c[i], 64, s[i].d.runs.ok ? "z %+.1f: %s" : "-", z,
		         z < -2  ? "long"
		         : z > 2 ? "short"
		                 : "as random");
	}
	row("same-bucket streaks", c);
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%s %.2f", s[i].d.split.mixed ? "R^2" : "eta^2", s[i].d.split.eta2);
	row("loss split by bucket", c);
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%zu (p %.2f)", s[i].d.ladder.count, s[i].d.ladder.p);
	row("ladders", c);
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%zu%s", s[i].d.resets.spikes, s[i].d.resets.cluster_by_bucket ? ", by bucket" : "");
	row("loss resets", c);
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%.1f%%", 100 * s[i].d.cost.efficiency);
	row("padding efficiency", c);
	for (int i = 0; i < SIDES; i++)
		snprintf(c[i], 64, "%.0f", s[i].d.cost.tokens_per_s);
	row("tokens per second", c);
}

static int run_demo(int argc, char **argv, struct rm_ctx *ctx)
{
	struct side sides[SIDES] = {
	    {.name = "demo-homogeneous"}, {.name = "demo-interleaved"}, {.name = "demo-random"}};
	static const enum rm_sim_strategy strategy[SIDES] = {RM_SIM_CHUNKED, RM_SIM_STRIDE, RM_SIM_MIXED};
	int64_t steps = 20000, seed = 1;
	int c, code;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_demo, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'n':
			if (rm_parse_int(op.arg, 1000, &steps) || steps > 10000000)
				return rm_cmd_usage_error(&cmd_demo, "--steps wants 1000..10000000");
			break;
		case 's':
			if (rm_parse_int(op.arg, 0, &seed))
				return rm_cmd_usage_error(&cmd_demo, "--seed wants a non-negative integer");
			break;
		case 'D':
			ctx->db_path = op.arg;
			ctx->db_given = 1;
			break;
		case 'h': return rm_cmd_help(&cmd_demo);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (op.ind < argc)
		return rm_cmd_usage_error(&cmd_demo, "unexpected argument '%s'", argv[op.ind]);
	struct rm_store *st;
	struct rm_err err;
	char *own = NULL;
	if (!ctx->db_given) /* the demo's runs stay out of the user's store */
		ctx->db_path = own = rm_cli_default_demo_db();
	code = rm_ctx_open_store(ctx, &st);
	free(own);
	if (code)
		return code;
	for (int i = 0; i < SIDES; i++) {
		rm_sim_opts_default(&sides[i].sim);
		sides[i].sim.steps = steps;
		sides[i].sim.seed = (uint64_t)seed;
		sides[i].sim.strategy = strategy[i];
		sides[i].sim.spikes = i == 0 ? RM_SIM_SPIKES_BUCKET : RM_SIM_SPIKES_NONE;
	}
	struct rm_analyze_opts o;
	rm_analyze_opts_default(&o);
	int done = 0;
	for (; done < SIDES; done++) {
		struct side *s = &sides[done];
		if (rm_sim_store(st, s->name, &s->sim, &err) || rm_store_find_run(st, s->name, &s->info.id, &err) ||
		    rm_analyze_run(st, s->info.id, &o, &s->d, &s->info, &err)) {
			rm_error("%s", err.msg);
			code = rm_exit_code(err.code);
			goto out;
		}
	}
	printf("runmon demo: one dataset (%lld steps, 6 length buckets), batched three ways; the runs are in %s%s\n\n",
	       (long long)steps, rm_store_name(st),
	       ctx->db_given ? "" : " (the demo's own database; --db names another)");
	table(sides);
	for (int i = 0; i < SIDES; i++) {
		char line[RM_VERDICT_LEN];
		const char *fix[8];
		rm_explain_verdict(&sides[i].d, line, sizeof(line));
		int nf = rm_explain_fix(&sides[i].d, fix, 8);
		printf("\n%s: %s\n", sides[i].name, line);
		for (int f = 0; f < nf && i == 0; f++) /* what to do, for the run that needs it */
			printf("  %d. %s\n", f + 1, fix[f]);
	}
	printf("\nThe fix, compared (runmon compare %s %s):\n\n", sides[0].name, sides[1].name);
	struct rm_comparison cmp;
	rm_compare(&sides[0].d, &sides[1].d, NULL, &cmp);
	struct rm_compare_side view[2] = {{sides[0].name, &sides[0].d}, {sides[1].name, &sides[1].d}};
	rm_render_compare_text(stdout, view, &cmp, 0);
	const struct rm_padding_result *fix = &sides[1].d.cost, *rnd = &sides[2].d.cost;
	if (fix->ok && rnd->ok)
		printf("\nIts price: interleaving keeps bucketing's padding efficiency (%.1f%%, %.0f tokens/s);"
		       " fully random batches would give %.1f%% and %.0f tokens/s (%+.0f%%).\n",
		       100 * fix->efficiency, fix->tokens_per_s, 100 * rnd->efficiency, rnd->tokens_per_s,
		       fix->tokens_per_s > 0 ? 100 * (rnd->tokens_per_s / fix->tokens_per_s - 1) : 0.0);
	printf("\nFull reports: runmon --db %s diagnose demo-homogeneous (or demo-interleaved, demo-random)\n",
	       rm_store_name(st));
	code = RM_EXIT_OK;
out:
	for (int i = 0; i < done; i++) {
		rm_diagnosis_release(&sides[i].d);
		rm_run_info_release(&sides[i].info);
	}
	rm_store_close(st);
	return code;
}

const struct rm_cmd cmd_demo = {
    .name = "demo",
    .summary = "simulate homogeneous, stride-interleaved and random batching; compare them",
    .synopsis = "[--steps N] [--seed N] [--db PATH]",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 done, 2 usage error, 4 database error.",
    .run = run_demo,
};
