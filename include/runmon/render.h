/*
 * render.h - the render layer: what changed since the last report, and a
 * diagnosis turned into words, a terminal report, JSON, HTML, Markdown and
 * finding rows. Renderers read results only; they compute no statistics
 * and never touch the store.
 */
#ifndef RUNMON_RENDER_H
#define RUNMON_RENDER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runmon/common.h"
#include "runmon/model.h"
#include "runmon/detect.h"

/* ==== changes =============================================================== */
/*
 * what changed since the last report: each report keeps what
 * it saw of every run (its severity, verdict and findings), and the next
 * one compares with that, run by run.
 */
/* A finding as a report saw it: the detector's name (the findings table's
 * words), its severity and the step it starts at (-1: not a span). */

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

/* Appends run with the severity, verdict and findings of d. */
void rm_seen_add(struct rm_seen *s, const char *run, const struct rm_diagnosis *d);

/* ==== render ================================================================ */
/*
 * turns a diagnosis into words, a terminal report, JSON and
 * finding rows. Renderers read results only; they compute no statistics.
 */
#define RM_DIAGNOSIS_SCHEMA "runmon.diagnosis/4"

struct rm_render_ctx {
	const struct rm_run_info *run;
	int64_t since;       /* first step diagnosed (0: all) */
	int color;           /* ANSI colour in text output */
	const char *run_url; /* W&B run page, or NULL */
	int width;           /* the terminal's columns: tables narrower than it by rows; 0: unlimited */
};

/* How far the losses and the batches meet, into buf: 0 (and "") when no
 * batch is recorded, 1 said, 2 a warning (under half the loss points have
 * their batches; both step ranges said). */
int rm_explain_join(const struct rm_join *j, char *buf, size_t n);
/* What a logged point was read as, and how well each reading fitted, into
 * buf: 0 (and "") where points are as dense as the batches. */
int rm_explain_reading(const struct rm_reading_fit *r, char *buf, size_t n);
/* The JSON word for enum rm_reading_basis. */
const char *rm_reading_basis_name(int basis);
/* One sentence naming the verdict and its main numbers, into buf. */
void rm_explain_verdict(const struct rm_diagnosis *d, char *buf, size_t n);
/* Room for a verdict that names every cause at warn or above. */
#define RM_VERDICT_LEN 1024
/* What to do, most important first: up to max lines into lines[], each
 * a static or buf-backed string valid until the next call. Returns the
 * count. */
int rm_explain_fix(const struct rm_diagnosis *d, const char **lines, int max);

/* The human report (verdict first, then evidence per detector). */
void rm_render_text(FILE *fp, const struct rm_diagnosis *d, const struct rm_render_ctx *c);

/* The JSON document of schema RM_DIAGNOSIS_SCHEMA (owned by the caller). */
json_t *rm_render_json(const struct rm_diagnosis *d, const struct rm_render_ctx *c);

/* Finding rows for the store: one per detector with something to say,
 * plus the verdict. Strings are owned; free with rm_findings_free. */
size_t rm_render_findings(const struct rm_diagnosis *d, struct rm_finding_row **rows);
void rm_findings_free(struct rm_finding_row *rows, size_t n);

/* One run of a report. */
struct rm_report_run {
	const struct rm_diagnosis *d;
	const struct rm_run_info *info;
	const char *url;                    /* W&B run page or NULL */
	const struct rm_run_change *change; /* against the baseline, or NULL */
};

/* A report: its runs (worst first, as rm_report_order leaves them), when
 * it was generated (unix seconds), and what changed since the baseline
 * (NULL: not compared). */
struct rm_compare_side;
struct rm_report {
	const struct rm_report_run *runs;
	size_t n;
	double generated;
	const struct rm_changes *changes;
	/* report --compare: the comparison of the two runs, and its sides (2) */
	const struct rm_comparison *compare;
	const struct rm_compare_side *compare_side;
	/* report --overlay: the runs drawn on one chart, as named (noverlay 0: none) */
	const struct rm_compare_side *overlay;
	int noverlay;
};

