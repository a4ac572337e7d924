/*
 * report_charts.c - a report's charts as inline SVG: per run the loss by
 * step (M4 bands per bucket, the adjusted curves, ladders and resets),
 * the loss per bucket, the bucket of each batch and of each rank; and the
 * overlay of several runs. Step charts carry the attributes report.js
 * zooms and reads them by; drawn as they are, they need no script.
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
	fputs("<g class='yticks' font-size='12' text-anchor='end'>", fp);
	int n = sc->log ? log_ticks(sc->lo, sc->hi, t) : ticks(sc->lo, sc->hi, 5, t);
	for (int i = 0; i < n; i++) {
		double v = t[i], y = sy(v, sc);
		fprintf(fp, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#eee'/>", PAD, W - 10, y, y);
		fprintf(fp, "<text x='%d' y='%.1f'>%.4g</text>", PAD - 4, y + 3, v);
	}
	fputs("</g>", fp);
	fprintf(fp,
	        "<text class='ylabel' x='12' y='%d' font-size='12' text-anchor='middle' transform='rotate(-90 12 %d)'>"
	        "%s%s</text>",
	        H / 2 - 10, H / 2 - 10, ylabel, sc->log ? " (log scale)" : "");
	if (x1 > x0) {
		fputs("<g class='xticks' font-size='12' text-anchor='middle'>", fp);
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
	fprintf(fp, "<text class='title' x='%d' y='%d' font-size='13' text-anchor='middle'>%s</text>", W / 2, H - 2,
	        title);
}

/* One legend entry: a swatch drawn by `swatch` (SVG content in a 14x14
 * box) and its text; a bucket's (dense index b >= 0, named `name`) is a
 * button the report's script makes hide or show that bucket's marks. */
static void key(FILE *fp, const char *swatch, const char *text, int b, const char *name)
{
	if (b >= 0) {
		fprintf(fp, "<button type='button' class='key' data-b='%d' aria-pressed='true' data-name='", b);
		rm_html_esc(fp, name);
		fputs("'>", fp);
	} else
		fputs("<span class='key'>", fp);
	fprintf(fp, "<svg width='14' height='14' aria-hidden='true'>%s</svg> ", swatch);
	rm_html_esc(fp, text);
	fputs(b >= 0 ? "</button>\n" : "</span>\n", fp);
}

/* A chart whose x axis is steps x0..x1: its frame, the attributes the
 * report's script zooms and reads it by, and the clipped layer that
 * zooms (zoom_open, closed by "</g></g>"). */
static void step_chart_open(FILE *fp, const char *cls, int h, int64_t x0, int64_t x1)
{
	fprintf(fp,
	        "<svg class='chart %s' viewBox='0 0 %d %d' width='%d' height='%d' role='img' data-x0='%lld'"
	        " data-x1='%lld' data-pad='%d' data-w='%d'",
	        cls, W, h, W, h, (long long)x0, (long long)x1, PAD, W - PAD - 10);
}

static void zoom_open(FILE *fp, size_t run, const char *cls, int top, int h)
{
	fprintf(fp,
	        "<clipPath id='clip-%zu-%s'><rect x='%d' y='%d' width='%d' height='%d'/></clipPath>"
	        "<g clip-path='url(#clip-%zu-%s)'><g class='zoom'>",
	        run, cls, PAD, top, W - PAD - 10, h, run, cls);
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
		key(fp, sw, text, b, lab);
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
			key(fp, marks[m].swatch, marks[m].text, -1, NULL);
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
				        "<path class='band' data-b='%d' fill='none' stroke='%s' stroke-width='2.2' "
				        "stroke-linecap='round' stroke-opacity='0.8' "
				        "vector-effect='non-scaling-stroke' d='",
				        b < p->bands - 1 ? b : -1, bucket_colour(d, b < p->bands - 1 ? b : -1));
			fprintf(fp, "M%.1f %.1fV%.1f", col_x(c), sy(v[1], sc), sy(v[0], sc));
		}
		if (any)
			fputs("'/>", fp);
	}
}

/* The zoom's data on the loss chart (report.js re-aggregates it per pixel
 * column of the range shown): base64 of, per column of the fine grid, a
 * count byte, then per cell its band and the y of its greatest and least
 * loss, each a 16-bit fraction of the plot's height (little-endian). */
