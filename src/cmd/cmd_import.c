/*
 * cmd_import.c - `runmon import`: load history files and batch sidecars.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "runmon/analyze.h"
#include "runmon/common.h"
#include "runmon/import.h"
#include "runmon/render.h"

static const char about[] =
    "Imports per-step losses and batch composition into the database. The readers\n"
    "that could read a file each read a sample of it; the one that explains it best\n"
    "wins (--explain shows them):\n"
    "  wandb-history     W&B wandb-history.jsonl rows (\"_step\", nested keys, NaN)\n"
    "  jsonl, csv        plain rows with a step and a loss column (padded cells too)\n"
    "  json-array        a JSON array of record objects (Chainer's LogReport)\n"
    "  json-columns      a JSON document of metrics as arrays side by side, a list\n"
    "                    per epoch or one (NVIDIA's nvlog)\n"
    "  sidecar-jsonl     batch sidecar: {\"step\", \"bucket\", \"lens\"|\"n\",\"min_len\",...}\n"
    "  sidecar-csv       the same columns as CSV\n"
    "  hf-trainer-state  Hugging Face trainer_state.json (log_history)\n"
    "  wandb-csv         W&B chart export (Step, \"<run> - <metric>\")\n"
    "  tensorboard-csv   TensorBoard scalar export (Wall time,Step,Value)\n"
    "  tfevents          TensorBoard event files (events.out.tfevents.*), and\n"
    "                    directories of them: one run per directory that holds\n"
    "                    event files (runs/, lightning_logs/)\n"
    "  log               a trainer's console log: fairseq, Marian, Megatron-LM,\n"
    "                    nanoGPT, HF Trainer dicts, logfmt / key=value lines,\n"
    "                    tables, progress bars, records over several lines;\n"
    "                    other lines (banners, config, tracebacks) are skipped\n"
    "A loss or step no known name says is inferred from how the file's fields\n"
    "behave (said in the report). A later row replaces an earlier one of the same\n"
    "step; restarts of the step counter are reported, and a training that starts\n"
    "its counter over in the same file is a run of its own (NAME-2, NAME-3).\n"
    "All files are imported in one transaction: on a bad line nothing is stored\n"
    "(unless --skip-bad).";

static const struct rm_opt options[] = {
    {"run", 'r', "NAME", RM_ARG_TEXT, "run to import into",
     "from the file name; ENTITY/PROJECT/ID attaches to a W&B run", NULL, 0},
    {"format", 'f', "FMT", RM_ARG_CHOICE, "force a format (one of the names above, or auto)", NULL,
     "auto wandb-history jsonl json-array json-columns csv sidecar-jsonl sidecar-csv hf-trainer-state wandb-csv "
     "tensorboard-csv "
     "tfevents "
     "log wandb",
     0},
    {"loss-key", 'l', "KEY", RM_ARG_TEXT, "loss key", "loss, train/loss, train_loss, ...", NULL, 0},
    {"step-key", 's', "KEY", RM_ARG_TEXT, "step key", "_step, step, global_step, ...", NULL, 0},
    {"batch-prefix", 'p', "P", RM_ARG_TEXT, "prefix of batch keys in history rows", "batch/", NULL, 0},
    {"length-key", 'L', "KEY", RM_ARG_TEXT, "key holding each batch's mean length in tokens",
     "mean_len, tokens_per_sample, or tokens / n", NULL, 0},
    {"count-key", 'C', "KEY", RM_ARG_TEXT, "key holding each batch's sequence count", "n, nsentences, bsz, n_sequences",
     NULL, 0},
    {"buckets", 'b', "B0,B1,..", RM_ARG_TEXT,
     "bucket boundaries in tokens; bucket i holds max_len in (Bi, Bi+1]; used when a row has no bucket", NULL, NULL, 0},
    {"skip-bad", 'k', NULL, RM_ARG_NONE, "skip malformed lines, report how many and where", NULL, NULL, 0},
    {"replace", 'Z', NULL, RM_ARG_NONE,
     "where the run holds a simulated run, or steps another file or W&B gave, this file's rows replace them (without "
     "it, or --append, such an import is refused)",
     NULL, NULL, 0},
    {"append", 'A', NULL, RM_ARG_NONE,
     "where the run holds steps another file or W&B gave, keep them and add only this file's other steps", NULL, NULL,
     0},
    {"log-every", 'E', "N", RM_ARG_COUNT,
     "a console log without steps (HF Trainer dicts): N steps between records (logging_steps; default 1)", NULL, NULL,
     0},
    {"pattern", 'P', "P", RM_ARG_TEXT,
     "read a console log's lines with a pattern of named fields, 'step:{step} loss:{loss} toks:{tokens}'; lines it "
     "does not match hold no record (implies --format log)",
     NULL, NULL, 0},
    {"explain", 'X', NULL, RM_ARG_NONE,
     "write nothing; show how each file is read: the format and why, what was inferred, the first records field by "
     "field, the lines that hold no record by kind with an example of each, the line templates and the training "
     "record's",
     NULL, NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon import wandb/run-20261129_101500-ab12cd34/files/wandb-history.jsonl",
    "runmon import --run my-run history.jsonl batches.jsonl",
    "runmon import --explain train.log",
    "runmon import --run nmt --pattern 'step {step} | loss {loss}' train.log",
    NULL,
};

static void print_result(const struct rm_import_result *r)
{
	int sidecar = r->format == RM_FMT_SIDECAR_JSONL || r->format == RM_FMT_SIDECAR_CSV;
	int wandb_log = r->format == RM_FMT_WANDB_LOG || r->format == RM_FMT_TFEVENTS; /* records, not lines */
	printf("%s: %s -> run '%s': %llu %s, ", rm_tx(r->path), rm_format_name(r->format), rm_tx(r->run_name),
	       (unsigned long long)r->lines, wandb_log ? "records" : "lines");
	if (!sidecar)
		printf("%llu steps (%lld new), ", (unsigned long long)r->steps, (long long)r->new_steps);
	printf("%llu batches", (unsigned long long)r->batches);
	if (r->evals)
		printf(", %llu eval rows", (unsigned long long)r->evals);
	if (r->steps)
		printf(", steps %lld..%lld", (long long)r->first_step, (long long)r->last_step);
	if (r->loss_key)
		printf(", loss key '%s'", rm_tx(r->loss_key));
	putchar('\n');
	if (r->file_part == 1)
		printf("  the first of the runs this file holds: another training starts over later in it\n");
	else if (r->file_part > 1)
		printf("  run %d of the file: from line %llu, where the step counter started over (step %lld after "
		       "%lld)\n",
		       r->file_part, (unsigned long long)r->first_line, (long long)r->first_step,
		       (long long)r->prev_run_step);
	if (r->from_file && r->took_over)
		printf("  %llu steps replaced the rows %s gave this run (--replace)\n",
		       (unsigned long long)r->took_over, rm_tx(r->from_file));
	if (r->from_file && r->kept_stored)
		printf("  %llu steps %s gave this run were kept; this file's other steps were added (--append)\n",
		       (unsigned long long)r->kept_stored, rm_tx(r->from_file));
	if (r->from_file && r->continues >= 0)
		printf("  continues the run past its last step (%lld, from %s)\n", (long long)r->continues,
		       rm_tx(r->from_file));
	if (r->inferred)
		printf("  inferred from the file: %s\n", rm_tx(r->inferred));
	if (r->composition)
		printf("  batch composition from %s\n", rm_tx(r->composition));
	if (r->empty_series)
		printf("  %llu more run%s of this export had no value and %s left out\n",
		       (unsigned long long)r->empty_series, r->empty_series > 1 ? "s" : "",
		       r->empty_series > 1 ? "were" : "was");
	if (r->writers > 1)
		printf("  each step appears %d times: %d writers interleaved in one file; the later row of each step"
		       " is kept\n",
		       r->writers, r->writers);
	else if (r->replaced)
		printf("  %llu rows replaced an earlier row of the same step\n", (unsigned long long)r->replaced);
	if (r->restarts && r->writers < 2) {
		printf("  step counter restarted %llu time%s:", (unsigned long long)r->restarts,
		       r->restarts > 1 ? "s" : "");
		for (uint64_t i = 0; i < r->restarts && i < RM_IMPORT_NOTED; i++)
			printf("%s line %llu (step %lld after %lld)", i ? "," : "",
			       (unsigned long long)r->restart[i].line, (long long)r->restart[i].step,
			       (long long)r->restart[i].prev_step);
		printf("%s\n", r->restarts > RM_IMPORT_NOTED ? ", ..." : "");
	}
	if (r->corrupt)
		printf("  skipped %llu damaged chunk%s (%llu bytes; checksum or framing), the first at byte %llu\n",
		       (unsigned long long)r->corrupt, r->corrupt > 1 ? "s" : "", (unsigned long long)r->corrupt_bytes,
		       (unsigned long long)r->first_corrupt);
	if (r->tail_bytes)
		printf("  the last %llu bytes are an incomplete record (the writer stopped mid-record, or is still "
		       "writing)\n",
		       (unsigned long long)r->tail_bytes);
	if (r->skipped) {
		printf("  skipped %llu bad %s%s (", (unsigned long long)r->skipped, wandb_log ? "record" : "line",
		       r->skipped > 1 ? "s" : "");
		for (uint64_t i = 0; i < r->skipped && i < RM_IMPORT_NOTED; i++)
			printf("%s%llu", i ? ", " : "", (unsigned long long)r->bad_line[i]);
		printf("%s); first: %s\n", r->skipped > RM_IMPORT_NOTED ? ", ..." : "", rm_tx(r->bad_msg));
	}
	if (r->ignored)
		printf("  %llu rows had no loss, eval or batch values\n", (unsigned long long)r->ignored);
	if (r->not_records)
		printf("  %llu lines held no record (banners, config, tracebacks, progress bars)\n",
		       (unsigned long long)r->not_records);
	if (r->format == RM_FMT_LOG && r->restarts && r->writers < 2)
		printf("  the file holds %llu segments (resumed or appended runs)\n",
		       (unsigned long long)r->restarts + 1);
	if (r->epoch_restarts)
		printf("  the step counter starts over each epoch: steps are counted on across %llu epoch%s\n",
		       (unsigned long long)r->epoch_restarts + 1, r->epoch_restarts ? "s" : "");
	if (r->rank_losses)
		printf("  %llu losses of %d ranks, each rank's on its own row: a step's loss is their mean\n",
		       (unsigned long long)r->rank_losses, r->ranks);
	if (r->other_losses)
		printf("  also kept, not diagnosed: %s (%llu values, table other_losses); the diagnosis reads '%s'\n",
		       rm_tx(r->other_keys), (unsigned long long)r->other_losses,
		       r->loss_key ? rm_tx(r->loss_key) : "-");
	if (r->running_mean < 0)
		printf("  the loss is a running mean over each epoch (its changes shrink as 1/n within an epoch, slope"
		       " %.2f): each point averages the epoch so far, not one batch, so bucket effects, ladders and"
		       " resets are smoothed away\n",
		       r->running_mean);
	if (r->synthetic_steps == 1)
		printf("  warning: the lines carry no step, no progress bar counts them and no config says the"
		       " interval: steps are the record count; give --log-every N (the trainer's logging_steps)\n");
	else if (r->synthetic_steps == 3)
		printf("  the lines carry no step: steps are the record count x the logging_steps the file's config"
		       " says (--log-every N numbers them otherwise)\n");
	else if (r->synthetic_steps == 5)
		printf("  the lines carry no step: steps are the record count x %lld, the interval the banner's total"
		       " optimization steps over the file's records gives (--log-every N numbers them otherwise)\n",
		       (long long)(r->steps > 1 ? (r->last_step - r->first_step) / (int64_t)(r->steps - 1)
		                                : r->first_step));
	else if (r->synthetic_steps == 4)
		printf("  the lines carry no step: steps are the record count x --log-every\n");
	else if (r->synthetic_steps == 2)
		printf("  the lines carry no step: each record's step is the progress bar's counter drawn before it"
		       " (--log-every N numbers them instead)\n");
	if (r->over_bounds)
		printf("  %llu batches longer than the last bucket boundary (put in the last bucket)\n",
		       (unsigned long long)r->over_bounds);
}

