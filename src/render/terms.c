/*
 * terms.c - the glossary: one plain line per statistic runmon shows (what
 * it measures, which way is bad, the threshold), for `runmon help terms`,
 * docs/terms.md (written from it, and checked against it by a test) and
 * the tooltips and glossary section of the HTML report. The thresholds are
 * the detectors' (docs/decisions.md says how each was chosen).
 */
#include <stdio.h>
#include <string.h>

#include "report_internal.h"
#include "runmon/render.h"

const struct rm_term rm_terms[] = {
    {"severity", "ok, info, warn, critical",
     "a run's state: ok (healthy, nothing to act on), warn (a cause found: act on it), critical (a cause found "
     "strongly, or the loss diverged); a finding of its own may also be info (worth knowing, no action)",
     "warn and critical", "--fail-on (default warn) sets the exit status"},
    {"streaks", "same-bucket streaks, z",
     "the streaks of batches in a row from one bucket, against a random order of the same batches: z is "
     "(streaks - expected) / sd, in standard deviations",
     "below 0: fewer, longer streaks than random (homogeneous batching); above 0 is more interleaved than "
     "random, as a stride sampler makes it",
     "flagged at z <= -4 with q < 0.01"},
    {"eta2", "eta^2 (loss split by bucket)",
     "the share (0 to 1) of the detrended loss's variance that each point's bucket explains; the F-test beside "
     "it says whether it could be chance",
     "high beside long same-bucket streaks: the curve is a braid of levels; high in an interleaved run is "
     "information, not an alarm",
     "an alarm only with streaks, ladders or resets by bucket"},
    {"r2-shares", "R^2 on bucket shares",
     "eta^2's counterpart when a point mixes buckets (an interval mean, mixed batches): the share of variance "
     "the points' bucket shares explain",
     "as eta^2", "as eta^2; compare shows the change only when both runs are read the same way"},
    {"modes", "modes, trimodal",
     "the peaks of the detrended loss's distribution (a Gaussian mixture of 1 to 4 components, their number "
     "chosen by BIC); a bucket's mode is the peak its points fall in (numbered 1, 2, ... from the lowest)",
     "several modes that line up with buckets, in a streaky run: the braid; trimodal is exactly three, each "
     "bucket's points mostly in one",
     "trimodal: 3 modes and 80% of each bucket's points in one"},
    {"bic", "BIC",
     "Bayesian information criterion: the fit of a mixture penalised by its number of parameters; the number "
     "of modes with the lowest BIC is kept",
     "-", "lowest wins"},
    {"level", "level, x trend",
     "a bucket's loss relative to the run's trend: x0.5 is half the trend, x2 twice it (on the log scale); "
     "+0.3 is 0.3 above it (on the linear scale)",
     "levels far apart in a streaky run make the braid", "-"},
    {"interval", "95% interval",
     "the range that holds a bucket's true level 95% of the time (batch means over 20 blocks of the run)",
     "wide: few points of the bucket",
     "'-' where streaks confound level and trend, or the run is under about 4,400 points"},
    {"p", "p", "the chance of a result at least this extreme if nothing were there", "small",
     "0.05 for ladders, 0.001 "
     "for the reading of a point"},
    {"q", "q-value", "a p-value adjusted for the many tests of one diagnosis (Benjamini-Hochberg false discovery rate)",
     "small: the finding is unlikely to be chance", "a finding needs q < 0.01"},
    {"evidence", "evidence",
     "-log10 of a hypothesis's strongest q-value: 2 means q = 0.01, 10 means q = 1e-10; hypotheses are listed "
     "strongest first",
     "high", "2 and more"},
    {"ladder", "ladder",
     "a staircase in the interval-averaged loss: at least 3 rises of 3 robust sigmas each, no fall between, "
     "back below half its height within 3 intervals",
     "more ladders than the same loss in shuffled bucket order gives", "p < 0.05 against 39 to 99 shuffles"},
    {"mann-kendall", "Mann-Kendall z",
     "how steadily a ladder climbs (a rank test for a monotone trend), in standard deviations", "high: a steady climb",
     "a ladder needs z > 2"},
    {"reset", "loss reset, spike",
     "a reset jumps to 1.5x what the point's batches expect or more (5 robust scales above) and decays within "
     "64 points; a spike is one point alone, with no decay",
     "resets that cluster by bucket (long batches), not after saves",
     "clustered by bucket at q < 0.01 (chi2), with at least 1 expected in the bucket"},
    {"chi2", "chi2, Cramer's V",
     "chi2 tests whether resets fall in buckets in proportion to the buckets' share of points; Cramer's V (0 "
     "to 1) is how strong the lopsidedness is",
     "large chi2 (small q); V of 0.1 is small, 0.3 medium, 0.5 large", "q < 0.01"},
    {"enrichment", "Nx its share",
     "a bucket's share of the resets over its share of the points: 3x means three times as many resets as "
     "its size would give",
     "above 1", "a binomial q < 0.01"},
    {"length-r2", "R^2 (loss and length), [lo, hi]",
     "the share of the detrended log loss that the batch's log length explains, with its 95% interval",
     "high with ordered lengths: homogeneous batching seen from the lengths alone",
     "coupled at R^2 >= 0.1 with lo >= 0.05"},
    {"effective", "effective points",
     "how many independent points an autocorrelated series is worth (Bartlett); intervals use it",
     "far fewer than the points: the series moves slowly", "-"},
    {"coupled", "coupled, ordered",
     "coupled: the loss follows the batch's length (see R^2); ordered: consecutive batches have similar "
     "lengths (lag-1 autocorrelation of log length)",
     "both at once: homogeneous batching", "ordered at autocorrelation >= 0.5"},
    {"adjusted", "bucket-adjusted loss",
     "the loss with each bucket's level removed: the curve to watch, where batches' lengths no longer move it",
     "rising, or spikes that stay after adjusting", "-"},
    {"length-adjusted", "length-adjusted loss",
     "the loss at one reference length (the geometric mean), from the fitted loss-length slope", "as adjusted", "-"},
    {"padding", "padding efficiency",
     "real tokens / padded tokens of the batches (measured); the re-packed figures are estimates from the "
     "run's lengths for other batchings",
     "low: compute spent on padding", "compare: a fall beyond --max-cost points (5) is a price"},
    {"throughput", "tokens per second", "real tokens over the time their steps took (from _runtime or timestamps)",
     "low", "compare: a fall beyond --max-cost percent (5) is a price"},
    {"change", "change (compare)",
     "after minus before: in units for z, eta^2, counts and efficiency (points), relative (%) for levels, the "
     "adjusted loss and throughput",
     "a cause new or risen, the adjusted loss up beyond --max-loss (1%), padding or throughput down beyond "
     "--max-cost (5)",
     "outcomes: resolved, no worse (exit 0), resolved at a price (5), worse (1)"},
    {"lockstep", "lockstep, concordance",
     "concordance: the share of steps whose ranks all draw one bucket, against chance; lockstep is ranks "
     "drawing one bucket together",
     "with long streaks: a bucket-chunked global order sharded across ranks",
     "lockstep at concordance >= 50% and z >= 4; said 'in lockstep' at 90%"},
    {"reading", "reading: mean or step",
     "what one logged point is: the mean of the steps since the last (most trainers), or one step's loss "
     "(nanoGPT, Lightning's *_step)",
     "an assumed reading the evidence did not test", "a challenger wins at p < 0.001 and twice the R^2"},
    {"join", "join", "how many loss points have their batches, and batches a loss, on the same steps",
     "a low share: losses "
     "on the wrong steps",
     "a warning when batches are recorded and no loss point meets one"},
    {"epoch-r", "r (order across epochs)",
     "the correlation of the detrended loss at one in-epoch step, epoch against the next, against turned "
     "offsets (z)",
     "high: every epoch repeats one data order", "r >= 0.3 and z >= 6"},
};

