/*
 * render_text.c - the terminal report of `runmon diagnose`: the verdict
 * and what to do first, then the evidence of each detector, per-bucket
 * sparklines of the loss and of the bucket-adjusted loss.
 */
#include <math.h>
#include <string.h>

#include "runmon/render.h"
#include "runmon/common.h"

static const char *const blocks[] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
                                     "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};

static const char *sev_color(enum rm_severity s)
{
	switch (s) {
	case RM_SEV_CRITICAL: return "\033[1;31m";
	case RM_SEV_WARN: return "\033[1;33m";
	case RM_SEV_INFO: return "\033[36m";
	default: return "\033[32m";
	}
}

static void sev(FILE *fp, const struct rm_render_ctx *c, enum rm_severity s, const char *text)
{
	if (c->color)
		fprintf(fp, "%s%s\033[0m", sev_color(s), text);
	else
		fputs(text, fp);
}

/* A sparkline of v[0..n) on the scale [lo, hi]; NaN prints a space. */
static void spark(FILE *fp, const double *v, int n, double lo, double hi)
{
	for (int i = 0; i < n; i++) {
		if (isnan(v[i])) {
			fputc(' ', fp);
			continue;
		}
		double t = hi > lo ? (v[i] - lo) / (hi - lo) * 7.999 : 3; /* NaN when the range overflows */
		fputs(blocks[!(t >= 0) ? 0 : t > 7 ? 7 : (int)t], fp);
	}
}

static void range_of(const double *v, int n, double *lo, double *hi)
{
	for (int i = 0; i < n; i++)
		if (!isnan(v[i])) {
			*lo = fmin(*lo, v[i]);
			*hi = fmax(*hi, v[i]);
		}
}

static void fmt_p(char *buf, size_t n, double p)
{
	if (p < 1e-300)
		snprintf(buf, n, "< 1e-300");
	else if (p < 0.001)
		snprintf(buf, n, "= %.1e", p);
	else
		snprintf(buf, n, "= %.3f", p);
}

/* How much of the losses and the batches meet (issue 64.3). */
static void join_line(FILE *fp, const struct rm_diagnosis *d)
{
	char buf[512];
	if (rm_explain_join(&d->join, buf, sizeof(buf)))
		fprintf(fp, "%s\n", buf);
	if (d->join.batches && rm_explain_reading(&d->reading, buf, sizeof(buf)))
		fprintf(fp, "%s\n", buf);
}

static void header(FILE *fp, const struct rm_diagnosis *d, const struct rm_render_ctx *c)
{
	const struct rm_run_info *r = c->run;
	if (r->entity && *r->entity)
		fprintf(fp, "run %s/%s/%s", rm_tx(r->entity), rm_tx(r->project), rm_tx(r->name));
	else
		fprintf(fp, "run %s", rm_tx(r->name));
	if (r->display_name)
		fprintf(fp, " (%s)", rm_tx(r->display_name));
	fprintf(fp, ": %zu loss points", d->points);
	if (d->points)
		fprintf(fp, ", steps %lld..%lld", (long long)d->first_step, (long long)d->last_step);
	if (d->nonfinite)
		fprintf(fp, " (%zu not finite)", d->nonfinite);
	fprintf(fp, ", %zu batches with a bucket, %d buckets", d->batches, d->runs.k);
	if (d->labels_grouped)
		fprintf(fp, " (%zu bucket labels, grouped by length into %d)", d->labels_grouped, d->nlabels);
	fputc('\n', fp);
	if (r->composition)
		fprintf(fp, "batch composition from %s\n", rm_tx(r->composition));
	join_line(fp, d);
	if (d->nderived) {
		fputs("no bucket ids recorded: buckets derived from max_len (else mean_len), boundaries ", fp);
		for (int i = 0; i < d->nderived; i++)
			fprintf(fp, "%s%lld", i ? "," : "", (long long)d->derived_bound[i]);
		fputs(d->derived_cut_points ? " (the cuts no batch's lengths straddle: the bucketing sampler's own)\n"
		                            : " (least-padding fit, the fewest buckets within a point of 8)\n",
		      fp);
	}
	if (d->rank_fit_ranks)
		fprintf(fp,
		        "%d ranks printed their own loss (%zu losses): the split and the length coupling fit each"
		        " rank's loss against its own batch\n",
		        d->rank_fit_ranks, d->rank_points);
	if (c->run_url)
		fprintf(fp, "%s\n", c->run_url);
}

