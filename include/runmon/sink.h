/*
 * sink.h - the sink layer: rows of any format into one run's writes. The
 * key mapper turns a row into a step, batch or eval record; the sink
 * writes one run's records, notes restarts and replacements, and keeps the
 * import report and its bad-line rule; the pipeline overlaps parsing with
 * writing. Import's formats and W&B's sync both write through here.
 */
#ifndef RUNMON_SINK_H
#define RUNMON_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runmon/common.h"
#include "runmon/model.h"
#include "runmon/parse.h"
#include "runmon/store.h"

/* ==== import options and report ============================================ */
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
	RM_FMT_JSON_ARRAY,    /* a JSON array of record objects (Chainer's LogReport) */
	RM_FMT_JSON_COLUMNS,  /* a JSON document of parallel arrays (NVIDIA's nvlog) */
	RM_FMT_TFEVENTS,      /* TensorBoard event files (events.out.tfevents.*): TFRecords of Events */
	RM_FMT_COUNT
};

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
	int replace;         /* a simulated run, or another file's steps, may be replaced (rm_store_claim_run) */
	int append;          /* another file's stored steps are kept: only the steps not stored are added */
	int attach;          /* the user named the run to add to (watch --batches RUN=FILE): no claim */
	uint64_t tail_stop;  /* > 0: a followed file is read up to the line before this one */
	int64_t log_every;   /* console logs without a step: steps between records (0: 1) */
	const char *pattern; /* console logs: "step:{step} loss:{loss}" reads the lines it matches */
	/* Set by the importer for a stream it spooled: the name the user gave
	 * ("-", a FIFO, /dev/fd/63), shown in reports and messages. */
	const char *shown_path;
	/* import --explain: how the file is read, told here (the format and
	 * why, the first records field by field, the lines that hold none). */
	FILE *explain;
	/* Set by a reader from its file's head (rm_infer), never by the user:
	 * the keys the rows imply where no known name says. */
	const struct rm_guess *guess;
};