/* Past this many points imported into a run, the join is left to
 * diagnose: measuring it loads the run whole, and import's memory stays
 * flat in the file's length (a 1M-line history with batch keys). */
#define JOIN_AT_IMPORT_MAX 200000

/* Each run the import touched that now holds losses and batches: how
 * they meet, and what each point will be read as (issue 64.3), the lines
 * diagnose prints. */
static void print_joins(struct rm_store *st, const struct rm_import_report *rep)
{
	struct rm_analyze_opts o;
	rm_analyze_opts_default(&o);
	for (size_t i = 0; i < rep->n; i++) {
		int seen = 0;
		uint64_t steps = 0;
		for (size_t k = 0; k < i && !seen; k++)
			seen = rep->r[k].run_id == rep->r[i].run_id;
		for (size_t k = i; k < rep->n; k++)
			steps += rep->r[k].run_id == rep->r[i].run_id ? rep->r[k].steps : 0;
		struct rm_join j;
		struct rm_reading_fit rf;
		struct rm_err err;
		char line[512];
		if (seen)
			continue;
		if (steps > JOIN_AT_IMPORT_MAX) {
			printf("run '%s': diagnose measures how its %llu loss points meet its batches (import does not "
			       "past"
			       " %d, to keep its memory flat)\n",
			       rm_tx(rep->r[i].run_name), (unsigned long long)steps, JOIN_AT_IMPORT_MAX);
			continue;
		}
		if (rm_analyze_join(st, rep->r[i].run_id, &o, &j, &rf, &err) || !j.batches || !j.points)
			continue;
		printf("run '%s':\n", rm_tx(rep->r[i].run_name));
		if (rm_explain_join(&j, line, sizeof(line)))
			printf("  %s\n", line);
		if (rm_explain_reading(&rf, line, sizeof(line)))
			printf("  %s\n", line);
	}
}

