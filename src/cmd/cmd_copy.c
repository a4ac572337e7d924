/*
 * cmd_copy.c - `runmon copy`: moves runs between a SQLite file and a
 * PostgreSQL database, either way.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/store.h"

static const char about[] = "Copies runs from one store to another: a SQLite file (a path) or a\n"
                            "PostgreSQL database (postgresql://user@host:5432/db?sslmode=...; libpq's\n"
                            "PGPASSWORD, ~/.pgpass and PGSERVICE hold). Each run's steps, batches, evals,\n"
                            "buckets, findings, fitted levels, imports and file positions replace those\n"
                            "of the same run (entity, project and name) in DST, in one transaction per\n"
                            "run, so copying again changes nothing. With --all, the report history\n"
                            "and the alert log go too. A missing DST file is created.";

static const struct rm_opt options[] = {
    {"from", 'f', "SRC", RM_ARG_PATH, "the store to read", NULL, NULL, 0},
    {"to", 't', "DST", RM_ARG_PATH, "the store to write", NULL, NULL, 0},
    {"all", 'a', NULL, RM_ARG_NONE, "every run of SRC (else the runs named: ENTITY/PROJECT/ID or the local name)", NULL,
     NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon copy --from runmon.db --to postgresql://runmon@db/runmon --all",
    "runmon copy --from postgresql://runmon@db/runmon --to local.db acme/llm/ab12",
    NULL,
};

static void progress(void *arg, const char *run, const struct rm_copy_counts *one)
{
	(void)arg;
	const char *sep = ": ";
	printf("copied %s", rm_tx(run)); /* a stored name: its escapes shown, never run */
	for (int t = 0; t < RM_COPY_TABLES; t++)
		if (one->rows[t]) {
			printf("%s%zu %s", sep, one->rows[t], rm_copy_table_name(t));
			sep = ", ";
		}
	printf("%s\n", *sep == ':' ? " (no rows)" : "");
	fflush(stdout);
}

static int run_copy(int argc, char **argv, struct rm_ctx *ctx)
{
	const char *from = NULL, *to = NULL;
	int c, all = 0;
	(void)ctx; /* --db names one store; copy takes two */
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_copy, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'f': from = op.arg; break;
		case 't': to = op.arg; break;
		case 'a': all = 1; break;
		case 'h': return rm_cmd_help(&cmd_copy);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (!from || !to || !*from || !*to)
		return rm_cmd_usage_error(&cmd_copy, "give the stores: --from SRC --to DST");
	if (all == (op.ind < argc))
		return rm_cmd_usage_error(&cmd_copy, "name runs, or --all (not both)");
	if (!strcmp(from, to))
		return rm_cmd_usage_error(&cmd_copy, "--from and --to name the same store");
	struct rm_copy_counts n;
	struct rm_err err;
	int rc = rm_copy(from, to, argv + op.ind, (size_t)(argc - op.ind), progress, NULL, &n, &err);
	if (rc) {
		rm_error("%s", err.msg);
		return rm_exit_code(err.code);
	}
	char name[512];
	rm_db_redact(to, name, sizeof(name));
	printf("%zu run%s copied to %s", n.runs, n.runs == 1 ? "" : "s", name);
	if (all)
		printf(", with %zu report%s and %zu new alert%s", n.reports, n.reports == 1 ? "" : "s", n.alerts,
		       n.alerts == 1 ? "" : "s");
	printf("\n");
	return RM_EXIT_OK;
}

const struct rm_cmd cmd_copy = {
    .name = "copy",
    .summary = "copy runs between SQLite and PostgreSQL stores",
    .synopsis = "--from SRC --to DST (RUN...|--all)",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 copied, 2 usage error or unknown run, 4 database error.",
    .no_store = 1,
    .operands = RM_OPERANDS_RUNS,
    .run = run_copy,
};