static void zoom_data(FILE *fp, const struct rm_plot *p, const struct scale *sc)
{
	if (p->fine_cols <= 0)
		return;
	size_t cells = p->fine_at[p->fine_cols - 1] + p->fine_n[p->fine_cols - 1];
	size_t n = (size_t)p->fine_cols + cells * 5, j = 0;
	uint8_t *raw = rm_xmalloc(n);
	for (int c = 0; c < p->fine_cols; c++) {
		raw[j++] = p->fine_n[c];
		for (uint32_t i = p->fine_at[c]; i < p->fine_at[c] + p->fine_n[c]; i++) {
			raw[j++] = p->fine_b[i];
			for (int e = 1; e >= 0; e--) {
				double u = (sy(p->fine_v[2 * i + e], sc) - 10) / (H - 40) * 65535;
				uint16_t q = (uint16_t)(u < 0 ? 0 : u > 65535 ? 65535 : u + 0.5);
				raw[j++] = (uint8_t)(q & 0xff);
				raw[j++] = (uint8_t)(q >> 8);
			}
		}
	}
	size_t cap = (n + 2) / 3 * 4 + 1;
	char *b64 = rm_xmalloc(cap);
	rm_base64(raw, n, b64, cap);
	fprintf(fp, " data-m4-cols='%d' data-m4-bands='%d' data-m4='%s'", p->fine_cols, p->bands, b64);
	free(b64);
	free(raw);
}

/* Every reset ticked under the curve in its column. */
static void reset_ticks(FILE *fp, const struct rm_diagnosis *d)
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
}

/* The largest resets marked with their hover text, outside the zoomed
 * layer (a zoom moves a mark, it does not stretch it). Returns how many. */
static size_t reset_marks(FILE *fp, const struct rm_diagnosis *d, const struct scale *sc, double hi, int64_t x0,
                          int64_t x1)
{
	size_t spikes = d->resets.spikes < RM_MAX_LIST ? d->resets.spikes : RM_MAX_LIST;
	for (size_t i = 0; i < spikes; i++) {
		const struct rm_spike *s = &d->resets.list[i];
		double x = sx(s->step, x0, x1), y = sy(fmin(s->loss, hi), sc);
		fprintf(fp,
		        "<path class='spike mark' data-step='%lld' d='M%.1f %.1fl-5 -9h10z' fill='#000' stroke='#fff'>"
		        "<title>loss reset at step %lld: loss %.4g, baseline %.4g, bucket ",
		        (long long)s->step, x, y - 2, (long long)s->step, s->loss, s->baseline);
		rm_html_esc(fp, s->bucket >= 0 ? rm_bucket_label_short(d, s->bucket) : "?");
		fputs("</title></path>", fp);
	}
	return spikes;
}

/* The loss of each bucket as bands, the bucket-adjusted curve over it
 * (and the length-adjusted one, dashed, when a length effect was fitted),
 * the significant ladders shaded and resets marked, each with hover text. */
static void loss_chart(FILE *fp, const struct rm_diagnosis *d, size_t run)
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
	step_chart_open(fp, "loss", H, x0, x1);
	fprintf(fp, " data-lo='%.9g' data-hi='%.9g' data-log='%d' data-ph='%d'", sc.lo, sc.hi, sc.log, H - 40);
	zoom_data(fp, p, &sc);
	fputc('>', fp);
	fputs("<title>loss by step</title>", fp);
	axes(fp, &sc, x0, x1, "loss",
	     by_length
	         ? "loss of each bucket (coloured, least to greatest per column), bucket-adjusted loss (line),"
	           " length-adjusted loss (dashed)"
	         : "loss of each bucket (coloured, least to greatest per column) and bucket-adjusted loss (line)");
	zoom_open(fp, run, "loss", 10, H - 40);
	size_t ladders = ladder_shading(fp, d, x0, x1);
	/* The reference lines beneath the bucket marks, thin and translucent:
	 * drawn over them they hid the bucket nearest the reference level. */
	fputs("<polyline class='adjusted' data-name='adjusted loss' fill='none' stroke='#000' stroke-width='1.2' "
	      "stroke-opacity='0.7' points='",
	      fp);
	for (int i = 0; i < p->n; i++)
		fprintf(fp, "%.1f,%.1f ", sx(p->step[i], x0, x1), sy(p->adjusted[i], &sc));
	fputs("'/>", fp);
	if (by_length) {
		fputs("<polyline class='length-adjusted' data-name='length-adjusted loss' fill='none' stroke='#555' "
		      "stroke-width='1' stroke-opacity='0.7'"
		      " stroke-dasharray='4 2' points='",
		      fp);
		for (int i = 0; i < p->n; i++)
			if (isfinite(p->length_adjusted[i]))
				fprintf(fp, "%.1f,%.1f ", sx(p->step[i], x0, x1), sy(p->length_adjusted[i], &sc));
		fputs("'/>", fp);
	}
	loss_bands(fp, p, d, &sc);
	reset_ticks(fp, d);
	fputs("</g></g>", fp);
	size_t spikes = reset_marks(fp, d, &sc, hi, x0, x1);
	fputs("</svg>\n", fp);
	legend(fp, d, 1, by_length, (int)spikes, (int)ladders, 0);
}