static void verdict(FILE *fp, const struct rm_diagnosis *d, const struct rm_render_ctx *c)
{
	char line[RM_VERDICT_LEN];
	const char *fix[8];
	rm_explain_verdict(d, line, sizeof(line));
	fputs("\nVERDICT  ", fp);
	const char *label = rm_verdict_word(d->severity);
	sev(fp, c, d->severity, label);
	fprintf(fp, ": %s\n", line);
	int nf = rm_explain_fix(d, fix, 8);
	fputs("\nWhat to do:\n", fp);
	for (int i = 0; i < nf; i++)
		fprintf(fp, "  %d. %s\n", i + 1, fix[i]);
	fputs("\nHypotheses, strongest first (evidence: -log10 of the strongest q-value):\n", fp);
	for (int i = 0; i < RM_H_COUNT; i++) {
		const struct rm_ranked *h = &d->rank[i];
		fprintf(fp, "  %d. %-34s ", i + 1, rm_hypothesis_name(h->h));
		sev(fp, c, h->severity, h->severity ? rm_severity_name(h->severity) : "-");
		fprintf(fp, "%*s evidence %.1f\n", h->severity ? 9 - (int)strlen(rm_severity_name(h->severity)) : 8, "",
		        h->score);
	}
}

/* Width of the bucket column: the longest label, at least 6. */
static int label_width(const struct rm_diagnosis *d)
{
	int w = 6;
	for (int j = 0; j < d->nlabels; j++) {
		int n = (int)strlen(rm_tx(rm_bucket_label_short(d, d->label_id[j]))); /* bytes, as printf pads */
		w = n > w ? n : w;
	}
	return w;
}

static void runs_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_runs_result *r = &d->runs;
	char p[32];
	fputs("\nSame-bucket streaks (the batches in a row from one bucket)\n", fp);
	if (!r->ok) {
		fputs("  not tested: fewer than 20 batches with a bucket, or a single bucket\n", fp);
		return;
	}
	fmt_p(p, sizeof(p), r->p);
	fprintf(fp, "  %.0f streaks, %.1f expected in random order (sd %.1f): z = %.2f (%s), p %s%s\n", r->runs,
	        r->expected, sqrt(r->var), r->z,
	        r->z < 0 ? "below 0: fewer, longer streaks than random" : "above 0: more alternation than random", p,
	        r->flagged ? "  [flagged]" : "");
	int w = label_width(d);
	fprintf(fp, "  %*s   batches  share  mean streak  expected  longest  P(longest)\n", w, "bucket");
	for (int i = 0; i < r->k; i++) {
		const struct rm_bucket_runs *b = &r->per[i];
		fprintf(fp, "  %*s  %8zu  %5.1f%%  %11.1f  %8.2f  %7zu  %10.2g\n", w,
		        rm_tx(rm_bucket_label_short(d, b->bucket)), b->steps, 100 * b->share, b->mean_run,
		        b->expected_mean_run, b->longest, b->p_longest);
	}
	if (r->nworst) {
		fputs("  longest streaks:", fp);
		for (int i = 0; i < r->nworst && i < 5; i++) {
			fprintf(fp, "%s bucket %s at steps %lld..%lld (%zu)", i ? "," : "",
			        rm_tx(rm_bucket_label_short(d, r->worst[i].bucket)), (long long)r->worst[i].first_step,
			        (long long)r->worst[i].last_step, r->worst[i].length);
			if (r->worst[i].rank >= 0)
				fprintf(fp, " on rank %d", r->worst[i].rank);
		}
		fputc('\n', fp);
	}
}

