/*
 * render.h - turns a diagnosis into words, a terminal report, JSON and
 * finding rows. Renderers read results only; they compute no statistics.
 */
#ifndef RUNMON_RENDER_H
#define RUNMON_RENDER_H

#include <jansson.h>
#include <stdio.h>

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
	const char *url; /* W&B run page or NULL */
};

#define RM_REPORT_SCHEMA "runmon.report/1"

/* A self-contained HTML report (inline SVG, no scripts, no external
 * assets); every user-controlled string is escaped. generated is unix
 * seconds. */
void rm_render_report_html(FILE *fp, const struct rm_report_run *runs, size_t n, double generated);
/* The same as Markdown for chat or a pull request. */
void rm_render_report_md(FILE *fp, const struct rm_report_run *runs, size_t n, double generated);
/* {"schema": RM_REPORT_SCHEMA, "generated": ..., "runs": [diagnosis...]}. */
json_t *rm_render_report_json(const struct rm_report_run *runs, size_t n, double generated);

#endif