/* import --explain's scratch directory and its files, for the handler
 * below to remove (unlink and rmdir are async-signal-safe). */
static char scratch_files[5][4200];

/* import --explain reads into a store of its own in a fresh directory
 * under TMPDIR (dir gets the directory), removed afterwards. */
static int scratch_store(char *dir, size_t n, struct rm_ctx *ctx)
{
	static char db[4200];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, n, "%s/runmon-explain-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	sigset_t block, was;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &was); /* the directory and its name for the handler, together */
	char *made = mkdtemp(dir);
	if (made) {
		static const char *const suffix[] = {"", "/explain.db", "/explain.db-wal", "/explain.db-shm",
		                                     "/explain.db-journal"};
		for (int i = 0; i < 5; i++)
			snprintf(scratch_files[i], sizeof(scratch_files[i]), "%s%s", dir, suffix[i]);
	}
	sigprocmask(SIG_SETMASK, &was, NULL);
	if (!made) {
		rm_error("cannot make a scratch directory for --explain in %s: %s", tmp && *tmp ? tmp : "/tmp",
		         strerror(errno));
		*dir = 0;
		return RM_EXIT_STORE;
	}
	snprintf(db, sizeof(db), "%s/explain.db", dir);
	ctx->db_path = db;
	return RM_EXIT_OK;
}