/* Several batches per step: how the ranks draw and how the mixture moves. */
static void mixture_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_mixture_result *m = &d->mixture;
	if (!m->ok)
		return;
	fprintf(fp, "\nRanks and micro-batches: %s\n", rm_mix_shape_name(m->shape));
	fprintf(fp, "  %zu steps, %.1f batches per step from %d rank%s\n", m->steps, m->per_step, m->ranks,
	        m->ranks == 1 ? "" : "s");
	if (m->ranks > 1 && m->concordance_expected > 0)
		fprintf(fp, "  ranks draw one bucket together on %.1f%% of steps, %.1f%% by chance (z = %.1f)\n",
		        100 * m->concordance, 100 * m->concordance_expected, m->concordance_z);
	if (m->ranks_tested)
		fprintf(fp, "  runs test per rank: %d of %d streak (z from %.1f to %.1f, median %.1f)\n",
		        m->ranks_flagged, m->ranks_tested, m->rank_z_min, m->rank_z_max, m->rank_z_median);
	if (m->windows) {
		fputs("  window (steps)  chi2 / random      z    TV  TV random\n", fp);
		for (int i = 0; i < m->windows; i++)
			fprintf(fp, "  %14lld  %13.2f  %5.1f  %.2f  %9.2f%s\n", (long long)m->window[i], m->ratio[i],
			        m->ratio_z[i], m->tv[i], m->tv_random[i],
			        i == m->worst && m->drifts ? "  <- worst" : "");
	}
	fprintf(fp, "  the mixture %s; its share vector decorrelates after ~%.0f steps\n",
	        m->drifts ? "drifts from the run's proportions beyond chance" : "stays near the run's proportions",
	        m->persistence);
}

