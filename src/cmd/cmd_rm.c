/*
 * cmd_rm.c - `runmon rm` and `runmon mv`: housekeeping of the runs a
 * store holds. Each command is one transaction: every run named goes, or
 * none does.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/store.h"

static const char rm_about[] = "Removes runs from the database with every row of theirs: steps, batches,\n"
                               "evals, buckets, findings, fitted levels, imports and file positions. The\n"
                               "report history and the alert log keep what they said of it. Every run\n"
                               "named is removed, or none is (one transaction).";

static const struct rm_opt rm_options[] = {
    {"dry-run", 'n', NULL, RM_ARG_NONE, "say what would be removed, remove nothing", NULL, NULL, 0},
    {0},
};

static const char *const rm_examples[] = {
    "runmon rm demo-homogeneous demo-interleaved demo-random",
    "runmon rm --dry-run acme/llm/ab12",
    NULL,
};

/* Looks every run up before anything changes: a typo removes nothing. */
static int find_all(struct rm_store *st, char **names, size_t n, int64_t *ids, struct rm_err *err)
{
	for (size_t i = 0; i < n; i++) {
		int rc = rm_store_find_run(st, names[i], &ids[i], err);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (ids[j] == ids[i])
				return rm_err_set(err, RM_E_USAGE, "run '%s' is named twice ('%s')", names[i],
				                  names[j]);
	}
	return RM_OK;
}

static int run_rm(int argc, char **argv, struct rm_ctx *ctx)
{
	int c, dry = 0, code;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_rm, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'n': dry = 1; break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_rm);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	size_t n = (size_t)(argc - op.ind);
	if (n == 0)
		return rm_cmd_usage_error(&cmd_rm, "name the runs to remove");
	struct rm_store *st;
	if ((code = rm_ctx_open_store_flags(ctx, &st, RM_STORE_MUST_EXIST)))
		return code;
	int64_t *ids = rm_xcalloc(n, sizeof(*ids));
	struct rm_run_info *info = rm_xcalloc(n, sizeof(*info));
	struct rm_err err;
	int rc = rm_store_begin(st, &err);
	if (!rc)
		rc = find_all(st, argv + op.ind, n, ids, &err);
	for (size_t i = 0; !rc && i < n; i++)
		if (!(rc = rm_store_lock_run(st, ids[i], &err)) &&
		    !(rc = rm_store_get_run(st, ids[i], &info[i], &err)) && !dry)
			rc = rm_store_delete_run(st, ids[i], &err);
	if (!rc && !dry)
		rc = rm_store_commit(st, &err);
	else
		rm_store_rollback(st);
	if (!rc)
		for (size_t i = 0; i < n; i++)
			printf("%s %s: %lld step%s, %lld with batch composition\n", dry ? "would remove" : "removed",
			       rm_tx(argv[op.ind + i]), (long long)info[i].steps, info[i].steps == 1 ? "" : "s",
			       (long long)info[i].batch_steps);
	else
		rm_error("%s%s", err.msg, n > 1 ? " (nothing removed)" : "");
	for (size_t i = 0; i < n; i++)
		rm_run_info_release(&info[i]);
	free(info);
	free(ids);
	rm_store_close(st);
	return rc ? rm_exit_code(err.code) : RM_EXIT_OK;
}

const struct rm_cmd cmd_rm = {
    .name = "rm",
    .summary = "remove runs from the database",
    .synopsis = "[--dry-run] RUN...",
    .about = rm_about,
    .opts = rm_options,
    .notes = NULL,
    .examples = rm_examples,
    .exit_status = "0 removed, 2 usage error or unknown run, 4 database error.",
    .operands = RM_OPERANDS_RUNS,
    .run = run_rm,
};

static const char mv_about[] = "Renames a run: NEW is a local name, or ENTITY/PROJECT/ID. Its data, findings and\n"
                               "report history follow it; a name another run holds is refused. A W&B run\n"
                               "renamed to a local name is no longer synced by 'runmon sync' under its id.";

static const struct rm_opt mv_options[] = {
    {0},
};

static const char *const mv_examples[] = {
    "runmon mv sim-homogeneous baseline-homogeneous",
    NULL,
};

static int run_mv(int argc, char **argv, struct rm_ctx *ctx)
{
	int c, code;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_mv, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_mv);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (argc - op.ind != 2)
		return rm_cmd_usage_error(&cmd_mv, "give the run and its new name: OLD NEW");
	const char *old = argv[op.ind], *new = argv[op.ind + 1];
	struct rm_store *st;
	if ((code = rm_ctx_open_store_flags(ctx, &st, RM_STORE_MUST_EXIST)))
		return code;
	struct rm_err err;
	int64_t id;
	int rc = rm_store_begin(st, &err);
	if (!rc && !(rc = rm_store_find_run(st, old, &id, &err)) && !(rc = rm_store_lock_run(st, id, &err)) &&
	    !(rc = rm_store_rename_run(st, id, new, &err)))
		rc = rm_store_commit(st, &err);
	else
		rm_store_rollback(st);
	if (rc)
		rm_error("%s", err.msg);
	else
		printf("renamed %s to %s\n", rm_tx(old), rm_tx(new));
	rm_store_close(st);
	return rc ? rm_exit_code(err.code) : RM_EXIT_OK;
}

const struct rm_cmd cmd_mv = {
    .name = "mv",
    .summary = "rename a run",
    .synopsis = "OLD NEW",
    .about = mv_about,
    .opts = mv_options,
    .notes = NULL,
    .examples = mv_examples,
    .exit_status = "0 renamed, 2 usage error, unknown run or a name taken, 4 database error.",
    .operands = RM_OPERANDS_RUNS,
    .run = run_mv,
};
