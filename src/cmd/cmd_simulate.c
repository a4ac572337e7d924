/*
 * cmd_simulate.c - `runmon simulate`: a training run with known ground truth.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/cost.h"
#include "runmon/parse.h"
#include "runmon/sim.h"

static const char about[] = "Simulates a length-bucketed training run: per-step batch composition under a\n"
                            "batching strategy and a loss with per-bucket levels (short ~0.55, medium ~1.1,\n"
                            "long 1.6-2.2), a decaying trend that drops at each epoch, and noise. The run\n"
                            "goes into the database (or, with --out, to history.jsonl + batches.jsonl).";

static const struct rm_opt options[] = {
    {"strategy", 'S', "S", RM_ARG_CHOICE,
     "sorted, chunked (default), bucketed-random, interleaved, mixed, hf-megabatch or stride (the sampler of "
     "contrib/python/runmon_sampler.py over a drawn dataset; it shards ranks itself)",
     NULL, "sorted chunked bucketed-random interleaved mixed hf-megabatch stride", 0},
    {"steps", 'n', "N", RM_ARG_COUNT, "steps", "20000", NULL, 0},
    {"seed", 's', "N", RM_ARG_COUNT, "random seed", "1", NULL, 0},
    {"buckets", 'b', "B0,B1,..", RM_ARG_TEXT, "bucket boundaries",
     "0,770,1216,1728,2432,3296,8192; with --lengths-from, 6 fitted to its lengths", NULL, 0},
    {"log-every", 'k', "K", RM_ARG_COUNT, "report the mean loss every K steps", "1", NULL, 0},
    {"spikes", 'p', "KIND", RM_ARG_CHOICE,
     "where loss resets begin: none (default), bucket (at random steps of one bucket, see --reset-bucket), "
     "checkpoint (right after each save), epoch (at each epoch's first step) or random (anywhere: genuine "
     "instability)",
     NULL, "none bucket checkpoint epoch random", 0},
    {"reset-steps", 'T', "N", RM_ARG_COUNT,
     "steps a reset takes to decay back (1: a one-step blip); each reset decays exponentially or linearly",
     "each draws 5..30", NULL, 0},
    {"reset-height", 'H', "X", RM_ARG_TEXT, "the loss at a reset's onset, times the usual (1.1..100)",
     "each draws 2..3", NULL, 0},
    {"reset-bucket", 'B', "B", RM_ARG_COUNT, "with --spikes bucket: the bucket resets begin in", "the longest", NULL,
     0},
    {"reset-every", 'E', "N", RM_ARG_COUNT,
     "with --spikes bucket or random: about one reset in N steps that may begin one (a new one only once the last "
     "decayed)",
     "100 (bucket), 400 (random)", NULL, 0},
    {"lr-restarts", 'W', "N", RM_ARG_COUNT,
     "restart the cosine learning-rate schedule every N steps (SGDR); the loss jumps at each restart", NULL, NULL, 0},
    {"diverge", 'd', "HOW", RM_ARG_CHOICE,
     "end the run diverged: nan, inf (the loss turns non-finite) or explode (tenfold every 20 steps)", NULL,
     "none nan inf explode", 0},
    {"diverge-at", 'A', "STEP", RM_ARG_STEP, "the step the divergence starts at", "the last 5% of the steps", NULL, 0},
    {"save-every", 'v', "N", RM_ARG_COUNT, "checkpoint interval in steps", "500", NULL, 0},
    {"steps-per-epoch", 'e', "N", RM_ARG_COUNT, "epoch length", "steps/3", NULL, 0},
    {"run", 'r', "NAME", RM_ARG_TEXT, "run name in the database", "sim-STRATEGY", NULL, 0},
    {"out", 'o', "DIR", RM_ARG_PATH, "write files to DIR instead of the database", NULL, NULL, 0},
    {"replace", 'Z', NULL, RM_ARG_NONE,
     "replace a run of real data (imported or synced) that has the --run name (without it, simulate refuses)", NULL,
     NULL, 0},
    {"no-bucket", 'N', NULL, RM_ARG_NONE, "record lengths only, no bucket id (as most trainers do)", NULL, NULL, 0},
    {"loss-only", 'O', NULL, RM_ARG_NONE,
     "record the loss alone, no batch composition (as most W&B runs are); with --out, no batches.jsonl", NULL, NULL, 0},
    {"cumulative", 'U', NULL, RM_ARG_NONE,
     "record only cumulative counters on the loss rows (elapsed_tokens, elapsed_examples): no per-batch composition; "
     "with --out, no batches.jsonl",
     NULL, NULL, 0},
    {"lens", 'l', NULL, RM_ARG_NONE,
     "record each batch's own lengths (a sidecar's \"lens\") instead of its statistics, as the Python recorder does",
     NULL, NULL, 0},
    {"lengths-from", 'L', "PATH", RM_ARG_PATH,
     "draw sequence lengths from a real distribution: a saved dataset or Arrow file, or a lengths file (as `buckets`)",
     NULL, NULL, 0},
    {"lengths-column", 'C', "NAME", RM_ARG_TEXT, "its column of lengths", "as `buckets`", NULL, 0},
    {"ranks", 'R', "R", RM_ARG_COUNT,
     "data-parallel ranks, each with its own batch per step (default 1); the step's loss is the mean over them", NULL,
     NULL, 0},
    {"rank-mode", 'M', "M", RM_ARG_CHOICE,
     "how ranks draw batches: lockstep (every rank the step's bucket), sharded (one global order dealt in turn; "
     "default) or independent (a sampler per rank, each at its own phase; bucketed strategies only)",
     NULL, "lockstep sharded independent", 0},
    {"micro", 'm', "M", RM_ARG_COUNT, "micro-batches per rank and step (gradient accumulation, default 1)", NULL, NULL,
     0},
    {0},
};

static const char *const examples[] = {
    "runmon simulate --strategy chunked --steps 20000",
    "runmon simulate --strategy stride --ranks 4 --run fixed",
    "runmon simulate --strategy hf-megabatch --ranks 4 --no-bucket --out sim",
    NULL,
};

struct sim_args {
	struct rm_sim_opts o;
	struct rm_arrow_opts lo;
	const char *lengths_from, *run, *out;
	int64_t *bounds;
	struct rm_lengths dist;
};

/* Reads the options into a; -1 when they are fine, else the exit code. */
static int parse_options(int argc, char **argv, struct rm_ctx *ctx, struct sim_args *a)
{
	int c;
	int64_t v;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_simulate, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'S':
			if (rm_sim_strategy_parse(op.arg, &a->o.strategy))
				return rm_cmd_usage_error(&cmd_simulate, "unknown strategy '%s'", op.arg);
			break;
		case 'n':
			if (rm_parse_int(op.arg, 100, &a->o.steps) || a->o.steps > 100000000)
				return rm_cmd_usage_error(&cmd_simulate, "--steps wants 100..100000000");
			break;
		case 's':
			if (rm_parse_int(op.arg, 0, &v))
				return rm_cmd_usage_error(&cmd_simulate, "--seed wants a non-negative integer");
			a->o.seed = (uint64_t)v;
			break;
		case 'b':
			free(a->bounds);
			a->bounds = NULL;
			if (rm_parse_bounds(op.arg, &a->bounds, &a->o.nbounds) || a->o.nbounds > 33)
				return rm_cmd_usage_error(&cmd_simulate, "--buckets wants 2 to 33 increasing lengths");
			a->o.bounds = a->bounds;
			break;
		case 'k':
			if (rm_parse_int(op.arg, 1, &v) || v > 100000)
				return rm_cmd_usage_error(&cmd_simulate, "--log-every wants 1..100000");
			a->o.log_every = (int)v;
			break;
		case 'N': a->o.no_bucket = 1; break;
		case 'Z': a->o.replace = 1; break;
		case 'U': a->o.cumulative = a->o.no_bucket = 1; break;
		case 'p':
			if (rm_sim_spikes_parse(op.arg, &a->o.spikes))
				return rm_cmd_usage_error(&cmd_simulate,
				                          "--spikes wants none, bucket, checkpoint, epoch or random");
			break;
		case 'T':
			if (rm_parse_int(op.arg, 1, &v) || v > 100000)
				return rm_cmd_usage_error(&cmd_simulate, "--reset-steps wants 1..100000");
			a->o.reset_steps = (int)v;
			break;
		case 'H': {
			char *end;
			double h = strtod(op.arg, &end);
			if (end == op.arg || *end || !(h >= 1.1 && h <= 100))
				return rm_cmd_usage_error(&cmd_simulate,
				                          "--reset-height wants a number from 1.1 to 100");
			a->o.reset_height = h;
			break;
		}
		case 'B':
			if (rm_parse_int(op.arg, 0, &v) || v > 63)
				return rm_cmd_usage_error(&cmd_simulate, "--reset-bucket wants a bucket index 0..63");
			a->o.reset_bucket = (int)v;
			break;
		case 'E':
			if (rm_parse_int(op.arg, 1, &a->o.reset_every))
				return rm_cmd_usage_error(&cmd_simulate, "--reset-every wants a step count >= 1");
			break;
		case 'W':
			if (rm_parse_int(op.arg, 2, &a->o.lr_restarts))
				return rm_cmd_usage_error(&cmd_simulate, "--lr-restarts wants a step count >= 2");
			break;
		case 'd':
			if (rm_sim_diverge_parse(op.arg, &a->o.diverge))
				return rm_cmd_usage_error(&cmd_simulate, "--diverge wants none, nan, inf or explode");
			break;
		case 'A':
			if (rm_parse_int(op.arg, 1, &a->o.diverge_at))
				return rm_cmd_usage_error(&cmd_simulate, "--diverge-at wants a step >= 1");
			break;
		case 'O': a->o.loss_only = 1; break;
		case 'v':
			if (rm_parse_int(op.arg, 2, &a->o.save_every))
				return rm_cmd_usage_error(&cmd_simulate, "--save-every wants a step count >= 2");
			break;
		case 'e':
			if (rm_parse_int(op.arg, 1, &a->o.steps_per_epoch))
				return rm_cmd_usage_error(&cmd_simulate, "--steps-per-epoch wants a step count");
			break;
		case 'r': a->run = op.arg; break;
		case 'o': a->out = op.arg; break;
		case 'L': a->lengths_from = op.arg; break;
		case 'C': a->lo.column = op.arg; break;
		case 'R':
			if (rm_parse_int(op.arg, 1, &v) || v > 1024)
				return rm_cmd_usage_error(&cmd_simulate, "--ranks wants 1..1024");
			a->o.ranks = (int)v;
			break;
		case 'M':
			if (rm_sim_rank_mode_parse(op.arg, &a->o.rank_mode))
				return rm_cmd_usage_error(&cmd_simulate,
				                          "--rank-mode wants lockstep, sharded or independent");
			break;
		case 'm':
			if (rm_parse_int(op.arg, 1, &v) || v > 64)
				return rm_cmd_usage_error(&cmd_simulate, "--micro wants 1..64");
			a->o.micro = (int)v;
			break;
		case 'l': a->o.lens = 1; break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_simulate);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (op.ind < argc)
		return rm_cmd_usage_error(&cmd_simulate, "unexpected argument '%s'", argv[op.ind]);
	return -1;
}

