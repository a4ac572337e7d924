/*
 * report_internal.h - what the report's two files share: escaping, words
 * and times (render_report.c), and the report's head, meaning the summary
 * line, what changed and the overview (report_head.c).
 */
#ifndef RUNMON_REPORT_INTERNAL_H
#define RUNMON_REPORT_INTERNAL_H

#include <jansson.h>
#include <stdio.h>

#include "runmon/render.h"

/* Text for HTML element content and attribute values. */
void rm_html_esc(FILE *fp, const char *s);
/* A finite number as JSON, else null (the schemas' unknown). */
json_t *rm_json_num(double v);
/* Text for Markdown: a backslash before characters that mean something. */
void rm_md_esc(FILE *fp, const char *s);
/* The verdict's word (rm_verdict_word), also the CSS class that colours it. */
const char *rm_report_level(enum rm_severity s);
void rm_iso_time(double t, char *buf, size_t n);

/* The price of the fix in one sentence: today's measured padding efficiency,
 * which interleaving keeps, and how re-packing the run's lengths with fitted
 * boundaries or fully at random would move it, in points (differences on
 * the re-pack's own scale, so today's figure is the measured one only). */
void rm_price_words(const struct rm_padding_result *c, char *buf, size_t n);

/* The summary line, what changed and the overview grouped by project. */
void rm_report_head_html(FILE *fp, const struct rm_report *r);
void rm_report_head_md(FILE *fp, const struct rm_report *r);
/* Under run i's verdict: how it changed since the baseline, if it did. */
void rm_report_change_html(FILE *fp, const struct rm_report *r, size_t i);
/* "summary", "changes" and "overview" into doc. */
void rm_report_head_json(json_t *doc, const struct rm_report *r);
/* Whether the Markdown digest details the run: it needs attention or
 * changed since the baseline. */
int rm_report_md_details(const struct rm_report_run *run);

/* Run `run`'s charts (its index in the report names their clip paths),
 * and the overlay of n runs (report --compare). */
void rm_report_charts_html(FILE *fp, const struct rm_diagnosis *d, size_t run);
void rm_report_overlay_html(FILE *fp, const struct rm_compare_side *s, int n);

/* The CSP meta element and the inline style (in <head>), and the inline
 * script (at the end of <body>) that makes the charts explorable. */
void rm_report_html_head(FILE *fp);
void rm_report_html_script(FILE *fp);

#endif