static void split_section(FILE *fp, const struct rm_diagnosis *d, int width)
{
	const struct rm_split_result *s = &d->split;
	const struct rm_curves *cv = &d->curves;
	char p[32];
	if (!d->batches && s->trend) { /* the loss alone */
		fputs("\nLevels of the loss alone\n", fp);
		if (s->levels < 2) {
			fprintf(fp, "  none: the detrended loss has %d mode%s, no levels it keeps switching between\n",
			        s->modes, s->modes == 1 ? "" : "s");
			return;
		}
		fprintf(fp, "  the detrended %sloss switches between %d levels:", s->level_log ? "log " : "",
		        s->levels);
		for (int c = 0; c < s->levels; c++)
			fprintf(fp, s->level_log ? "%s x%.2f (%.0f%% of points)" : "%s %+.3g (%.0f%% of points)",
			        c ? "," : "", s->level_ratio[c], 100 * s->level_share[c]);
		fprintf(fp, "\n  %zu runs of one level, %.0f in a random order of the same points: z = %.1f (%s)%s\n",
		        s->level_runs, s->level_runs_expected, s->level_runs_z,
		        s->level_runs_z < -4                        ? "blocks: streaks of one level"
		        : s->level_runs_z > RM_LEVELS_INTERLEAVED_Z ? "alternating: as interleaved buckets make it"
		                                                    : "a braid: levels in random order",
		        d->suspected ? "  [suspected homogeneous batching]" : "");
		return;
	}
	fputs("\nLoss by bucket\n", fp);
	if (!s->ok) {
		fprintf(fp, "  not tested: no batch composition (%d mode%s in the detrended loss)\n", s->modes,
		        s->modes == 1 ? "" : "s");
	} else {
		fmt_p(p, sizeof(p), s->p);
		fprintf(fp,
		        "  %s = %.3f of the detrended %sloss is explained by bucket%s: F(%.0f, %.0f) = %.4g, p %s\n",
		        s->mixed ? "R^2" : "eta^2", s->eta2, s->log_scale ? "log " : "",
		        s->mixed ? " shares (a regression on each step's mixture)" : "", s->df1, s->df2, s->f, p);
		if (s->mixed_batches)
			fprintf(fp,
			        "  %zu of %zu batches hold lengths of several buckets: each counts in every bucket by"
			        " its share of the batch's tokens\n",
			        s->mixed_batches, d->batches);
		/* Trimodal is the braid's word: in a healthy order the same levels
		 * are information (issue 66.3). */
		fprintf(fp, "  %d mode%s in the detrended loss (Gaussian mixture, BIC)%s\n", s->modes,
		        s->modes == 1 ? "" : "s",
		        s->trimodal && d->severity >= RM_SEV_WARN ? ": a trimodal split lining up with bucket groups"
		        : s->aligned || s->trimodal               ? ", lining up with bucket groups"
		                                                  : "");
		if (s->modes > 1)
			fputs(
			    "  a bucket's mode below is the one most of its points fall in, numbered from the lowest\n",
			    fp);
	}
	if (cv->k == 0)
		return;
	double lo = INFINITY, hi = -INFINITY, alo = INFINITY, ahi = -INFINITY;
	for (int i = 0; i < cv->k; i++) {
		range_of(cv->bucket_loss[i], cv->bins, &lo, &hi);
		range_of(cv->bucket_adjusted[i], cv->bins, &alo, &ahi);
	}
	int w = label_width(d), drawn = lo <= hi; /* a bucket has steps of its own to draw */
	int intervals = 0;
	for (int i = 0; s->ok && i < cv->k; i++)
		intervals += isfinite(s->level_lo[i]);
	/* The one-line rows with both sparklines, when the width holds them;
	 * else the numbers, then each bucket's curves on rows of their own. */
	int row_width = 2 + w + 2 + 10 + (intervals ? 18 : 0) + 5 + 11;
	int inline_sparks = drawn && (!width || row_width + 2 * (cv->bins + 2) <= width);
	fprintf(fp, "  %*s  %-10s %s mode  mean loss", w, "bucket", s->log_scale ? "x trend" : "+ trend",
	        intervals ? "95% interval      " : "");
	if (inline_sparks)
		fprintf(fp, "  %-*s  adjusted", cv->bins, "loss over time (shared scale)");
	fputc('\n', fp);
	for (int i = 0; i < cv->k; i++) {
		char lev[48], ci[48] = "-", mode[16] = "-";
		if (s->ok)
			snprintf(lev, sizeof(lev), s->log_scale ? "x%.3f" : "%+.3f", s->level[i]);
		else
			snprintf(lev, sizeof(lev), "-");
		if (s->ok && isfinite(s->level_lo[i]))
			snprintf(ci, sizeof(ci), s->log_scale ? "[%.3f, %.3f]" : "[%+.3f, %+.3f]", s->level_lo[i],
			         s->level_hi[i]);
		if (s->ok && s->mode_of_bucket[i] >= 0)
			snprintf(mode, sizeof(mode), "%d", s->mode_of_bucket[i] + 1);
		char mean[24] = "        -"; /* no step of this bucket alone (steps that mix buckets) */
		if (isfinite(cv->bucket_mean[i]))
			snprintf(mean, sizeof(mean), "%9.4f", cv->bucket_mean[i]);
		fprintf(fp, "  %*s  %-10s ", w, rm_tx(rm_bucket_label_short(d, cv->bucket[i])), lev);
		if (intervals)
			fprintf(fp, "%-17s ", ci);
		fprintf(fp, "%4s  %s", mode, mean);
		if (inline_sparks) {
			fputs("  ", fp);
			spark(fp, cv->bucket_loss[i], cv->bins, lo, hi);
			fputs("  ", fp);
			spark(fp, cv->bucket_adjusted[i], cv->bins, alo, ahi);
		}
		fputc('\n', fp);
	}
	if (s->ok && !intervals)
		fputs(d->runs.flagged || d->suspected
		          ? "  no 95% intervals: buckets in streaks confound level and trend\n"
		          : "  no 95% intervals: too few points for 20 blocks longer than the trend's window\n",
		      fp);
	if (drawn && !inline_sparks) {
		fprintf(fp, "  %*s  loss over time (shared scale)\n", w, "bucket");
		for (int i = 0; i < cv->k; i++) {
			fprintf(fp, "  %*s  ", w, rm_tx(rm_bucket_label_short(d, cv->bucket[i])));
			spark(fp, cv->bucket_loss[i], cv->bins, lo, hi);
			fputc('\n', fp);
		}
		fprintf(fp, "  %*s  bucket-adjusted\n", w, "bucket");
		for (int i = 0; i < cv->k; i++) {
			fprintf(fp, "  %*s  ", w, rm_tx(rm_bucket_label_short(d, cv->bucket[i])));
			spark(fp, cv->bucket_adjusted[i], cv->bins, alo, ahi);
			fputc('\n', fp);
		}
	}
	if (!drawn && s->ok)
		fputs("  no step holds one bucket alone: the levels are the regression's, on each step's shares\n", fp);
}