/* --lengths-from: the real lengths to draw from, and (without --buckets)
 * their least-padding boundaries. -1 when read, else the exit code. */
static int load_lengths(struct sim_args *a)
{
	struct rm_err err;
	int64_t *lens;
	size_t nl;
	struct rm_length_source src;
	if (rm_lengths_read(a->lengths_from, &a->lo, &lens, &nl, &src, &err)) {
		rm_error("%s", err.msg);
		return rm_exit_code(err.code);
	}
	rm_length_source_note(&src, a->lengths_from, nl, stderr);
	rm_lengths_from(&a->dist, lens, nl);
	free(lens);
	a->o.lengths = &a->dist;
	if (!a->o.bounds) { /* the least-padding boundaries of these lengths */
		struct rm_bucketing fit;
		rm_buckets_fit(&a->dist, 6, &fit);
		a->bounds = rm_xmalloc((size_t)(fit.k + 1) * sizeof(int64_t));
		memcpy(a->bounds, fit.bound, (size_t)(fit.k + 1) * sizeof(int64_t));
		a->o.bounds = a->bounds;
		a->o.nbounds = fit.k + 1;
		fprintf(stderr, "runmon: buckets fitted to those lengths:");
		for (int i = 0; i <= fit.k; i++)
			fprintf(stderr, "%s%lld", i ? "," : " ", (long long)fit.bound[i]);
		fputc('\n', stderr);
	}
	return -1;
}

