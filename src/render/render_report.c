/*
 * render_report.c - nightly reports: one self-contained HTML file (inline
 * SVG, readable without JavaScript), Markdown, and JSON with the diagnosis
 * schema for several runs. Every user-controlled string (run names, keys,
 * config values) goes through rm_html_esc() or rm_md_esc().
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/render.h"
#include "report_internal.h"
#include "runmon/common.h"

/* Okabe and Ito's colour-blind-safe palette ("Color Universal Design",
 * 2008), black left for the adjusted curve; buckets in length order. */
static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                      "#56B4E9", "#D55E00", "#F0E442", "#7F7F7F"};

/* ---- SVG charts ------------------------------------------------------------ */

#define W   900
#define H   260
#define PAD 56

/* A chart's y scale: linear, or log10 where the values span more than a
 * decade (a loss falling from 10 to 0.5 would squash the end flat). */
struct scale {
	double lo, hi;
	int log;
};

static struct scale scale_of(double lo, double hi)
{
	struct scale sc = {lo, hi, lo > 0 && hi / lo > 10};
	if (sc.log) {
		sc.lo = log10(lo);
		sc.hi = log10(hi);
	}
	return sc;
}

static double sx(int64_t step, int64_t x0, int64_t x1)
{
	return PAD + (double)(W - PAD - 10) * (x1 > x0 ? (double)(step - x0) / (double)(x1 - x0) : 0.5);
}

static double sy(double v, const struct scale *sc)
{
	double u = sc->log ? log10(v) : v;
	return 10 + (double)(H - 40) * (sc->hi > sc->lo ? 1 - (u - sc->lo) / (sc->hi - sc->lo) : 0.5);
}

/* Round tick values in [lo, hi]: steps of 1, 2 or 5 times a power of ten,
 * about `want` of them. Returns how many (at most 12). */
static int ticks(double lo, double hi, int want, double *out)
{
	if (!(hi > lo) || !isfinite(lo) || !isfinite(hi))
		return 0;
	double raw = (hi - lo) / want, mag = pow(10, floor(log10(raw))), step = mag;
	if (raw / mag > 5)
		step = 10 * mag;
	else if (raw / mag > 2)
		step = 5 * mag;
	else if (raw / mag > 1)
		step = 2 * mag;
	int n = 0;
	for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9 && n < 12; v += step)
		out[n++] = fabs(v) < step * 1e-9 ? 0 : v;
	return n;
}

/* Round ticks on a log scale between 10^lo and 10^hi: 1, 2 and 5 times
 * the powers of ten, or the powers alone when those are too many. */
static int log_ticks(double lo, double hi, double *out)
{
	static const double mult[] = {1, 2, 5};
	int n = 0, every = hi - lo > 3 ? 3 : 1; /* over three decades: 10^k only */
	for (double e = floor(lo); e <= ceil(hi) && n < 12; e++)
		for (int m = 0; m < 3 && n < 12; m += every) {
			double v = mult[m] * pow(10, e), l = log10(v);
			if (l >= lo - 1e-9 && l <= hi + 1e-9)
				out[n++] = v;
		}
	return n;
}