static void scratch_remove(const char *dir)
{
	static const char *const files[] = {"explain.db", "explain.db-wal", "explain.db-shm", "explain.db-journal"};
	char path[4200];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* Ctrl-C or SIGTERM during an import: its one transaction is never
 * committed, so nothing of it is kept; say so in one line (after the
 * progress line, erased) and exit 130 or 143 as a shell expects. */
static int stderr_tty;

static void on_interrupt(int sig)
{
	for (int i = 4; i >= 0; i--)
		if (scratch_files[i][0])
			(void)(i == 0 ? rmdir(scratch_files[i]) : unlink(scratch_files[i]));
	static const char tty[] = "\r\033[K",
	                  msg[] = "runmon: import interrupted: nothing was imported (one transaction; the database is"
	                          " as it was)\n";
	if (stderr_tty && write(STDERR_FILENO, tty, sizeof(tty) - 1) < 0)
		_exit(128 + sig);
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(128 + sig);
	_exit(128 + sig);
}

static int run_import(int argc, char **argv, struct rm_ctx *ctx)
{
	struct rm_import_opts opts = {0};
	int64_t *bounds = NULL;
	int c, code;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_import, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		/* --loss-key '' must not silently mean "detect": say so. */
		if (op.arg && !*op.arg && c != 'D') {
			free(bounds);
			return rm_cmd_usage_error(&cmd_import, "--%s wants a value, not an empty string", op.name);
		}
		switch (c) {
		case 'r': opts.run_name = op.arg; break;
		case 'f':
			if (rm_format_parse(op.arg, &opts.format))
				return rm_cmd_usage_error(&cmd_import, "unknown format '%s'", op.arg);
			break;
		case 'l': opts.loss_key = op.arg; break;
		case 's': opts.step_key = op.arg; break;
		case 'p': opts.batch_prefix = op.arg; break;
		case 'L': opts.length_key = op.arg; break;
		case 'C': opts.count_key = op.arg; break;
		case 'b':
			free(bounds);
			if (rm_parse_bounds(op.arg, &bounds, &opts.nbounds))
				return rm_cmd_usage_error(&cmd_import,
				                          "--buckets wants 2 to 33 increasing lengths, like"
				                          " 0,770,1216,8192 (got '%s')",
				                          op.arg);
			opts.bounds = bounds;
			break;
		case 'k': opts.skip_bad = 1; break;
		case 'Z': opts.replace = 1; break;
		case 'A': opts.append = 1; break;
		case 'X': opts.explain = stdout; break;
		case 'P': {
			char why[128];
			if (rm_log_pattern_check(op.arg, why, sizeof(why))) {
				free(bounds);
				return rm_cmd_usage_error(&cmd_import, "--pattern '%s': %s", op.arg, why);
			}
			opts.pattern = op.arg;
			break;
		}
		case 'E':
			if (rm_parse_int(op.arg, 1, &opts.log_every) || opts.log_every > 1000000000) {
				free(bounds);
				return rm_cmd_usage_error(&cmd_import,
				                          "--log-every wants a whole number of steps >= 1");
			}
			break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': free(bounds); return rm_cmd_help(&cmd_import);
		default: free(bounds); return RM_EXIT_USAGE;
		}
	}
	if (op.ind >= argc) {
		free(bounds);
		return rm_cmd_usage_error(&cmd_import, "no file to import");
	}
	if (opts.pattern && opts.format == RM_FMT_AUTO)
		opts.format = RM_FMT_LOG;
	if (opts.pattern && opts.format != RM_FMT_LOG) {
		free(bounds);
		return rm_cmd_usage_error(&cmd_import,
		                          "--pattern reads console logs: leave out --format, or give --format log");
	}
	struct rm_store *st = NULL;
	struct rm_import_report rep;
	struct rm_err err;
	char scratch[4096] = "";
	/* the handler first: a scratch directory is never left behind */
	struct sigaction sa = {0}, was_int, was_term;
	stderr_tty = isatty(STDERR_FILENO);
	sa.sa_handler = on_interrupt;
	sigaction(SIGINT, &sa, &was_int);
	sigaction(SIGTERM, &sa, &was_term);
	int failed = 0;
	if (opts.explain && (code = scratch_store(scratch, sizeof(scratch), ctx))) /* the database is not touched */
		failed = -1;
	if (!failed && (code = rm_ctx_open_store(ctx, &st)))
		failed = -1;
	if (!failed)
		failed = rm_import(st, &opts, argv + op.ind, argc - op.ind, &rep, &err);
	sigaction(SIGINT, &was_int, NULL); /* committed or rolled back: as before */
	sigaction(SIGTERM, &was_term, NULL);
	if (failed < 0)
		goto out;
	if (failed) {
		rm_error("%s", err.msg);
		/* One transaction: whatever failed, the database is as it was. */
		fprintf(stderr, "runmon: nothing was imported%s\n",
		        err.bad_line ? " (--skip-bad imports the good lines)" : "");
		code = rm_exit_code(err.code);
		goto out;
	}
	if (opts.explain)
		fputs("\nwhat an import would store (nothing was written):\n", stdout);
	for (size_t i = 0; i < rep.n; i++)
		print_result(&rep.r[i]);
	print_joins(st, &rep);
	rm_import_report_release(&rep);
	code = RM_EXIT_OK;
out:
	rm_store_close(st);
	if (*scratch)
		scratch_remove(scratch);
	free(bounds);
	return code;
}

const struct rm_cmd cmd_import = {
    .name = "import",
    .summary = "import history files and batch sidecars",
    .synopsis = "[options] FILE...",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 imported, 2 usage error or bad input (nothing is imported), 4 database or file system error, "
                   "130/143 interrupted by SIGINT/SIGTERM (nothing is imported).",
    .operands = RM_OPERANDS_FILES,
    .run = run_import,
};