static int run_simulate(int argc, char **argv, struct rm_ctx *ctx)
{
	struct sim_args a = {.lo = {NULL, NULL, NULL}};
	rm_sim_opts_default(&a.o);
	int code = parse_options(argc, argv, ctx, &a);
	if (code >= 0)
		goto out;
	code = RM_EXIT_USAGE;
	struct rm_err err;
	if (a.lo.column && !a.lengths_from) {
		code = rm_cmd_usage_error(&cmd_simulate, "--lengths-column goes with --lengths-from");
		goto out;
	}
	if (a.o.lens && (a.o.cumulative || a.o.loss_only)) {
		code = rm_cmd_usage_error(&cmd_simulate, "--lens records batches, which --%s leaves out",
		                          a.o.cumulative ? "cumulative" : "loss-only");
		goto out;
	}
	if (a.o.loss_only && a.o.cumulative) {
		code = rm_cmd_usage_error(&cmd_simulate, "--loss-only and --cumulative each say what is recorded: one");
		goto out;
	}
	if (a.o.reset_bucket >= 0 && a.o.spikes != RM_SIM_SPIKES_BUCKET) {
		code = rm_cmd_usage_error(&cmd_simulate, "--reset-bucket goes with --spikes bucket");
		goto out;
	}
	if (a.o.reset_bucket >= (a.o.bounds ? a.o.nbounds - 1 : 6)) {
		code = rm_cmd_usage_error(&cmd_simulate, "--reset-bucket %d: the run has %d buckets (0..%d)",
		                          a.o.reset_bucket, a.o.bounds ? a.o.nbounds - 1 : 6,
		                          (a.o.bounds ? a.o.nbounds - 1 : 6) - 1);
		goto out;
	}
	if (a.o.reset_every > 0 && a.o.spikes != RM_SIM_SPIKES_BUCKET && a.o.spikes != RM_SIM_SPIKES_RANDOM) {
		code = rm_cmd_usage_error(&cmd_simulate, "--reset-every goes with --spikes bucket or random");
		goto out;
	}
	if (a.o.diverge_at > 0 && !a.o.diverge) {
		code = rm_cmd_usage_error(&cmd_simulate, "--diverge-at goes with --diverge");
		goto out;
	}
	if (a.lengths_from && (code = load_lengths(&a)) >= 0)
		goto out;
	if (a.o.rank_mode == RM_SIM_INDEPENDENT &&
	    (a.o.strategy == RM_SIM_MIXED || a.o.strategy == RM_SIM_HF_MEGABATCH)) {
		code = rm_cmd_usage_error(&cmd_simulate, "--rank-mode independent wants a bucketed strategy (not %s)",
		                          rm_sim_strategy_name(a.o.strategy));
		goto out;
	}
	if (a.o.strategy == RM_SIM_STRIDE && a.o.rank_mode != RM_SIM_SHARDED) {
		code = rm_cmd_usage_error(&cmd_simulate, "--strategy stride shards the ranks itself: no --rank-mode %s",
		                          rm_sim_rank_mode_name(a.o.rank_mode));
		goto out;
	}
	if ((double)a.o.steps * rm_sim_slots(&a.o) > 200e6) {
		code = rm_cmd_usage_error(&cmd_simulate, "--steps x --ranks x --micro wants at most 200000000 batches");
		goto out;
	}
	if (a.out) {
		if (rm_sim_write_files(a.out, &a.o, &err)) {
			rm_error("%s", err.msg);
			code = rm_exit_code(err.code);
			goto out;
		}
		if (a.o.cumulative || a.o.loss_only)
			printf("wrote %s/history.jsonl (%s) and %s/truth.json (%s, %lld steps, seed %llu)\n", a.out,
			       a.o.cumulative ? "with cumulative counters" : "the loss alone", a.out,
			       rm_sim_strategy_name(a.o.strategy), (long long)a.o.steps, (unsigned long long)a.o.seed);
		else
			printf(
			    "wrote %s/history.jsonl, %s/batches.jsonl and %s/truth.json (%s, %lld steps, seed %llu)\n",
			    a.out, a.out, a.out, rm_sim_strategy_name(a.o.strategy), (long long)a.o.steps,
			    (unsigned long long)a.o.seed);
		code = RM_EXIT_OK;
		goto out;
	}
	char *name = a.run ? rm_xstrdup(a.run) : rm_xasprintf("sim-%s", rm_sim_strategy_name(a.o.strategy));
	struct rm_store *st;
	if ((code = rm_ctx_open_store(ctx, &st)) == RM_EXIT_OK) {
		if (rm_sim_store(st, name, &a.o, &err)) {
			rm_error("%s", err.msg);
			code = rm_exit_code(err.code);
		} else {
			printf("simulated run '%s': %s, %lld steps, seed %llu, loss logged every %d step%s\n", name,
			       rm_sim_strategy_name(a.o.strategy), (long long)a.o.steps, (unsigned long long)a.o.seed,
			       a.o.log_every, a.o.log_every > 1 ? "s" : "");
		}
		rm_store_close(st);
	}
	free(name);
out:
	free(a.bounds);
	rm_lengths_release(&a.dist);
	return code;
}

const struct rm_cmd cmd_simulate = {
    .name = "simulate",
    .summary = "simulate a bucketed training run with known ground truth",
    .synopsis = "[options]",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 written, 2 usage error, 4 database or file system error.",
    .run = run_simulate,
};