/* A step tick as people read it: 20k, 1.5M, not 1500000. */
static void step_label(double v, char *buf, size_t n)
{
	double a = fabs(v);
	if (a >= 1e9)
		snprintf(buf, n, "%.4gG", v / 1e9);
	else if (a >= 1e6)
		snprintf(buf, n, "%.4gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(buf, n, "%.4gk", v / 1e3);
	else
		snprintf(buf, n, "%.10g", v);
}

/* The frame with light gridlines and labelled round ticks on both axes
 * (steps below, the y quantity at the left, log-spaced when sc->log), and
 * the chart's title. No x ticks when x1 <= x0. */
static void axes(FILE *fp, const struct scale *sc, int64_t x0, int64_t x1, const char *ylabel, const char *title)
{
	double t[12];
	fprintf(fp, "<rect x='%d' y='10' width='%d' height='%d' fill='none' stroke='#bbb'/>", PAD, W - PAD - 10,
	        H - 40);
	fputs("<g class='yticks' font-size='10' text-anchor='end'>", fp);
	int n = sc->log ? log_ticks(sc->lo, sc->hi, t) : ticks(sc->lo, sc->hi, 5, t);
	for (int i = 0; i < n; i++) {
		double v = t[i], y = sy(v, sc);
		fprintf(fp, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#eee'/>", PAD, W - 10, y, y);
		fprintf(fp, "<text x='%d' y='%.1f'>%.4g</text>", PAD - 4, y + 3, v);
	}
	fputs("</g>", fp);
	fprintf(fp,
	        "<text class='ylabel' x='12' y='%d' font-size='11' text-anchor='middle' transform='rotate(-90 12 %d)'>"
	        "%s%s</text>",
	        H / 2 - 10, H / 2 - 10, ylabel, sc->log ? " (log scale)" : "");
	if (x1 > x0) {
		fputs("<g class='xticks' font-size='10' text-anchor='middle'>", fp);
		n = ticks((double)x0, (double)x1, 6, t);
		for (int i = 0; i < n; i++) {
			double x = sx((int64_t)t[i], x0, x1);
			fprintf(fp, "<line x1='%.1f' x2='%.1f' y1='10' y2='%d' stroke='#eee'/>", x, x, H - 30);
			char lab[24];
			step_label(t[i], lab, sizeof(lab));
			fprintf(fp, "<text x='%.1f' y='%d'>%s</text>", x, H - 18, lab);
		}
		fprintf(fp, "<text x='%d' y='%d'>step</text></g>", W - 24, H - 18);
	}
	fprintf(fp, "<text class='title' x='%d' y='%d' font-size='12' text-anchor='middle'>%s</text>", W / 2, H - 2,
	        title);
}

/* One legend entry: a swatch drawn by `swatch` (SVG content in a 14x14
 * box) and its text. */
static void key(FILE *fp, const char *swatch, const char *text)
{
	fprintf(fp, "<span class='key'><svg width='14' height='14' aria-hidden='true'>%s</svg> ", swatch);
	rm_html_esc(fp, text);
	fputs("</span>\n", fp);
}

/* A bucket's colour, by the id a reader sees rather than its place in
 * this run, so a bucket keeps its colour across runs and reports: a label
 * that is a number is that number (a trainer's text label "2" is bucket 2
 * in every run, whatever order runmon met the labels in), another label
 * its hash, a derived bucket its index. */
static const char *bucket_colour(const struct rm_diagnosis *d, int dense)
{
	if (dense < 0 || dense >= d->curves.k)
		return "#999";
	int id = d->curves.bucket[dense];
	const char *label = rm_bucket_label(d, id);
	unsigned key = (unsigned)id;
	if (d->nderived <= dense + 1 && strcmp(label, "?")) {
		char *end;
		unsigned long v = strtoul(label, &end, 10);
		if (*label >= '0' && *label <= '9' && !*end)
			key = (unsigned)v;
		else
			for (key = 2166136261u; *label; label++) /* FNV-1a */
				key = (key ^ (unsigned char)*label) * 16777619u;
	}
	return palette[key % 8];
}

/* The legend of a run's charts: the colour of each bucket a chart draws,
 * with its lengths (derived buckets are their range; recorded ids get
 * the observed max_len of their batches), and each mark drawn. */
static void legend(FILE *fp, const struct rm_diagnosis *d, int adjusted, int length_adjusted, int spikes, int ladders,
                   int runs)
{
	char sw[160], text[200];
	int used[RM_MAX_BUCKETS] = {0}, unused = 0;
	const struct rm_plot *p = &d->plot;
	for (int b = 0; b < p->bands - 1 && b < RM_MAX_BUCKETS; b++)
		for (int c = 0; c < RM_PLOT_COLS && !used[b]; c++)
			used[b] = !isnan(p->band[((size_t)c * (size_t)p->bands + (size_t)b) * 2]);
	for (int b = 0; b < p->share_k && b < RM_MAX_BUCKETS; b++)
		for (int c = 0; c < p->strip_n && !used[b]; c++)
			used[b] = p->share[(size_t)c * (size_t)p->share_k + (size_t)b] > 0;
	for (int r = 0; r < d->plot.rank_rows; r++)
		for (int c = 0; c < d->plot.rank_cells; c++)
			if (d->plot.rank_strip[r][c] >= 0 && d->plot.rank_strip[r][c] < RM_MAX_BUCKETS)
				used[d->plot.rank_strip[r][c]] = 1;
	fputs("<div class='legend'>", fp);
	for (int b = 0; b < d->curves.k; b++) {
		if (!used[b]) {
			unused++;
			continue;
		}
		snprintf(sw, sizeof(sw), "<circle cx='7' cy='7' r='5' fill='%s'/>", bucket_colour(d, b));
		const char *lab = rm_bucket_label_short(d, d->curves.bucket[b]);
		double lo = d->curves.len_lo[b], hi = d->curves.len_hi[b];
		if (d->nderived > b + 1)
			snprintf(text, sizeof(text), "%s tokens (max_len)", lab);
		else if (isfinite(lo) && isfinite(hi))
			snprintf(text, sizeof(text), "bucket %s: max_len %.0f..%.0f tokens", lab, lo, hi);
		else
			snprintf(text, sizeof(text), "bucket %s", lab);
		key(fp, sw, text);
	}
	if (unused)
		fprintf(fp, "<span class='key'>(%d more bucket%s, no point of theirs drawn)</span>\n", unused,
		        unused == 1 ? "" : "s");
	/* the curve to watch is the one the text names: length-adjusted when
	 * the resets were read on it */
	const int by_len = d->resets_by_length && length_adjusted;
	char spike_text[200], ladder_text[200];
	if (d->resets.spikes > (size_t)spikes)
		snprintf(
		    spike_text, sizeof(spike_text),
		    "loss reset: the %d largest of %zu marked (hover for step, loss, baseline and bucket), every one"
		    " ticked on the step axis",
		    spikes, d->resets.spikes);
	else
		snprintf(spike_text, sizeof(spike_text),
		         "loss reset (hover for step, loss, baseline and bucket), each ticked on the step axis");
	if (d->ladder.count > (size_t)ladders)
		snprintf(ladder_text, sizeof(ladder_text),
		         "significant ladder: all %zu shaded where they lie, the first %d with their span on hover",
		         d->ladder.count, ladders);
	else
		snprintf(ladder_text, sizeof(ladder_text), "significant ladder (hover for its span)");
	const struct {
		const char *swatch, *text;
	} marks[] = {
	    {"<line x1='0' x2='14' y1='7' y2='7' stroke='#000' stroke-width='2'/>",
	     by_len ? "bucket-adjusted loss" : "bucket-adjusted loss (the curve to watch)"},
	    {"<line x1='0' x2='14' y1='7' y2='7' stroke='#555' stroke-dasharray='4 2'/>",
	     by_len ? "length-adjusted loss (the curve to watch)" : "length-adjusted loss"},
	    {"<path d='M7 12l-5 -9h10z' fill='#000' stroke='#fff'/>", spike_text},
	    {"<rect width='14' height='14' fill='#fff3c4' stroke='#e0c060'/>", ladder_text},
	    {"<rect x='1' y='1' width='12' height='12' fill='none' stroke='#000' stroke-width='2'/>",
	     "longest same-bucket streaks (hover for bucket and steps)"},
	};
	const int drawn[] = {adjusted, length_adjusted, spikes, ladders, runs};
	for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); m++)
		if (drawn[m])
			key(fp, marks[m].swatch, marks[m].text);
	fputs("</div>\n", fp);
}