const size_t rm_nterms = sizeof(rm_terms) / sizeof(rm_terms[0]);

const struct rm_term *rm_term_find(const char *id)
{
	for (size_t i = 0; i < rm_nterms; i++)
		if (!strcmp(rm_terms[i].id, id))
			return &rm_terms[i];
	return NULL;
}

/* label and text, wrapped at word boundaries to 78 columns, the lines
 * after the first indented under the text. */
static void wrapped(FILE *fp, const char *label, const char *text)
{
	enum { WIDTH = 78, INDENT = 13 };
	int col = fprintf(fp, "  %-*s", INDENT - 2, label);
	for (const char *w = text; *w;) {
		size_t n = strcspn(w, " ");
		if (col > INDENT && col + 1 + (int)n > WIDTH) {
			fprintf(fp, "\n%*s", INDENT, "");
			col = INDENT;
		} else if (col > INDENT) {
			fputc(' ', fp);
			col++;
		}
		fwrite(w, 1, n, fp);
		col += (int)n;
		w += n;
		w += strspn(w, " ");
	}
	fputc('\n', fp);
}

void rm_terms_text(FILE *fp)
{
	fputs("The statistics runmon shows, in plain words (docs/terms.md holds the same):\n", fp);
	for (size_t i = 0; i < rm_nterms; i++) {
		const struct rm_term *t = &rm_terms[i];
		fprintf(fp, "\n%s\n", t->name);
		wrapped(fp, "what:", t->what);
		wrapped(fp, "bad:", t->bad);
		wrapped(fp, "threshold:", t->threshold);
	}
}

