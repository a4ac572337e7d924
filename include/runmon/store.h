/*
 * store.h - the SQLite store: open and migrate, upsert rows, list runs.
 *
 * The only module that talks to SQLite. Writes use prepared statements with
 * bound parameters and upsert on primary keys, so re-importing or re-syncing
 * the same data changes nothing. Callers group writes with rm_store_begin /
 * rm_store_commit; rm_store_rollback undoes everything since begin.
 */
#ifndef RUNMON_STORE_H
#define RUNMON_STORE_H

#include <stdint.h>

#include "runmon/common.h"

struct rm_store;

/* Per-step values; a bit in `have` says the value was logged (it may still
 * be NaN or infinite). */
enum rm_step_field { RM_S_LOSS, RM_S_LR, RM_S_EPOCH, RM_S_GRAD_NORM, RM_S_RUNTIME, RM_S_TS, RM_S_COUNT };

struct rm_step {
	int64_t step;
	double v[RM_S_COUNT];
	uint32_t have; /* 1 << enum rm_step_field */
};

enum rm_batch_field {
	RM_B_BUCKET,
	RM_B_N,
	RM_B_MIN_LEN,
	RM_B_MAX_LEN,
	RM_B_MEAN_LEN,
	RM_B_TOKENS,
	RM_B_PADDED, /* padding tokens */
	RM_B_COUNT
};

struct rm_batch {
	int64_t step;
	int64_t rank;
	double v[RM_B_COUNT]; /* counts and lengths in tokens */
	uint32_t have;        /* 1 << enum rm_batch_field */
};

struct rm_run_key {
	const char *source;  /* "file" or "wandb" */
	const char *entity;  /* "" for local runs */
	const char *project; /* "" for local runs */
	const char *name;    /* W&B run id or local name */
};

struct rm_run_info {
	int64_t id;
	char *source, *entity, *project, *name, *display_name, *state, *loss_key;
	int64_t steps; /* step rows */
	int64_t first_step, last_step;
	int64_t batch_steps; /* steps that have batch composition */
	double synced_at;    /* unix seconds, 0 if never */
};

struct rm_import_log {
	int64_t run_id;
	const char *path, *format;
	int64_t lines, steps, batches, replaced, restarts, skipped;
};

/* Opens (creating if needed) the database at path and migrates it to the
 * newest schema. *out is owned by the caller; close with rm_store_close. */
int rm_store_open(struct rm_store **out, const char *path, struct rm_err *err);

/* As rm_store_open, but migrates no further than max_version (tests). */
int rm_store_open_version(struct rm_store **out, const char *path, int max_version, struct rm_err *err);

void rm_store_close(struct rm_store *st);

/* Schema version of the open database (PRAGMA user_version). */
int rm_store_schema_version(struct rm_store *st);
/* Newest schema version this binary knows. */
int rm_store_latest_version(void);

int rm_store_begin(struct rm_store *st, struct rm_err *err);
int rm_store_commit(struct rm_store *st, struct rm_err *err);
void rm_store_rollback(struct rm_store *st);

/* Finds or creates the run; sets *run_id. */
int rm_store_run_ensure(struct rm_store *st, const struct rm_run_key *key, int64_t *run_id, struct rm_err *err);

int rm_store_put_step(struct rm_store *st, int64_t run_id, const struct rm_step *s, struct rm_err *err);
int rm_store_put_batch(struct rm_store *st, int64_t run_id, const struct rm_batch *b, struct rm_err *err);
int rm_store_put_eval(struct rm_store *st, int64_t run_id, int64_t step, const char *key, double value,
                      struct rm_err *err);
/* Replaces the run's bucket boundaries: bucket i is (bounds[i], bounds[i+1]]. */
int rm_store_put_buckets(struct rm_store *st, int64_t run_id, const int64_t *bounds, int nbounds, struct rm_err *err);

/* Refreshes last_step and synced_at; sets loss_key when not NULL. */
int rm_store_run_touch(struct rm_store *st, int64_t run_id, const char *loss_key, struct rm_err *err);

int rm_store_count_steps(struct rm_store *st, int64_t run_id, int64_t *n, struct rm_err *err);
int rm_store_log_import(struct rm_store *st, const struct rm_import_log *log, struct rm_err *err);

/* All runs, ordered by id. The array and its strings belong to the caller:
 * free with rm_run_info_free. */
int rm_store_list_runs(struct rm_store *st, struct rm_run_info **out, size_t *n, struct rm_err *err);
void rm_run_info_free(struct rm_run_info *runs, size_t n);

#endif
