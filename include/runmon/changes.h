/*
 * changes.h - what changed since the last report: each report keeps what
 * it saw of every run (its severity, verdict and findings), and the next
 * one compares with that, run by run.
 */
#ifndef RUNMON_CHANGES_H
#define RUNMON_CHANGES_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/detect.h"

/* A finding as a report saw it: the detector's name (the findings table's
 * words), its severity and the step it starts at (-1: not a span). */
struct rm_seen_finding {
	char detector[32];
	enum rm_severity severity;
	int64_t first_step;
};

struct rm_seen_run {
	char *run;                 /* entity/project/name, or the local name */
	enum rm_severity severity; /* the run's */
	char *verdict;             /* the top hypothesis when an alarm, else "healthy" */
	int64_t last_step;         /* -1: none */
	double at;                 /* when the report that saw it was generated */
	struct rm_seen_finding *f;
	size_t nf;
};

/* What one report saw; or, read back from the store, what the latest
 * earlier report saw of each run. */
struct rm_seen {
	struct rm_seen_run *runs;
	size_t n;
};

/* Appends run with the severity, verdict and findings of d. */
void rm_seen_add(struct rm_seen *s, const char *run, const struct rm_diagnosis *d);
/* Appends a run read from elsewhere (the store, a file); strings are copied. */
struct rm_seen_run *rm_seen_push(struct rm_seen *s, const char *run, enum rm_severity sev, const char *verdict,
                                 int64_t last_step, double at);
void rm_seen_push_finding(struct rm_seen_run *r, const char *detector, enum rm_severity sev, int64_t first_step);
void rm_seen_release(struct rm_seen *s);

/* Reads the runs of a JSON report written by `runmon report` (its
 * "overview"); *generated is its generation time. Errors name the file. */
int rm_seen_read_report(const char *path, struct rm_seen *out, double *generated, struct rm_err *err);

/* How a run stands against the baseline, compared at the levels a reader
 * sees (ok below warn, warn, critical). */
enum rm_change {
	RM_CH_NEW,      /* not in the baseline */
	RM_CH_RISEN,    /* a higher level */
	RM_CH_FALLEN,   /* a lower level, still warn or more */
	RM_CH_RESOLVED, /* was warn or more, now ok */
	RM_CH_CHANGED,  /* same level; findings or verdict differ */
	RM_CH_UNCHANGED,
	RM_CH_COUNT
};
const char *rm_change_name(enum rm_change c);

struct rm_run_change {
	enum rm_change kind;
	const struct rm_seen_run *now, *was; /* was: NULL when new */
	/* Findings new or more severe than before (indexes into now->f), and
	 * those gone (indexes into was->f). */
	size_t *appeared, nappeared, *gone, ngone;
};

struct rm_changes {
	int baseline;               /* 0: no earlier report to compare with */
	double baseline_at;         /* the newest baseline report's time */
	const char *file;           /* --baseline FILE, or NULL: the store */
	struct rm_run_change *runs; /* one per run of now, in its order */
	size_t n, count[RM_CH_COUNT];
};

/* Compares now with was (runs matched by name); baseline and baseline_at
 * are left to the caller. */
void rm_changes_compute(const struct rm_seen *now, const struct rm_seen *was, struct rm_changes *out);
/* 1 when something reached level since the baseline: a new or risen run
 * at level or above, or a finding at level or above that appeared. */
int rm_changes_new_at(const struct rm_changes *c, enum rm_severity level);
void rm_changes_release(struct rm_changes *c);

#endif
