/*
 * import_internal.h - what the importer's files share, in layers, each
 * using only those above it: the key mapper that turns a row of any format
 * into a step, batch or eval record (import_map.c); the sink that writes one
 * run's records, the report and the bad-line rule (import_sink.c); the
 * pipeline that overlaps parsing and writing (import_pipe.c); the formats
 * (one file per family); and the dispatcher's table of them (import.c).
 */
#ifndef RUNMON_IMPORT_INTERNAL_H
#define RUNMON_IMPORT_INTERNAL_H

#include "runmon/import.h"
#include "runmon/row.h"
#include "runmon/store.h"

enum target {
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
	T_EVAL,    /* an evaluation metric (eval_, eval/, val/ ... prefixes) */
	T_SUMMARY, /* marks a run-summary row (HF's final train_runtime row) */
	T_COUNT,
	T_NONE = T_COUNT
};

#define MAP_CACHE 4096 /* keys cached per mapper; more are classified each time */

struct map_slot {
	char *key;
	uint32_t klen;
	uint8_t target; /* enum target */
	uint8_t prio;   /* lower wins when a row has several candidates */
};

struct mapper {
	enum rm_format fmt;
	const struct rm_import_opts *opts;
	const char *batch_prefix;
	char *locked[T_COUNT]; /* the key each target settled on */
	/* Open addressing, at most half full: grows from a few slots, since a
	 * W&B chart export opens one mapper per run column (50k of them). */
	struct map_slot *cache;
	uint32_t cache_cap, cache_n;
	/* Text bucket labels of this file in order of first sight. A fixed
	 * array, allocated once: the writer thread reads entries the reader
	 * added before handing their records over, and nothing moves. */
	char **texts;
	uint32_t ntexts;
	/* The cumulative counters at the last row that had them. */
	int64_t cum_step;
	double cum_tokens, cum_n; /* NaN when the row lacked one */
	int cum_have;
	/* The last row's lengths, sorted and encoded: its record points here
	 * until the pipeline copies them. */
	int64_t *lens;
	uint8_t *lens_code;
	size_t lens_cap;
};

#define MAX_TEXT_LABELS 4096 /* distinct text bucket labels in one file */
#define MAX_LABEL_BYTES 200

struct record {
	int64_t step;
	int has_step_row; /* the loss key was present */
	int has_batch;
	int is_eval; /* no loss, but evaluation metrics */
	int is_summary;
	struct rm_step s;
	struct rm_batch b;
	uint32_t bucket_text; /* 1 + index of a text bucket label in the mapper's texts, 0: none */
};

void mapper_init(struct mapper *m, enum rm_format fmt, const struct rm_import_opts *opts);
void mapper_release(struct mapper *m);
enum target mapper_target(struct mapper *m, const char *key, size_t klen, int *prio);
/* Fills rec from row. Returns 0, or -1 with a reason in why. */
int mapper_map(struct mapper *m, const struct rm_row *row, struct record *rec, char *why, size_t whylen);
/* Calls add for each evaluation metric of row that holds a number. */
void mapper_each_eval(struct mapper *m, const struct rm_row *row,
                      void (*add)(void *arg, const char *key, size_t klen, double value), void *arg);
/* What the file's batch composition came from, as "key (field), ..."
 * (owned by the caller), or NULL when it has none. */
char *mapper_composition(const struct mapper *m);
/* Name of the step key this format expects, for messages. */
const char *mapper_step_name(const struct mapper *m);
/* Is row a sidecar row: batch statistics under their bare names, no loss? */
int mapper_looks_like_sidecar(const struct rm_import_opts *opts, const struct rm_row *row);

/* ---- the sink and its report (import_sink.c) ---------------------------- */

/* Adds a result for (path, run name) to the report and returns it. */
struct rm_import_result *report_add(struct rm_import_report *rep, const char *path, const char *run_name,
                                    enum rm_format fmt);
void report_result_release(struct rm_import_result *r);
struct rm_lines;
/* Where a tail stopped in lr, and which file it read (the one opened). */
void tail_moved(struct rm_tail_pos *pos, const struct rm_lines *lr);
/* What a line of a line format is: a record (*row filled, for the mapper
 * m of the file's run), no record (blank, a banner), or bad (why set). */
enum line_kind { LINE_NONE, LINE_RECORD, LINE_BAD };
typedef enum line_kind line_parse_fn(void *ctx, struct mapper *m, char *line, size_t len, const struct rm_row **row,
                                     char *why, size_t whylen);
/* A line format's reader: path whole (pos NULL), or its complete lines from
 * pos on, moving pos; one result named after the file. Non-blank lines that
 * are no record are counted in not_records. */
int read_lines(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
               struct rm_tail_pos *pos, struct rm_import_report *rep, line_parse_fn *parse, void *ctx,
               struct rm_err *err);
/* Run name for a file: opts->run_name, else derived from the path. */
char *run_name_for(const struct rm_import_opts *opts, const char *path);
/* The path as the user named it (see rm_import_opts.shown_path). */
static inline const char *shown_path(const struct rm_import_opts *opts, const char *path)
{
	return opts->shown_path ? opts->shown_path : path;
}

/* Notes a malformed line in res (skip_bad) or fails with file:line. */
int bad_line(struct rm_import_result *res, const struct rm_import_opts *opts, uint64_t line, const char *why,
             struct rm_err *err);

