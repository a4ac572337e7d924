/*
 * render_report.c - nightly reports: one self-contained HTML file (inline
 * SVG charts from report_charts.c, readable without its script), Markdown,
 * and JSON with the diagnosis schema for several runs. Every user-
 * controlled string (run names, keys, config values) goes through
 * rm_html_esc() or rm_md_esc().
 */
#include <stdlib.h>
#include <string.h>

#include "runmon/render.h"
#include "report_internal.h"
#include "runmon/common.h"

/* ---- HTML ------------------------------------------------------------ */

/* An evidence row's first cell: the detector, linked to its line of the
 * report's glossary, the line itself its tooltip. */
static void term_cell(FILE *fp, const char *label, const char *term)
{
	fprintf(fp, "<tr><td><a href='#term-%s'", term);
	rm_term_title(fp, term);
	fprintf(fp, ">%s</a></td>", label);
}

void rm_render_report_html(FILE *fp, const struct rm_report *r)
{
	const struct rm_report_run *runs = r->runs;
	size_t n = r->n;
	char when[32], name[512], line[RM_VERDICT_LEN];
	const char *fix[8];
	rm_iso_time(r->generated, when, sizeof(when));
	fputs("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>runmon report</title>", fp);
	rm_report_html_head(fp);
	fputs("</head><body>\n<h1>runmon report</h1>\n", fp);
	fprintf(fp, "<p>Generated %s.</p>\n", when);
	if (r->compare) {
		rm_compare_html(fp, r);
		fputs("<h3>Both runs</h3>\n", fp);
		rm_report_overlay_html(fp, r->compare_side, 2);
		fputs("</section>\n", fp);
	}
	if (r->noverlay) {
		fputs("<section id='overlay' class='overlay'><h2>Overlaid: ", fp);
		for (int i = 0; i < r->noverlay; i++) {
			fputs(i ? ", " : "", fp);
			rm_html_esc(fp, r->overlay[i].name);
		}
		fputs("</h2>\n", fp);
		rm_report_overlay_html(fp, r->overlay, r->noverlay);
		fputs("</section>\n", fp);
	}
	rm_report_head_html(fp, r);
	for (size_t i = 0; i < n; i++) {
		const struct rm_diagnosis *d = runs[i].d;
		rm_report_run_name(runs[i].info, name, sizeof(name));
		fprintf(fp, "<section id='run-%zu' class='run'><h2>", i);
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
		int jw = rm_explain_join(&d->join, line, sizeof(line));
		if (jw) {
			fprintf(fp, "<p class='join%s'>", jw == 2 ? " warn" : "");
			rm_html_esc(fp, line);
			fputs("</p>\n", fp);
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
		rm_report_charts_html(fp, d, i);
		fputs("<h3>Evidence</h3><table class='evidence'><tr><th>detector</th><th>finding</th></tr>\n", fp);
		if (d->runs.ok) {
			term_cell(fp, "same-bucket streaks", "streaks");
			fprintf(fp,
			        "<td>%.0f streaks, %.0f expected at random, z = "
			        "%.2f%s</td></tr>\n",
			        d->runs.runs, d->runs.expected, d->runs.z, d->runs.flagged ? " (flagged)" : "");
		}
		if (d->split.ok) {
			term_cell(fp, "loss split", "eta2");
			fprintf(fp, "<td>%s = %.3f, %d mode%s%s</td></tr>\n", d->split.mixed ? "R&sup2;" : "eta&sup2;",
			        d->split.eta2, d->split.modes, d->split.modes == 1 ? "" : "s",
			        d->split.trimodal ? " (trimodal)" : "");
		}
		if (d->length.ok) {
			term_cell(fp, "loss and length", "length-r2");
			fprintf(fp,
			        "<td>R&sup2; = %.3f [%.3f, %.3f], slope %.3f; length"
			        " autocorrelation %.2f%s%s</td></tr>\n",
			        d->length.r2, d->length.r2_lo, d->length.r2_hi, d->length.slope, d->length.acf[0],
			        d->length.coupled ? " (coupled)" : "", d->length.ordered ? " (ordered)" : "");
		}
		if (d->ladder.ok && d->ladder.perms) {
			term_cell(fp, "ladders", "ladder");
			fprintf(fp, "<td>%zu, %.1f in shuffled order, p = %.3f%s</td></tr>\n", d->ladder.count,
			        d->ladder.perm_mean, d->ladder.p, d->ladder.ramp ? "; length ramps" : "");
		} else if (d->ladder.ok) {
			term_cell(fp, "ladders", "ladder");
			fprintf(fp, "<td>%zu staircases, not tested (no batch composition)</td></tr>\n",
			        d->ladder.count);
		}
		if (d->resets.ok) {
			term_cell(fp, "loss resets", "reset");
			fprintf(fp,
			        "<td>%zu spikes; by bucket q = %.2g%s; after saves q = "
			        "%.2g%s</td></tr>\n",
			        d->resets.spikes, d->resets.chi2_q, d->resets.cluster_by_bucket ? " (clustered)" : "",
			        d->resets.ckpt_q, d->resets.checkpoint_cause ? " (aligned)" : "");
		}
		if (d->cost.ok) {
			char words[384];
			rm_price_words(&d->cost, words, sizeof(words));
			term_cell(fp, "padding", "padding");
			fputs("<td>", fp);
			rm_html_esc(fp, words);
			fputs("</td></tr>\n", fp);
		}
		fputs("</table></section>\n", fp);
	}
	rm_terms_html(fp);
	rm_report_html_script(fp);
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
		if (rm_explain_join(&d->join, line, sizeof(line))) {
			fputs("\n\n", fp);
			rm_md_esc(fp, line);
		}
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
