/*
 * cmd_sync.c - `runmon sync`: pull W&B runs into the database.
 */
#include <signal.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/wandb.h"
#include "runmon/common.h"

static const char about[] = "Pulls run metadata and full-resolution history (HistoryPage step windows)\n"
                            "from the W&B API into the database, incrementally: only steps after the\n"
                            "last synced one are fetched. Each window is committed with the sync cursor,\n"
                            "so an interrupted sync resumes with no gap and no duplicate. Batch keys\n"
                            "(batch/bucket, batch/max_len, ...) land in the batches table.\n"
                            "\n"
                            "Authentication: WANDB_API_KEY, else the ~/.netrc (or $NETRC) entry for the\n"
                            "API host. WANDB_BASE_URL selects a self-hosted server (default\n"
                            "https://api.wandb.ai); WANDB_HTTP_TIMEOUT sets the per-request timeout (s).";

static const char notes[] = "Requests are paced by the quota W&B advertises (RateLimit-Remaining and\n"
                            "RateLimit-Reset on each response): what is left is spent evenly until the\n"
                            "reset, so the server does not have to refuse. No wait lasts over 600 s\n"
                            "(a larger Retry-After or RateLimit-Reset counts as 600 s), and SIGINT or\n"
                            "SIGTERM ends any wait at once, keeping the windows fetched.";

