/*
 * report_head.c - what a report opens with: a summary line, what changed
 * since the baseline report, and the overview of runs grouped by
 * entity/project, worst first, each with a sparkline of its adjusted loss.
 * In HTML, Markdown (a digest for chat or e-mail) and JSON.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* ---- Order and words ------------------------------------------------------ */

/* A run name too long for its column may break anywhere; other words
 * break only between them (a column squeezed to its narrowest would split
 * "severity" otherwise). */
static const char *long_name(const char *name)
{
	return strlen(name) > 24 ? " class='long'" : "";
}

static void group_name(const struct rm_run_info *r, char *buf, size_t n)
{
	if (r->entity && *r->entity)
		snprintf(buf, n, "%s/%s", r->entity, r->project ? r->project : "");
	else
		snprintf(buf, n, "local runs");
}

struct keyed {
	struct rm_report_run run;
	char group[256], name[512];
	enum rm_severity worst; /* of the group */
};

static int by_overview(const void *pa, const void *pb)
{
	const struct keyed *a = pa, *b = pb;
	int c;
	if (a->worst != b->worst)
		return a->worst > b->worst ? -1 : 1;
	if ((c = strcmp(a->group, b->group)))
		return c;
	if (a->run.d->severity != b->run.d->severity)
		return a->run.d->severity > b->run.d->severity ? -1 : 1;
	return strcmp(a->name, b->name);
}

void rm_report_order(struct rm_report_run *runs, size_t n)
{
	struct keyed *k = rm_xcalloc(n + 1, sizeof(*k));
	for (size_t i = 0; i < n; i++) {
		k[i].run = runs[i];
		group_name(runs[i].info, k[i].group, sizeof(k[i].group));
		rm_report_run_name(runs[i].info, k[i].name, sizeof(k[i].name));
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (!strcmp(k[i].group, k[j].group) && runs[j].d->severity > k[i].worst)
				k[i].worst = runs[j].d->severity;
	qsort(k, n, sizeof(*k), by_overview);
	for (size_t i = 0; i < n; i++)
		runs[i] = k[i].run;
	free(k);
}

static size_t attention(const struct rm_report *r)
{
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++)
		k += r->runs[i].d->severity >= RM_SEV_WARN;
	return k;
}

/* "since the report of 2026-12-01T06:00:00Z" into buf. */
static void since_words(const struct rm_changes *c, char *buf, size_t n)
{
	char when[32];
	rm_iso_time(c->baseline_at, when, sizeof(when));
	if (c->file)
		snprintf(buf, n, "since %s (generated %s)", c->file, when);
	else
		snprintf(buf, n, "since the report of %s", when);
}

/* "3 of 41 runs need attention; since the report of ...: 1 new, 2 resolved." */
static void summary(const struct rm_report *r, char *buf, size_t n)
{
	size_t k = attention(r), used;
	used = (size_t)snprintf(buf, n, "%zu of %zu run%s need%s attention", k, r->n, r->n == 1 ? "" : "s",
	                        k == 1 ? "s" : "");
	const struct rm_changes *c = r->changes;
	if (!c || used >= n)
		goto end;
	if (!c->baseline) {
		snprintf(buf + used, n - used, "; no earlier report to compare with.");
		return;
	}
	char since[600];
	since_words(c, since, sizeof(since));
	if (c->count[RM_CH_UNCHANGED] == c->n) {
		snprintf(buf + used, n - used, "; nothing changed %s.", since);
		return;
	}
	used += (size_t)snprintf(buf + used, n - used, "; %s:", since);
	const char *sep = " ";
	for (int kind = 0; kind < RM_CH_COUNT && used < n; kind++)
		if (c->count[kind]) {
			used += (size_t)snprintf(buf + used, n - used, "%s%zu %s", sep, c->count[kind],
			                         rm_change_name((enum rm_change)kind));
			sep = ", ";
		}
end:
	if (used < n)
		snprintf(buf + used, n - used, ".");
}

