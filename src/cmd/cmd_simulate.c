/*
 * cmd_simulate.c - `runmon simulate`: a training run with known ground truth.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/cost.h"
#include "runmon/parse.h"
#include "runmon/sim.h"

static const char usage_text[] =
    "usage: runmon simulate [options]\n"
    "\n"
    "Simulates a length-bucketed training run: per-step batch composition under a\n"
    "batching strategy and a loss with per-bucket levels (short ~0.55, medium ~1.1,\n"
    "long 1.6-2.2), a decaying trend that drops at each epoch, and noise. The run\n"
    "goes into the database (or, with --out, to history.jsonl + batches.jsonl).\n"
    "\n"
    "Options:\n"
    "  --strategy S        sorted, chunked (default), bucketed-random, interleaved,\n"
    "                      mixed or hf-megabatch\n"
    "  --steps N           steps (default 20000)\n"
    "  --seed N            random seed (default 1)\n"
    "  --buckets B0,B1,..  bucket boundaries (default 0,770,1216,1728,2432,3296,8192;\n"
    "                      with --lengths-from, 6 fitted to its lengths)\n"
    "  --lengths-from PATH draw sequence lengths from a real distribution: a saved\n"
    "                      dataset or Arrow file, or a lengths file (as `buckets`)\n"
    "  --lengths-column NAME  its column of lengths (default as `buckets`)\n"
    "  --log-every K       report the mean loss every K steps (default 1)\n"
    "  --spikes KIND       none (default), bucket (resets in the longest bucket) or\n"
    "                      checkpoint (resets right after each save)\n"
    "  --save-every N      checkpoint interval in steps (default 500)\n"
    "  --steps-per-epoch N epoch length (default steps/3)\n"
    "  --run NAME          run name in the database (default sim-STRATEGY)\n"
    "  --out DIR           write files to DIR instead of the database\n"
    "  --no-bucket         record lengths only, no bucket id (as most trainers do)\n"
    "  --lens              record each batch's own lengths (a sidecar's \"lens\") instead\n"
    "                      of its statistics, as the Python recorder does\n"
    "  --cumulative        record only cumulative counters on the loss rows\n"
    "                      (elapsed_tokens, elapsed_examples): no per-batch\n"
    "                      composition; with --out, no batches.jsonl\n"
    "  --ranks R           data-parallel ranks, each with its own batch per step\n"
    "                      (default 1); the step's loss is the mean over them\n"
    "  --rank-mode M       how ranks draw batches: lockstep (every rank the step's\n"
    "                      bucket), sharded (one global order dealt in turn;\n"
    "                      default) or independent (a sampler per rank, each at\n"
    "                      its own phase; bucketed strategies only)\n"
    "  --micro M           micro-batches per rank and step (gradient accumulation,\n"
    "                      default 1)\n"
    "  --db PATH           database file\n";

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
	static const struct option longopts[] = {
	    {"strategy", required_argument, NULL, 'S'},
	    {"steps", required_argument, NULL, 'n'},
	    {"seed", required_argument, NULL, 's'},
	    {"buckets", required_argument, NULL, 'b'},
	    {"log-every", required_argument, NULL, 'k'},
	    {"spikes", required_argument, NULL, 'p'},
	    {"save-every", required_argument, NULL, 'v'},
	    {"steps-per-epoch", required_argument, NULL, 'e'},
	    {"run", required_argument, NULL, 'r'},
	    {"out", required_argument, NULL, 'o'},
	    {"no-bucket", no_argument, NULL, 'N'},
	    {"cumulative", no_argument, NULL, 'U'},
	    {"lens", no_argument, NULL, 'l'},
	    {"db", required_argument, NULL, 'D'},
	    {"lengths-from", required_argument, NULL, 'L'},
	    {"lengths-column", required_argument, NULL, 'C'},
	    {"ranks", required_argument, NULL, 'R'},
	    {"rank-mode", required_argument, NULL, 'M'},
	    {"micro", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	int64_t v;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (rm_sim_strategy_parse(optarg, &a->o.strategy))
				return rm_cmd_usage_error(&cmd_simulate, "unknown strategy '%s'", optarg);
			break;
		case 'n':
			if (rm_parse_int(optarg, 100, &a->o.steps) || a->o.steps > 100000000)
				return rm_cmd_usage_error(&cmd_simulate, "--steps wants 100..100000000");
			break;
		case 's':
			if (rm_parse_int(optarg, 0, &v))
				return rm_cmd_usage_error(&cmd_simulate, "--seed wants a non-negative integer");
			a->o.seed = (uint64_t)v;
			break;
		case 'b':
			free(a->bounds);
			a->bounds = NULL;
			if (rm_parse_bounds(optarg, &a->bounds, &a->o.nbounds) || a->o.nbounds > 33)
				return rm_cmd_usage_error(&cmd_simulate, "--buckets wants 2 to 33 increasing lengths");
			a->o.bounds = a->bounds;
			break;
		case 'k':
			if (rm_parse_int(optarg, 1, &v) || v > 100000)
				return rm_cmd_usage_error(&cmd_simulate, "--log-every wants 1..100000");
			a->o.log_every = (int)v;
			break;
		case 'N': a->o.no_bucket = 1; break;
		case 'U': a->o.cumulative = a->o.no_bucket = 1; break;
		case 'p':
			if (!strcmp(optarg, "none"))
				a->o.spikes = RM_SIM_SPIKES_NONE;
			else if (!strcmp(optarg, "bucket"))
				a->o.spikes = RM_SIM_SPIKES_BUCKET;
			else if (!strcmp(optarg, "checkpoint"))
				a->o.spikes = RM_SIM_SPIKES_CHECKPOINT;
			else
				return rm_cmd_usage_error(&cmd_simulate, "--spikes wants none, bucket or checkpoint");
			break;
		case 'v':
			if (rm_parse_int(optarg, 2, &a->o.save_every))
				return rm_cmd_usage_error(&cmd_simulate, "--save-every wants a step count >= 2");
			break;
		case 'e':
			if (rm_parse_int(optarg, 1, &a->o.steps_per_epoch))
				return rm_cmd_usage_error(&cmd_simulate, "--steps-per-epoch wants a step count");
			break;
		case 'r': a->run = optarg; break;
		case 'o': a->out = optarg; break;
		case 'L': a->lengths_from = optarg; break;
		case 'C': a->lo.column = optarg; break;
		case 'R':
			if (rm_parse_int(optarg, 1, &v) || v > 1024)
				return rm_cmd_usage_error(&cmd_simulate, "--ranks wants 1..1024");
			a->o.ranks = (int)v;
			break;
		case 'M':
			if (rm_sim_rank_mode_parse(optarg, &a->o.rank_mode))
				return rm_cmd_usage_error(&cmd_simulate,
				                          "--rank-mode wants lockstep, sharded or independent");
			break;
		case 'm':
			if (rm_parse_int(optarg, 1, &v) || v > 64)
				return rm_cmd_usage_error(&cmd_simulate, "--micro wants 1..64");
			a->o.micro = (int)v;
			break;
		case 'l': a->o.lens = 1; break;
		case 'D': ctx->db_path = optarg; break;
		case 'h': return rm_cmd_help(&cmd_simulate);
		default: return rm_cmd_usage_error(&cmd_simulate, "bad option");
		}
	}
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
	if (optind < argc) {
		code = rm_cmd_usage_error(&cmd_simulate, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	struct rm_err err;
	if (a.lo.column && !a.lengths_from) {
		code = rm_cmd_usage_error(&cmd_simulate, "--lengths-column goes with --lengths-from");
		goto out;
	}
	if (a.o.lens && a.o.cumulative) {
		code = rm_cmd_usage_error(&cmd_simulate, "--lens records batches, which --cumulative leaves out");
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
		if (a.o.cumulative)
			printf("wrote %s/history.jsonl with cumulative counters (%s, %lld steps, seed %llu)\n", a.out,
			       rm_sim_strategy_name(a.o.strategy), (long long)a.o.steps, (unsigned long long)a.o.seed);
		else
			printf("wrote %s/history.jsonl and %s/batches.jsonl (%s, %lld steps, seed %llu)\n", a.out,
			       a.out, rm_sim_strategy_name(a.o.strategy), (long long)a.o.steps,
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

const struct rm_cmd cmd_simulate = {"simulate", "simulate a bucketed training run with known ground truth", usage_text,
                                    run_simulate};