/* The x of a column's middle on the step axis. */
static double col_x(int c)
{
	return PAD + (double)(W - PAD - 10) * (c + 0.5) / RM_PLOT_COLS;
}

static const float *band_at(const struct rm_plot *p, int c, int b)
{
	return &p->band[((size_t)c * (size_t)p->bands + (size_t)b) * 2];
}

/* Every ladder shaded over the columns it covers (all of them, not only
 * those listed), then the listed ones again with their hover text. */
static size_t ladder_shading(FILE *fp, const struct rm_diagnosis *d, int64_t x0, int64_t x1)
{
	if (!d->ladder.flagged)
		return 0;
	for (int c = 0; c < RM_PLOT_COLS; c++) {
		if (!d->ladder.cover[c])
			continue;
		int e = c;
		while (e + 1 < RM_PLOT_COLS && d->ladder.cover[e + 1])
			e++;
		fprintf(fp, "<rect class='ladders' x='%.1f' y='10' width='%.1f' height='%d' fill='#fff3c4'/>",
		        col_x(c) - 1, col_x(e) - col_x(c) + 2, H - 40);
		c = e;
	}
	size_t ladders = d->ladder.count < RM_MAX_LIST ? d->ladder.count : RM_MAX_LIST;
	for (size_t i = 0; i < ladders; i++) {
		const struct rm_ladder *l = &d->ladder.list[i];
		double a = sx(l->first_step, x0, x1), b = sx(l->last_step, x0, x1);
		fprintf(
		    fp,
		    "<rect class='ladder' x='%.1f' y='10' width='%.1f' height='%d' fill='#fff3c4'><title>ladder,"
		    " steps %lld to %lld: %d rises, height %.3g, %.0f%% long-bucket batches (p = %.3f)</title></rect>",
		    a, fmax(b - a, 1), H - 40, (long long)l->first_step, (long long)l->last_step, l->rises, l->height,
		    100 * l->long_share, d->ladder.p);
	}
	return ladders;
}

/* Each bucket's loss as M4 bands: in every column, a stroke from the
 * least to the greatest loss of that bucket's points there (a single
 * point is a dot), so no bucket vanishes at any number of steps. */
