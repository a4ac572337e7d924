/*
 * render_compare.c - `runmon compare` as text and as JSON (schema
 * runmon.compare/1, docs/decisions.md): two diagnoses side by side, what
 * changed cause by cause, and the price of the change in padding and
 * throughput.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/render.h"
#include "report_internal.h"

#define CELL 30

/* A row of the table; run names and bucket labels are stored text: their
 * escapes are shown, never sent to the terminal. */
static void row(FILE *fp, const char *label, const char *a, const char *b, const char *change)
{
	fprintf(fp, "  %-30s %-*s %-*s %s\n", rm_tx(label), CELL, rm_tx(a), CELL, rm_tx(b), change);
}

/* The change from a to b: relative (percent) or in units, "" when unknown. */
static void change_of(char *buf, size_t n, double a, double b, int relative, int prec, const char *unit)
{
	buf[0] = 0;
	if (!isfinite(a) || !isfinite(b) || (relative && a == 0))
		return;
	if (relative)
		snprintf(buf, n, "%+.1f%%", 100 * (b / a - 1));
	else
		snprintf(buf, n, "%+.*f%s", prec, b - a, unit);
}

static void cell_runs(char *buf, size_t n, const struct rm_diagnosis *d)
{
	if (!d->runs.ok)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.0f vs %.0f random (z %+.1f)", d->runs.runs, d->runs.expected, d->runs.z);
}

static void cell_split(char *buf, size_t n, const struct rm_diagnosis *d)
{
	if (!d->split.ok)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%s %.2f, %d mode%s%s", d->split.mixed ? "R^2" : "eta^2", d->split.eta2,
		         d->split.modes, d->split.modes == 1 ? "" : "s",
		         d->split.trimodal && d->severity >= RM_SEV_WARN ? ", trimodal" : "");
}

static void cell_ladders(char *buf, size_t n, const struct rm_diagnosis *d)
{
	if (!d->ladder.ok)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%zu vs %.1f shuffled (p %.2f)", d->ladder.count, d->ladder.perm_mean, d->ladder.p);
}

static void cell_resets(char *buf, size_t n, const struct rm_diagnosis *d)
{
	snprintf(buf, n, "%zu%s", d->resets.spikes, d->resets.cluster_by_bucket ? ", clustered by bucket" : "");
}

/* v with prec decimals, a sign when signed, then suffix; "-" unknown. */
static void cell_number(char *buf, size_t n, double v, int prec, int sign, const char *suffix)
{
	if (isfinite(v))
		snprintf(buf, n, sign ? "%+.*f%s" : "%.*f%s", prec, v, suffix);
	else
		snprintf(buf, n, "-");
}

/* The split's level of the bucket labelled label, NaN when d has none. */
static double level_of(const struct rm_diagnosis *d, const char *label)
{
	for (int i = 0; d->split.ok && i < d->split.k; i++)
		if (!strcmp(rm_bucket_label(d, d->split.bucket[i]), label))
			return d->split.level[i];
	return NAN;
}

/* The bucket labels of both splits, in order of first appearance. */
static int level_labels(const struct rm_compare_side s[2], const char *out[2 * RM_MAX_BUCKETS])
{
	int n = 0;
	for (int i = 0; i < 2; i++)
		for (int b = 0; s[i].d->split.ok && b < s[i].d->split.k; b++) {
			const char *l = rm_bucket_label(s[i].d, s[i].d->split.bucket[b]);
			int seen = 0;
			for (int j = 0; j < n && !seen; j++)
				seen = !strcmp(out[j], l);
			if (!seen)
				out[n++] = l;
		}
	return n;
}

static double tps(const struct rm_diagnosis *d)
{
	return d->cost.ok ? d->cost.tokens_per_s : NAN;
}

static double efficiency(const struct rm_diagnosis *d)
{
	return d->cost.ok ? 100 * d->cost.efficiency : NAN;
}

/* Appends to buf at *used, as snprintf would, never past n. */
static void put(char *buf, size_t n, size_t *used, const char *fmt, ...) RM_PRINTF(4, 5);
static void put(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
	if (*used >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *used, n - *used, fmt, ap);
	va_end(ap);
	*used += w > 0 ? (size_t)w : 0;
}

/* The one line that sums the comparison up: the outcome, then what got
 * worse, what got better, and the price. */