static const struct rm_opt options[] = {
    {"jobs", 'j', "N", RM_ARG_COUNT, "windows in flight at once, fixed",
     "adaptive, from 2, more while throughput rises and latency holds, halved on 429, 5xx, timeouts, latency jumps",
     NULL, 0},
    {"max-jobs", 'J', "N", RM_ARG_COUNT, "the most the adaptive number reaches", "16", NULL, 0},
    {"stats", 'T', NULL, RM_ARG_NONE,
     "at exit, print requests, 429s, windows in flight and the rate-limit state on stderr", NULL, NULL, 0},
    {"page-size", 'p', "N", RM_ARG_COUNT, "steps per window", "1000", NULL, 0},
    {"retry-max", 'r', "N", RM_ARG_COUNT,
     "retries of a failed request (default 8); connection errors, timeouts, 408, 429 and 5xx are retried with backoff, "
     "honouring Retry-After and RateLimit-Reset",
     NULL, NULL, 0},
    {"retry-wait", 'w', "D", RM_ARG_DURATION, "first backoff (500ms, 2s), doubling to 60s", "2s", NULL, 0},
    {"loss-key", 'l', "KEY", RM_ARG_TEXT, "loss key", "detect", NULL, 0},
    {"batch-prefix", 'P', "P", RM_ARG_TEXT, "prefix of batch keys", "batch/", NULL, 0},
    {"buckets", 'b', "B0,B1,..", RM_ARG_TEXT, "bucket boundaries, for rows without batch/bucket", NULL, NULL, 0},
    {"full", 'f', NULL, RM_ARG_NONE, "fetch from step 0 again", NULL, NULL, 0},
    {"skip-bad", 'k', NULL, RM_ARG_NONE,
     "skip a row that does not parse or map (keep the window's other rows), report how many and the first", NULL, NULL,
     0},
    {"state", 's', "STATE", RM_ARG_CHOICE, "with ENTITY/PROJECT: only runs in this state", NULL,
     "running finished crashed failed killed", 0},
    {"since", 'S', "WHEN", RM_ARG_WHEN,
     "with ENTITY/PROJECT: only runs created since WHEN, a date (2026-12-01, 2026-12-01T06:00:00Z) or a duration ago "
     "(7d)",
     NULL, NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon sync acme/llm/ab12cd34",
    "runmon sync acme/llm --state running",
    "runmon sync --full --stats acme/llm/ab12cd34",
    NULL,
};

struct progress {
	int tty;
	double last;
	struct rm_http *http; /* for the flow state */
};

/* "4 in flight, quota 35% left" or "4 in flight". */
static void flow_state(const struct rm_http *h, char *buf, size_t n)
{
	const struct rm_flow *f = rm_http_flow(h);
	int len = snprintf(buf, n, "%d in flight", rm_http_concurrency(h));
	if (f->quota_known && len > 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", quota %.0f%% left", f->remaining / 10);
	double wait = f->window_end - rm_monotonic();
	if (f->quota_known && f->remaining < 1 && wait > 0 && len > 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, ", back in %.0f s", wait);
}

static void on_progress(void *arg, const struct rm_sync_progress *p)
{
	struct progress *pr = arg;
	double t = rm_monotonic();
	if (!rm_progress_enabled() || t - pr->last < 0.25)
		return;
	pr->last = t;
	double rate = p->elapsed > 0 ? (double)p->rows / p->elapsed : 0;
	char line[256], state[64];
	int k = snprintf(line, sizeof(line), "%lld", (long long)p->rows);
	if (p->total > 0)
		k += snprintf(line + k, sizeof(line) - (size_t)k, " of %lld", (long long)p->total);
	k += snprintf(line + k, sizeof(line) - (size_t)k, " rows, %.0f rows/s", rate);
	if (p->total > p->rows && rate > 0)
		k += snprintf(line + k, sizeof(line) - (size_t)k, ", ETA %.0f s", (double)(p->total - p->rows) / rate);
	flow_state(pr->http, state, sizeof(state));
	snprintf(line + k, sizeof(line) - (size_t)k, " (%s)", state);
	rm_progress_text(line);
}

/* --stats: what the client did and where the quota stands. */
static void print_stats(const struct rm_http *h)
{
	const struct rm_flow *f = rm_http_flow(h);
	char state[64];
	flow_state(h, state, sizeof(state));
	fprintf(stderr,
	        "sync: %llu responses, %llu refused (429); windows in flight: %s, peak %d, halved %llu times; "
	        "%.1f s waited for the quota\n",
	        (unsigned long long)f->responses, (unsigned long long)f->refused, f->pinned ? "fixed" : "adaptive",
	        f->peak, (unsigned long long)f->cuts, f->paced);
	fprintf(stderr, "sync: now %s\n", state);
}

/* Splits "a/b/c" into up to three parts; returns how many. */
static int split_path(char *s, char **parts)
{
	int n = 0;
	for (char *save, *tok = strtok_r(s, "/", &save); tok && n < 4; tok = strtok_r(NULL, "/", &save))
		parts[n++] = tok;
	return n;
}

/* W&B's runs filter for --state and --since (a MongoDB-style query, as
 * Api.runs sends it), built with jansson so no value can break out of it. */
static char *project_filters(const char *state, const char *since)
{
	json_t *and = json_array();
	if (state)
		json_array_append_new(and, json_pack("{s:s}", "state", state));
	if (since)
		json_array_append_new(and, json_pack("{s:{s:s}}", "created_at", "$gt", since));
	json_t *q = json_array_size(and) == 0   ? json_object()
	            : json_array_size(and) == 1 ? json_incref(json_array_get(and, 0))
	                                        : json_pack("{s:O}", "$and", and);
	char *text = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	json_decref(and);
	return text;
}

/* The signal that asked the sync to stop (SIGINT, SIGTERM), or 0: the
 * windows fetched are committed, and runmon exits 128 + its number. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static int sync_one(struct rm_store *st, struct rm_wandb *w, const char *e, const char *p, const char *id,
                    const struct rm_sync_opts *o, struct progress *pr)
{
	struct rm_sync_result res;
	struct rm_err err;
	char what[400];
	snprintf(what, sizeof(what), "sync %s/%s/%s", e, p, id);
	rm_progress_start(what, NULL, 0);
	int rc = rm_sync_run(st, w, e, p, id, o, &res, &err);
	rm_progress_end();
	if (rc) {
		rm_error("%s", err.msg);
		if (res.windows)
			fprintf(stderr, "runmon: %lld windows were stored; the next sync resumes at step %lld\n",
			        (long long)res.windows, (long long)res.to);
		return rm_exit_code(err.code);
	}
	if (res.cancelled) {
		fprintf(stderr,
		        "runmon: %s/%s/%s: interrupted (%s): %lld windows stored; the next sync resumes at step %lld\n",
		        rm_tx(e), rm_tx(p), rm_tx(id), interrupted == SIGTERM ? "SIGTERM" : "SIGINT",
		        (long long)res.windows, (long long)res.to);
		return 128 + (interrupted ? interrupted : SIGINT);
	}
	if (res.to == res.from)
		printf("%s/%s/%s: up to date at step %lld (%s)\n", rm_tx(e), rm_tx(p), rm_tx(id), (long long)res.to - 1,
		       res.state[0] ? rm_tx(res.state) : "state unknown");
	else
		printf("%s/%s/%s: %lld rows in %lld windows, steps %lld..%lld, %lld new steps, %lld batches, %.1f s"
		       " (%s)%s%s%s\n",
		       rm_tx(e), rm_tx(p), rm_tx(id), (long long)res.rows, (long long)res.windows, (long long)res.from,
		       (long long)res.to - 1, (long long)res.new_steps, (long long)res.batches, res.seconds,
		       res.state[0] ? rm_tx(res.state) : "state unknown", res.loss_key[0] ? ", loss key '" : "",
		       rm_tx(res.loss_key), res.loss_key[0] ? "'" : "");
	if (res.skipped)
		printf("  skipped %lld bad row%s; the first: %s\n", (long long)res.skipped, res.skipped > 1 ? "s" : "",
		       rm_tx(res.first_bad));
	return RM_EXIT_OK;
}

/* Syncs the runs of ENTITY/PROJECT, filtered as W&B's Api.runs does. */
static int sync_project(struct rm_store *st, struct rm_wandb *w, const char *entity, const char *project,
                        const char *state, const char *since, const struct rm_sync_opts *o, struct progress *pr)
{
	char *filters = project_filters(state, since);
	char **ids;
	size_t nids;
	struct rm_err err;
	int rc = RM_EXIT_OK;
	if (rm_wandb_list_runs(w, entity, project, filters, &ids, &nids, &err)) {
		rm_error("%s", err.msg);
		rc = interrupted ? 128 + interrupted : rm_exit_code(err.code);
	} else {
		if (nids == 0)
			printf("%s/%s: no runs match\n", rm_tx(entity), rm_tx(project));
		for (size_t k = 0; k < nids; k++) {
			int one = interrupted ? 0 : sync_one(st, w, entity, project, ids[k], o, pr);
			if (one && !rc)
				rc = one;
			free(ids[k]);
		}
		free(ids);
	}
	free(filters);
	return rc;
}

static int run_sync(int argc, char **argv, struct rm_ctx *ctx)
{
	struct rm_sync_opts o;
	struct rm_wandb_opts wo = {.retry_max = -1};
	const char *state = NULL, *since = NULL;
	char since_buf[32];
	int64_t *bounds = NULL, v;
	int c, code = RM_EXIT_USAGE, stats = 0;
	rm_sync_opts_default(&o);
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_sync, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'j':
			if (rm_parse_int(op.arg, 1, &v) || v > 64) {
				rm_cmd_usage_error(&cmd_sync, "--jobs wants 1..64");
				goto out;
			}
			wo.jobs = (int)v; /* pins the client's limit: every request, not only windows */
			break;
		case 'J':
			if (rm_parse_int(op.arg, 1, &v) || v > 64) {
				rm_cmd_usage_error(&cmd_sync, "--max-jobs wants 1..64");
				goto out;
			}
			wo.max_jobs = (int)v;
			break;
		case 'T': stats = 1; break;
		case 'p':
			if (rm_parse_int(op.arg, 1, &v) || v > 100000) {
				rm_cmd_usage_error(&cmd_sync, "--page-size wants 1..100000");
				goto out;
			}
			o.page_size = (int)v;
			break;
		case 'r':
			if (rm_parse_int(op.arg, 0, &v) || v > 100) {
				rm_cmd_usage_error(&cmd_sync, "--retry-max wants 0..100");
				goto out;
			}
			wo.retry_max = (int)v;
			break;
		case 'w':
			if (rm_parse_duration(op.arg, &wo.backoff_min) ||
			    !(wo.backoff_min > 0 && wo.backoff_min <= 60)) {
				rm_cmd_usage_error(&cmd_sync, "--retry-wait wants a duration in (0, 60s], not '%s'",
				                   op.arg);
				goto out;
			}
			break;
		case 'l': o.loss_key = op.arg; break;
		case 'k': o.skip_bad = 1; break;
		case 'P': o.batch_prefix = op.arg; break;
		case 'b':
			free(bounds);
			bounds = NULL;
			if (rm_parse_bounds(op.arg, &bounds, &o.nbounds)) {
				rm_cmd_usage_error(&cmd_sync, "--buckets wants 2 to 33 increasing lengths");
				goto out;
			}
			o.bounds = bounds;
			break;
		case 'f': o.full = 1; break;
		case 's': state = op.arg; break;
		case 'S': {
			struct rm_since sn;
			if (rm_parse_since(op.arg, &sn) || sn.kind == RM_SINCE_STEP) {
				rm_cmd_usage_error(
				    &cmd_sync, "--since wants a date (2026-12-01) or a duration (7d), not '%s'%s",
				    op.arg,
				    sn.kind == RM_SINCE_STEP ? ": runs are chosen by when they were created" : "");
				goto out;
			}
			time_t t = (time_t)rm_since_time(&sn, (double)time(NULL));
			struct tm tm;
			gmtime_r(&t, &tm);
			strftime(since_buf, sizeof(since_buf), "%Y-%m-%dT%H:%M:%S", &tm);
			since = since_buf;
			break;
		}
		case 'D': ctx->db_path = op.arg; break;
		case 'h': code = rm_cmd_help(&cmd_sync); goto out;
		default: code = RM_EXIT_USAGE; goto out;
		}
	}
	if (op.ind >= argc) {
		rm_cmd_usage_error(&cmd_sync, "no run or project given");
		goto out;
	}
	struct rm_store *st = NULL;
	struct rm_wandb *w = NULL;
	struct rm_err err;
	struct progress pr = {.tty = isatty(STDERR_FILENO)};
	o.progress = on_progress;
	o.progress_arg = &pr;
	if ((code = rm_ctx_open_store(ctx, &st)))
		goto out;
	if (rm_wandb_open(&w, &wo, &err)) {
		rm_error("%s", err.msg);
		code = rm_exit_code(err.code);
		goto close;
	}
	pr.http = rm_wandb_http(w);
	/* SIGINT/SIGTERM end every wait within 0.1 s, even one the server's
	 * quota asked for; what was fetched is committed (and a script's
	 * background job, whose SIGINT the shell ignores, is stopped too). */
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.cancel = &interrupted;
	rm_http_set_cancel(rm_wandb_http(w), &interrupted);
	for (int i = op.ind; i < argc && !interrupted; i++) {
		char *copy = rm_xstrdup(argv[i]), *parts[4];
		int n = split_path(copy, parts), rc;
		if (n == 3) {
			rc = sync_one(st, w, parts[0], parts[1], parts[2], &o, &pr);
		} else if (n == 2) {
			rc = sync_project(st, w, parts[0], parts[1], state, since, &o, &pr);
		} else {
			rc = rm_cmd_usage_error(&cmd_sync, "'%s' is not ENTITY/PROJECT or ENTITY/PROJECT/RUN_ID",
			                        argv[i]);
		}
		free(copy);
		if (rc && !code)
			code = rc;
	}
	if (interrupted && !code)
		code = 128 + interrupted; /* a project's listing cut short */
	if (stats)
		print_stats(rm_wandb_http(w));
close:
	rm_wandb_close(w);
	rm_store_close(st);
out:
	free(bounds);
	return code;
}

const struct rm_cmd cmd_sync = {
    .name = "sync",
    .summary = "pull runs from the W&B API (incremental, resumable)",
    .synopsis = "[options] ENTITY/PROJECT/RUN_ID...\n[options] ENTITY/PROJECT [--state STATE] [--since WHEN]",
    .about = about,
    .opts = options,
    .notes = notes,
    .examples = examples,
    .exit_status = "0 synced, 2 usage error or run not found, 3 network or server error, 4 database error, 130/143 "
                   "interrupted by SIGINT/SIGTERM.",
    .run = run_sync,
};
