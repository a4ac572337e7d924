/*
 * import_internal.h - what the importer's files share: the line driver
 * (linefmt.c), the formats (formats/, one file per family) and the
 * dispatcher's table of them (import.c). They write through the sink
 * (runmon/sink.h), and a format never calls the dispatcher.
 */
#ifndef RUNMON_IMPORT_INTERNAL_H
#define RUNMON_IMPORT_INTERNAL_H

#include "runmon/import.h"
#include "runmon/parse.h"
#include "runmon/sink.h"
#include "runmon/store.h"

/* ---- the line driver (linefmt.c) ------------------------------------------- */

struct rm_lines;
/* Where a tail stopped in lr, and which file it read (the one opened). */
void rm_tail_moved(struct rm_tail_pos *pos, const struct rm_lines *lr);
/* What a line of a line format gives: a record (*row filled, for the
 * mapper m of the file's run), no record (a banner, a config dump:
 * counted), nothing to count (a blank line, a line taken into a record
 * spread over several), or a bad line (why set). line is NULL once, after
 * the last line; *lineno is the line's number, and a parser that returns
 * a record it held sets the number of the record's first line. A kind
 * with LINE_MORE set says the line holds more: the driver calls again with
 * the same line for the next. */
enum line_kind { LINE_NONE, LINE_RECORD, LINE_BAD, LINE_SKIP, LINE_MORE = 8 };
typedef enum line_kind line_parse_fn(void *ctx, struct rm_mapper *m, char *line, size_t len, uint64_t *lineno,
                                     const struct rm_row **row, char *why, size_t whylen);
/* A line format's reader: path whole (pos NULL), or its complete lines from
 * pos on, moving pos; one result named after the file. Non-blank lines that
 * are no record are counted in not_records. */
int rm_read_lines(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                  struct rm_tail_pos *pos, struct rm_import_report *rep, line_parse_fn *parse, void *ctx,
                  struct rm_err *err);
/* The runs of one file, written one after the other (runchain.c): rows
 * go through the pipeline to the current run's sink, and a row whose step
 * starts the counter over (rm_run_split_check) closes that run and opens
 * the next, "<name>-2", "<name>-3". Splits only when split is set (a whole
 * file: a tail goes on with the run it follows). The current result is
 * rep->r[res]: adding a run may move rep->r. */
struct run_chain {
	struct rm_store *st;
	struct rm_import_opts opts; /* run_name: the current run's */
	struct rm_import_report *rep;
	size_t res;
	char *base; /* the first run's name */
	int split;
	struct rm_run_split rs;
	struct rm_sink k;
	struct rm_pipeline *p;
};
int rm_chain_open(struct run_chain *c, struct rm_store *st, const struct rm_import_opts *opts,
                  struct rm_import_report *rep, size_t res, int split, struct rm_err *err);
static inline struct rm_import_result *rm_chain_result(struct run_chain *c)
{
	return &c->rep->r[c->res];
}
int rm_chain_feed(struct run_chain *c, const struct rm_row *row, uint64_t line, struct rm_err *err);
/* Finishes the current run (rc: the reading's result so far); returns rc or the finish's. */
int rm_chain_close(struct run_chain *c, int rc, struct rm_err *err);

/* Infers from path's head the keys no known name says (the loss, the
 * step: rm_infer_decide) by reading it with parse into g; the reading
 * itself starts over. Release g with rm_guess_release. */
int rm_infer_file(const struct rm_import_opts *opts, const char *path, enum rm_format fmt, line_parse_fn *parse,
                  void *ctx, struct rm_guess *g, struct rm_err *err);

/* Run name for a file: opts->run_name, else derived from the path. */
char *rm_run_name_for(const struct rm_import_opts *opts, const char *path);

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
static inline int rm_sniff_json_object(const struct sniff *s)
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
	const char *why;      /* what detection saw, for import --explain */
};

/* compete.c: the readers that could read a text file each read the same
 * sample of it (bad lines skipped, into a scratch store); *winner is the
 * index of the one that explains it best, c[0] (the first line's
 * suggestion) unless another explains clearly more. trials[i] says what
 * c[i] found. An error only when the sample cannot be made. */
struct rm_trial {
	uint64_t lines, points, good, bad; /* lines read, loss points, records of any kind, bad lines */
	double score;
	int failed;    /* the reader stopped with an error */
	int unnamed;   /* its loss is a number no name in the file says (RM_GUESS_UNNAMED) */
	char why[560]; /* its error, or its first bad line */
};
int rm_compete(const struct rm_import_opts *opts, const char *path, const struct import_format *const *c, size_t n,
               struct rm_trial *trials, size_t *winner, struct rm_err *err);

/* import_text.c: JSON lines and CSV, with their W&B, sidecar and
 * TensorBoard variants. */
int rm_sniff_wandb_history(const struct sniff *s);
/* What a file that is no training log is ("an HTML page", "a PNG image",
 * "binary data"), from its first bytes; NULL for text (foreign.c). */
const char *rm_foreign_kind(const uint8_t *head, size_t n);
int rm_sniff_sidecar_jsonl(const struct sniff *s);
int rm_sniff_jsonl(const struct sniff *s);
int rm_sniff_tb_csv(const struct sniff *s);
int rm_sniff_wandb_csv(const struct sniff *s);
int rm_sniff_sidecar_csv(const struct sniff *s);
int rm_sniff_csv(const struct sniff *s);
import_read_fn rm_read_jsonl, rm_read_csv;
/* A JSON array of record objects (Chainer's LogReport), read element by element. */
int rm_sniff_json_array(const struct sniff *s);
import_read_fn rm_read_json_array;
import_tail_fn rm_tail_jsonl, rm_tail_csv;
/* import_wandbfile.c: W&B's run-<id>.wandb log, whole or live. */
int rm_sniff_wandb_log(const struct sniff *s);
import_read_fn rm_read_wandb_log;
import_tail_fn rm_tail_wandb_log;
/* tfevents.c: TensorBoard event files, whole or live, and trees of them. */
int rm_sniff_tfevents(const struct sniff *s);
import_read_fn rm_read_tfevents;
import_tail_fn rm_tail_tfevents;
/* One run per directory under root that holds event files. */
int rm_read_tfevents_tree(struct rm_store *st, const struct rm_import_opts *opts, const char *root,
                          struct rm_import_report *rep, struct rm_err *err);
/* import_log.c: trainers' console logs. */
int rm_sniff_log(const struct sniff *s);
import_read_fn rm_read_log;
import_tail_fn rm_tail_log;
/* import_hf.c: Hugging Face's trainer_state.json; and any JSON document
 * read whole (a BOM, bare NaN and Infinity allowed) into *doc. */
int rm_sniff_hf_state(const struct sniff *s);
import_read_fn rm_read_hf_state;
struct json_t;
int rm_read_json_doc(const struct rm_import_opts *opts, const char *path, struct json_t **doc, struct rm_err *err);
/* jsoncols.c: a JSON document of parallel arrays (NVIDIA's nvlog). */
int rm_sniff_json_columns(const struct sniff *s);
import_read_fn rm_read_json_columns;

#endif