void rm_compare_summary(const struct rm_comparison *c, char *buf, size_t n)
{
	size_t used = 0;
	const char *sep = "";
	put(buf, n, &used, "%s: ", rm_outcome_name(c->outcome));
	for (int pass = 0; pass < 2; pass++) /* what got worse first, then what got better */
		for (int h = 0; h < RM_H_COUNT; h++) {
			const struct rm_hypothesis_change *x = &c->hyp[h];
			int bad = x->change == RM_DELTA_NEW || x->change == RM_DELTA_WORSE;
			if (x->change == RM_DELTA_UNCHANGED || bad != (pass == 0))
				continue;
			put(buf, n, &used, "%s%s %s", sep, rm_hypothesis_name(x->h), rm_delta_name(x->change));
			sep = ", ";
		}
	if (c->adjusted_worse) {
		put(buf, n, &used,
		    "%sthe adjusted loss rose %.1f%% (+-%.1f%% over %d segments of the common steps; --max-loss %g%%)",
		    sep, 100 * c->adjusted_change, 100 * c->adjusted_se, c->segments, 100 * c->tol.max_loss);
		sep = ", ";
	} else if (c->resolved && c->common && !c->adjusted_judged && isfinite(c->adjusted_change)) {
		put(buf, n, &used,
		    "%sthe adjusted loss moved %+.1f%%, not judged: one run's buckets come in streaks, "
		    "which the trend confounds",
		    sep, 100 * c->adjusted_change);
		sep = ", ";
	}
	if (c->untested) {
		int side = c->untested & 2 ? 1 : 0;
		put(buf, n, &used, "%s%s has %zu loss point%s, the detectors need 50: its causes are not tested", sep,
		    side ? "AFTER" : "BEFORE", c->finite[side], c->finite[side] == 1 ? "" : "s");
		sep = ", ";
	}
	if (!*sep)
		put(buf, n, &used, "every cause at the level it was (verdict %s)", rm_verdict_word(c->after));
	if (c->cost_worse) {
		put(buf, n, &used, "; the price:");
		if (c->efficiency_worse)
			put(buf, n, &used, " padding efficiency fell %.1f points (%.1f%% -> %.1f%%)",
			    -c->efficiency_change, c->efficiency[0], c->efficiency[1]);
		if (c->tokens_per_s_worse)
			put(buf, n, &used, "%s tokens per second fell %.0f%% (%.0f -> %.0f)",
			    c->efficiency_worse ? "," : "", -100 * c->tokens_per_s_change, c->tokens_per_s[0],
			    c->tokens_per_s[1]);
		put(buf, n, &used, ", beyond --max-cost %g", c->tol.max_cost);
	} else if (c->efficiency_better) {
		put(buf, n, &used, "; cheaper: padding efficiency rose %.1f points (%.1f%% -> %.1f%%)",
		    c->efficiency_change, c->efficiency[0], c->efficiency[1]);
	}
}

static struct rm_compare_row *add(struct rm_compare_rows *r, const char *label, const char *a, const char *b)
{
	static struct rm_compare_row spare;
	if (r->n == RM_COMPARE_ROWS)
		return &spare;
	struct rm_compare_row *x = &r->row[r->n++];
	snprintf(x->label, sizeof(x->label), "%s", label);
	snprintf(x->cell[0], sizeof(x->cell[0]), "%s", a);
	snprintf(x->cell[1], sizeof(x->cell[1]), "%s", b);
	x->change[0] = 0;
	x->worse = 0;
	x->better = 0;
	x->term = NULL;
	return x;
}