#define RM_OVERLAY_MAX 4 /* runs one overlay chart tells apart (ink, dash and marker) */

#define RM_REPORT_SCHEMA "runmon.report/1"

/* The verdict in a word: the top hypothesis when it is an alarm, else
 * "healthy". */
const char *rm_verdict_name(const struct rm_diagnosis *d);
/* The run's name in reports: entity/project/name, or the local name. */
void rm_report_run_name(const struct rm_run_info *r, char *buf, size_t n);
/* Orders runs as the overview shows them: by entity/project, the group
 * with the worst run first, then worst first within a group, then by name. */
void rm_report_order(struct rm_report_run *runs, size_t n);

/* A self-contained HTML report (inline SVG, an inline script allowed by
 * its hash, no external assets); every user-controlled string is escaped. */
void rm_render_report_html(FILE *fp, const struct rm_report *r);
/* The same as Markdown, sized for a chat or e-mail digest: what changed,
 * the overview, and details of the runs that need attention or changed. */
void rm_render_report_md(FILE *fp, const struct rm_report *r);
/* {"schema": RM_REPORT_SCHEMA, "generated", "summary", "changes",
 * "overview", "runs": [diagnosis...]}; "overview" is what --baseline reads. */
json_t *rm_render_report_json(const struct rm_report *r);

/* ---- runmon compare (render_compare.c) ------------------------------------ */
struct rm_compare_side {
	const char *name; /* the run as the user named it (with "steps < N" for compare --at) */
	const struct rm_diagnosis *d;
};
/* Two diagnoses side by side, what changed cause by cause, the price. */
/* width: the terminal's columns; a table wider than it is written a row
 * to a block (0: unlimited). */
void rm_render_compare_text(FILE *fp, const struct rm_compare_side s[2], const struct rm_comparison *c, int width);
/* The same as JSON, schema runmon.compare/1. */
json_t *rm_render_compare_json(const struct rm_compare_side s[2], const struct rm_comparison *c);
/* The comparison's table as text cells, for the text, HTML and Markdown. */
#define RM_COMPARE_ROWS 40
struct rm_compare_rows {
	int n;
	struct rm_compare_row {
		char label[80];
		char cell[2][320];
		char change[64];  /* how it changed: "+5.6%", "-2.1 points", "resolved"; empty when nothing to say */
		int worse;        /* the change is for the worse */
		int better;       /* for the better, by the same yardstick (the report colours both) */
		const char *term; /* its glossary id (rm_term_find), or NULL */
	} row[RM_COMPARE_ROWS];
	char price[200];   /* "padding efficiency a% -> b%, ...", or empty when unknown */
	char summary[768]; /* rm_compare_summary */
};
void rm_compare_rows(const struct rm_compare_side s[2], const struct rm_comparison *c, struct rm_compare_rows *r);
/* The report's comparison section (nothing without r->compare), left
 * open for the overlay charts that follow it. */
void rm_compare_html(FILE *fp, const struct rm_report *r);
void rm_compare_md(FILE *fp, const struct rm_report *r);
/* "worse: ..." or "no worse: ...": the causes that changed, worse first. */
void rm_compare_summary(const struct rm_comparison *c, char *buf, size_t n);

/* ==== terms ================================================================= */
/* The glossary (terms.c): each statistic shown, in one plain line. */
struct rm_term {
	const char *id;        /* the anchor: docs/terms.md#ID, the report's #term-ID */
	const char *name;      /* as outputs show it */
	const char *what;      /* what it measures */
	const char *bad;       /* which way is bad */
	const char *threshold; /* the threshold runmon uses */
};
extern const struct rm_term rm_terms[];
extern const size_t rm_nterms;
const struct rm_term *rm_term_find(const char *id);
/* `runmon help terms` and docs/terms.md (`--markdown`). */
void rm_terms_text(FILE *fp);
void rm_terms_md(FILE *fp);
/* " title='...'" for an HTML element: term id's line; nothing when unknown. */
void rm_term_title(FILE *fp, const char *id);
/* The report's glossary section. */
void rm_terms_html(FILE *fp);

#endif
