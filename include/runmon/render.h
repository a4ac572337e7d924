/*
 * render.h - turns a diagnosis into words, a terminal report, JSON and
 * finding rows. Renderers read results only; they compute no statistics.
 */
#ifndef RUNMON_RENDER_H
#define RUNMON_RENDER_H

#include <jansson.h>
#include <stdio.h>

#include "runmon/changes.h"
#include "runmon/detect.h"
#include "runmon/store.h"

#define RM_DIAGNOSIS_SCHEMA "runmon.diagnosis/3"

struct rm_render_ctx {
	const struct rm_run_info *run;
	int64_t since;       /* first step diagnosed (0: all) */
	int color;           /* ANSI colour in text output */
	const char *run_url; /* W&B run page, or NULL */
};

/* One sentence naming the verdict and its main numbers, into buf. */
void rm_explain_verdict(const struct rm_diagnosis *d, char *buf, size_t n);
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
struct rm_report {
	const struct rm_report_run *runs;
	size_t n;
	double generated;
	const struct rm_changes *changes;
};

#define RM_REPORT_SCHEMA "runmon.report/1"

/* The verdict in a word: the top hypothesis when it is an alarm, else
 * "healthy". */
const char *rm_verdict_name(const struct rm_diagnosis *d);
/* The run's name in reports: entity/project/name, or the local name. */
void rm_report_run_name(const struct rm_run_info *r, char *buf, size_t n);
/* Orders runs as the overview shows them: by entity/project, the group
 * with the worst run first, then worst first within a group, then by name. */
void rm_report_order(struct rm_report_run *runs, size_t n);

/* A self-contained HTML report (inline SVG, no scripts, no external
 * assets); every user-controlled string is escaped. */
void rm_render_report_html(FILE *fp, const struct rm_report *r);
/* The same as Markdown, sized for a chat or e-mail digest: what changed,
 * the overview, and details of the runs that need attention or changed. */
void rm_render_report_md(FILE *fp, const struct rm_report *r);
/* {"schema": RM_REPORT_SCHEMA, "generated", "summary", "changes",
 * "overview", "runs": [diagnosis...]}; "overview" is what --baseline reads. */
json_t *rm_render_report_json(const struct rm_report *r);

#endif