/* What a file's rows imply of its keys (infer.c). */
#define RM_GUESS_ALSO      8
#define RM_GUESS_SUMMARIES 8
#define RM_GUESS_TAG       "tag"       /* a log line's leading "[N]": a rank, or a counter */
#define RM_GUESS_UNNAMED   "(unnamed)" /* the number of a line of a counter and one number */
struct rm_guess {
	char *loss;                /* NULL: a known name, or none */
	char *step;                /* NULL: a known name, or none */
	char *rank;                /* NULL: none */
	char *epoch;               /* NULL: a known name, or none; else the counter step counts within */
	char *also[RM_GUESS_ALSO]; /* the other loss-named series that vary */
	size_t nalso;
	int loss_log;            /* the loss is a perplexity: its logarithm is stored */
	int has_step;            /* the loss rows carry a step (known or inferred) */
	int bar_records;         /* only progress bars carry a loss: their frames are the records */
	int64_t bar_total;       /* bars of several totals: the training loop's; the others evaluate */
	int keyed_train;         /* lines whose only sign of evaluation is a val_ key beside a loss are training's */
	int64_t logging_steps;   /* the logging interval a config dump or banner said (logging_steps=50), 0 none */
	int interval_from_total; /* logging_steps is the banner's total steps over the file's records */
	uint64_t summary[RM_GUESS_SUMMARIES]; /* templates of lines that restate the loss (a log's epoch summaries) */
	int nsummary;
	char why[768]; /* for import --explain and the report */
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
	char *unmapped;    /* without a loss key: the keys read that runmon does not know (rm_mapper_unmapped) */
	char *inferred;    /* what the file's rows implied of keys no known name said (infer.c), or NULL */
	enum rm_format format;
	int64_t run_id;
	uint64_t lines;          /* lines (or entries) read */
	uint64_t steps;          /* step rows written */
	uint64_t batches;        /* batch rows written */
	uint64_t evals;          /* eval rows written */
	uint64_t ignored;        /* rows with neither loss, eval nor batch values */
	uint64_t replaced;       /* rows replacing an earlier row of the same step */
	uint64_t restarts;       /* times the step counter went backwards */
	uint64_t back_steps;     /* steps those restarts went back, summed */
	uint64_t step_rows;      /* rows whose step was tracked (step rows, or batch rows alone) */
	int writers;             /* > 1: the file interleaves that many writers of every step (not restarts) */
	uint64_t skipped;        /* malformed lines skipped (skip_bad) */
	uint64_t over_bounds;    /* batches longer than the last bucket boundary */
	int64_t new_steps;       /* steps the run did not have before */
	uint64_t empty_series;   /* runs of a chart export with no value, left out (on the file's first result) */
	uint64_t not_records;    /* console logs: lines that hold no record (banners, config, tracebacks) */
	int synthetic_steps;     /* console logs without a step: 1 records numbered, 2 steps from the bar, 3 x the
	                            config's logging_steps, 4 x --log-every, 5 x the banner's total over the records */
	uint64_t epoch_restarts; /* epochs whose step counter started over: steps composed from epoch and counter */
	uint64_t rank_losses;    /* losses of a named rank written (the step's loss is their mean) */
	double running_mean;     /* < 0: the loss averages the epoch so far, the slope of log|change| in log n */
	uint64_t other_losses;   /* values of other loss-named series kept (other_losses) */
	/* The run held another file's (or W&B's) steps, from_file: how many of
	 * this file's it replaced (--replace) or left as stored (--append),
	 * and the run's last step before, when this file goes on past it. */
	char *from_file;
	uint64_t took_over, kept_stored;
	int64_t continues; /* -1: no */
	char *other_keys;  /* their keys, "a, b" (the first RM_OTHER_LOSSES); NULL when none */
	int ranks;         /* 1 + the highest rank that printed a loss */
	int64_t first_step, last_step;
	int file_part;         /* > 0: the file holds several runs, this is its file_part-th */
	uint64_t first_line;   /* where this run begins in the file (file_part > 1) */
	int64_t prev_run_step; /* the last step of the run before it */
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

void rm_import_report_release(struct rm_import_report *rep);

/* ==== the key mapper, the sink and the pipeline ============================= */
enum rm_target {
	T_STEP,
	T_LOSS,
	T_LR,
	T_EPOCH,
	T_GRAD_NORM,
	T_RUNTIME,
	T_TS,
	T_BUCKET,
	T_N,
	T_MIN_LEN,
	T_MAX_LEN,
	T_MEAN_LEN,
	T_TOKENS,
	T_PADDED,
	T_RANK,
	T_MICRO, /* micro-batch within the step */
	T_LENS,
	T_CUM_TOKENS, /* cumulative counters, differenced into per-batch amounts */
	T_CUM_N,
	T_TOK_RATE,   /* tokens per second of the interval (words/s, tok/s), times its seconds */
	T_INTERVAL_S, /* seconds since the last record (Marian's Time) */
	T_ELAPSED_S,  /* seconds since the start (OpenNMT-py's "184 sec"), differenced */
	T_EVAL,       /* an evaluation metric (eval_, eval/, val/ ... prefixes) */
	T_SUMMARY,    /* marks a run-summary row (HF's final train_runtime row) */
	T_COUNT,
	T_NONE = T_COUNT
};

#define RM_OTHER_LOSSES 8    /* other loss-named fields of a row kept, at most */
#define MAP_CACHE       4096 /* keys cached per mapper; more are classified each time */

struct rm_map_slot {
	char *key;
	uint32_t klen;
	uint8_t target; /* enum rm_target */
	uint8_t prio;   /* lower wins when a row has several candidates */
	uint32_t next;  /* 1 + the slot looked up after this one last time, or 0 */
};

struct rm_mapper {
	enum rm_format fmt;
	const struct rm_import_opts *opts;
	const char *batch_prefix;
	char *locked[T_COUNT]; /* the key each target settled on */
	/* Open addressing, at most half full: grows from a few slots, since a
	 * W&B chart export opens one mapper per run column (50k of them). */
	struct rm_map_slot *cache;
	uint32_t cache_cap, cache_n;
	uint32_t last_slot; /* 1 + the slot of the last lookup, or 0 */
	/* Text bucket labels of this file in order of first sight. A fixed
	 * array, allocated once: the writer thread reads entries the reader
	 * added before handing their records over, and nothing moves. */
	char **texts;
	uint32_t ntexts;
	/* The cumulative counters at the last row that had them. */
	int64_t cum_step;
	double cum_tokens, cum_n; /* NaN when the row lacked one */
	int cum_have;
	/* The step and elapsed seconds of the last row with a token rate. */
	int64_t rate_step;
	double rate_elapsed; /* NaN when the row lacked it */
	int rate_have;
	/* A step counter that restarts each epoch: the epoch and raw step of
	 * the last row with an integral epoch, the one before, and what is
	 * added to make one axis (see compose_epoch in map.c). */
	int64_t ep_last, ep_raw_last, ep_raw_prev, ep_offset, ep_composed_last, ep_first;
	int ep_seen;
	uint64_t ep_restarts; /* epochs whose counter fell back */
	/* The last row's lengths, sorted and encoded: its record points here
	 * until the pipeline copies them. */
	int64_t *lens;
	uint8_t *lens_code;
	size_t lens_cap;
	/* The last row's other loss-named fields (indices into its fields):
	 * kept beside the loss diagnosed (other_losses). */
	uint32_t other[RM_OTHER_LOSSES];
	int nother;
};

#define MAX_TEXT_LABELS 4096 /* distinct text bucket labels in one file */
#define MAX_LABEL_BYTES 200

struct rm_record {
	int64_t step;
	int has_step_row; /* the loss key was present */
	int has_batch;
	int is_eval; /* no loss, but evaluation metrics */
	int is_summary;
	int has_rank; /* the row named its data-parallel rank: its loss is that rank's */
	struct rm_step s;
	struct rm_batch b;
	uint32_t bucket_text; /* 1 + index of a text bucket label in the mapper's texts, 0: none */
};

void rm_mapper_init(struct rm_mapper *m, enum rm_format fmt, const struct rm_import_opts *opts);
void rm_mapper_release(struct rm_mapper *m);
enum rm_target rm_mapper_target(struct rm_mapper *m, const char *key, size_t klen, int *prio);
/* Fills rec from row. Returns 0, or -1 with a reason in why. */
int rm_mapper_map(struct rm_mapper *m, const struct rm_row *row, struct rm_record *rec, char *why, size_t whylen);
/* Calls add for each other loss-named field of the row last mapped (row)
 * that holds a number. */
void rm_mapper_each_other_loss(struct rm_mapper *m, const struct rm_row *row,
                               void (*add)(void *arg, const char *key, size_t klen, double value), void *arg);
/* Calls add for each evaluation metric of row that holds a number. */
void rm_mapper_each_eval(struct rm_mapper *m, const struct rm_row *row,
                         void (*add)(void *arg, const char *key, size_t klen, double value), void *arg);
/* What the file's batch composition came from, as "key (field), ..."
 * (owned by the caller), or NULL when it has none. */
char *rm_mapper_composition(const struct rm_mapper *m);
/* The keys read that are nothing runmon knows, sorted, the first 12 (owned
 * by the caller), or NULL: what a log without a loss key did hold. */
char *rm_mapper_unmapped(const struct rm_mapper *m);
/* What a key of row is read as, for import --explain: "the step", "the
 * loss", "an eval metric", "composition: tokens", "ignored (not a key
 * runmon knows)", ... */
const char *rm_mapper_role(struct rm_mapper *m, const char *key, size_t klen);
/* Name of the step key this format expects, for messages. */
const char *rm_mapper_step_name(const struct rm_mapper *m);
/* Is row a sidecar row: batch statistics under their bare names, no loss? */
int rm_mapper_looks_like_sidecar(const struct rm_import_opts *opts, const struct rm_row *row);

/* ---- the sink and its report (sink.c) ------------------------------------ */

/* Adds a result for (path, run name) to the report and returns it. */
struct rm_import_result *rm_import_result_add(struct rm_import_report *rep, const char *path, const char *run_name,
                                              enum rm_format fmt);
void rm_import_result_release(struct rm_import_result *r);
/* The path as the user named it (see rm_import_opts.shown_path). */
static inline const char *rm_shown_path(const struct rm_import_opts *opts, const char *path)
{
	return opts->shown_path ? opts->shown_path : path;
}

/* Notes a malformed line in res (skip_bad) or fails with file:line. */
int rm_bad_line(struct rm_import_result *res, const struct rm_import_opts *opts, uint64_t line, const char *why,
                struct rm_err *err);

struct rm_track {
	int64_t rank;  /* batch rank, or -1 for step rows */
	int64_t micro; /* batch micro-batch */
	int64_t prev;
	int has_prev;
	uint64_t *seen; /* bit per step seen in this file */
	size_t words;
	int64_t max_step;
};

/* The steps some rows touched: [lo, hi], when has. */
struct rm_step_range {
	int64_t lo, hi;
	int has;
};

/* A loss that is the mean of the epoch so far (YOLO's tqdm bar, Keras)
 * changes by (l_n - m_{n-1}) / n at the epoch's n-th batch: log|change|
 * falls with slope -1 in log n. A per-batch loss's changes do not depend on
 * where in the epoch it is. Sums of the regression over (log n, log|change|). */
struct rm_running_mean {
	double epoch, last_loss;
	int64_t epoch_first;
	int open; /* an epoch's first point was seen */
	uint64_t n, epochs;
	double sx, sy, sxx, sxy;
};

struct rm_sink {
	struct rm_import_result *res;
	struct rm_store *st;
	int64_t run_id;
	/* Steps that existed at or above low, the lowest step this import
	 * wrote: new_steps is what that range holds at the end minus this. */
	int64_t low, steps_before;
	int has_low;
	struct rm_track *tracks;
	size_t ntracks;
	struct rm_mapper map;
	const struct rm_import_opts *opts;
	int64_t *text_id;        /* the store's id of each of map.texts, 0 until resolved (writer side) */
	uint64_t pause_at;       /* the tests' kill point: pause after this many step rows (0: never) */
	struct rm_step_range rl; /* steps with a rank's loss since the last averaging into the step's */
	uint64_t rl_pending;     /* rank losses written since then */
	/* A training loss on an evaluation line ("training loss = 4.33,
	 * validation loss = 4.92"): the eval key, and the steps evals took. */
	char *train_eval;
	struct rm_step_range ev;
	char *other_keys[RM_OTHER_LOSSES]; /* keys of other losses seen (res->other_keys) */
	int nother_keys;
	struct rm_running_mean rm; /* does the loss average the epoch so far? */
	/* The steps the run held from another file (res->from_file), sorted:
	 * this import may not write over them unasked. */
	int64_t *foreign;
	size_t nforeign, cap_foreign;
};

/* An evaluation value of a row; key is NUL-terminated. */
struct rm_eval_kv {
	const char *key;
	double value;
};

int rm_sink_open(struct rm_sink *k, struct rm_store *st, const struct rm_import_opts *opts,
                 struct rm_import_result *res, struct rm_err *err);
/* As rm_sink_open, for a run named by key (sync). */
int rm_sink_open_key(struct rm_sink *k, struct rm_store *st, const struct rm_import_opts *opts,
                     struct rm_import_result *res, const struct rm_run_key *key, struct rm_err *err);
/* Writes the records of one row (runs on the pipeline's writer thread). */
int rm_sink_put(struct rm_sink *k, struct rm_record *rec, const struct rm_eval_kv *ev, size_t nev,
                const struct rm_eval_kv *other, size_t nother, uint64_t line, struct rm_err *err);
int rm_sink_finish(struct rm_sink *k, struct rm_err *err);
void rm_sink_release(struct rm_sink *k);

/* ---- runs appended to one file (runsplit.c) ------------------------------
 * A new training appended to a log starts its counter over at the start;
 * a resume goes back only to its last checkpoint. Shown each mapped
 * record in order, rm_run_split_check says when one begins another run. */
struct rm_run_split {
	int64_t first, prev, gap; /* the run's first step, its last, the least rise between two */
	int64_t rank;             /* the rank followed (-1: rows name none) */
	uint64_t rows, line;      /* rows followed, and the line of the last */
	int has;
};
void rm_run_split_reset(struct rm_run_split *s);
int rm_run_split_check(struct rm_run_split *s, const struct rm_record *rec, uint64_t line);

/* ---- inferring keys from a file's head (infer.c) -------------------------
 * A reader shows its rows to an rm_infer (flagged RM_INFER_*), then
 * asks for the guess it passes to its sinks as opts->guess. */
struct rm_infer;
struct rm_infer *rm_infer_new(enum rm_format fmt, const struct rm_import_opts *opts);
enum { RM_INFER_EVAL = 1, RM_INFER_BAR = 2 }; /* what a row is: an evaluation, a progress bar's */
void rm_infer_row(struct rm_infer *in, const struct rm_row *row, int flags);
void rm_infer_decide(struct rm_infer *in, struct rm_guess *g);
void rm_infer_free(struct rm_infer *in);
void rm_guess_release(struct rm_guess *g);

/* ---- the pipeline (pipeline.c) ------------------------------------------ */

/*
 * The pipeline overlaps parsing with writing: the driver's thread reads,
 * parses and maps rows; a writer thread owns the store for the file and
 * runs rm_sink_put. Rows travel in a bounded ring of chunks, so memory stays
 * flat. While a pipeline runs, only its writer may touch the store.
 */
struct rm_pipeline;

/* Starts the writer. barrier (may be NULL) runs on the writer thread for
 * each rm_pipeline_barrier, in queue order: sync commits a window there. */
struct rm_pipeline *rm_pipeline_start(int (*barrier)(void *arg, int64_t value, struct rm_err *err), void *arg);
/* Maps row for sink k and queues it; a row the mapper rejects goes to
 * bad_line. Returns the writer's error once it has failed. */
int rm_pipeline_feed(struct rm_pipeline *p, struct rm_sink *k, const struct rm_row *row, uint64_t line,
                     struct rm_err *err);
/* Queues an already mapped record (its eval values are taken from row). */
int rm_pipeline_put(struct rm_pipeline *p, struct rm_sink *k, const struct rm_record *rec, const struct rm_row *row,
                    uint64_t line, struct rm_err *err);
/* Queues a call of the barrier function with value. */
int rm_pipeline_barrier(struct rm_pipeline *p, int64_t value, struct rm_err *err);
/* Drains the queue, stops the writer and returns its status. Frees p. */
int rm_pipeline_finish(struct rm_pipeline *p, struct rm_err *err);

#endif