/* "risen: warn → critical" */
static void change_words(const struct rm_run_change *c, char *buf, size_t n)
{
	if (!c)
		snprintf(buf, n, "-");
	else if (c->kind == RM_CH_RISEN || c->kind == RM_CH_FALLEN || c->kind == RM_CH_RESOLVED)
		snprintf(buf, n, "%s: %s \xe2\x86\x92 %s", rm_change_name(c->kind), rm_report_level(c->was->severity),
		         rm_report_level(c->now->severity));
	else if (c->kind == RM_CH_CHANGED && strcmp(c->now->verdict, c->was->verdict))
		snprintf(buf, n, "changed: was %s", c->was->verdict);
	else
		snprintf(buf, n, "%s", rm_change_name(c->kind));
}

/* A stored detector's name as the text and the glossary say it. */
static const char *detector_words(const char *id)
{
	static const char *const names[][2] = {
	    {"same_bucket_runs", "same-bucket streaks"},
	    {"loss_split", "loss split by bucket"},
	    {"loss_levels", "loss levels"},
	    {"resets_by_bucket", "loss resets by bucket"},
	    {"resets_at_checkpoints", "resets at saves"},
	    {"resets_periodic", "periodic resets"},
	    {"fixed_order", "a fixed data order"},
	    {"batch_mixture", "batch mixture"},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(id, names[i][0]))
			return names[i][1];
	return id;
}

/* "same-bucket streaks (warn) from step 1200" */
static void finding_words(const struct rm_seen_finding *f, char *buf, size_t n)
{
	size_t used = (size_t)snprintf(buf, n, "%s", detector_words(f->detector));
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = ' ';
	if (used < n)
		used += (size_t)snprintf(buf + used, n - used, " (%s)", rm_severity_name(f->severity));
	if (used < n && f->first_step >= 0)
		snprintf(buf + used, n - used, " from step %lld", (long long)f->first_step);
}

typedef void (*escape_fn)(FILE *fp, const char *s);

/* The findings listed by idx[0..k) of f, joined by "; ". */
static void finding_list(FILE *fp, const struct rm_seen_finding *f, const size_t *idx, size_t k, escape_fn esc)
{
	char w[96];
	for (size_t i = 0; i < k; i++) {
		finding_words(&f[idx[i]], w, sizeof(w));
		fputs(i ? "; " : "", fp);
		esc(fp, w);
	}
}

/* The curve a sparkline draws: the bucket-adjusted loss, or the loss
 * where the run has no adjusted curve. */
static const double *spark_curve(const struct rm_diagnosis *d, double *lo, double *hi)
{
	const double *v = d->curves.adjusted;
	int any = 0;
	*lo = INFINITY;
	*hi = -INFINITY;
	if (!d->points) /* no loss: no curve (its bins are not filled) */
		return v;
	for (int i = 0; i < d->curves.bins; i++)
		any |= isfinite(v[i]);
	if (!any)
		v = d->curves.loss;
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int i = 0; i < d->curves.bins; i++)
		if (isfinite(v[i])) {
			*lo = fmin(*lo, v[i]);
			*hi = fmax(*hi, v[i]);
		}
	return v;
}

/* Where v falls between lo and hi, in [0, 1]. Finite values near DBL_MAX
 * overflow to NaN in the arithmetic: clamped. */
static double spark_frac(double v, double lo, double hi)
{
	double f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
	return f >= 0 ? fmin(f, 1) : 0;
}

/* ---- HTML ----------------------------------------------------------------- */

static void sparkline_svg(FILE *fp, const struct rm_diagnosis *d)
{
	double lo, hi;
	const double *v = spark_curve(d, &lo, &hi);
	if (!(hi >= lo)) {
		fputs("-", fp);
		return;
	}
	double first = NAN, last = NAN;
	fputs("<svg class='spark' width='120' height='24' viewBox='0 0 120 24' role='img'>", fp);
	fputs("<polyline fill='none' stroke='#000' stroke-width='1.2' points='", fp);
	for (int i = 0; i < d->curves.bins; i++) {
		if (!isfinite(v[i]))
			continue;
		first = isnan(first) ? v[i] : first;
		last = v[i];
		double x = 2 + 116.0 * (d->curves.bins > 1 ? (double)i / (d->curves.bins - 1) : 0.5);
		double y = 2 + 20.0 * (1 - spark_frac(v[i], lo, hi));
		fprintf(fp, "%.1f,%.1f ", x, y);
	}
	fprintf(fp, "'/><title>adjusted loss %.3g to %.3g (range %.3g to %.3g)</title></svg>", first, last, lo, hi);
}