static void loss_bands(FILE *fp, const struct rm_plot *p, const struct rm_diagnosis *d, const struct scale *sc)
{
	for (int b = 0; b < p->bands; b++) {
		int any = 0;
		for (int c = 0; c < RM_PLOT_COLS; c++) {
			const float *v = band_at(p, c, b);
			if (isnan(v[0]))
				continue;
			if (!any++)
				fprintf(fp,
				        "<path class='band' fill='none' stroke='%s' stroke-width='2.2' "
				        "stroke-linecap='round'"
				        " stroke-opacity='0.8' d='",
				        bucket_colour(d, b < p->bands - 1 ? b : -1));
			fprintf(fp, "M%.1f %.1fV%.1f", col_x(c), sy(v[1], sc), sy(v[0], sc));
		}
		if (any)
			fputs("'/>", fp);
	}
}

/* The largest resets marked with their hover text, and every reset ticked
 * under the curve in its column. Returns how many are marked. */
static size_t reset_marks(FILE *fp, const struct rm_diagnosis *d, const struct scale *sc, double hi, int64_t x0,
                          int64_t x1)
{
	int ticked = 0;
	for (int c = 0; c < RM_PLOT_COLS; c++)
		if (d->resets.cover[c])
			fprintf(fp, "%sM%.1f %dv7",
			        ticked++ ? "" : "<path class='resets' stroke='#000' stroke-width='2' d='", col_x(c),
			        H - 37);
	if (ticked)
		fprintf(fp, "'><title>%zu loss reset%s, each ticked in its column</title></path>", d->resets.spikes,
		        d->resets.spikes == 1 ? "" : "s");
	size_t spikes = d->resets.spikes < RM_MAX_LIST ? d->resets.spikes : RM_MAX_LIST;
	for (size_t i = 0; i < spikes; i++) {
		const struct rm_spike *s = &d->resets.list[i];
		double x = sx(s->step, x0, x1), y = sy(fmin(s->loss, hi), sc);
		fprintf(fp,
		        "<path class='spike' d='M%.1f %.1fl-5 -9h10z' fill='#000' stroke='#fff'><title>loss reset at"
		        " step %lld: loss %.4g, baseline %.4g, bucket ",
		        x, y - 2, (long long)s->step, s->loss, s->baseline);
		rm_html_esc(fp, s->bucket >= 0 ? rm_bucket_label_short(d, s->bucket) : "?");
		fputs("</title></path>", fp);
	}
	return spikes;
}

/* The loss of each bucket as bands, the bucket-adjusted curve over it
 * (and the length-adjusted one, dashed, when a length effect was fitted),
 * the significant ladders shaded and resets marked, each with hover text. */
static void loss_chart(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_plot *p = &d->plot;
	if (p->n == 0)
		return;
	double lo = INFINITY, hi = -INFINITY;
	int by_length = d->length.ok;
	for (int i = 0; i < p->n; i++) {
		lo = fmin(lo, p->adjusted[i]);
		hi = fmax(hi, p->adjusted[i]);
		if (by_length && isfinite(p->length_adjusted[i])) {
			lo = fmin(lo, p->length_adjusted[i]);
			hi = fmax(hi, p->length_adjusted[i]);
		}
	}
	for (int c = 0; c < RM_PLOT_COLS; c++)
		for (int b = 0; b < p->bands; b++)
			if (!isnan(band_at(p, c, b)[0])) {
				lo = fmin(lo, band_at(p, c, b)[0]);
				hi = fmax(hi, band_at(p, c, b)[1]);
			}
	struct scale sc = scale_of(lo, hi);
	int64_t x0 = p->step[0], x1 = p->step[p->n - 1];
	fprintf(fp, "<svg class='chart loss' viewBox='0 0 %d %d' width='%d' height='%d' role='img'>", W, H, W, H);
	fputs("<title>loss by step</title>", fp);
	size_t ladders = ladder_shading(fp, d, x0, x1);
	axes(fp, &sc, x0, x1, "loss",
	     by_length
	         ? "loss of each bucket (coloured, least to greatest per column), bucket-adjusted loss (line),"
	           " length-adjusted loss (dashed)"
	         : "loss of each bucket (coloured, least to greatest per column) and bucket-adjusted loss (line)");
	loss_bands(fp, p, d, &sc);
	fputs("<polyline class='adjusted' fill='none' stroke='#000' stroke-width='1' points='", fp);
	for (int i = 0; i < p->n; i++)
		fprintf(fp, "%.1f,%.1f ", sx(p->step[i], x0, x1), sy(p->adjusted[i], &sc));
	fputs("'/>", fp);
	if (by_length) {
		fputs("<polyline class='length-adjusted' fill='none' stroke='#555' stroke-width='1'"
		      " stroke-dasharray='4 2' points='",
		      fp);
		for (int i = 0; i < p->n; i++)
			if (isfinite(p->length_adjusted[i]))
				fprintf(fp, "%.1f,%.1f ", sx(p->step[i], x0, x1), sy(p->length_adjusted[i], &sc));
		fputs("'/>", fp);
	}
	size_t spikes = reset_marks(fp, d, &sc, hi, x0, x1);
	fputs("</svg>\n", fp);
	legend(fp, d, 1, by_length, (int)spikes, (int)ladders, 0);
}