void rm_compare_rows(const struct rm_compare_side s[2], const struct rm_comparison *c, struct rm_compare_rows *r)
{
	const struct rm_diagnosis *x = s[0].d, *y = s[1].d;
	char a[160], b[160], label[80];
	r->n = 0;
	add(r, "run", s[0].name, s[1].name);
	snprintf(a, sizeof(a), "%lld..%lld", (long long)x->first_step, (long long)x->last_step);
	snprintf(b, sizeof(b), "%lld..%lld", (long long)y->first_step, (long long)y->last_step);
	add(r, "steps", a, b);
	if (x->nderived || y->nderived) { /* one bucketing for both, shown once */
		const struct rm_diagnosis *dv = x->nderived ? x : y;
		int w = 0;
		for (int i = 0; i < dv->nderived && w >= 0 && (size_t)w < sizeof(a); i++)
			w += snprintf(a + w, sizeof(a) - (size_t)w, "%s%lld", i ? "," : "",
			              (long long)dv->derived_bound[i]);
		add(r, "buckets derived from lengths", a, "the same");
	}
	struct rm_compare_row *w = add(r, "verdict", rm_verdict_word(x->severity), rm_verdict_word(y->severity));
	w->term = "severity";
	snprintf(w->change, sizeof(w->change), "%s", rm_delta_name(c->severity));
	w->worse = c->severity == RM_DELTA_NEW || c->severity == RM_DELTA_WORSE;
	w->better = c->severity == RM_DELTA_RESOLVED || c->severity == RM_DELTA_BETTER;
	cell_runs(a, sizeof(a), x);
	cell_runs(b, sizeof(b), y);
	w = add(r, "same-bucket streaks (z<0 long)", a, b);
	w->term = "streaks";
	if (x->runs.ok && y->runs.ok)
		snprintf(w->change, sizeof(w->change), "z %+.1f (%s)", y->runs.z - x->runs.z,
		         y->runs.z >= x->runs.z ? "streaks shorter" : "streaks longer");
	cell_split(a, sizeof(a), x);
	cell_split(b, sizeof(b), y);
	w = add(r, "loss split by bucket", a, b);
	w->term = "eta2";
	if (x->split.ok && y->split.ok && x->split.mixed == y->split.mixed)
		change_of(w->change, sizeof(w->change), x->split.eta2, y->split.eta2, 0, 2, "");
	else if (x->split.ok && y->split.ok) /* one R^2 on shares, one eta^2: not one yardstick */
		snprintf(w->change, sizeof(w->change), "not comparable (R^2 vs eta^2)");
	const char *labels[2 * RM_MAX_BUCKETS];
	int nl = level_labels(s, labels);
	int ratio = x->split.log_scale || y->split.log_scale; /* a ratio to the trend, else an offset */
	for (int i = 0; i < nl; i++) {
		snprintf(label, sizeof(label), "  level, bucket %.40s", labels[i]);
		cell_number(a, sizeof(a), level_of(x, labels[i]), 3, !ratio, ratio ? "x" : "");
		cell_number(b, sizeof(b), level_of(y, labels[i]), 3, !ratio, ratio ? "x" : "");
		w = add(r, label, a, b);
		change_of(w->change, sizeof(w->change), level_of(x, labels[i]), level_of(y, labels[i]), ratio, 3, "");
	}
	cell_ladders(a, sizeof(a), x);
	cell_ladders(b, sizeof(b), y);
	w = add(r, "ladders in the reported loss", a, b);
	w->term = "ladder";
	if (x->ladder.ok && y->ladder.ok)
		change_of(w->change, sizeof(w->change), (double)x->ladder.count, (double)y->ladder.count, 0, 0, "");
	cell_resets(a, sizeof(a), x);
	cell_resets(b, sizeof(b), y);
	w = add(r, "loss resets", a, b);
	w->term = "reset";
	change_of(w->change, sizeof(w->change), (double)x->resets.spikes, (double)y->resets.spikes, 0, 0, "");
	if (c->common) {
		snprintf(label, sizeof(label), "adjusted loss, steps %lld..%lld", (long long)c->common_first,
		         (long long)c->common_last);
		cell_number(a, sizeof(a), c->adjusted[0], 4, 0, "");
		cell_number(b, sizeof(b), c->adjusted[1], 4, 0, "");
		w = add(r, label, a, b);
		w->term = "adjusted";
		if (isfinite(c->adjusted_change))
			snprintf(w->change, sizeof(w->change), "%+.1f%% (+-%.1f)%s", 100 * c->adjusted_change,
			         100 * c->adjusted_se,
			         c->adjusted_worse     ? ", worse"
			         : !c->adjusted_judged ? ", not judged (streaks)"
			                               : "");
		else
			change_of(w->change, sizeof(w->change), c->adjusted[0], c->adjusted[1], 1, 0, "");
		w->worse = c->adjusted_worse;
		/* the mirror of detect_compare.c's rule for worse */
		w->better =
		    c->adjusted_judged && c->adjusted_change < -0.01 && -c->adjusted_change > 2 * c->adjusted_se;
		if (isfinite(c->length_adjusted[0]) || isfinite(c->length_adjusted[1])) {
			cell_number(a, sizeof(a), c->length_adjusted[0], 4, 0, "");
			cell_number(b, sizeof(b), c->length_adjusted[1], 4, 0, "");
			w = add(r, "length-adjusted, same steps", a, b);
			change_of(w->change, sizeof(w->change), c->length_adjusted[0], c->length_adjusted[1], 1, 0, "");
		}
	} else {
		add(r, "adjusted loss", "no steps in common", "");
	}
	cell_number(a, sizeof(a), efficiency(x), 1, 0, "%");
	cell_number(b, sizeof(b), efficiency(y), 1, 0, "%");
	w = add(r, "padding efficiency", a, b);
	w->term = "padding";
	change_of(w->change, sizeof(w->change), efficiency(x), efficiency(y), 0, 1, " points");
	w->worse = c->efficiency_worse;
	w->better = c->efficiency_better;
	if (isfinite(tps(x)) || isfinite(tps(y))) {
		cell_number(a, sizeof(a), tps(x), 0, 0, "");
		cell_number(b, sizeof(b), tps(y), 0, 0, "");
		w = add(r, "tokens per second", a, b);
		w->term = "throughput";
		change_of(w->change, sizeof(w->change), tps(x), tps(y), 1, 0, "");
		w->worse = c->tokens_per_s_worse;
		w->better = c->tokens_per_s_better;
	}
	r->price[0] = 0;
	if (isfinite(efficiency(x)) && isfinite(efficiency(y))) {
		int n = snprintf(r->price, sizeof(r->price), "padding efficiency %.1f%% -> %.1f%%", efficiency(x),
		                 efficiency(y));
		if (isfinite(tps(x)) && isfinite(tps(y)) && tps(x) > 0 && n > 0 && (size_t)n < sizeof(r->price))
			snprintf(r->price + n, sizeof(r->price) - (size_t)n,
			         ", tokens per second %.0f -> %.0f (%+.0f%%)", tps(x), tps(y),
			         100 * (tps(y) / tps(x) - 1));
	}
	rm_compare_summary(c, r->summary, sizeof(r->summary));
}

