/*
 * sync.h - incremental, concurrent, resumable pull of W&B runs into the
 * store.
 *
 * History comes in HistoryPage step windows [lo, hi) up to lastStep + 1
 * (an empty window does not end the scan). Several windows are in flight
 * at once; they are committed in step order, each in one transaction with
 * the run's sync cursor, so a sync killed at any moment resumes with no gap
 * and no duplicate.
 */
#ifndef RUNMON_SYNC_H
#define RUNMON_SYNC_H

#include <signal.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/store.h"
#include "runmon/wandb.h"

struct rm_sync_progress {
	const char *run; /* entity/project/id */
	int64_t rows;    /* history rows stored so far in this sync */
	int64_t total;   /* historyLineCount, 0 unknown */
	int64_t cursor;  /* steps below are stored */
	int64_t stop;    /* lastStep + 1 */
	double elapsed;  /* seconds */
};

struct rm_sync_opts {
	int jobs;                 /* windows in flight; 0 (default): the client's limit (flow.h) */
	int page_size;            /* steps per window (default 1000) */
	const char *loss_key;     /* NULL: detect */
	const char *batch_prefix; /* NULL: "batch/" */
	const int64_t *bounds;
	int nbounds;
	int full;       /* start from step 0, ignoring the cursor */
	int max_rounds; /* re-check lastStep of a growing run (default 3) */
	void (*progress)(void *arg, const struct rm_sync_progress *p);
	void *progress_arg;
	/* When *cancel becomes nonzero (a signal handler), no new window is
	 * fetched; the windows already queued are committed, and the sync
	 * returns RM_OK with res->cancelled set. It resumes from there. */
	volatile sig_atomic_t *cancel;
};
void rm_sync_opts_default(struct rm_sync_opts *o);

struct rm_sync_result {
	int64_t run_id;
	int64_t from, to; /* cursor before and after */
	int64_t windows, rows, steps, batches, new_steps;
	char loss_key[128];
	char state[32];
	double seconds;
	int cancelled;
};

/* Syncs one run. On failure the windows committed before the error stay
 * (the cursor says how far), and err says what failed. */
int rm_sync_run(struct rm_store *st, struct rm_wandb *w, const char *entity, const char *project, const char *name,
                const struct rm_sync_opts *o, struct rm_sync_result *res, struct rm_err *err);

#endif