/* Per-bucket loss distributions: 5-95% whiskers, 25-75% boxes, medians. */
static void box_chart(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_plot *p = &d->plot;
	int k = d->curves.k;
	if (k == 0)
		return;
	double lo = INFINITY, hi = -INFINITY;
	for (int b = 0; b < k; b++)
		if (isfinite(p->q[b][0]) && isfinite(p->q[b][4])) {
			lo = fmin(lo, p->q[b][0]);
			hi = fmax(hi, p->q[b][4]);
		}
	if (!(hi >= lo))
		return; /* no bucket has a loss point of its own */
	struct scale sc = scale_of(lo, hi);
	fprintf(fp, "<svg class='chart buckets' viewBox='0 0 %d %d' width='%d' height='%d' role='img'>", W, H, W, H);
	fputs("<title>loss per bucket</title>", fp);
	axes(fp, &sc, 0, 0, "loss",
	     p->q_dominant ? "loss per bucket (each step by its dominant bucket): 5-95% whiskers, 25-75% box, median"
	                   : "loss per bucket: 5-95% whiskers, 25-75% box, median line");
	double slot = (double)(W - PAD - 10) / k;
	for (int b = 0; b < k; b++) {
		double x = PAD + slot * (b + 0.5), w = fmin(slot * 0.5, 60);
		const char *c = bucket_colour(d, b);
		if (!isfinite(p->q[b][0]))
			continue;
		fprintf(fp, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s'/>", x, x, sy(p->q[b][0], &sc),
		        sy(p->q[b][4], &sc), c);
		fprintf(
		    fp,
		    "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s' fill-opacity='0.35' stroke='%s'/>",
		    x - w / 2, sy(p->q[b][3], &sc), w, fmax(sy(p->q[b][1], &sc) - sy(p->q[b][3], &sc), 1), c, c);
		fprintf(fp, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#000'/>", x - w / 2, x + w / 2,
		        sy(p->q[b][2], &sc), sy(p->q[b][2], &sc));
		/* a derived label is its range; labels too wide for their slot
		 * (about 6 px a character) take two staggered rows */
		const char *lab = rm_bucket_label_short(d, d->curves.bucket[b]);
		const char *pre = d->nderived > b + 1 ? "" : "bucket ";
		int stagger = slot < 6.0 * (double)(strlen(pre) + strlen(lab)) && (b & 1);
		fprintf(fp, "<text x='%.1f' y='%d' font-size='10' text-anchor='middle'>%s", x, H - (stagger ? 15 : 27),
		        pre);
		rm_html_esc(fp, lab);
		fputs("</text>", fp);
	}
	fputs("</svg>\n", fp);
}

/* The buckets of the batches, each cell stacked by their shares: long
 * same-colour stretches are the same-bucket runs, an interleaved order a
 * braid of every colour. */