void rm_render_compare_text(FILE *fp, const struct rm_compare_side s[2], const struct rm_comparison *c, int width)
{
	struct rm_compare_rows *r = rm_xmalloc(sizeof(*r));
	rm_compare_rows(s, c, r);
	int wide = 2 + 30 + 1 + 2 * (CELL + 1);
	for (int i = 0; i < r->n; i++) {
		int w = wide + (int)strlen(r->row[i].change);
		wide = w > wide ? w : wide;
	}
	if (!width || wide <= width) {
		row(fp, "", "before", "after", "change");
		for (int i = 0; i < r->n; i++)
			row(fp, r->row[i].label, r->row[i].cell[0], r->row[i].cell[1], r->row[i].change);
	} else { /* narrow: a row to a block, before and after on lines of their own */
		for (int i = 0; i < r->n; i++) {
			fprintf(fp, "  %s%s%s\n", rm_tx(r->row[i].label), r->row[i].change[0] ? ": " : "",
			        r->row[i].change);
			fprintf(fp, "      before  %s\n      after   %s\n", rm_tx(r->row[i].cell[0]),
			        rm_tx(r->row[i].cell[1]));
		}
	}
	fprintf(fp, "\nCauses:\n");
	int shown = 0;
	for (int h = 0; h < RM_H_COUNT; h++) {
		const struct rm_hypothesis_change *hc = &c->hyp[h];
		if (hc->before == RM_SEV_NONE && hc->after == RM_SEV_NONE)
			continue;
		fprintf(fp, "  %-34s %-8s -> %-8s %s\n", rm_hypothesis_name(hc->h), rm_verdict_word(hc->before),
		        rm_verdict_word(hc->after), rm_delta_name(hc->change));
		shown++;
	}
	if (!shown)
		fprintf(fp, "  none found in either run\n");
	char line[RM_VERDICT_LEN];
	for (int i = 0; i < 2; i++) {
		rm_explain_verdict(s[i].d, line, sizeof(line));
		fprintf(fp, "\n%s %s: %s\n", i ? "After, " : "Before,", rm_tx(s[i].name), line);
	}
	if (r->price[0])
		fprintf(fp, "\nThe price: %s\n", r->price);
	fprintf(fp, "\nResult: %s\n", r->summary);
	fputs("(what each row's statistic means: runmon help terms, or docs/terms.md)\n", fp);
	free(r);
}

