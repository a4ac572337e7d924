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
#include "runmon/sink.h"
#include "runmon/store.h"

/* Name used on the command line and in reports; NULL for RM_FMT_AUTO. */
const char *rm_format_name(enum rm_format f);
/* Parses a --format value; returns 0 on success. */
int rm_format_parse(const char *name, enum rm_format *out);

/* Checks a --pattern ("step:{step} loss:{loss}"); 0, or -1 with why. */
int rm_log_pattern_check(const char *pattern, char *why, size_t whylen);

/* Imports files into st. On failure nothing is written and err names the
 * file and line. The report is filled on success; release it with
 * rm_import_report_release. */
int rm_import(struct rm_store *st, const struct rm_import_opts *opts, char *const *files, int nfiles,
              struct rm_import_report *rep, struct rm_err *err);

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
/* Does dir or a directory under it hold TensorBoard event files? */
int rm_tfevents_tree(const char *dir);

#endif