static void length_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_length_result *l = &d->length;
	char p[32];
	fputs("\nLoss and length\n", fp);
	if (!l->batches) {
		fputs("  not tested: no batch lengths recorded (lens, max_len, mean_len, or tokens and n)\n", fp);
		return;
	}
	fputs("  batch log length autocorrelation, lags 1..5:", fp);
	for (int i = 0; i < RM_LEN_LAGS; i++)
		fprintf(fp, " %.2f", l->acf[i]);
	fprintf(fp, " over %zu batches (random order gives ~0)%s\n", l->batches,
	        l->ordered ? "  [ordered: batches follow each other by length]" : "");
	if (!l->ok) {
		fprintf(fp, "  coupling not tested: %zu loss points with a length, %d needed\n", l->points, 50);
		return;
	}
	fmt_p(p, sizeof(p), l->p);
	fprintf(fp,
	        "  log length explains R^2 = %.3f [%.3f, %.3f] of the detrended %sloss: slope %.3f [%.3f, %.3f]"
	        " per unit log length, p %s (%zu points, %.0f effective)%s\n",
	        l->r2, l->r2_lo, l->r2_hi, l->log_scale ? "log " : "", l->slope, l->slope_lo, l->slope_hi, p, l->points,
	        l->n_eff, l->coupled ? "  [coupled]" : "");
	if (l->confounded)
		fputs("  lengths change as slowly as the trend (sorted over long stretches): the length effect cannot"
		      " be told from the trend, so none is claimed and there is no length-adjusted loss\n",
		      fp);
	else
		fprintf(fp, "  the length-adjusted loss is the loss at %.0f tokens (the geometric mean length)\n",
		        l->ref_len);
	if (l->per_sequence_sum)
		fputs("  the loss grows in proportion to length: it reads as a per-sequence sum, and a per-token"
		      " loss (divided by tokens) removes the effect\n",
		      fp);
}

static void ladder_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_ladder_result *l = &d->ladder;
	fputs("\nLadders in the reported loss\n", fp);
	/* The five tallest, tallest first: the list holds them in step order. */
	size_t order[RM_MAX_LIST], kept = l->count < RM_MAX_LIST ? l->count : RM_MAX_LIST, shown = kept < 5 ? kept : 5;
	for (size_t i = 0; i < kept; i++) {
		size_t j = i;
		for (; j > 0 && l->list[order[j - 1]].height < l->list[i].height; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	char listed[64] = "";
	if (shown && shown < l->count)
		snprintf(listed, sizeof(listed), ", %zu shown, tallest first", shown);
	else if (shown > 1)
		snprintf(listed, sizeof(listed), ", tallest first");
	if (!l->ok) {
		fputs("  not tested: too few points\n", fp);
	} else if (!l->perms) {
		fprintf(fp,
		        "  %zu staircase%s in the reported loss (3 or more rises, then a fall back; intervals of %d"
		        " point%s%s); not tested against bucket order: no batch composition\n",
		        l->count, l->count == 1 ? "" : "s", l->interval, l->interval == 1 ? "" : "s", listed);
		for (size_t i = 0; i < shown; i++) {
			const struct rm_ladder *x = &l->list[order[i]];
			fprintf(fp, "  steps %lld..%lld: %d rises, +%.3f, Mann-Kendall z = %.1f\n",
			        (long long)x->first_step, (long long)x->last_step, x->rises, x->height, x->mk_z);
		}
	} else {
		fprintf(fp,
		        "  %zu ladder%s (intervals of %d point%s%s); shuffled bucket order gives %.1f, p = %.3f (%d"
		        " permutations)%s\n",
		        l->count, l->count == 1 ? "" : "s", l->interval, l->interval == 1 ? "" : "s", listed,
		        l->perm_mean, l->p, l->perms, l->flagged ? "  [flagged]" : "");
		for (size_t i = 0; i < shown; i++) {
			const struct rm_ladder *x = &l->list[order[i]];
			/* A staircase is counted from the loss alone; the bucket
			 * order's part is the permutation test's. One whose span
			 * holds no more long batches than the run is said so. */
			fprintf(fp,
			        "  steps %lld..%lld: %d rises, +%.3f, long-bucket share %.0f%% (overall %.0f%%%s),"
			        " Mann-Kendall z = %.1f\n",
			        (long long)x->first_step, (long long)x->last_step, x->rises, x->height,
			        100 * x->long_share, 100 * l->long_share_overall,
			        x->long_share > l->long_share_overall ? "" : ": not over a long streak", x->mk_z);
		}
	}
	if (l->ramp)
		fprintf(
		    fp,
		    "  length ramps: max_len falls in %.0f%% of consecutive batches, period %d batches (autocorrelation"
		    " %.2f; loss %.2f at that lag)\n",
		    100 * l->ramp_desc_share, l->ramp_period, l->ramp_acf_len, l->ramp_acf_loss);
	else if (l->ramp_desc_share > 0)
		fprintf(fp, "  no length ramps (max_len falls in %.0f%% of consecutive batches)\n",
		        100 * l->ramp_desc_share);
}

/* Without a configured save interval: the period the spikes show, if any. */
static void period_line(FILE *fp, const struct rm_resets_result *r)
{
	fputs("  checkpoint interval not configured (--checkpoint-every, or save_steps in the run config);", fp);
	if (!r->period_tested)
		fprintf(fp, " too few spikes to test a period (%zu separate, %d needed)\n", r->period_events, 5);
	else if (!r->periodic_cause && !r->period_alias && !(r->period && r->period_q < 0.01))
		fprintf(fp, " no period among %zu separate spikes\n", r->period_events);
	else
		fprintf(fp,
		        "\n  spikes recur every %lld steps: %zu of %zu at phase %lld (+%lld), over %.0f periods;"
		        " q = %.2g over every period searched%s\n",
		        (long long)r->period, r->period_hits, r->period_events, (long long)r->period_phase,
		        (long long)r->period_width - 1, r->period_cycles, r->period_q,
		        r->periodic_cause && r->bucket_alias ? "  [periodic; the bucket clustering is its alias]"
		        : r->periodic_cause                  ? "  [periodic]"
		        : r->period_alias ? "  [the period of the batch order, not a cause of its own]"
		                          : "  [too few periods hit for a periodic cause]");
}

static void order_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_order_result *r = &d->order;
	if (r->epochs < 2) /* no epochs known: nothing to say */
		return;
	fputs("\nOrder across epochs\n", fp);
	if (!r->ok) {
		fprintf(fp, "  not tested: %zu points matched across %d epochs, %d needed\n", r->pairs, r->epochs, 50);
		return;
	}
	fprintf(fp,
	        "  the detrended loss at one in-epoch step, epoch against the next: r = %.2f over %zu points of %d"
	        " epochs (%s); turned by %d offsets it gives %.2f +- %.2f: z = %.1f%s\n",
	        r->r, r->pairs, r->epochs, r->by_epoch ? "epochs as logged" : "steps per epoch as configured",
	        r->shifts, r->null_mean, r->null_sd, r->z, r->flagged ? "  [repeats]" : "");
	for (int i = 0; i < r->nspikes; i++)
		fprintf(fp, "  a spike at in-epoch step %lld in %d epochs (first at step %lld)\n",
		        (long long)r->spike_pos[i], r->spike_epochs[i], (long long)r->spike_first[i]);
}