static void changes_html(FILE *fp, const struct rm_report *r)
{
	const struct rm_changes *c = r->changes;
	char since[600], w[640], name[512];
	if (!c || !c->baseline)
		return;
	since_words(c, since, sizeof(since));
	fputs("<h2 id='changes'>What changed ", fp);
	rm_html_esc(fp, since);
	fputs("</h2>\n", fp);
	if (c->count[RM_CH_UNCHANGED] == c->n) {
		fputs("<p>Nothing changed.</p>\n", fp);
		return;
	}
	fputs("<table class='changes'><tr><th>run</th><th>change</th><th>now</th><th>findings that appeared</th>"
	      "<th>findings resolved</th></tr>\n",
	      fp);
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_run_change *ch = r->runs[i].change;
		if (!ch || ch->kind == RM_CH_UNCHANGED)
			continue;
		rm_report_run_name(r->runs[i].info, name, sizeof(name));
		fprintf(fp, "<tr class='change-%s'><td><a href='#run-%zu'%s>", rm_change_name(ch->kind), i,
		        long_name(name));
		rm_html_esc(fp, name);
		change_words(ch, w, sizeof(w));
		fputs("</a></td><td>", fp);
		rm_html_esc(fp, w);
		fprintf(fp, "</td><td class='%s'>%s: ", rm_report_level(ch->now->severity),
		        rm_report_level(ch->now->severity));
		rm_html_esc(fp, ch->now->verdict);
		fputs("</td><td>", fp);
		finding_list(fp, ch->now->f, ch->appeared, ch->nappeared, rm_html_esc);
		fputs("</td><td>", fp);
		if (ch->was)
			finding_list(fp, ch->was->f, ch->gone, ch->ngone, rm_html_esc);
		fputs("</td></tr>\n", fp);
	}
	fputs("</table>\n", fp);
	if (c->count[RM_CH_UNCHANGED])
		fprintf(fp, "<p>%zu run%s unchanged.</p>\n", c->count[RM_CH_UNCHANGED],
		        c->count[RM_CH_UNCHANGED] == 1 ? "" : "s");
}

void rm_report_change_html(FILE *fp, const struct rm_report *r, size_t i)
{
	const struct rm_run_change *ch = r->runs[i].change;
	char since[600], w[640];
	if (!ch || !r->changes->baseline || ch->kind == RM_CH_UNCHANGED)
		return;
	since_words(r->changes, since, sizeof(since));
	change_words(ch, w, sizeof(w));
	fprintf(fp, "<p class='change change-%s'><b>", rm_change_name(ch->kind));
	rm_html_esc(fp, w);
	fputs("</b> ", fp);
	rm_html_esc(fp, since);
	if (ch->nappeared) {
		fputs("; appeared: ", fp);
		finding_list(fp, ch->now->f, ch->appeared, ch->nappeared, rm_html_esc);
	}
	if (ch->ngone) {
		fputs("; resolved: ", fp);
		finding_list(fp, ch->was->f, ch->gone, ch->ngone, rm_html_esc);
	}
	fputs("</p>\n", fp);
}