static void strip_chart(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_plot *p = &d->plot;
	if (p->strip_n == 0)
		return;
	fprintf(fp, "<svg class='chart strip' viewBox='0 0 %d 60' width='%d' height='60' role='img'>", W, W);
	double cw = (double)(W - PAD - 10) / p->strip_n;
	/* Cells of one bucket alone, as far as they go, as one rectangle; each
	 * other cell's batches stacked by share in bucket order, a stroke as
	 * wide as the cell per bucket. */
	char alone[RM_STRIP_CELLS] = {0};
	for (int c = 0; c < p->strip_n; c++) {
		int b = p->strip[c], e = c;
		if (b < 0 || b >= p->share_k || p->share[(size_t)c * p->share_k + b] < 1)
			continue;
		while (e + 1 < p->strip_n && p->strip[e + 1] == b && p->share[(size_t)(e + 1) * p->share_k + b] >= 1)
			e++;
		fprintf(fp, "<rect x='%.1f' y='8' width='%.1f' height='26' fill='%s'/>", PAD + cw * c,
		        cw * (e - c + 1) + 0.05, bucket_colour(d, b));
		memset(alone + c, 1, (size_t)(e - c + 1));
		c = e;
	}
	for (int b = 0; b < p->share_k; b++) {
		int any = 0;
		for (int c = 0; c < p->strip_n; c++) {
			const float *sh = p->share + (size_t)c * (size_t)p->share_k;
			if (alone[c] || sh[b] <= 0)
				continue;
			double below = 0;
			for (int a = 0; a < b; a++)
				below += sh[a];
			if (!any++)
				fprintf(fp, "<path class='share' stroke='%s' stroke-width='%.2f' d='",
				        bucket_colour(d, b), cw + 0.05);
			fprintf(fp, "M%.1f %.1fv%.1f", PAD + cw * (c + 0.5), 8 + 26 * below, 26 * sh[b]);
		}
		if (any)
			fputs("'/>", fp);
	}
	/* the longest same-bucket runs, outlined where they fall */
	int64_t a = p->strip_first, z = p->strip_last;
	for (int i = 0; i < d->runs.nworst; i++) {
		const struct rm_run_span *r = &d->runs.worst[i];
		double x = sx(r->first_step, a, z), x2 = sx(r->last_step, a, z);
		fprintf(fp,
		        "<rect class='run' x='%.1f' y='6' width='%.1f' height='30' fill='none' stroke='#000'"
		        " stroke-width='1.5'><title>same-bucket streak: bucket ",
		        x, fmax(x2 - x, 2));
		rm_html_esc(fp, rm_bucket_label_short(d, r->bucket));
		fprintf(fp, ", steps %lld to %lld, %zu batches in a row", (long long)r->first_step,
		        (long long)r->last_step, r->length);
		if (r->rank >= 0)
			fprintf(fp, " on rank %d", r->rank);
		fputs("</title></rect>", fp);
	}
	fprintf(fp,
	        "<text x='%d' y='50' font-size='11'>step %lld</text><text x='%d' y='50' font-size='11' "
	        "text-anchor='end'>step %lld: bucket of each batch</text></svg>\n",
	        PAD, (long long)p->strip_first, W - 10, (long long)p->strip_last);
}

/* One row per rank, one cell per step of a window: columns of one colour
 * across the rows are ranks in lockstep, long stretches along a row are
 * one rank's streaks. */
static void rank_chart(FILE *fp, const struct rm_diagnosis *d)
{
	const struct rm_plot *p = &d->plot;
	if (p->rank_rows == 0)
		return;
	const int row = 14, top = 6, h = top + row * p->rank_rows + 22;
	fprintf(fp, "<svg class='chart ranks' viewBox='0 0 %d %d' width='%d' height='%d' role='img'>", W, h, W, h);
	fputs("<title>bucket of each rank's batches</title>", fp);
	double cw = (double)(W - PAD - 10) / p->rank_cells;
	for (int r = 0; r < p->rank_rows; r++) {
		int y = top + row * r;
		fprintf(fp, "<g class='rank'><text x='%d' y='%d' font-size='10' text-anchor='end'>rank %d</text>",
		        PAD - 4, y + row - 4, r);
		for (int c = 0; c < p->rank_cells; c++)
			if (p->rank_strip[r][c] >= 0)
				fprintf(fp, "<rect x='%.2f' y='%d' width='%.2f' height='%d' fill='%s'/>", PAD + cw * c,
				        y, cw + 0.05, row - 2, bucket_colour(d, p->rank_strip[r][c]));
		fputs("</g>", fp);
	}
	fprintf(fp,
	        "<text x='%d' y='%d' font-size='11'>step %lld</text><text x='%d' y='%d' font-size='11' "
	        "text-anchor='end'>step %lld: bucket of each rank's batch, step by step (one colour down a column: "
	        "ranks in lockstep)",
	        PAD, h - 6, (long long)p->rank_first, W - 10, h - 6, (long long)p->rank_last);
	if (p->ranks > p->rank_rows)
		fprintf(fp, " (ranks 0 to %d of %d)", p->rank_rows - 1, p->ranks);
	fputs("</text></svg>\n", fp);
}

/* ---- HTML ------------------------------------------------------------ */

