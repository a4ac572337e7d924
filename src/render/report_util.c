/*
 * report_util.c - what the report's files share: escaping for HTML and
 * Markdown, times, levels and names as a reader sees them. See
 * report_internal.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "report_internal.h"
#include "runmon/common.h"
#include "runmon/render.h"

/* Text for HTML element content and attribute values. */
void rm_html_esc(FILE *fp, const char *s)
{
	for (s = s ? rm_tx(s) : s; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", fp); break;
		case '<': fputs("&lt;", fp); break;
		case '>': fputs("&gt;", fp); break;
		case '"': fputs("&quot;", fp); break;
		case '\'': fputs("&#39;", fp); break;
		default: fputc(*s, fp);
		}
	}
}

/* Text for Markdown: a backslash before characters that mean something;
 * control characters escaped first (a report is also read in a terminal). */
void rm_md_esc(FILE *fp, const char *s)
{
	for (s = s ? rm_tx(s) : s; s && *s; s++) {
		if (strchr("\\`*_[]<>|", *s))
			fputc('\\', fp);
		fputc(*s == '\n' ? ' ' : *s, fp);
	}
}

void rm_report_run_name(const struct rm_run_info *r, char *buf, size_t n)
{
	if (r->entity && *r->entity)
		snprintf(buf, n, "%s/%s/%s", r->entity, r->project, r->name);
	else
		snprintf(buf, n, "%s", r->name);
}

/* Every figure beside the measured efficiency is the re-packed one the
 * table shows, and every move is from the measured figure (issue 66.2). */
void rm_price_words(const struct rm_padding_result *c, char *buf, size_t n)
{
	const double *e = c->strategy_eff;
	double now = 100 * c->efficiency, random = 100 * e[RM_PACK_RANDOM], fitted = 100 * e[RM_PACK_FITTED];
	int w =
	    snprintf(buf, n,
	             "interleaving keeps today's batches and their measured padding efficiency (%.1f%%); re-packing "
	             "this run's lengths, fully random batches would give %.1f%% (%+.1f points)",
	             now, random, random - now);
	if (w < 0 || (size_t)w >= n || !isfinite(fitted))
		return;
	if (c->fit_kept_own)
		snprintf(buf + w, n - (size_t)w, "; no fitted boundaries pad less than the run's own");
	else
		snprintf(buf + w, n - (size_t)w, " and fitted boundaries %.1f%% (%+.1f points)", fitted, fitted - now);
}

const char *rm_report_level(enum rm_severity s)
{
	return rm_verdict_word(s);
}

void rm_iso_time(double t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

const char *rm_verdict_name(const struct rm_diagnosis *d)
{
	if (!d->points) /* batches recorded, no loss yet: nothing judged */
		return d->batches ? "batches, no loss logged" : "nothing logged";
	if (rm_diagnosis_too_short(d) && d->severity < RM_SEV_WARN)
		return "too few points to judge";
	if (d->join.none && d->rank[0].severity < RM_SEV_WARN)
		return "batches meet no loss step";
	if (d->severity >= RM_SEV_WARN && d->suspected && d->rank[0].h == RM_H_HOMOGENEOUS)
		return "suspected homogeneous batching"; /* judged from the loss alone: said so everywhere */
	return d->severity >= RM_SEV_WARN ? rm_hypothesis_name(d->rank[0].h) : "healthy";
}

json_t *rm_json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}