static void divergence_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_divergence *v = &d->divergence;
	if (!v->found)
		return;
	fprintf(
	    fp,
	    "\nDivergence\n  from step %lld to the end: %zu points, %zu NaN, %zu Inf, %zu over %.0fx the median loss"
	    " before (%.4g)",
	    (long long)v->first_step, v->points, v->nan, v->inf, v->exploded, 10.0, v->baseline);
	if (isfinite(v->peak))
		fprintf(fp, ", the largest %.4g", v->peak);
	fputs("\n  the other detectors read the run before it\n", fp);
}

static void resets_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_resets_result *r = &d->resets;
	fputs("\nLoss resets\n", fp);
	if (!r->ok) {
		fputs("  not tested: too few points\n", fp);
		return;
	}
	const char *expects = d->has_buckets         ? "the level each point's composition expects"
	                      : d->split.levels >= 2 ? "the highest level of the loss alone"
	                                             : "the trend";
	fprintf(fp, "  %zu reset%s beginning above %s (%zu large: a doubled loss's worth of a step or more)", r->spikes,
	        r->spikes == 1 ? "" : "s", expects, r->spikes_2x);
	if (r->interval > 1 && d->reading.reading == RM_READ_STEP)
		fprintf(fp, "; a point every %.0f steps, each one step's loss", r->interval);
	else if (r->interval > 1)
		fprintf(fp, "; a point averages %.0f steps", r->interval);
	fputc('\n', fp);
	/* two counts of two curves, and the share of the first that the
	 * adjustment removes: the second also holds spikes only it shows */
	const char *curve = d->resets_by_length ? "length" : d->has_buckets ? "bucket" : "level";
	size_t gone = (size_t)llround(r->vanish_share * (double)r->spikes_global);
	fprintf(fp,
	        "  a global baseline flags %zu in the loss and %zu in the %s-adjusted loss; %zu of the loss's"
	        " (%.0f%%) are gone once adjusted\n",
	        r->spikes_global, r->spikes_adjusted, curve, gone, 100 * r->vanish_share);
	if (r->spikes && r->k >= 2) {
		fprintf(fp, "  by bucket%s: chi2(%.0f) = %.2f, q = %.2g, Cramer's V = %.3f%s\n",
		        r->bucket_tested < r->spikes ? " (the resets no save, epoch or schedule change explains)" : "",
		        r->chi2_df, r->chi2, r->chi2_q, r->cramers_v, r->cluster_by_bucket ? "  [clustered]" : "");
		for (int b = 0; b < r->k; b++)
			if (r->bucket_spikes[b])
				fprintf(fp, "    bucket %s: %zu resets, %.2fx its share of steps, q = %.2g\n",
				        rm_tx(rm_bucket_label_short(d, r->bucket[b])), r->bucket_spikes[b],
				        r->enrichment[b], r->enrich_q[b]);
	}
	if (r->checkpoint_every > 1)
		fprintf(
		    fp,
		    "  checkpoint saves every %lld steps: %.0f resets begin just after one, %.1f expected, q = %.2g "
		    "(phase R = %.2f)%s\n",
		    (long long)r->checkpoint_every, r->ckpt_near, r->ckpt_expected, r->ckpt_q, r->ckpt_r,
		    r->checkpoint_cause ? "  [aligned]" : "");
	else
		period_line(fp, r);
	if (r->epoch_expected > 0)
		fprintf(fp, "  epoch boundaries: %.0f resets begin just after one, %.1f expected, q = %.2g\n",
		        r->epoch_near, r->epoch_expected, r->epoch_q);
	if (r->lr_changes)
		fprintf(fp, "  learning-rate jumps (%zu): %.0f resets begin just after one, %.1f expected, q = %.2g\n",
		        r->lr_changes, r->lr_near, r->lr_expected, r->lr_q);
	for (size_t i = 0; i < r->spikes && i < 5; i++) {
		fprintf(fp, "    step %lld: loss %.4f, expected %.4f, peak x%.2f over %zu point%s",
		        (long long)r->list[i].step, r->list[i].loss, r->list[i].baseline, r->list[i].peak,
		        r->list[i].points, r->list[i].points == 1 ? "" : "s");
		if (r->list[i].bucket >= 0)
			fprintf(fp, " (bucket %s)", rm_tx(rm_bucket_label_short(d, r->list[i].bucket)));
		fputc('\n', fp);
	}
}