void rm_report_head_html(FILE *fp, const struct rm_report *r)
{
	char line[1024], group[256], prev[256] = "", name[512];
	summary(r, line, sizeof(line));
	fputs("<p class='summary'>", fp);
	rm_html_esc(fp, line);
	fputs("</p>\n", fp);
	changes_html(fp, r);
	fputs("<h2 id='overview'>Overview</h2>\n", fp);
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_report_run *run = &r->runs[i];
		const struct rm_diagnosis *d = run->d;
		group_name(run->info, group, sizeof(group));
		if (!i || strcmp(group, prev)) {
			if (i)
				fputs("</table>\n", fp);
			fputs("<h3 class='group'>", fp);
			rm_html_esc(fp, group);
			fputs("</h3>\n<table class='overview'><tr><th>run</th><th>verdict</th><th>severity</th>"
			      "<th>change</th><th>adjusted loss</th><th>last step</th>"
			      "<th>steps with batch composition</th></tr>\n",
			      fp);
			snprintf(prev, sizeof(prev), "%s", group);
		}
		rm_report_run_name(run->info, name, sizeof(name));
		fprintf(fp, "<tr><td><a href='#run-%zu'%s>", i, long_name(name));
		rm_html_esc(fp, name);
		fputs("</a></td><td>", fp);
		rm_html_esc(fp, rm_verdict_name(d));
		change_words(run->change, line, sizeof(line));
		fprintf(fp, "</td><td class='%s'>%s</td><td>", rm_report_level(d->severity),
		        rm_report_level(d->severity));
		rm_html_esc(fp, line);
		fputs("</td><td>", fp);
		sparkline_svg(fp, d);
		if (d->points)
			fprintf(fp, "</td><td>%lld", (long long)run->info->last_step);
		else
			fputs("</td><td>-", fp); /* no loss step logged */
		fprintf(fp, "</td><td>%.0f%%</td></tr>\n", 100 * rm_run_batch_share(run->info));
	}
	if (r->n)
		fputs("</table>\n", fp);
}

/* ---- Markdown ------------------------------------------------------------- */

/* Unicode blocks, one per two bins: a sparkline a chat client shows. */
static void sparkline_md(FILE *fp, const struct rm_diagnosis *d)
{
	static const char *const blocks[] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
	                                     "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};
	double lo, hi;
	const double *v = spark_curve(d, &lo, &hi);
	if (!(hi >= lo)) {
		fputs("-", fp);
		return;
	}
	for (int i = 0; i < d->curves.bins; i += 2) {
		double s = 0;
		int k = 0;
		for (int j = i; j < i + 2 && j < d->curves.bins; j++)
			if (isfinite(v[j])) {
				s += v[j];
				k++;
			}
		if (!k) {
			fputs(" ", fp);
			continue;
		}
		fputs(blocks[(int)(7.999 * spark_frac(s / k, lo, hi))], fp);
	}
}

int rm_report_md_details(const struct rm_report_run *run)
{
	return run->d->severity >= RM_SEV_WARN || !run->change || run->change->kind != RM_CH_UNCHANGED;
}

void rm_report_head_md(FILE *fp, const struct rm_report *r)
{
	char line[1024], group[256], prev[256] = "", name[512], w[640];
	const struct rm_changes *c = r->changes;
	summary(r, line, sizeof(line));
	fputs("**", fp);
	rm_md_esc(fp, line);
	fputs("**\n", fp);
	if (c && c->baseline && c->count[RM_CH_UNCHANGED] < c->n) {
		since_words(c, line, sizeof(line));
		fputs("\n## What changed ", fp);
		rm_md_esc(fp, line);
		fputs("\n\n", fp);
		for (size_t i = 0; i < r->n; i++) {
			const struct rm_run_change *ch = r->runs[i].change;
			if (!ch || ch->kind == RM_CH_UNCHANGED)
				continue;
			rm_report_run_name(r->runs[i].info, name, sizeof(name));
			change_words(ch, w, sizeof(w));
			fputs("- **", fp);
			rm_md_esc(fp, w);
			fputs("** ", fp);
			rm_md_esc(fp, name);
			fprintf(fp, ": %s, ", rm_report_level(ch->now->severity));
			rm_md_esc(fp, ch->now->verdict);
			if (ch->nappeared) {
				fputs("; appeared: ", fp);
				finding_list(fp, ch->now->f, ch->appeared, ch->nappeared, rm_md_esc);
			}
			if (ch->ngone) {
				fputs("; resolved: ", fp);
				finding_list(fp, ch->was->f, ch->gone, ch->ngone, rm_md_esc);
			}
			fputc('\n', fp);
		}
		if (c->count[RM_CH_UNCHANGED])
			fprintf(fp, "- %zu run%s unchanged\n", c->count[RM_CH_UNCHANGED],
			        c->count[RM_CH_UNCHANGED] == 1 ? "" : "s");
	}
	fputs("\n## Overview\n", fp);
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_report_run *run = &r->runs[i];
		const struct rm_diagnosis *d = run->d;
		group_name(run->info, group, sizeof(group));
		if (!i || strcmp(group, prev)) {
			fputs("\n### ", fp);
			rm_md_esc(fp, group);
			fputs("\n\n| run | verdict | severity | change | adjusted loss | last step |\n"
			      "|---|---|---|---|---|---|\n",
			      fp);
			snprintf(prev, sizeof(prev), "%s", group);
		}
		rm_report_run_name(run->info, name, sizeof(name));
		change_words(run->change, w, sizeof(w));
		fputs("| ", fp);
		rm_md_esc(fp, name);
		fputs(" | ", fp);
		rm_md_esc(fp, rm_verdict_name(d));
		fprintf(fp, " | %s | ", rm_report_level(d->severity));
		rm_md_esc(fp, w);
		fputs(" | ", fp);
		sparkline_md(fp, d);
		if (d->points)
			fprintf(fp, " | %lld |\n", (long long)run->info->last_step);
		else
			fputs(" | - |\n", fp); /* no loss step logged */
	}
}

