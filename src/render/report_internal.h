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
/* Text for Markdown: a backslash before characters that mean something. */
void rm_md_esc(FILE *fp, const char *s);
/* "ok" below warn, else the severity's name. */
const char *rm_report_level(enum rm_severity s);
void rm_iso_time(double t, char *buf, size_t n);

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

#endif