/* One bucket's box: 5-95% whisker, 25-75% box, median line. */
static void box(FILE *fp, const float *q, double x, double w, const char *c, const struct scale *sc)
{
	fprintf(fp, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s'/>", x, x, sy(q[0], sc), sy(q[4], sc), c);
	fprintf(fp, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s' fill-opacity='0.35' stroke='%s'/>",
	        x - w / 2, sy(q[3], sc), w, fmax(sy(q[1], sc) - sy(q[3], sc), 1), c, c);
	fprintf(fp, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#000'/>", x - w / 2, x + w / 2, sy(q[2], sc),
	        sy(q[2], sc));
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
	/* Room inside the frame: above the top whisker, and below the lowest
	 * for the bucket labels, which never sit on a box (issue 66.4). */
	struct scale sc = scale_of(lo, hi);
	double span = sc.hi - sc.lo > 0 ? sc.hi - sc.lo : fabs(sc.hi) * 0.1 + 1e-9;
	sc.lo -= 0.3 * span;
	sc.hi += 0.06 * span;
	fprintf(fp, "<svg class='chart buckets' viewBox='0 0 %d %d' width='%d' height='%d' role='img'>", W, H, W, H);
	fputs("<title>loss per bucket</title>", fp);
	axes(fp, &sc, 0, 0, "loss",
	     p->q_dominant ? "loss per bucket (each step by its dominant bucket): 5-95% whiskers, 25-75% box, median"
	                   : "loss per bucket: 5-95% whiskers, 25-75% box, median line");
	double slot = (double)(W - PAD - 10) / k;
	for (int b = 0; b < k; b++) {
		double x = PAD + slot * (b + 0.5), w = fmin(slot * 0.5, 60);
		const char *c = bucket_colour(d, b);
		fprintf(fp, "<g data-b='%d'>", b);
		if (!isfinite(p->q[b][0])) /* a slot that says why it is empty */
			fprintf(fp,
			        "<text x='%.1f' y='%d' font-size='10' text-anchor='middle' fill='#777'>no step led"
			        " by it</text>",
			        x, H / 2);
		else
			box(fp, p->q[b], x, w, c, &sc);
		/* a derived label is its range; labels too wide for their slot
		 * (about 6 px a character) take two staggered rows */
		const char *lab = rm_bucket_label_short(d, d->curves.bucket[b]);
		const char *pre = d->nderived > b + 1 ? "" : "bucket ";
		int stagger = slot < 6.0 * (double)(strlen(pre) + strlen(lab)) && (b & 1);
		fprintf(fp, "<text class='blabel' x='%.1f' y='%d' font-size='12' text-anchor='middle'>%s", x,
		        H - (stagger ? 36 : 50), pre);
		rm_html_esc(fp, lab);
		fputs("</text></g>", fp);
	}
	fputs("</svg>\n", fp);
}

/* The buckets of the batches, each cell stacked by their shares: long
 * same-colour stretches are the same-bucket runs, an interleaved order a
 * braid of every colour. */
static void strip_chart(FILE *fp, const struct rm_diagnosis *d, size_t run)
{
	const struct rm_plot *p = &d->plot;
	if (p->strip_n == 0)
		return;
	step_chart_open(fp, "strip", 60, p->strip_first, p->strip_last);
	fputs("><title>bucket of each batch</title>", fp);
	zoom_open(fp, run, "strip", 4, 34);
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
		fprintf(fp, "<rect data-b='%d' x='%.1f' y='8' width='%.1f' height='26' fill='%s'/>", b, PAD + cw * c,
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
				fprintf(fp, "<path class='share' data-b='%d' stroke='%s' stroke-width='%.2f' d='", b,
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
	        "</g></g><text x='%d' y='50' font-size='11'>step <tspan class='v0'>%lld</tspan></text>"
	        "<text x='%d' y='50' font-size='11' text-anchor='end'>step <tspan class='v1'>%lld</tspan>: bucket of"
	        " each batch</text></svg>\n",
	        PAD, (long long)p->strip_first, W - 10, (long long)p->strip_last);
}

/* One row per rank, one cell per step of a window: columns of one colour
 * across the rows are ranks in lockstep, long stretches along a row are
 * one rank's streaks. */
static void rank_chart(FILE *fp, const struct rm_diagnosis *d, size_t run)
{
	const struct rm_plot *p = &d->plot;
	if (p->rank_rows == 0)
		return;
	const int row = 14, top = 6, h = top + row * p->rank_rows + 22;
	step_chart_open(fp, "ranks", h, p->rank_first, p->rank_last);
	fputs("><title>bucket of each rank's batches</title>", fp);
	double cw = (double)(W - PAD - 10) / p->rank_cells;
	for (int r = 0; r < p->rank_rows; r++)
		fprintf(fp, "<text x='%d' y='%d' font-size='10' text-anchor='end'>rank %d</text>", PAD - 4,
		        top + row * r + row - 4, r);
	zoom_open(fp, run, "ranks", top, row * p->rank_rows);
	for (int r = 0; r < p->rank_rows; r++) {
		int y = top + row * r;
		fprintf(fp, "<g class='rank' data-rank='%d'>", r);
		for (int c = 0; c < p->rank_cells; c++)
			if (p->rank_strip[r][c] >= 0)
				fprintf(fp, "<rect data-b='%d' x='%.2f' y='%d' width='%.2f' height='%d' fill='%s'/>",
				        p->rank_strip[r][c], PAD + cw * c, y, cw + 0.05, row - 2,
				        bucket_colour(d, p->rank_strip[r][c]));
		fputs("</g>", fp);
	}
	fprintf(fp,
	        "</g></g><text x='%d' y='%d' font-size='11'>step <tspan class='v0'>%lld</tspan></text><text x='%d'"
	        " y='%d' font-size='11' text-anchor='end'>step <tspan class='v1'>%lld</tspan>: bucket of each rank's"
	        " batch, step by step (one colour down a column: ranks in lockstep)",
	        PAD, h - 6, (long long)p->rank_first, W - 10, h - 6, (long long)p->rank_last);
	if (p->ranks > p->rank_rows)
		fprintf(fp, " (ranks 0 to %d of %d)", p->rank_rows - 1, p->ranks);
	fputs("</text></svg>\n", fp);
}

/* ---- overlay: several runs on one chart ------------------------------------ */

/* Each run's ink and dash, and its marker's shape in the levels chart. */
static const char *const run_ink[] = {"#000", "#b00020", "#555", "#0072B2"};
static const char *const run_dash[] = {"none", "6 3", "2 2", "8 3 2 3"};

static void run_marker(FILE *fp, int j, double x, double y, const char *fill)
{
	if (j % 4 == 0)
		fprintf(fp, "<circle cx='%.1f' cy='%.1f' r='4.5'", x, y);
	else if (j % 4 == 1)
		fprintf(fp, "<rect x='%.1f' y='%.1f' width='9' height='9'", x - 4.5, y - 4.5);
	else if (j % 4 == 2)
		fprintf(fp, "<path d='M%.1f %.1fl5 5l-5 5l-5 -5z'", x, y - 5);
	else
		fprintf(fp, "<path d='M%.1f %.1fl5 9h-10z'", x, y - 5);
	fprintf(fp, " fill='%s' stroke='%s' stroke-width='1.5'/>", fill, run_ink[j % 4]);
}

/* Every run's bucket-adjusted loss by step on one chart, explorable as a
 * run's charts are. */
static void overlay_loss(FILE *fp, const struct rm_compare_side *s, int n)
{
	double lo = INFINITY, hi = -INFINITY;
	int64_t x0 = INT64_MAX, x1 = INT64_MIN;
	for (int j = 0; j < n; j++) {
		const struct rm_plot *p = &s[j].d->plot;
		for (int i = 0; i < p->n; i++)
			if (isfinite(p->adjusted[i])) {
				lo = fmin(lo, p->adjusted[i]);
				hi = fmax(hi, p->adjusted[i]);
				x0 = p->step[i] < x0 ? p->step[i] : x0;
				x1 = p->step[i] > x1 ? p->step[i] : x1;
			}
	}
	if (!(hi >= lo))
		return;
	struct scale sc = scale_of(lo, hi);
	step_chart_open(fp, "overlay-loss", H, x0, x1);
	fprintf(fp, " data-lo='%.9g' data-hi='%.9g' data-log='%d' data-ph='%d'>", sc.lo, sc.hi, sc.log, H - 40);
	fputs("<title>bucket-adjusted loss of each run by step</title>", fp);
	axes(fp, &sc, x0, x1, "bucket-adjusted loss", "bucket-adjusted loss of each run by step");
	zoom_open(fp, 0, "overlay", 10, H - 40);
	for (int j = 0; j < n; j++) {
		const struct rm_plot *p = &s[j].d->plot;
		fprintf(fp, "<polyline class='adjusted run-%c' data-name='", 'a' + j % 26);
		rm_html_esc(fp, s[j].name);
		fprintf(fp, "' fill='none' stroke='%s' stroke-width='1.2' stroke-dasharray='%s' points='",
		        run_ink[j % 4], run_dash[j % 4]);
		for (int i = 0; i < p->n; i++)
			if (isfinite(p->adjusted[i]))
				fprintf(fp, "%.1f,%.1f ", sx(p->step[i], x0, x1), sy(p->adjusted[i], &sc));
		fputs("'/>", fp);
	}
	fputs("</g></g></svg>\n<div class='legend'>", fp);
	for (int j = 0; j < n; j++) {
		char sw[200];
		snprintf(sw, sizeof(sw),
		         "<line x1='0' x2='14' y1='7' y2='7' stroke='%s' stroke-width='2' stroke-dasharray='%s'/>",
		         run_ink[j % 4], strcmp(run_dash[j % 4], "none") ? "3 2" : "none");
		key(fp, sw, s[j].name, -1, NULL);
	}
	fputs("</div>\n", fp);
}

/* The buckets of several runs, matched by label: which dense bucket of
 * run j each label is (-1 none), in the order they are first met. */
struct overlay_buckets {
	int k;
	char label[RM_MAX_BUCKETS][64];
	int dense[RM_MAX_BUCKETS][4];
};

static void overlay_match(const struct rm_compare_side *s, int n, struct overlay_buckets *o)
{
	memset(o, 0, sizeof(*o));
	for (int j = 0; j < n && j < 4; j++)
		for (int b = 0; b < s[j].d->curves.k; b++) {
			if (!isfinite(s[j].d->plot.q[b][2]))
				continue;
			const char *lab = rm_bucket_label_short(s[j].d, s[j].d->curves.bucket[b]);
			int at = 0;
			while (at < o->k && strcmp(o->label[at], lab))
				at++;
			if (at == o->k) {
				if (o->k == RM_MAX_BUCKETS)
					continue;
				snprintf(o->label[o->k], sizeof(o->label[0]), "%s", lab);
				for (int r = 0; r < 4; r++)
					o->dense[o->k][r] = -1;
				o->k++;
			}
			o->dense[at][j] = b;
		}
}

/* The split's index of the bucket labelled label in d, -1 none. */
static int level_index(const struct rm_diagnosis *d, const char *label)
{
	for (int i = 0; d->split.ok && i < d->split.k; i++)
		if (!strcmp(rm_bucket_label_short(d, d->split.bucket[i]), label))
			return i;
	return -1;
}

/* What the levels chart draws of bucket b in run j: the fitted level and
 * its 95% interval (the compare table's numbers) when every run has a
 * split on one scale, else the median and 25-75% of the steps it leads.
 * Returns 0 when the run has nothing of the bucket. */
static int level_point(const struct rm_compare_side *s, const struct overlay_buckets *o, int fitted, int b, int j,
                       double v[3])
{
	const struct rm_diagnosis *d = s[j].d;
	if (fitted) {
		int i = level_index(d, o->label[b]);
		if (i < 0 || !isfinite(d->split.level[i]))
			return 0;
		v[0] = d->split.level_lo[i];
		v[1] = d->split.level[i];
		v[2] = d->split.level_hi[i];
		return 1;
	}
	if (o->dense[b][j] < 0)
		return 0;
	const float *q = d->plot.q[o->dense[b][j]];
	v[0] = q[1];
	v[1] = q[2];
	v[2] = q[3];
	return 1;
}

/* Each bucket in every run side by side, from the numbers the compare
 * table shows: the fitted levels (issue 66.4: a chart of medians beside
 * a table of levels told two stories). */
static void overlay_levels(FILE *fp, const struct rm_compare_side *s, int n)
{
	struct overlay_buckets o;
	overlay_match(s, n, &o);
	if (o.k == 0)
		return;
	n = n < 4 ? n : 4;
	int fitted = 1, log_scale = s[0].d->split.log_scale, mixed = 0;
	for (int j = 0; j < n; j++) {
		fitted &= s[j].d->split.ok && s[j].d->split.log_scale == log_scale;
		mixed |= s[j].d->plot.q_dominant || s[j].d->split.mixed_batches > 0;
	}
	double lo = INFINITY, hi = -INFINITY, v[3];
	for (int b = 0; b < o.k; b++)
		for (int j = 0; j < n; j++)
			if (level_point(s, &o, fitted, b, j, v))
				for (int e = 0; e < 3; e++)
					if (isfinite(v[e])) {
						lo = fmin(lo, v[e]);
						hi = fmax(hi, v[e]);
					}
	if (!(hi >= lo))
		return;
	double padv = (hi - lo) * 0.08 + 1e-9; /* whiskers and markers inside the frame */
	struct scale sc = scale_of(lo - padv, hi + padv);
	fprintf(fp, "<svg class='chart levels' viewBox='0 0 %d %d' width='%d' height='%d' role='img'>", W, H, W, H);
	fputs("<title>loss level of each bucket in each run</title>", fp);
	axes(fp, &sc, 0, 0, fitted ? (log_scale ? "level (x trend)" : "level (+ trend)") : "loss",
	     fitted
	         ? "fitted level of each bucket in each run, as in the table: marker, with its 95% interval where known"
	     : mixed ? "loss of each bucket in each run: median and 25-75%; mixed batches count under their longest "
	               "sample's bucket"
	             : "loss of each bucket in each run: median (marker) and 25-75% (line)");
	double slot = (double)(W - PAD - 10) / o.k;
	for (int b = 0; b < o.k; b++) {
		for (int j = 0; j < n; j++) {
			if (!level_point(s, &o, fitted, b, j, v))
				continue;
			int db = o.dense[b][j];
			double x = PAD + slot * b + slot * (j + 1) / (n + 1);
			fprintf(fp, "<g data-b='%d' data-level='%.6g'>", db, v[1]);
			if (isfinite(v[0]) && isfinite(v[2]))
				fprintf(fp,
				        "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' stroke-width='2'/>",
				        x, x, sy(v[0], &sc), sy(v[2], &sc), run_ink[j]);
			run_marker(fp, j, x, sy(v[1], &sc), db >= 0 ? bucket_colour(s[j].d, db) : "#fff");
			fputs("</g>", fp);
		}
		fprintf(fp, "<text x='%.1f' y='%d' font-size='12' text-anchor='middle'>bucket ", PAD + slot * (b + 0.5),
		        H - 16);
		rm_html_esc(fp, o.label[b]);
		fputs("</text>", fp);
	}
	fputs("</svg>\n<div class='legend'>", fp);
	for (int j = 0; j < n; j++) {
		char *sw = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&sw, &len);
		run_marker(m, j, 7, 7, "#fff");
		fclose(m);
		key(fp, sw, s[j].name, -1, NULL);
		free(sw);
	}
	fputs("</div>\n", fp);
}

void rm_report_charts_html(FILE *fp, const struct rm_diagnosis *d, size_t run)
{
	loss_chart(fp, d, run);
	box_chart(fp, d);
	strip_chart(fp, d, run);
	rank_chart(fp, d, run);
	if (d->plot.strip_n)
		legend(fp, d, 0, 0, 0, 0, d->runs.nworst > 0);
}

void rm_report_overlay_html(FILE *fp, const struct rm_compare_side *s, int n)
{
	overlay_loss(fp, s, n);
	overlay_levels(fp, s, n);
}
