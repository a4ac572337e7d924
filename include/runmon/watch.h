/*
 * watch.h - the watch layer: what `watch` knows, as Prometheus metrics: a
 * registry the watch loop fills after each sync and diagnosis, and its text
 * exposition (format 0.0.4), which the net layer's endpoint serves.
 */
#ifndef RUNMON_WATCH_H
#define RUNMON_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runmon/alert.h"
#include "runmon/common.h"
#include "runmon/detect.h"
#include "runmon/import.h"
#include "runmon/model.h"
#include "runmon/net.h"
#include "runmon/store.h"
#include "runmon/wandb.h"

struct rm_metrics;
struct rm_run_metrics;

struct rm_metrics *rm_metrics_new(void);
void rm_metrics_free(struct rm_metrics *m);

/* One run's record, made on first use; the labels are entity, project and
 * run (the run's name: a W&B run id, or the local name). */
struct rm_run_metrics *rm_metrics_run(struct rm_metrics *m, const char *entity, const char *project, const char *name);
/* After a diagnosis. A full one sets the detector figures and raises the
 * resets counters (never lowers them: a counter only grows); every pass
 * sets the latest step and loss. info gives the display name and, on a
 * full pass, the share of steps with a batch composition. */
void rm_metrics_diagnosed(struct rm_run_metrics *r, const struct rm_diagnosis *d, const struct rm_run_info *info,
                          int full, double now);
/* After a sync of the run (or a read of its .wandb log): ok, or an error. */
void rm_metrics_synced(struct rm_run_metrics *r, int ok, double now);
void rm_metrics_finished(struct rm_run_metrics *r);
/* A tick's wall time, into the histogram. */
void rm_metrics_tick(struct rm_metrics *m, double seconds);

/* The exposition, NUL-terminated; caller frees. */
char *rm_metrics_render(const struct rm_metrics *m, size_t *len);

/* Appends a label value as the exposition wants it: UTF-8 (malformed
 * bytes become U+FFFD), with \\, \" and \n escaped. */
void rm_metrics_label_value(FILE *out, const char *value);

/* ---- the loop (watch.c) --------------------------------------------------- */

#define RM_WATCH_SIDECARS 16

/* A batch sidecar followed for a run (--batches RUN=FILE). */
struct rm_watch_sidecar {
	const char *run, *given; /* borrowed */
	char *path;              /* absolute: the key of its position in tails */
};

/* What a watch is given (the command fills it), and what its loop keeps. */
struct rm_watch {
	struct rm_store *st;
	double every;          /* seconds between ticks */
	double diagnose_every; /* seconds: the latest a run with new rows waits for a full diagnosis */
	int64_t window;        /* steps the detectors read between full diagnoses; 0: always full */
	struct rm_watch_sidecar side[RM_WATCH_SIDECARS];
	int nside;
	struct rm_import_opts imp;     /* for sidecars */
	struct rm_import_opts log_imp; /* for .wandb logs */
	struct rm_wandb *w;            /* NULL when offline or without a key */
	struct rm_alerter alerts;
	enum rm_severity min;
	int offline, once, stats;
	int skip_bad;               /* a W&B row that does not parse or map is skipped (sync's --skip-bad) */
	const char *wandb_dir;      /* absolute, or NULL: new run-*.wandb logs there are watched */
	struct rm_metrics *metrics; /* --metrics: the registry and its endpoint */
	struct rm_metrics_server *server;
	struct rm_voice voice; /* warnings and --stats */
	/* The loop's own. */
	int outage;   /* a W&B outage was reported */
	int external; /* another process wrote to the database since the last tick */
};

/* Watches the runs specs name (W&B run paths, local run names) until none
 * is left, or for one tick with once, or until SIGINT/SIGTERM. Returns
 * RM_E_NOTFOUND when, with once, a named run was not in the store. */
int rm_watch_run(struct rm_watch *wt, char *const *specs, int nspecs);

#endif