void rm_render_report_html(FILE *fp, const struct rm_report *r)
{
	const struct rm_report_run *runs = r->runs;
	size_t n = r->n;
	char when[32], name[512], line[RM_VERDICT_LEN];
	const char *fix[8];
	rm_iso_time(r->generated, when, sizeof(when));
	fputs("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>runmon report</title><style>"
	      "body{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:960px}"
	      "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}"
	      ".critical{color:#b00020;font-weight:bold}.warn{color:#b26a00;font-weight:bold}.ok,.info{color:#2e7d32}"
	      ".verdict{font-size:16px}section{margin-top:36px}"
	      ".legend{font-size:12px;margin:2px 0 14px "
	      "56px}.key{display:inline-block;margin-right:14px}"
	      ".key svg{vertical-align:middle}.summary{font-size:16px;font-weight:bold}"
	      "svg.chart{max-width:100%;height:auto}table{max-width:100%}td,th{overflow-wrap:break-word}.long{overflow-"
	      "wrap:anywhere}"
	      ".change-new td:nth-child(2),.change-risen td:nth-child(2){font-weight:bold}"
	      "</style></head><body>\n<h1>runmon report</h1>\n",
	      fp);
	fprintf(fp, "<p>Generated %s.</p>\n", when);
	rm_compare_html(fp, r);
	rm_report_head_html(fp, r);
	for (size_t i = 0; i < n; i++) {
		const struct rm_diagnosis *d = runs[i].d;
		rm_report_run_name(runs[i].info, name, sizeof(name));
		fprintf(fp, "<section id='run-%zu'><h2>", i);
		rm_html_esc(fp, name);
		if (runs[i].info->display_name) {
			fputs(" (", fp);
			rm_html_esc(fp, runs[i].info->display_name);
			fputc(')', fp);
		}
		fputs("</h2>\n", fp);
		if (runs[i].url) {
			fputs("<p><a href='", fp);
			rm_html_esc(fp, runs[i].url);
			fputs("'>", fp);
			rm_html_esc(fp, runs[i].url);
			fputs("</a></p>\n", fp);
		}
		rm_explain_verdict(d, line, sizeof(line));
		fprintf(fp, "<p class='verdict'><span class='%s'>%s</span>: ", rm_report_level(d->severity),
		        rm_report_level(d->severity));
		rm_html_esc(fp, line);
		fputs("</p>\n", fp);
		rm_report_change_html(fp, r, i);
		fputs("<ol class='fix'>", fp);
		int nf = rm_explain_fix(d, fix, 8);
		for (int f = 0; f < nf; f++) {
			fputs("<li>", fp);
			rm_html_esc(fp, fix[f]);
			fputs("</li>", fp);
		}
		fputs("</ol>\n", fp);
		loss_chart(fp, d);
		box_chart(fp, d);
		strip_chart(fp, d);
		rank_chart(fp, d);
		if (d->plot.strip_n)
			legend(fp, d, 0, 0, 0, 0, d->runs.nworst > 0);
		fputs("<h3>Evidence</h3><table class='evidence'><tr><th>detector</th><th>finding</th></tr>\n", fp);
		if (d->runs.ok)
			fprintf(fp,
			        "<tr><td>same-bucket streaks</td><td>%.0f streaks, %.0f expected at random, z = "
			        "%.2f%s</td></tr>\n",
			        d->runs.runs, d->runs.expected, d->runs.z, d->runs.flagged ? " (flagged)" : "");
		if (d->split.ok)
			fprintf(fp, "<tr><td>loss split</td><td>%s = %.3f, %d mode%s%s</td></tr>\n",
			        d->split.mixed ? "R&sup2;" : "eta&sup2;", d->split.eta2, d->split.modes,
			        d->split.modes == 1 ? "" : "s", d->split.trimodal ? " (trimodal)" : "");
		if (d->length.ok)
			fprintf(fp,
			        "<tr><td>loss and length</td><td>R&sup2; = %.3f [%.3f, %.3f], slope %.3f; length"
			        " autocorrelation %.2f%s%s</td></tr>\n",
			        d->length.r2, d->length.r2_lo, d->length.r2_hi, d->length.slope, d->length.acf[0],
			        d->length.coupled ? " (coupled)" : "", d->length.ordered ? " (ordered)" : "");
		if (d->ladder.ok && d->ladder.perms)
			fprintf(fp, "<tr><td>ladders</td><td>%zu, %.1f in shuffled order, p = %.3f%s</td></tr>\n",
			        d->ladder.count, d->ladder.perm_mean, d->ladder.p,
			        d->ladder.ramp ? "; length ramps" : "");
		else if (d->ladder.ok)
			fprintf(fp,
			        "<tr><td>ladders</td><td>%zu staircases, not tested (no batch composition)</td></tr>\n",
			        d->ladder.count);
		if (d->resets.ok)
			fprintf(fp,
			        "<tr><td>loss resets</td><td>%zu spikes; by bucket q = %.2g%s; after saves q = "
			        "%.2g%s</td></tr>\n",
			        d->resets.spikes, d->resets.chi2_q, d->resets.cluster_by_bucket ? " (clustered)" : "",
			        d->resets.ckpt_q, d->resets.checkpoint_cause ? " (aligned)" : "");
		if (d->cost.ok) {
			char words[384];
			rm_price_words(&d->cost, words, sizeof(words));
			fputs("<tr><td>padding</td><td>", fp);
			rm_html_esc(fp, words);
			fputs("</td></tr>\n", fp);
		}
		fputs("</table></section>\n", fp);
	}
	fputs("</body></html>\n", fp);
}

