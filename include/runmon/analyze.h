/*
 * analyze.h - diagnose one stored run: load its series, read the context
 * detectors need from its config, run the detectors, store the findings.
 * Shared by the diagnose, demo, report and watch commands.
 */
#ifndef RUNMON_ANALYZE_H
#define RUNMON_ANALYZE_H

#include "runmon/common.h"
#include "runmon/detect.h"
#include "runmon/store.h"

struct rm_analyze_opts {
	int64_t since;            /* first step to read */
	int64_t until;            /* read only the steps before this one (0: to the end; compare --at) */
	int64_t checkpoint_every; /* 0: from the config (save_steps, ...) */
	int64_t steps_per_epoch;  /* 0: from the config, else the epoch column */
	struct rm_detect_opts detect;
	int store_findings; /* replace the run's findings (a full diagnosis on a writable store only) */
	/* A recent window only: the last `window` steps (0: from since), with
	 * no cost analysis and brief run info (no counts), so the time does
	 * not grow with the run. For alerts between full diagnoses. */
	int64_t window;
	/* The real lengths of the training data (diagnose --lengths-from): the
	 * cost side re-packs these instead of lengths rebuilt from each
	 * batch's statistics. NULL: rebuilt. */
	const int64_t *lengths;
	size_t nlengths;
	/* Buckets derived (no ids recorded) by these boundaries, not the run's
	 * own (compare: one bucketing for both runs). NULL: the run's own. */
	const int64_t *derive_bounds;
	int nderive_bounds;
	/* Called once the detectors are done, with the series they read and
	 * their diagnosis (runmon export); a non-zero return is the analysis's
	 * error (set *err). NULL: none. */
	int (*each_series)(void *arg, const struct rm_series *s, const struct rm_diagnosis *d, struct rm_err *err);
	void *each_arg;
};
void rm_analyze_opts_default(struct rm_analyze_opts *o);

/* One bucketing for runs that record no bucket ids (compare): the
 * boundaries derived from all their batches' lengths together, steps
 * [since[i], until[i]) of run[i] (until 0: to the end), into bounds
 * (RM_MAX_BUCKETS + 1 room); their count, 0 when no batch lacks an id. */
int rm_analyze_common_bounds(struct rm_store *st, const int64_t *run, const int64_t *since, const int64_t *until,
                             int nruns, int64_t *bounds, int *nbounds, struct rm_err *err);

/* Diagnoses run_id into *d (release with rm_diagnosis_release) and fills
 * *info (release with rm_run_info_release). */
int rm_analyze_run(struct rm_store *st, int64_t run_id, const struct rm_analyze_opts *o, struct rm_diagnosis *d,
                   struct rm_run_info *info, struct rm_err *err);

/* What a diagnosis would say of run_id's join alone (import's summary):
 * how its loss points meet its batches, and what each point is read as. */
int rm_analyze_join(struct rm_store *st, int64_t run_id, const struct rm_analyze_opts *o, struct rm_join *j,
                    struct rm_reading_fit *rf, struct rm_err *err);

/* The first integer among keys in a run config (plain, or W&B's
 * {"key": {"value": V}}), searched at the top level and one level down.
 * Returns 1 when found. */
int rm_config_int(const char *config_json, const char *const *keys, int64_t *out);

/* ---- reports (report.c) --------------------------------------------------- */

struct rm_report_spec {
	const char *format;   /* html, md or json */
	const char *output;   /* a path, or NULL / "-" for stdout */
	const char *baseline; /* a JSON report to compare with; NULL: the store's reports */
	double cutoff;        /* the store's baseline: the latest report generated at or before this */
	double now;           /* the report's time (unix seconds) */
	enum rm_severity fail_on, fail_on_new;
	int fail_worst; /* fail when a run is at fail_on or worse */
	int fail_new;   /* fail when what is new since the baseline reaches fail_on_new */
	int compare;    /* two runs, before and after: the report opens with their comparison */
	int overlay;    /* the named runs (2 to RM_OVERLAY_MAX) on one chart, in the order named */
	int keep;       /* keep what it saw as the next report's baseline */
	/* Runs diagnosed at once, each on a connection of its own to db (the
	 * store's path or URI as given); 1 or no db: one after another. */
	int jobs;
	const char *db;
};

/* What a written report found, for the exit status and the line that
 * explains it. */
struct rm_report_outcome {
	int failed;        /* a fail rule of the spec hit */
	size_t at_fail_on; /* runs at spec->fail_on or worse */
	int new_hit;       /* something new since the baseline reached fail_on_new */
	enum rm_severity worst;
};

/* Diagnoses runs ids[0..n), writes the report (spec), and keeps what it saw
 * as the next report's baseline (a read-only store says so through v). */
int rm_report_write(struct rm_store *st, const int64_t *ids, size_t n, const struct rm_report_spec *spec,
                    const struct rm_voice *v, struct rm_report_outcome *out, struct rm_err *err);

#endif
