/*
 * import.h - import training logs and batch sidecars from files.
 *
 * Formats are detected from the first line (or forced). Text formats stream
 * with constant memory; a Hugging Face trainer_state.json is one document
 * and is read whole. The import of all files given runs in one transaction:
 * a malformed line (without skip_bad) or a database error leaves the
 * database as it was.
 */
#ifndef RUNMON_IMPORT_H
#define RUNMON_IMPORT_H

#include <stdint.h>

#include "runmon/common.h"
#include "runmon/store.h"

enum rm_format {
	RM_FMT_AUTO,
	RM_FMT_WANDB_HISTORY, /* wandb-history.jsonl: one row per line, "_step" */
	RM_FMT_JSONL,         /* plain JSON lines with a step and a loss key */
	RM_FMT_SIDECAR_JSONL, /* batch composition per step (runmon's sidecar) */
	RM_FMT_HF_STATE,      /* Hugging Face trainer_state.json (log_history) */
	RM_FMT_WANDB_CSV,     /* W&B UI chart export: Step, "<run> - <metric>" */
	RM_FMT_TB_CSV,        /* TensorBoard scalar export: Wall time,Step,Value */
	RM_FMT_SIDECAR_CSV,   /* the sidecar's columns as CSV */
	RM_FMT_CSV,           /* plain CSV with a step and a loss column */
	RM_FMT_LOG,           /* a trainer's console log: a record per line after any prefix */
	RM_FMT_WANDB_LOG,     /* W&B's binary run-<id>.wandb transaction log */
	RM_FMT_COUNT
};

/* Name used on the command line and in reports; NULL for RM_FMT_AUTO. */
const char *rm_format_name(enum rm_format f);
/* Parses a --format value; returns 0 on success. */
int rm_format_parse(const char *name, enum rm_format *out);

struct rm_import_opts {
	const char *run_name;     /* NULL: derived from each file's path */
	enum rm_format format;    /* RM_FMT_AUTO to detect */
	const char *loss_key;     /* NULL: detect loss, train/loss, ... */
	const char *step_key;     /* NULL: detect _step, step, global_step, ... */
	const char *batch_prefix; /* NULL: "batch/" */
	const char *length_key;   /* a key holding each batch's (mean) length in tokens */
	const char *count_key;    /* a key holding each batch's sequence count */
	const int64_t *bounds;    /* bucket boundaries (tokens), or NULL */
	int nbounds;
	int skip_bad;        /* skip malformed lines instead of failing */
	int64_t log_every;   /* console logs without a step: steps between records (0: 1) */
	const char *pattern; /* console logs: "step:{step} loss:{loss}" reads the lines it matches */
	/* Set by the importer for a stream it spooled: the name the user gave
	 * ("-", a FIFO, /dev/fd/63), shown in reports and messages. */
	const char *shown_path;
};

#define RM_IMPORT_NOTED 5 /* restarts and bad lines listed individually */

struct rm_restart {
	uint64_t line;     /* 1-based line (or log_history entry) */
	int64_t step;      /* the step the counter went back to */
	int64_t prev_step; /* the step before it */
};

/* What one file contributed to one run. */
struct rm_import_result {
	char *path;
	char *run_name;
	char *loss_key;    /* detected or given; NULL if none */
	char *composition; /* the keys batch composition came from, "key (field), ..."; NULL if none */
	enum rm_format format;
	int64_t run_id;
	uint64_t lines;        /* lines (or entries) read */
	uint64_t steps;        /* step rows written */
	uint64_t batches;      /* batch rows written */
	uint64_t evals;        /* eval rows written */
	uint64_t ignored;      /* rows with neither loss, eval nor batch values */
	uint64_t replaced;     /* rows replacing an earlier row of the same step */
	uint64_t restarts;     /* times the step counter went backwards */
	uint64_t back_steps;   /* steps those restarts went back, summed */
	uint64_t step_rows;    /* rows whose step was tracked (step rows, or batch rows alone) */
	int writers;           /* > 1: the file interleaves that many writers of every step (not restarts) */
	uint64_t skipped;      /* malformed lines skipped (skip_bad) */
	uint64_t over_bounds;  /* batches longer than the last bucket boundary */
	int64_t new_steps;     /* steps the run did not have before */
	uint64_t empty_series; /* runs of a chart export with no value, left out (on the file's first result) */
	uint64_t not_records;  /* console logs: lines that hold no record (banners, config, tracebacks) */
	int synthetic_steps;   /* console logs: the lines had no step; records were numbered (x log_every) */
	int64_t first_step, last_step;
	struct rm_restart restart[RM_IMPORT_NOTED];
	uint64_t bad_line[RM_IMPORT_NOTED];
	char bad_msg[256]; /* why the first skipped line was bad */
	/* .wandb logs: damaged chunks skipped, and a record cut off at the end */
	uint64_t corrupt, corrupt_bytes, first_corrupt, tail_bytes;
};

struct rm_import_report {
	struct rm_import_result *r;
	size_t n, cap;
};

/* Checks a --pattern ("step:{step} loss:{loss}"); 0, or -1 with why. */
int rm_log_pattern_check(const char *pattern, char *why, size_t whylen);

/* Imports files into st. On failure nothing is written and err names the
 * file and line. The report is filled on success; release it with
 * rm_import_report_release. */
int rm_import(struct rm_store *st, const struct rm_import_opts *opts, char *const *files, int nfiles,
              struct rm_import_report *rep, struct rm_err *err);
void rm_import_report_release(struct rm_import_report *rep);

/* Imports what a growing file gained since the last call for the same
 * path: opts->format names its format (one that can be followed: a sidecar,
 * JSON lines, CSV, a W&B log), or RM_FMT_AUTO picks it from the name
 * (.wandb, .csv, .log/.txt/.out/.err a console log, else a JSON-lines
 * sidecar); the position lives in the database (tails), so
 * it survives restarts, and moves in the same transaction as the rows. A
 * last line without its newline waits for the next call. A file shorter
 * than the position was truncated and is read again from the start; a
 * new file at the path was rotated in: the rest of the old one is read
 * first if it sits at PATH.1, then the new one from the start. A path that
 * does not exist yet imports nothing. *pos says where reading stopped.
 * With opts->format RM_FMT_WANDB_LOG the file is a live run-<id>.wandb log:
 * reading stops before a record still being written, and the position is
 * kept only once the log has named its run. */
int rm_import_tail(struct rm_store *st, const struct rm_import_opts *opts, const char *path,
                   struct rm_import_report *rep, struct rm_tail_pos *pos, struct rm_err *err);

/* The run-<id>.wandb file in a W&B run directory, or NULL. Caller frees. */
char *rm_wandb_dir_log(const char *dir);

/* Bucket of a batch whose longest sequence is max_len: i with
 * bounds[i] < max_len <= bounds[i+1]; lengths past the last boundary go to
 * the last bucket and set *over. */
int rm_bucket_of(const int64_t *bounds, int nbounds, double max_len, int *over);

/* Copies a JSON text replacing bare NaN, Infinity and -Infinity tokens
 * (outside strings) with the strings "NaN", "Infinity", "-Infinity", so a
 * strict parser such as jansson accepts it. Caller frees the result. */
char *rm_json_quote_nonfinite(const char *in, size_t n, size_t *outlen);

#endif