/* ---- Markdown ------------------------------------------------------------ */

void rm_render_report_md(FILE *fp, const struct rm_report *r)
{
	char when[32], name[512], line[RM_VERDICT_LEN];
	const char *fix[8];
	const struct rm_report_run *runs = r->runs;
	size_t n = r->n, quiet = 0;
	rm_iso_time(r->generated, when, sizeof(when));
	fprintf(fp, "# runmon report\n\nGenerated %s.\n\n", when);
	rm_compare_md(fp, r);
	rm_report_head_md(fp, r);
	for (size_t i = 0; i < n; i++) {
		const struct rm_diagnosis *d = runs[i].d;
		if (!rm_report_md_details(&runs[i])) {
			quiet++;
			continue;
		}
		rm_report_run_name(runs[i].info, name, sizeof(name));
		fputs("\n## ", fp);
		rm_md_esc(fp, name);
		rm_explain_verdict(d, line, sizeof(line));
		fprintf(fp, "\n\n**%s**: ", rm_report_level(d->severity));
		rm_md_esc(fp, line);
		fputs("\n\n", fp);
		int nf = rm_explain_fix(d, fix, 8);
		for (int f = 0; f < nf; f++) {
			fprintf(fp, "%d. ", f + 1);
			rm_md_esc(fp, fix[f]);
			fputc('\n', fp);
		}
		if (d->runs.ok)
			fprintf(fp, "\n- same-bucket streaks: %.0f, %.0f expected at random, z = %.2f\n", d->runs.runs,
			        d->runs.expected, d->runs.z);
		if (d->split.ok)
			fprintf(fp, "- loss split: eta^2 = %.3f, %d mode%s%s\n", d->split.eta2, d->split.modes,
			        d->split.modes == 1 ? "" : "s", d->split.trimodal ? " (trimodal)" : "");
		if (d->length.ok)
			fprintf(
			    fp,
			    "- loss and length: R^2 = %.3f [%.3f, %.3f], slope %.3f, length autocorrelation %.2f%s%s\n",
			    d->length.r2, d->length.r2_lo, d->length.r2_hi, d->length.slope, d->length.acf[0],
			    d->length.coupled ? " (coupled)" : "", d->length.ordered ? " (ordered)" : "");
		if (d->ladder.ok && d->ladder.perms)
			fprintf(fp, "- ladders: %zu, %.1f in shuffled order, p = %.3f\n", d->ladder.count,
			        d->ladder.perm_mean, d->ladder.p);
		else if (d->ladder.ok)
			fprintf(fp, "- ladders: %zu staircases, not tested (no batch composition)\n", d->ladder.count);
		if (d->resets.ok)
			fprintf(fp, "- loss resets: %zu spikes, by bucket q = %.2g, after saves q = %.2g\n",
			        d->resets.spikes, d->resets.chi2_q, d->resets.ckpt_q);
		if (d->cost.ok) {
			char words[384];
			rm_price_words(&d->cost, words, sizeof(words));
			fprintf(fp, "- padding: %s\n", words);
		}
	}
	if (quiet)
		fprintf(fp, "\n%zu healthy run%s unchanged since the baseline %s not detailed here.\n", quiet,
		        quiet == 1 ? "" : "s", quiet == 1 ? "is" : "are");
}

json_t *rm_render_report_json(const struct rm_report *r)
{
	char when[32];
	rm_iso_time(r->generated, when, sizeof(when));
	json_t *doc = json_pack("{s:s, s:s}", "schema", RM_REPORT_SCHEMA, "generated", when);
	rm_report_head_json(doc, r);
	if (r->compare)
		json_object_set_new(doc, "compare", rm_render_compare_json(r->compare_side, r->compare));
	json_t *arr = json_array();
	for (size_t i = 0; i < r->n; i++) {
		struct rm_render_ctx c = {.run = r->runs[i].info, .run_url = r->runs[i].url};
		json_array_append_new(arr, rm_render_json(r->runs[i].d, &c));
	}
	json_object_set_new(doc, "runs", arr);
	return doc;
}