static json_t *side_json(const struct rm_compare_side *s)
{
	const struct rm_diagnosis *d = s->d;
	char line[RM_VERDICT_LEN];
	rm_explain_verdict(d, line, sizeof(line));
	json_t *levels = json_array();
	for (int i = 0; d->split.ok && i < d->split.k; i++)
		json_array_append_new(levels, json_pack("{s:s, s:o}", "bucket", rm_bucket_label(d, d->split.bucket[i]),
		                                        "level", rm_json_num(d->split.level[i])));
	return json_pack("{s:s, s:I, s:I, s:s, s:s, s:s, s:{s:b, s:o, s:o, s:o}, s:{s:b, s:o, s:i, s:b, s:b, s:o},"
	                 " s:{s:b, s:I, s:o, s:o}, s:{s:I, s:b}, s:o, s:o}",
	                 "run", s->name, "first_step", (json_int_t)d->first_step, "last_step", (json_int_t)d->last_step,
	                 "severity", rm_severity_name(d->severity), "hypothesis", rm_verdict_name(d), "verdict", line,
	                 "runs_test", "ok", d->runs.ok, "runs", rm_json_num(d->runs.runs), "expected",
	                 rm_json_num(d->runs.expected), "z", rm_json_num(d->runs.z), "split", "ok", d->split.ok, "eta2",
	                 rm_json_num(d->split.eta2), "modes", d->split.modes, "mixed", d->split.mixed, "log_scale",
	                 d->split.log_scale, "levels", levels, "ladders", "ok", d->ladder.ok, "count",
	                 (json_int_t)d->ladder.count, "shuffled_mean", rm_json_num(d->ladder.perm_mean), "p",
	                 rm_json_num(d->ladder.p), "resets", "count", (json_int_t)d->resets.spikes,
	                 "clustered_by_bucket", d->resets.cluster_by_bucket, "padding_efficiency",
	                 rm_json_num(d->cost.ok ? d->cost.efficiency : NAN), "tokens_per_s", rm_json_num(tps(d)));
}

json_t *rm_render_compare_json(const struct rm_compare_side s[2], const struct rm_comparison *c)
{
	json_t *hyp = json_array();
	for (int h = 0; h < RM_H_COUNT; h++)
		json_array_append_new(
		    hyp, json_pack("{s:s, s:s, s:s, s:s}", "hypothesis", rm_hypothesis_name(c->hyp[h].h), "before",
		                   rm_severity_name(c->hyp[h].before), "after", rm_severity_name(c->hyp[h].after),
		                   "change", rm_delta_name(c->hyp[h].change)));
	json_t *common = json_null();
	if (c->common)
		common =
		    json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:b, s:b}", "first_step",
		              (json_int_t)c->common_first, "last_step", (json_int_t)c->common_last, "adjusted_before",
		              rm_json_num(c->adjusted[0]), "adjusted_after", rm_json_num(c->adjusted[1]),
		              "length_adjusted_before", rm_json_num(c->length_adjusted[0]), "length_adjusted_after",
		              rm_json_num(c->length_adjusted[1]), "adjusted_change", rm_json_num(c->adjusted_change),
		              "adjusted_change_se", rm_json_num(c->adjusted_se), "segments", c->segments,
		              "adjusted_judged", c->adjusted_judged, "adjusted_worse", c->adjusted_worse);
	char sum[768];
	rm_compare_summary(c, sum, sizeof(sum));
	json_t *cost =
	    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b}", "padding_efficiency_before",
	              rm_json_num(c->efficiency[0]), "padding_efficiency_after", rm_json_num(c->efficiency[1]),
	              "padding_efficiency_change", rm_json_num(c->efficiency_change), "tokens_per_s_before",
	              rm_json_num(c->tokens_per_s[0]), "tokens_per_s_after", rm_json_num(c->tokens_per_s[1]),
	              "tokens_per_s_change", rm_json_num(c->tokens_per_s_change), "padding_worse", c->efficiency_worse,
	              "tokens_per_s_worse", c->tokens_per_s_worse, "worse", c->cost_worse);
	json_object_set_new(cost, "judged", json_boolean(c->cost_judged));
	return json_pack("{s:s, s:o, s:o, s:s, s:s, s:b, s:b, s:s, s:o, s:o, s:o, s:{s:f, s:f}}", "schema",
	                 "runmon.compare/1", "before", side_json(&s[0]), "after", side_json(&s[1]), "severity_change",
	                 rm_delta_name(c->severity), "outcome", rm_outcome_name(c->outcome), "resolved", c->resolved,
	                 "worse", c->worse, "summary", sum, "hypotheses", hyp, "common_steps", common, "cost", cost,
	                 "tolerance", "max_loss_percent", 100 * c->tol.max_loss, "max_cost", c->tol.max_cost);
}