struct track {
	int64_t rank;  /* batch rank, or -1 for step rows */
	int64_t micro; /* batch micro-batch */
	int64_t prev;
	int has_prev;
	uint64_t *seen; /* bit per step seen in this file */
	size_t words;
	int64_t max_step;
};

struct sink {
	struct rm_import_result *res;
	struct rm_store *st;
	int64_t run_id;
	/* Steps that existed at or above low, the lowest step this import
	 * wrote: new_steps is what that range holds at the end minus this. */
	int64_t low, steps_before;
	int has_low;
	struct track *tracks;
	size_t ntracks;
	struct mapper map;
	const struct rm_import_opts *opts;
	int64_t *text_id; /* the store's id of each of map.texts, 0 until resolved (writer side) */
};

/* An evaluation value of a row; key is NUL-terminated. */
struct eval_kv {
	const char *key;
	double value;
};

int sink_open(struct sink *k, struct rm_store *st, const struct rm_import_opts *opts, struct rm_import_result *res,
              struct rm_err *err);
/* As sink_open, for a run named by key (sync). */
int sink_open_key(struct sink *k, struct rm_store *st, const struct rm_import_opts *opts, struct rm_import_result *res,
                  const struct rm_run_key *key, struct rm_err *err);
/* Writes the records of one row (runs on the pipeline's writer thread). */
int sink_put(struct sink *k, struct record *rec, const struct eval_kv *ev, size_t nev, uint64_t line,
             struct rm_err *err);
int sink_finish(struct sink *k, struct rm_err *err);
void sink_release(struct sink *k);

/* ---- the pipeline (import_pipe.c) --------------------------------------- */

/*
 * The pipeline overlaps parsing with writing: the driver's thread reads,
 * parses and maps rows; a writer thread owns the store for the file and
 * runs sink_put. Rows travel in a bounded ring of chunks, so memory stays
 * flat. While a pipeline runs, only its writer may touch the store.
 */
struct pipeline;

/* Starts the writer. barrier (may be NULL) runs on the writer thread for
 * each pipeline_barrier, in queue order: sync commits a window there. */
struct pipeline *pipeline_start(int (*barrier)(void *arg, int64_t value, struct rm_err *err), void *arg);
/* Maps row for sink k and queues it; a row the mapper rejects goes to
 * bad_line. Returns the writer's error once it has failed. */
int pipeline_feed(struct pipeline *p, struct sink *k, const struct rm_row *row, uint64_t line, struct rm_err *err);
/* Queues an already mapped record (its eval values are taken from row). */
int pipeline_put(struct pipeline *p, struct sink *k, const struct record *rec, const struct rm_row *row, uint64_t line,
                 struct rm_err *err);
/* Queues a call of the barrier function with value. */
int pipeline_barrier(struct pipeline *p, int64_t value, struct rm_err *err);
/* Drains the queue, stops the writer and returns its status. Frees p. */
int pipeline_finish(struct pipeline *p, struct rm_err *err);

/* ---- formats ------------------------------------------------------------
 * Each format is one entry of the dispatcher's table (import.c). A format
 * reads through the sink and the pipeline, and never calls the dispatcher. */

/* What detection sees of a file: its first bytes, and its first non-blank
 * line with leading blanks cut (NULL when it has none, or none readable). */
struct sniff {
	const struct rm_import_opts *opts;
	const uint8_t *head;
	size_t nhead;
	const char *line;
	size_t len;
};

/* Does the first line open a JSON object ("{", "{}", '{"key"'), not a
 * Python dict ("{'loss': ...}", as the HF Trainer prints to the console)? */
static inline int sniff_json_object(const struct sniff *s)
{
	size_t i = 1;
	if (!s->line || !s->len || s->line[0] != '{')
		return 0;
	while (i < s->len && (s->line[i] == ' ' || s->line[i] == '\t' || s->line[i] == '\r'))
		i++;
	return i == s->len || s->line[i] == '"' || s->line[i] == '}';
}

/* Reads path whole into rep as format fmt. */
typedef int import_read_fn(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                           struct rm_import_report *rep, struct rm_err *err);
/* Reads path from pos (a complete line's start) to its last complete line
 * and moves pos there; pos->dev and ino name the file read. */
typedef int import_tail_fn(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                           struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err);

struct import_format {
	enum rm_format fmt;
	const char *name;                    /* on the command line and in reports */
	int (*detect)(const struct sniff *); /* does this file look like this format? */
	import_read_fn *read;
	import_tail_fn *tail; /* NULL: not followed as it grows */
};

/* import_text.c: JSON lines and CSV, with their W&B, sidecar and
 * TensorBoard variants. */
int detect_wandb_history(const struct sniff *s);
int detect_sidecar_jsonl(const struct sniff *s);
int detect_jsonl(const struct sniff *s);
int detect_tb_csv(const struct sniff *s);
int detect_wandb_csv(const struct sniff *s);
int detect_sidecar_csv(const struct sniff *s);
int detect_csv(const struct sniff *s);
import_read_fn import_jsonl, import_csv;
import_tail_fn import_jsonl_tail, import_csv_tail;
/* import_wandbfile.c: W&B's run-<id>.wandb log, whole or live. */
int detect_wandb_log(const struct sniff *s);
import_read_fn import_wandb_log;
import_tail_fn import_wandb_tail;
/* import_log.c: trainers' console logs. */
int detect_log(const struct sniff *s);
import_read_fn import_log;
import_tail_fn import_log_tail;
/* import_hf.c: Hugging Face's trainer_state.json. */
int detect_hf_state(const struct sniff *s);
import_read_fn import_hf_state;

#endif
