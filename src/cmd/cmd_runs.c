/*
 * cmd_runs.c - `runmon runs`: what the database holds, one line per run.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "runmon/common.h"

static const char about[] = "Lists the runs in the database: steps stored, step range, the share of steps\n"
                            "with batch composition, the loss key and when it was last imported or synced.";

static const struct rm_opt options[] = {
    {"json", 'j', NULL, RM_ARG_NONE, "one JSON object per run in an array", NULL, NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon runs",
    "runmon runs --json",
    NULL,
};

/* The name people use for a run: entity/project/id for W&B runs. */
static void run_path(const struct rm_run_info *r, char *buf, size_t n)
{
	if (r->entity && *r->entity)
		snprintf(buf, n, "%s/%s/%s", r->entity, r->project, r->name);
	else
		snprintf(buf, n, "%s", r->name);
}

static void fmt_time(double t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !gmtime_r(&tt, &tm))
		snprintf(buf, n, "-");
	else
		strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int print_json(const struct rm_run_info *runs, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct rm_run_info *r = &runs[i];
		char path[512], when[32];
		run_path(r, path, sizeof(path));
		fmt_time(r->synced_at, when, sizeof(when));
		json_t *o = json_pack("{s:s, s:s, s:s?, s:s?, s:I, s:s?, s:I, s:f}", "run", path, "source", r->source,
		                      "display_name", r->display_name, "state", r->state, "steps", (json_int_t)r->steps,
		                      "loss_key", r->loss_key, "batch_steps", (json_int_t)r->batch_steps, "batch_share",
		                      rm_run_batch_share(r));
		if (r->steps) {
			json_object_set_new(o, "first_step", json_integer(r->first_step));
			json_object_set_new(o, "last_step", json_integer(r->last_step));
		}
		json_object_set_new(o, "updated", r->synced_at > 0 ? json_string(when) : json_null());
		json_object_set_new(o, "composition", r->composition ? json_string(r->composition) : json_null());
		json_array_append_new(arr, o);
	}
	int rc = json_dumpf(arr, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(arr);
	return rc;
}

static void print_table(const struct rm_run_info *runs, size_t n)
{
	if (n == 0) {
		printf("no runs yet: add one with 'runmon import FILE'\n");
		return;
	}
	printf("%-32s %-6s %9s %-19s %7s %-16s %-20s %s\n", "RUN", "SOURCE", "STEPS", "RANGE", "BATCHES", "LOSS KEY",
	       "UPDATED", "COMPOSITION FROM");
	for (size_t i = 0; i < n; i++) {
		const struct rm_run_info *r = &runs[i];
		char path[512], range[48], share[16], when[32];
		run_path(r, path, sizeof(path));
		if (r->steps)
			snprintf(range, sizeof(range), "%lld..%lld", (long long)r->first_step, (long long)r->last_step);
		else
			snprintf(range, sizeof(range), "-");
		if (r->steps)
			snprintf(share, sizeof(share), "%.0f%%", 100.0 * rm_run_batch_share(r));
		else
			snprintf(share, sizeof(share), r->batch_steps ? "only" : "-");
		fmt_time(r->synced_at, when, sizeof(when));
		printf("%-32s %-6s %9lld %-19s %7s %-16s %-20s %s\n", rm_tx(path), rm_tx(r->source),
		       (long long)r->steps, range, share, r->loss_key ? rm_tx(r->loss_key) : "-", when,
		       r->composition ? rm_tx(r->composition) : "-");
	}
}

static int run_runs(int argc, char **argv, struct rm_ctx *ctx)
{
	int c, json = 0, code;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_runs, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_runs);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (op.ind < argc)
		return rm_cmd_usage_error(&cmd_runs, "unexpected argument '%s'", argv[op.ind]);
	struct rm_store *st;
	struct rm_run_info *runs;
	size_t n;
	struct rm_err err;
	if ((code = rm_ctx_open_store_flags(ctx, &st, RM_STORE_MUST_EXIST)))
		return code;
	if (rm_store_list_runs(st, &runs, &n, &err)) {
		rm_error("%s", err.msg);
		rm_store_close(st);
		return rm_exit_code(err.code);
	}
	if (json)
		print_json(runs, n);
	else
		print_table(runs, n);
	rm_run_info_free(runs, n);
	rm_store_close(st);
	return RM_EXIT_OK;
}

const struct rm_cmd cmd_runs = {
    .name = "runs",
    .summary = "list the runs in the database",
    .synopsis = "[--json]",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 listed, 2 usage error or no database yet, 4 database error.",
    .run = run_runs,
};