/* The report's section: the table, the causes that changed, the result. */
void rm_compare_html(FILE *fp, const struct rm_report *r)
{
	if (!r->compare)
		return;
	const struct rm_comparison *c = r->compare;
	struct rm_compare_rows *rows = rm_xmalloc(sizeof(*rows));
	rm_compare_rows(r->compare_side, c, rows);
	static const char *const outcome_class[RM_OUTCOME_COUNT] = {"none", "resolved", "price", "price", "worse"};
	fprintf(fp,
	        "<section id='compare' class='overlay'><h2>Compared: before and after</h2>\n"
	        "<p class='summary outcome-%s' data-outcome='%s'>",
	        outcome_class[c->outcome], rm_outcome_name(c->outcome));
	rm_html_esc(fp, rows->summary);
	fputs("</p>\n<table><tr><th></th><th>before</th><th>after</th><th>change</th></tr>\n", fp);
	for (int i = 0; i < rows->n; i++) {
		fputs("<tr><td", fp);
		if (rows->row[i].term)
			rm_term_title(fp, rows->row[i].term);
		fputc('>', fp);
		rm_html_esc(fp, rows->row[i].label);
		for (int j = 0; j < 2; j++) {
			fputs("</td><td>", fp);
			rm_html_esc(fp, rows->row[i].cell[j]);
		}
		fprintf(fp, "</td><td%s>",
		        rows->row[i].worse    ? " class='worse'"
		        : rows->row[i].better ? " class='better'"
		                              : "");
		rm_html_esc(fp, rows->row[i].change);
		fputs("</td></tr>\n", fp);
	}
	fputs("</table>\n<table><tr><th>cause</th><th>before</th><th>after</th><th>change</th></tr>\n", fp);
	for (int h = 0; h < RM_H_COUNT; h++) {
		const struct rm_hypothesis_change *x = &c->hyp[h];
		if (x->before == RM_SEV_NONE && x->after == RM_SEV_NONE)
			continue;
		fprintf(
		    fp,
		    "<tr class='change-%s'><td>%s</td><td class='%s'>%s</td><td class='%s'>%s</td><td>%s</td></tr>\n",
		    rm_delta_name(x->change), rm_hypothesis_name(x->h), rm_report_level(x->before),
		    rm_verdict_word(x->before), rm_report_level(x->after), rm_verdict_word(x->after),
		    rm_delta_name(x->change));
	}
	fputs("</table>\n", fp);
	if (rows->price[0]) {
		fputs("<p>The price: ", fp);
		rm_html_esc(fp, rows->price);
		fputs("</p>\n", fp);
	}
	free(rows);
}

void rm_compare_md(FILE *fp, const struct rm_report *r)
{
	if (!r->compare)
		return;
	struct rm_compare_rows *rows = rm_xmalloc(sizeof(*rows));
	rm_compare_rows(r->compare_side, r->compare, rows);
	fputs("## Compared: before and after\n\n**", fp);
	rm_md_esc(fp, rows->summary);
	fputs("**\n\n| | before | after | change |\n|---|---|---|---|\n", fp);
	for (int i = 0; i < rows->n; i++) {
		fputs("| ", fp);
		rm_md_esc(fp, rows->row[i].label);
		for (int j = 0; j < 2; j++) {
			fputs(" | ", fp);
			rm_md_esc(fp, rows->row[i].cell[j]);
		}
		fputs(" | ", fp);
		rm_md_esc(fp, rows->row[i].change);
		fputs(" |\n", fp);
	}
	if (rows->price[0]) {
		fputs("\nThe price: ", fp);
		rm_md_esc(fp, rows->price);
		fputs("\n", fp);
	}
	fputs("\n", fp);
	free(rows);
}