static void cost_section(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_padding_result *p = &d->cost;
	if (!p->ok)
		return;
	fputs("\nPadding and throughput", fp);
	if (p->stride > 1)
		fprintf(fp, " (from a sample of %zu batches in 10 blocks, 1 in %lld)", p->batches,
		        (long long)p->stride);
	fprintf(fp, "\n  padding efficiency %.1f%% (real tokens / padded tokens)", 100 * p->efficiency);
	if (isfinite(p->tokens_per_s))
		fprintf(fp, ", %.0f tokens/s", p->tokens_per_s);
	int w = label_width(d);
	fprintf(fp, "\n  %*s  efficiency   tokens/s\n", w, "bucket");
	for (int i = 0; i < p->k; i++) {
		fprintf(fp, "  %*s  %9.1f%%", w, rm_tx(rm_bucket_label_short(d, p->bucket[i])), 100 * p->bucket_eff[i]);
		if (isfinite(p->bucket_tps[i]))
			fprintf(fp, "  %9.0f", p->bucket_tps[i]);
		fputc('\n', fp);
	}
	if (p->dataset_lengths)
		fprintf(fp, "  the dataset's lengths (%lld sequences) re-packed at %lld tokens a batch:\n",
		        (long long)p->dataset_lengths, (long long)p->budget);
	else if (!p->reconstructed)
		fprintf(fp, "  the same lengths re-packed at %lld tokens a batch (the lengths as recorded):\n",
		        (long long)p->budget);
	else if (p->recorded_batches)
		fprintf(fp,
		        "  the same lengths re-packed at %lld tokens a batch (as recorded in %zu of %zu batches, "
		        "rebuilt in "
		        "the rest from each batch's n, min, max and tokens):\n",
		        (long long)p->budget, p->recorded_batches, p->batches);
	else
		fprintf(
		    fp,
		    "  the same lengths re-packed at %lld tokens a batch (rebuilt from each batch's n, min, max and "
		    "tokens):\n",
		    (long long)p->budget);
	for (int s = 0; s < RM_PACK_COUNT; s++)
		fprintf(fp, "    %-31s %6.1f%%%s\n", rm_strategy_name((enum rm_strategy)s), 100 * p->strategy_eff[s],
		        s == RM_PACK_INTERLEAVED ? "   (bucketing's batches reordered)" : "");
	if (p->fitted_k) { /* below the table, so that its rows fit 80 columns */
		fputs("  fitted boundaries: ", fp);
		for (int i = 0; i <= p->fitted_k; i++)
			fprintf(fp, "%s%lld", i ? "," : "", (long long)p->fitted[i]);
		fputs(p->fit_kept_own ? " (the run's own: no fit pads less)\n" : "\n", fp);
	}
}