/* ---- JSON ----------------------------------------------------------------- */

static json_t *findings_json(const struct rm_seen_finding *f, const size_t *idx, size_t k)
{
	json_t *a = json_array();
	for (size_t i = 0; i < k; i++) {
		const struct rm_seen_finding *x = &f[idx ? idx[i] : i];
		json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "detector", x->detector, "severity",
		                                   rm_severity_name(x->severity), "first_step",
		                                   x->first_step >= 0 ? json_integer(x->first_step) : json_null()));
	}
	return a;
}

static json_t *changes_json(const struct rm_report *r)
{
	const struct rm_changes *c = r->changes;
	char when[32];
	if (!c)
		return json_null();
	json_t *counts = json_object(), *runs = json_array();
	for (int k = 0; k < RM_CH_COUNT; k++)
		json_object_set_new(counts, rm_change_name((enum rm_change)k), json_integer((json_int_t)c->count[k]));
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_run_change *ch = r->runs[i].change;
		if (!ch || ch->kind == RM_CH_UNCHANGED)
			continue;
		json_t *was = ch->was ? json_pack("{s:s, s:s}", "severity", rm_severity_name(ch->was->severity),
		                                  "verdict", ch->was->verdict)
		                      : json_null();
		json_array_append_new(
		    runs, json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "run", ch->now->run, "change",
		                    rm_change_name(ch->kind), "severity", rm_severity_name(ch->now->severity),
		                    "verdict", ch->now->verdict, "was", was, "appeared",
		                    findings_json(ch->now->f, ch->appeared, ch->nappeared), "resolved",
		                    ch->was ? findings_json(ch->was->f, ch->gone, ch->ngone) : json_array()));
	}
	rm_iso_time(c->baseline_at, when, sizeof(when));
	json_t *base = c->baseline ? json_pack("{s:s, s:s?}", "generated", when, "file", c->file) : json_null();
	return json_pack("{s:o, s:o, s:o}", "baseline", base, "counts", counts, "runs", runs);
}

void rm_report_head_json(json_t *doc, const struct rm_report *r)
{
	char line[1024], group[256];
	summary(r, line, sizeof(line));
	json_object_set_new(doc, "summary",
	                    json_pack("{s:I, s:I, s:s}", "runs", (json_int_t)r->n, "attention",
	                              (json_int_t)attention(r), "text", line));
	json_object_set_new(doc, "changes", changes_json(r));
	json_t *ov = json_array();
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_report_run *run = &r->runs[i];
		struct rm_seen own = {0};
		const struct rm_seen_run *sr = run->change ? run->change->now : NULL;
		if (!sr) {
			char name[512];
			rm_report_run_name(run->info, name, sizeof(name));
			rm_seen_add(&own, name, run->d);
			sr = &own.runs[0];
		}
		group_name(run->info, group, sizeof(group));
		json_array_append_new(
		    ov, json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "run", sr->run, "group", group, "severity",
		                  rm_severity_name(sr->severity), "verdict", sr->verdict, "last_step",
		                  sr->last_step >= 0 ? json_integer(sr->last_step) : json_null(), "change",
		                  run->change ? json_string(rm_change_name(run->change->kind)) : json_null(),
		                  "findings", findings_json(sr->f, NULL, sr->nf)));
		rm_seen_release(&own);
	}
	json_object_set_new(doc, "overview", ov);
}