void rm_terms_md(FILE *fp)
{
	fputs("# Terms\n\n"
	      "<!-- Written by `runmon help terms --markdown`; tests/e2e/help.sh checks it is. -->\n\n"
	      "Every statistic runmon shows, in one plain line each: what it measures, which\n"
	      "way is bad, and the threshold runmon uses. `runmon help terms` prints the same;\n"
	      "the HTML report shows each as the tooltip of its cell and in its own glossary.\n"
	      "How each threshold was chosen is in [how runmon decides](decisions.md).\n\n"
	      "| term | what it measures | bad | threshold |\n|---|---|---|---|\n",
	      fp);
	for (size_t i = 0; i < rm_nterms; i++) {
		const struct rm_term *t = &rm_terms[i];
		fprintf(fp, "| <a id='%s'></a>%s | %s | %s | %s |\n", t->id, t->name, t->what, t->bad, t->threshold);
	}
}

/* The term's line as a tooltip: "what; bad: ...; threshold: ...". */
void rm_term_title(FILE *fp, const char *id)
{
	const struct rm_term *t = rm_term_find(id);
	if (!t)
		return;
	char line[1024];
	snprintf(line, sizeof(line), "%s: %s. Bad: %s. Threshold: %s.", t->name, t->what, t->bad, t->threshold);
	fputs(" title='", fp);
	rm_html_esc(fp, line);
	fputc('\'', fp);
}

void rm_terms_html(FILE *fp)
{
	fputs("<section id='terms'><h2>Terms</h2><table class='terms'><tr><th>term</th><th>what it measures</th>"
	      "<th>bad</th><th>threshold</th></tr>\n",
	      fp);
	for (size_t i = 0; i < rm_nterms; i++) {
		const struct rm_term *t = &rm_terms[i];
		const char *cell[4] = {t->name, t->what, t->bad, t->threshold};
		fprintf(fp, "<tr id='term-%s'>", t->id);
		for (int c = 0; c < 4; c++) {
			fputs("<td>", fp);
			rm_html_esc(fp, cell[c]);
			fputs("</td>", fp);
		}
		fputs("</tr>\n", fp);
	}
	fputs("</table></section>\n", fp);
}