void rm_render_text(FILE *fp, const struct rm_diagnosis *d, const struct rm_render_ctx *c)
{
	header(fp, d, c);
	verdict(fp, d, c);
	if (d->curves.bins && d->points) {
		double lo = INFINITY, hi = -INFINITY;
		range_of(d->curves.loss, d->curves.bins, &lo, &hi);
		range_of(d->curves.adjusted, d->curves.bins, &lo, &hi);
		range_of(d->curves.length_adjusted, d->curves.bins, &lo, &hi);
		fputs("\nloss            ", fp);
		spark(fp, d->curves.loss, d->curves.bins, lo, hi);
		fputs(d->has_buckets || d->batches ? "\nbucket-adjusted " : "\nlevel-adjusted  ", fp);
		spark(fp, d->curves.adjusted, d->curves.bins, lo, hi);
		fputs(d->resets_by_length ? "\n" : "  <- the curve to watch\n", fp);
		if (d->length.ok) {
			fputs("length-adjusted ", fp);
			spark(fp, d->curves.length_adjusted, d->curves.bins, lo, hi);
			fputs(d->resets_by_length ? "  <- the curve to watch\n" : "\n", fp);
		}
	}
	if (!d->has_buckets && d->nderived)
		fputs("\nBatch lengths are recorded but hardly vary (one bucket fits them): there is no length order to"
		      " test, so the runs test, the split and the per-bucket baselines did not run.\n",
		      fp);
	else if (!d->has_buckets && !d->length.batches && d->tokens_only)
		fprintf(fp,
		        "\nBatch token counts are recorded without sequence counts or lengths (%zu batches): the"
		        " length is unknown, so the runs test, the split and the per-bucket baselines did not run.\n",
		        d->tokens_only);
	else if (!d->has_buckets && d->length.batches)
		fputs("\nBatch composition is recorded but holds a single bucket: the runs test, the split and the"
		      " per-bucket baselines need two or more, so they did not run.\n",
		      fp);
	else if (!d->has_buckets)
		fputs("\nNo batch composition for this run: the runs test, the split and the per-bucket baselines need"
		      " it; the loss alone is read for levels.\nRecord it with a sidecar file or batch/* keys (see"
		      " docs/formats.md), then import or sync again.\n",
		      fp);
	runs_section(fp, d);
	mixture_section(fp, d);
	split_section(fp, d, c ? c->width : 0);
	length_section(fp, d);
	ladder_section(fp, d);
	divergence_section(fp, d);
	resets_section(fp, d);
	order_section(fp, d);
	cost_section(fp, d);
	if (d->stored == RM_NOT_STORED_PARTIAL)
		fprintf(fp,
		        "\nFindings not stored: this diagnosis covers steps >= %lld only; the stored findings stay"
		        " those of the last full diagnosis.\n",
		        (long long)c->since);
	else if (d->stored == RM_NOT_STORED_READONLY)
		fputs("\nFindings not stored: the database is read-only.\n", fp);
	fputs("\nWhat each statistic means (z, eta^2, q, BIC, ...): runmon help terms, or docs/terms.md\n", fp);
}
