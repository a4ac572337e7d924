/*
 * cmd_runs.c - `runmon runs`: what the database holds, one line per run.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "runmon/common.h"

#define RUNS_SCHEMA "runmon.runs/1"

static const char about[] = "Lists the runs in the database: steps stored, step range, the share of steps\n"
                            "with batch composition, the loss key, when it was last imported or synced,\n"
                            "the verdict of its last diagnosis and where its batch composition came from.";

static const struct rm_opt options[] = {
    {"json", 'j', NULL, RM_ARG_NONE, "the runs as JSON (schema runmon.runs/1)", NULL, NULL, 0},
    {"names", 'n', NULL, RM_ARG_NONE, "only the names, one a line, as other commands take them (for completion)", NULL,
     NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon runs",
    "runmon runs --json",
    "runmon runs --names  # what completion offers",
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

/* Terminal columns of UTF-8 text: its characters (wide ones aside). */
static int columns(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* The last diagnosis in a few words: "healthy", or the severity and the
 * cause it named; "-" when the run was never diagnosed whole. */
static void verdict_words(const struct rm_run_info *r, char *buf, size_t n, json_t **as_json)
{
	json_t *ev = r->verdict_evidence ? json_loads(r->verdict_evidence, 0, NULL) : NULL;
	const char *hyp = json_string_value(json_object_get(ev, "hypothesis"));
	const char *summary = json_string_value(json_object_get(ev, "summary"));
	if (!r->verdict_severity)
		snprintf(buf, n, "-");
	else if (summary && !strncmp(summary, "healthy", 7) && strcmp(r->verdict_severity, "critical"))
		snprintf(buf, n, "healthy");
	else
		snprintf(buf, n, "%s: %s", r->verdict_severity, hyp ? hyp : "?");
	if (as_json)
		*as_json = r->verdict_severity
		               ? json_pack("{s:s, s:s?, s:s?, s:b}", "severity", r->verdict_severity, "hypothesis", hyp,
		                           "summary", summary, "healthy", !strcmp(buf, "healthy"))
		               : json_null();
	json_decref(ev);
}

static int print_json(const struct rm_run_info *runs, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct rm_run_info *r = &runs[i];
		char path[512], when[32], words[160];
		json_t *verdict;
		run_path(r, path, sizeof(path));
		fmt_time(r->synced_at, when, sizeof(when));
		verdict_words(r, words, sizeof(words), &verdict);
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
		json_object_set_new(o, "verdict", verdict);
		json_array_append_new(arr, o);
	}
	json_t *doc = json_pack("{s:s, s:o}", "schema", RUNS_SCHEMA, "runs", arr);
	int rc = json_dumpf(doc, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(doc);
	return rc;
}

static void print_table(const struct rm_run_info *runs, size_t n)
{
	if (n == 0) {
		printf("no runs yet: add one with 'runmon import FILE'\n");
		return;
	}
	/* Columns as wide as their longest cell: a long name shifts the
	 * columns after it rather than breaking them. */
	int wrun = 3, wkey = 8, wverdict = 7;
	char path[512], words[160];
	for (size_t i = 0; i < n; i++) {
		run_path(&runs[i], path, sizeof(path));
		verdict_words(&runs[i], words, sizeof(words), NULL);
		int a = columns(rm_tx(path)), b = runs[i].loss_key ? columns(rm_tx(runs[i].loss_key)) : 1;
		int c = (int)strlen(words);
		wrun = a > wrun ? a : wrun;
		wkey = b > wkey ? b : wkey;
		wverdict = c > wverdict ? c : wverdict;
	}
	printf("%-*s %-6s %9s %-19s %12s %-*s %-20s %-*s %s\n", wrun, "RUN", "SOURCE", "STEPS", "RANGE", "WITH BATCHES",
	       wkey, "LOSS KEY", "UPDATED", wverdict, "VERDICT", "COMPOSITION FROM");
	for (size_t i = 0; i < n; i++) {
		const struct rm_run_info *r = &runs[i];
		char range[48], share[16], when[32];
		run_path(r, path, sizeof(path));
		verdict_words(r, words, sizeof(words), NULL);
		if (r->steps)
			snprintf(range, sizeof(range), "%lld..%lld", (long long)r->first_step, (long long)r->last_step);
		else
			snprintf(range, sizeof(range), "-");
		if (r->steps)
			snprintf(share, sizeof(share), "%.0f%%", 100.0 * rm_run_batch_share(r));
		else
			snprintf(share, sizeof(share), r->batch_steps ? "only" : "-");
		fmt_time(r->synced_at, when, sizeof(when));
		const char *name = rm_tx(path), *key = r->loss_key ? rm_tx(r->loss_key) : "-";
		printf("%s%*s %-6s %9lld %-19s %12s %s%*s %-20s %-*s %s\n", name, wrun - columns(name), "",
		       rm_tx(r->source), (long long)r->steps, range, share, key, wkey - columns(key), "", when,
		       wverdict, words, r->composition ? rm_tx(r->composition) : "-");
	}
}

static int run_runs(int argc, char **argv, struct rm_ctx *ctx)
{
	int c, json = 0, names = 0, code;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_runs, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'n': names = 1; break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_runs);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (op.ind < argc)
		return rm_cmd_usage_error(&cmd_runs, "unexpected argument '%s'", argv[op.ind]);
	if (json && names)
		return rm_cmd_usage_error(&cmd_runs, "--json or --names, not both");
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
	if (names)
		for (size_t i = 0; i < n; i++) {
			char path[512];
			run_path(&runs[i], path, sizeof(path));
			if (!strchr(path, '\n'))
				printf("%s\n", path);
		}
	else if (json)
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
    .synopsis = "[--json|--names]",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 listed, 2 usage error or no database yet, 4 database error.",
    .run = run_runs,
};
