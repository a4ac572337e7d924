/*
 * detect_verdict.c - ranks the explanations a person would consider and
 * sets each finding's severity.
 *
 * The false discovery rate is controlled with Benjamini-Hochberg (1995)
 * over the runs test, the split's F-test and the reset tests (spikes x
 * bucket, each bucket's enrichment, checkpoint phase, epoch and
 * learning-rate proximity); a test counts only when its q-value is below
 * alpha. The ladder test is a permutation test with its own floor of
 * 1/(perms+1) and is judged on its p-value.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

/* -log10 p, from z when p underflows. */
static double evidence(double p, double z)
{
	if (p >= 1)
		return 0;
	if (p > 1e-300)
		return fmin(300, -log10(p));
	return fmin(300, z * z / 2 * M_LOG10E);
}

/* An inferred period and a bucket that both explain the resets compete:
 * the conditional tests say which explains beyond the other. When neither
 * does (the order is periodic, so both pick the same steps), a period
 * whose events fill half its cycles wins: a bucket's resets fill few. */
static void periodic_or_bucket(const struct rm_detect_opts *o, const struct rm_ladder_result *la,
                               struct rm_resets_result *re)
{
	int periodic = re->period && re->spikes >= 5 && re->period_q < o->alpha && rm_period_covers(re);
	/* Length ramps repeat with the megabatch (a period in each rank's
	 * batches, one a step): spikes on a multiple of it are the order's. */
	if (periodic && la->ramp && la->ramp_period > 1) {
		int64_t r = re->period % la->ramp_period;
		if (r <= 1 || r >= la->ramp_period - 1) {
			re->period_alias = 1;
			re->periodic_cause = 0;
			return;
		}
	}
	if (periodic && re->cluster_by_bucket) {
		int beyond_bucket = re->period_beyond_bucket_p < o->alpha;
		int beyond_period = re->bucket_beyond_period_p < o->alpha;
		if (!beyond_bucket && !beyond_period)
			beyond_bucket = (double)re->period_hits >= 0.5 * re->period_cycles;
		if (beyond_bucket && !beyond_period) {
			re->cluster_by_bucket = 0;
			re->bucket_alias = 1;
		} else if (beyond_period && !beyond_bucket) {
			periodic = 0;
			re->period_alias = 1;
		}
	}
	re->periodic_cause = periodic;
}

/* Ranks the hypotheses: severity first, a diverged run's divergence before
 * all else at its level (it needs acting on now), then evidence. */
static void rank_hypotheses(struct rm_ranked *h)
{
	for (int a = 0; a < RM_H_COUNT; a++)
		for (int b = a + 1; b < RM_H_COUNT; b++)
			if (h[b].severity > h[a].severity ||
			    (h[b].severity == h[a].severity &&
			     (h[b].h == RM_H_DIVERGENCE || (h[a].h != RM_H_DIVERGENCE && h[b].score > h[a].score)))) {
				struct rm_ranked t = h[a];
				h[a] = h[b];
				h[b] = t;
			}
}

void rm_detect_verdict(const struct rm_detect_opts *o, struct rm_diagnosis *d)
{
	struct rm_runs_result *ru = &d->runs;
	struct rm_split_result *sp = &d->split;
	struct rm_ladder_result *la = &d->ladder;
	struct rm_resets_result *re = &d->resets;
	double p[8 + RM_MAX_BUCKETS], q[8 + RM_MAX_BUCKETS];
	size_t m = 0;
	size_t at_runs = m;
	p[m++] = ru->ok ? ru->p : 1;
	size_t at_split = m;
	p[m++] = sp->ok ? sp->p : 1;
	size_t at_chi2 = m;
	p[m++] = re->chi2_p;
	size_t at_ckpt = m;
	p[m++] = re->ckpt_p;
	size_t at_epoch = m;
	p[m++] = re->epoch_p;
	size_t at_lr = m;
	p[m++] = re->lr_p;
	size_t at_period = m;
	p[m++] = re->period_p;
	size_t at_enrich = m;
	for (int b = 0; b < re->k; b++)
		p[m++] = re->enrich_p[b];
	rm_bh_adjust(p, m, q);
	re->chi2_q = q[at_chi2];
	re->ckpt_q = q[at_ckpt];
	re->epoch_q = q[at_epoch];
	re->lr_q = q[at_lr];
	re->period_q = q[at_period];
	int enriched = 0;
	for (int b = 0; b < re->k; b++) {
		re->enrich_q[b] = q[at_enrich + (size_t)b];
		enriched |= re->enrich_q[b] < o->alpha && re->enrichment[b] > 1;
	}
	ru->flagged = ru->flagged && q[at_runs] < o->alpha;
	sp->flagged = sp->flagged && q[at_split] < o->alpha;
	/* The enrichment tests say which bucket (chi-square, an omnibus test over
	 * k buckets, lacks the power for a few resets all in one). */
	re->cluster_by_bucket = re->spikes >= 5 && enriched;
	/* a cause that explains a quarter of the resets or more, not a few by chance */
	re->checkpoint_cause =
	    re->spikes >= 5 && re->ckpt_near >= fmax(3, 0.25 * (double)re->spikes) && re->ckpt_q < o->alpha;
	periodic_or_bucket(o, &d->ladder, re);
	/* The same batches every epoch make the same resets every epoch: their
	 * period is the order's, not an event's. */
	if (d->order.flagged && d->order.nspikes && re->periodic_cause) {
		re->periodic_cause = 0;
		re->period_alias = 1;
	}
	re->flagged = re->cluster_by_bucket || re->checkpoint_cause || re->periodic_cause;

	struct rm_ranked *h = d->rank;
	for (int i = 0; i < RM_H_COUNT; i++)
		h[i] = (struct rm_ranked){(enum rm_hypothesis)i, 0, RM_SEV_NONE};
	/* Homogeneous batching: long same-bucket runs, with the split, ladders,
	 * length ramps and bucket-clustered resets as aggravating evidence. */
	struct rm_ranked *hb = &h[RM_H_HOMOGENEOUS];
	hb->score = ru->ok ? evidence(ru->p, ru->z) : 0;
	if (ru->flagged || la->ramp)
		hb->severity = RM_SEV_WARN;
	if ((ru->flagged || la->ramp) && (la->flagged || re->cluster_by_bucket))
		hb->severity = RM_SEV_CRITICAL;
	if (hb->severity == RM_SEV_NONE && sp->flagged)
		hb->severity = RM_SEV_INFO; /* a split in a well-mixed order: information */
	if (hb->severity >= RM_SEV_WARN && re->cluster_by_bucket)
		hb->score += evidence(re->chi2_q, 0);
	if (la->ramp)
		hb->score = fmax(hb->score, 10 * la->ramp_desc_share);
	/* The loss follows length and lengths come in streaks: homogeneous
	 * batching seen without buckets (coarse or few derived buckets can
	 * leave the runs test short of power). */
	const struct rm_length_result *len = &d->length;
	if (len->coupled && len->ordered) {
		if (hb->severity < RM_SEV_WARN)
			hb->severity = RM_SEV_WARN;
		hb->score = fmax(hb->score, evidence(len->p, 0));
	}
	/* Several ranks per step: when each rank streaks on its own, the step
	 * mixes their buckets and the runs say less than the mixture does; its
	 * drift decides. Ranks in lockstep stay as above: every rank's streak
	 * is the step's. */
	const struct rm_mixture_result *mx = &d->mixture;
	if (mx->shape == RM_MIX_RANK_STREAKS || mx->shape == RM_MIX_DRIFT) {
		if (mx->shape == RM_MIX_RANK_STREAKS || mx->severity > hb->severity)
			hb->severity = mx->severity;
		if (mx->worst >= 0)
			hb->score = fmax(hb->score, fmin(300, mx->ratio_z[mx->worst]));
	}
	/* The loss alone, switching between levels as homogeneous batches make
	 * it: a hypothesis until composition is recorded. */
	if (d->suspected && hb->severity < RM_SEV_WARN) {
		hb->severity = RM_SEV_WARN;
		hb->score = fmax(hb->score, d->split.level_runs_z < 0
		                                ? evidence(rm_norm_cdf(d->split.level_runs_z), d->split.level_runs_z)
		                                : 1);
	}
	struct rm_ranked *hd = &h[RM_H_DIVERGENCE];
	if (d->divergence.found) {
		hd->severity = RM_SEV_CRITICAL;
		hd->score = fmin(300, 10 + (double)d->divergence.points);
	}
	/* Resets that cluster by bucket while the order is healthy: the data of
	 * those buckets, not the batching. */
	struct rm_ranked *hr = &h[RM_H_BUCKET_RESETS];
	if (re->cluster_by_bucket && hb->severity < RM_SEV_WARN) {
		hr->severity = RM_SEV_WARN;
		hr->score = evidence(re->chi2_q, 0);
	}

	h[RM_H_CHECKPOINT].score = re->checkpoint_every > 1 ? evidence(re->ckpt_q, 0) : 0;
	h[RM_H_CHECKPOINT].severity = re->checkpoint_cause ? RM_SEV_WARN : RM_SEV_NONE;
	h[RM_H_EPOCH].score = evidence(re->epoch_q, 0);
	h[RM_H_EPOCH].severity = re->spikes >= 3 && re->epoch_q < o->alpha ? RM_SEV_INFO : RM_SEV_NONE;
	h[RM_H_PERIODIC].score = re->period ? evidence(re->period_q, 0) : 0;
	h[RM_H_PERIODIC].severity = re->periodic_cause ? RM_SEV_WARN : RM_SEV_NONE;
	/* The same batches every epoch: its repeated spikes are those batches. */
	const struct rm_order_result *od = &d->order;
	h[RM_H_FIXED_ORDER].score = od->ok ? evidence(rm_norm_cdf(-od->z), od->z) : 0;
	h[RM_H_FIXED_ORDER].severity = od->flagged ? RM_SEV_WARN : RM_SEV_NONE;
	h[RM_H_LR].score = evidence(re->lr_q, 0);
	h[RM_H_LR].severity = re->spikes >= 3 && re->lr_q < o->alpha ? RM_SEV_INFO : RM_SEV_NONE;
	/* Resets no cause explains, still there in the bucket-adjusted loss:
	 * a warning when they are big (twice their baseline), else information;
	 * information only where the loss alone suggests homogeneous batching,
	 * or the batches of the resets' steps were not recorded: unrecorded
	 * buckets may be what they cluster by. */
	struct rm_ranked *hi = &h[RM_H_INSTABILITY];
	hi->score = log10(1.0 + (double)re->spikes_adjusted);
	/* Resets where the batches were not recorded (a sidecar covering part
	 * of the run) cannot be ruled out as a bucket's. */
	int unplaced = d->has_buckets && (double)re->with_composition < 0.8 * (double)re->spikes;
	int leans = 0; /* onsets lean to a bucket, short of significance: no verdict of instability */
	for (int b = 0; b < re->k; b++)
		leans |= re->enrichment[b] > 1 && re->enrich_q[b] < 0.02;
	leans |= fabs(re->length_z) > 3.5; /* or to a length, where buckets are a coarse cut of it */
	if (re->spikes >= 5 && !re->cluster_by_bucket && !leans && !re->checkpoint_cause && !re->periodic_cause &&
	    h[RM_H_EPOCH].severity == RM_SEV_NONE && h[RM_H_LR].severity == RM_SEV_NONE && !od->nspikes)
		hi->severity = re->spikes_2x >= 5 && !d->suspected && !unplaced ? RM_SEV_WARN : RM_SEV_INFO;

	rank_hypotheses(h);
	d->severity = h[0].severity;
	/* batches that meet no loss: nothing above could read them */
	if (d->join.none && d->severity < RM_SEV_WARN)
		d->severity = RM_SEV_WARN;
	d->healthy = d->severity <= RM_SEV_INFO;
}

/* Each bucket's observed max_len range, over all its batches. */
static void length_ranges(const struct rm_series *s, struct rm_curves *c)
{
	int dense[256];
	for (int i = 0; i < 256; i++)
		dense[i] = -1;
	for (int j = 0; j < c->k; j++) {
		c->len_lo[j] = c->len_hi[j] = NAN;
		if (c->bucket[j] >= 0 && c->bucket[j] < 256)
			dense[c->bucket[j]] = j;
	}
	if (!s->max_len || !s->bucket)
		return;
	for (size_t t = 0; t < s->nb; t++) {
		int b = s->bucket[t], j = b >= 0 && b < 256 ? dense[b] : -1;
		double m = s->max_len[t];
		if (j < 0 || !isfinite(m))
			continue;
		if (!(m >= c->len_lo[j]))
			c->len_lo[j] = m;
		if (!(m <= c->len_hi[j]))
			c->len_hi[j] = m;
	}
}

/* Binned means of the loss and the adjusted loss, overall and per bucket. */
static void curves(const struct rm_prepared *p, const struct rm_split_result *sp, const double *len_adj,
                   struct rm_curves *c)
{
	double n[RM_CURVE_BINS] = {0}, nb[RM_MAX_BUCKETS][RM_CURVE_BINS] = {{0}};
	double tot[RM_MAX_BUCKETS] = {0}, cnt[RM_MAX_BUCKETS] = {0}, adj[RM_MAX_BUCKETS] = {0};
	memset(c, 0, sizeof(*c));
	c->bins = RM_CURVE_BINS;
	c->k = p->k;
	memcpy(c->bucket, p->bucket_id, sizeof(c->bucket));
	if (p->n == 0)
		return;
	c->first_step = p->step[0];
	c->last_step = p->step[p->n - 1];
	double span = (double)(c->last_step - c->first_step) + 1;
	for (size_t j = 0; j < p->n; j++) {
		int b = (int)((double)(p->step[j] - c->first_step) / span * RM_CURVE_BINS);
		if (b >= RM_CURVE_BINS) /* found by fuzz_diagnose: span rounds down for steps near 2^53 */
			b = RM_CURVE_BINS - 1;
		double a = sp->adjusted ? sp->adjusted[j] : p->y[j];
		c->loss[b] += p->y[j];
		c->adjusted[b] += a;
		c->length_adjusted[b] += len_adj ? len_adj[j] : 0;
		n[b]++;
		int d = p->dom[j];
		if (d >= 0 && p->onehot[j]) {
			c->bucket_loss[d][b] += p->y[j];
			c->bucket_adjusted[d][b] += a;
			nb[d][b]++;
			tot[d] += p->y[j];
			adj[d] += a;
			cnt[d]++;
		}
	}
	for (int b = 0; b < RM_CURVE_BINS; b++) {
		c->loss[b] = n[b] ? c->loss[b] / n[b] : NAN;
		c->adjusted[b] = n[b] ? c->adjusted[b] / n[b] : NAN;
		c->length_adjusted[b] = n[b] && len_adj ? c->length_adjusted[b] / n[b] : NAN;
		for (int i = 0; i < p->k; i++) {
			c->bucket_loss[i][b] = nb[i][b] ? c->bucket_loss[i][b] / nb[i][b] : NAN;
			c->bucket_adjusted[i][b] = nb[i][b] ? c->bucket_adjusted[i][b] / nb[i][b] : NAN;
		}
	}
	for (int i = 0; i < p->k; i++) {
		c->bucket_mean[i] = cnt[i] ? tot[i] / cnt[i] : NAN;
		c->bucket_adjusted_mean[i] = cnt[i] ? adj[i] / cnt[i] : NAN;
	}
}

struct ladder_job {
	const struct rm_prepared *p;
	const struct rm_series *s;
	const struct rm_split_result *split;
	const struct rm_detect_opts *o;
	struct rm_ladder_result *out;
};

static void *ladder_thread(void *arg)
{
	struct ladder_job *j = arg;
	rm_detect_ladder(j->p, j->s, j->split, j->o, j->out);
	return NULL;
}

/* The order of the batches: the runs test and the mixture, which need no
 * loss fit. */
struct order_job {
	const struct rm_prepared *p;
	const struct rm_series *s;
	const struct rm_detect_opts *o;
	struct rm_diagnosis *d;
};

static void *order_thread(void *arg)
{
	struct order_job *j = arg;
	struct rank_total *per_rank = rm_xcalloc((size_t)(j->s->nranks > 1 ? j->s->nranks : 1), sizeof(*per_rank));
	rm_detect_runs_ranked(j->s, j->o, &j->d->runs, per_rank);
	rm_detect_mixture(j->p, per_rank, j->o, &j->d->mixture);
	free(per_rank);
	return NULL;
}

/* Largest-triangle-three-buckets downsampling (S. Steinarsson, 2013):
 * keeps the point of each bucket that spans the largest triangle with its
 * neighbours, so peaks and resets stay visible. */
static void lttb(const struct rm_prepared *p, const double *adj, const double *len_adj, struct rm_plot *pl)
{
	size_t n = p->n, m = RM_PLOT_POINTS;
	size_t keep[RM_PLOT_POINTS];
	int k = 0;
	if (n <= m) {
		for (size_t i = 0; i < n; i++)
			keep[k++] = i;
	} else {
		double every = (double)(n - 2) / (double)(m - 2);
		size_t a = 0;
		keep[k++] = 0;
		for (size_t i = 0; i < m - 2; i++) {
			size_t lo = (size_t)((double)i * every) + 1, hi = (size_t)((double)(i + 1) * every) + 1;
			size_t nlo = hi, nhi = (size_t)((double)(i + 2) * every) + 1;
			if (nhi > n)
				nhi = n;
			double ax = (double)p->step[a], ay = p->y[a], cx = 0, cy = 0;
			for (size_t j = nlo; j < nhi; j++) {
				cx += (double)p->step[j];
				cy += p->y[j];
			}
			if (nhi > nlo) {
				cx /= (double)(nhi - nlo);
				cy /= (double)(nhi - nlo);
			}
			double best = -1;
			size_t pick = lo;
			for (size_t j = lo; j < hi && j < n; j++) {
				double area = fabs((ax - cx) * (p->y[j] - ay) - (ax - (double)p->step[j]) * (cy - ay));
				if (area > best) {
					best = area;
					pick = j;
				}
			}
			keep[k++] = a = pick;
		}
		keep[k++] = n - 1;
	}
	pl->n = k;
	for (int i = 0; i < k; i++) {
		size_t j = keep[i];
		pl->step[i] = p->step[j];
		pl->loss[i] = (float)p->y[j];
		pl->adjusted[i] = (float)(adj ? adj[j] : p->y[j]);
		pl->length_adjusted[i] = len_adj ? (float)len_adj[j] : NAN;
		pl->bucket[i] = (int8_t)(p->dom[j] >= 0 && p->dom[j] < 127 ? p->dom[j] : -1);
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Each rank's bucket at each step of a window of RM_RANK_STEPS steps that
 * opens shortly before the longest same-bucket run (a rank's micro-batches
 * of a step: their most frequent bucket). Steps, not aggregated cells:
 * lockstep is a per-step fact, which averaging over steps would hide. */
static void rank_strip(const struct rm_prepared *p, int64_t from, struct rm_plot *pl)
{
	pl->ranks = p->nranks;
	pl->rank_rows = p->nranks < RM_STRIP_RANKS ? p->nranks : RM_STRIP_RANKS;
	memset(pl->rank_strip, -1, sizeof(pl->rank_strip));
	size_t t = 0;
	while (t < p->nb && p->bstep[t] < from)
		t++;
	if (t + RM_RANK_STEPS * (size_t)p->nranks > p->nb) /* near the end: the last window instead */
		t = p->nb > RM_RANK_STEPS * (size_t)p->nranks ? p->nb - RM_RANK_STEPS * (size_t)p->nranks : 0;
	while (t > 0 && p->bstep[t - 1] == p->bstep[t])
		t--;
	int count[RM_STRIP_RANKS][RM_MAX_BUCKETS], cell = 0;
	memset(count, 0, sizeof(count));
	pl->rank_first = p->bstep[t];
	for (; t < p->nb && cell < RM_RANK_STEPS; t++) {
		int r = p->brank[t], b = p->bseq[t];
		if (r >= 0 && r < pl->rank_rows && b >= 0 && b < RM_MAX_BUCKETS)
			count[r][b]++;
		if (t + 1 < p->nb && p->bstep[t + 1] == p->bstep[t])
			continue;
		for (r = 0; r < pl->rank_rows; r++) {
			int best = -1;
			for (b = 0; b < p->k; b++)
				if (count[r][b] > (best >= 0 ? count[r][best] : 0))
					best = b;
			pl->rank_strip[r][cell] = (int8_t)best;
		}
		memset(count, 0, sizeof(count));
		pl->rank_last = p->bstep[t];
		cell++;
	}
	pl->rank_cells = cell;
}

/* M4 bands per bucket: each column's least and greatest loss of each
 * bucket's points, from every point (a sample would lose the rare one). */
static void bands(const struct rm_prepared *p, struct rm_plot *pl)
{
	int nb = p->k + 1;
	size_t cells = (size_t)RM_PLOT_COLS * (size_t)nb * 2;
	pl->bands = nb;
	pl->band = rm_xmalloc(cells * sizeof(float));
	for (size_t i = 0; i < cells; i++)
		pl->band[i] = NAN;
	int64_t first = p->step[0], last = p->step[p->n - 1];
	for (size_t j = 0; j < p->n; j++) {
		if (!isfinite(p->y[j]))
			continue;
		int b = p->dom[j] >= 0 && p->dom[j] < p->k ? p->dom[j] : p->k;
		float *v = &pl->band[((size_t)rm_plot_col(p->step[j], first, last) * (size_t)nb + (size_t)b) * 2];
		float y = (float)p->y[j];
		if (!(v[0] <= y)) /* NaN: the first point */
			v[0] = y;
		if (!(v[1] >= y))
			v[1] = y;
	}
}

/* The zoom's grid: M4 per bucket at up to `cols` columns, kept as the
 * cells that hold points (a bucketed run fills one or two per column).
 * Column c is centred on step first + c (last - first) / (cols - 1), so
 * that with one step a column each, column c is step first + c. */
static void fine_bands(const struct rm_prepared *p, int cols, struct rm_plot *pl)
{
	int64_t first = p->step[0], last = p->step[p->n - 1];
	if (cols <= 0)
		return;
	if ((uint64_t)(last - first) + 1 < (uint64_t)cols)
		cols = (int)(last - first + 1);
	int nb = p->k + 1;
	float *grid = rm_xmalloc((size_t)cols * (size_t)nb * 2 * sizeof(float));
	for (size_t i = 0; i < (size_t)cols * (size_t)nb * 2; i++)
		grid[i] = NAN;
	size_t cells = 0;
	for (size_t j = 0; j < p->n; j++) {
		if (!isfinite(p->y[j]))
			continue;
		int b = p->dom[j] >= 0 && p->dom[j] < p->k ? p->dom[j] : p->k;
		int c = last > first
		            ? (int)floor((double)(p->step[j] - first) / (double)(last - first) * (cols - 1) + 0.5)
		            : 0;
		float *v = &grid[((size_t)c * (size_t)nb + (size_t)b) * 2], y = (float)p->y[j];
		cells += isnan(v[0]);
		if (!(v[0] <= y))
			v[0] = y;
		if (!(v[1] >= y))
			v[1] = y;
	}
	pl->fine_cols = cols;
	pl->fine_n = rm_xcalloc((size_t)cols, 1);
	pl->fine_at = rm_xmalloc((size_t)cols * sizeof(uint32_t));
	pl->fine_b = rm_xmalloc(cells ? cells : 1);
	pl->fine_v = rm_xmalloc((cells ? cells : 1) * 2 * sizeof(float));
	uint32_t i = 0;
	for (int c = 0; c < cols; c++) {
		pl->fine_at[c] = i;
		for (int b = 0; b < nb; b++) {
			const float *v = &grid[((size_t)c * (size_t)nb + (size_t)b) * 2];
			if (isnan(v[0]))
				continue;
			pl->fine_n[c]++;
			pl->fine_b[i] = (uint8_t)b;
			pl->fine_v[2 * i] = v[0];
			pl->fine_v[2 * i + 1] = v[1];
			i++;
		}
	}
	free(grid);
}

/* Per-bucket quantiles from at most 20000 evenly spaced points, and the
 * bucket strips. */
static void plot(const struct rm_prepared *p, const struct rm_split_result *sp, const double *len_adj,
                 const struct rm_runs_result *runs, int fine_cols, struct rm_plot *pl)
{
	memset(pl, 0, sizeof(*pl));
	if (p->n == 0)
		return;
	lttb(p, sp->adjusted, len_adj, pl);
	bands(p, pl);
	fine_bands(p, fine_cols, pl);
	size_t stride = p->n > 20000 ? p->n / 20000 : 1, cap = p->n / stride + 1;
	/* Steps of one bucket alone show its loss; where ranks or mixed batches
	 * leave none, each step counts for its dominant bucket. */
	size_t onehot = 0;
	for (size_t j = 0; j < p->n; j += stride)
		onehot += p->onehot[j] && p->dom[j] >= 0;
	pl->q_dominant = onehot == 0;
	for (int b = 0; b < p->k; b++) {
		double *v = rm_xmalloc(cap * sizeof(double));
		size_t m = 0;
		for (size_t j = 0; j < p->n; j += stride)
			if (p->dom[j] == b && (p->onehot[j] || pl->q_dominant) && isfinite(p->y[j]))
				v[m++] = p->y[j];
		for (int q = 0; q < 5; q++)
			pl->q[b][q] = NAN;
		if (m) {
			qsort(v, m, sizeof(double), cmp_dbl);
			const double at[5] = {0.05, 0.25, 0.5, 0.75, 0.95};
			for (int q = 0; q < 5; q++)
				pl->q[b][q] = (float)v[(size_t)(at[q] * (double)(m - 1))];
		}
		free(v);
	}
	if (p->nb) {
		/* Each cell holds its batches' share of each bucket (and its most
		 * frequent one): sampling one batch a cell aliases with a periodic
		 * order (every cell the same phase). */
		pl->strip_n = p->nb < RM_STRIP_CELLS ? (int)p->nb : RM_STRIP_CELLS;
		pl->share_k = p->k;
		pl->share = rm_xcalloc((size_t)pl->strip_n * (size_t)(p->k ? p->k : 1), sizeof(float));
		for (int c = 0; c < pl->strip_n; c++) {
			size_t a = (size_t)c * p->nb / (size_t)pl->strip_n,
			       z = (size_t)(c + 1) * p->nb / (size_t)pl->strip_n;
			int count[RM_MAX_BUCKETS] = {0}, best = -1;
			for (size_t t = a; t < z; t++) {
				int b = p->bseq[t];
				if (b >= 0 && b < RM_MAX_BUCKETS && (++count[b] > (best >= 0 ? count[best] : 0)))
					best = b;
			}
			pl->strip[c] = (int8_t)best;
			for (int b = 0; b < p->k && b < RM_MAX_BUCKETS && z > a; b++)
				pl->share[(size_t)c * (size_t)p->k + (size_t)b] = (float)count[b] / (float)(z - a);
		}
		pl->strip_first = p->bstep[0];
		pl->strip_last = p->bstep[p->nb - 1];
		if (p->brank && p->nranks > 1)
			rank_strip(p, runs->nworst ? runs->worst[0].first_step - RM_RANK_STEPS / 8 : 0, pl);
	}
}

/* With a loss per rank, the split and the coupling are what each rank's
 * loss says against its own batch; the steps' adjusted curves (resets,
 * charts) stay as fitted on the steps. */
static void use_rank_fits(const struct rm_series *s, struct rm_diagnosis *d)
{
	struct rm_split_result sp;
	struct rm_length_result len;
	int ranks;
	if (!rm_detect_rank_fits(s, &sp, &len, &ranks))
		return;
	d->rank_fit_ranks = ranks;
	d->rank_points = 0;
	for (size_t i = 0; i < s->nrl; i++)
		d->rank_points += isfinite(s->rl_loss[i]) != 0;
	if (sp.ok) {
		double *trend = d->split.trend, *adjusted = d->split.adjusted;
		size_t mixed_batches = d->split.mixed_batches;
		free(sp.trend);
		free(sp.adjusted);
		d->split = sp;
		d->split.trend = trend;
		d->split.adjusted = adjusted;
		d->split.mixed = 1;
		d->split.mixed_batches = mixed_batches;
	}
	free(len.adjusted);
	if (len.ok) {
		double *adjusted = d->length.adjusted;
		d->length = len;
		d->length.adjusted = adjusted;
	}
}

void rm_detect_all(const struct rm_series *whole_given, const struct rm_detect_opts *o, struct rm_diagnosis *d)
{
	struct rm_prepared p;
	struct rm_series chosen;
	const struct rm_series *whole = &chosen;
	memset(d, 0, sizeof(*d));
	rm_choose_reading(whole_given, o, &chosen, &d->reading);
	/* A diverged tail is a cause of its own; every other detector reads the
	 * run before it. */
	rm_detect_divergence(whole, &d->divergence);
	struct rm_series before = *whole;
	const struct rm_series *s = &before;
	while (d->divergence.found && before.n > 0 && before.step[before.n - 1] >= d->divergence.first_step)
		before.n--;
	rm_prepare(s, &p);
	d->points = s->n;
	d->finite = p.n;
	d->nonfinite = s->n - p.n;
	d->batches = p.nb;
	d->has_buckets = p.k >= 2;
	rm_join_measure(&p, &d->join);
	/* The batch order (runs, mixture) needs no loss fit: it runs beside the
	 * split. The ladder's permutation test, the longest detector, runs on
	 * the second core while this one does the length coupling and the
	 * resets. All only read p and the split. */
	struct order_job ojob = {&p, s, o, d};
	pthread_t oth;
	int othreaded = pthread_create(&oth, NULL, order_thread, &ojob) == 0;
	if (!othreaded)
		order_thread(&ojob);
	rm_detect_split(&p, &d->split);
	struct ladder_job job = {&p, s, &d->split, o, &d->ladder};
	pthread_t th;
	int threaded = pthread_create(&th, NULL, ladder_thread, &job) == 0;
	if (!threaded)
		ladder_thread(&job);
	rm_detect_length(&p, &d->split, &d->length);
	rm_detect_order(&p, s, &d->split, &d->order);
	d->split.mixed = p.multi || p.mix.n;
	d->split.mixed_batches = p.mix.n;
	/* Derived buckets are a coarse cut of the length: without a recorded
	 * id, resets are measured on the length-adjusted loss. */
	d->resets_by_length = s->derived_bounds && !s->derived_cut_points && d->length.adjusted;
	rm_detect_resets(&p, &d->split, d->resets_by_length ? d->length.adjusted : NULL, s, o, &d->resets);
	/* Blocks of levels (z <= -4) are suspected at once; a braid (levels in
	 * random order) only once an interleaved order would have shown itself
	 * alternating (z >= RM_LEVELS_INTERLEAVED_Z): under RM_BRAID_MIN_POINTS
	 * its z stays low too, and 50- and 100-point prefixes of stride and
	 * interleaved runs were suspected (issue 65.3, tests/bench/detect_latency). */
	d->suspected = p.nb == 0 && d->split.levels >= 2 &&
	               (d->split.level_runs_z <= -4 ||
	                (d->split.level_runs_z < RM_LEVELS_INTERLEAVED_Z && p.n >= RM_BRAID_MIN_POINTS));
	if (threaded)
		pthread_join(th, NULL);
	if (othreaded)
		pthread_join(oth, NULL);
	use_rank_fits(s, d);
	rm_detect_verdict(o, d);
	curves(&p, &d->split, d->length.adjusted, &d->curves);
	length_ranges(s, &d->curves);
	plot(&p, &d->split, d->length.adjusted, &d->runs, o->plot_fine, &d->plot);
	d->points = whole->n;
	d->nonfinite = whole->n - p.n;
	d->first_step = whole->n ? whole->step[0] : -1;
	d->last_step = whole->n ? whole->step[whole->n - 1] : -1;
	d->last_loss = d->last_adjusted = d->last_length_adjusted = NAN;
	size_t last = whole->n ? whole->n - 1 : 0;
	if (whole->n && !isfinite(whole->loss[last]))
		d->last_nonfinite = whole->nonfinite ? whole->nonfinite[last] : isinf(whole->loss[last]) ? 2 : 1;
	else if (whole->n && d->divergence.found)
		d->last_loss = d->last_adjusted = whole->loss[last]; /* exploded: the loss as logged */
	else if (p.n) {                                              /* the last logged point is the last finite one */
		d->last_loss = p.y[p.n - 1];
		d->last_adjusted = d->split.adjusted ? d->split.adjusted[p.n - 1] : p.y[p.n - 1];
		if (d->length.adjusted)
			d->last_length_adjusted = d->length.adjusted[p.n - 1];
	}
	d->nlabels = p.k;
	for (int j = 0; j < p.k; j++) {
		int id = p.bucket_id[j];
		d->label_id[j] = id;
		if (s->labels && id < s->nlabels)
			snprintf(d->label[j], sizeof(d->label[j]), "%s", s->labels[id]);
		else
			snprintf(d->label[j], sizeof(d->label[j]), "%d", id);
	}
	d->tokens_only = s->tokens_only;
	d->labels_grouped = s->labels_seen > (size_t)p.k ? s->labels_seen : 0;
	if (s->derived_bounds && s->nderived_bounds <= RM_MAX_BUCKETS + 1) {
		d->nderived = s->nderived_bounds;
		d->derived_cut_points = s->derived_cut_points;
		memcpy(d->derived_bound, s->derived_bounds, (size_t)s->nderived_bounds * sizeof(int64_t));
	}
	rm_prepared_release(&p);
}

const char *rm_bucket_label(const struct rm_diagnosis *d, int b)
{
	for (int j = 0; j < d->nlabels; j++)
		if (d->label_id[j] == b)
			return d->label[j];
	return "?";
}

const char *rm_bucket_label_short(const struct rm_diagnosis *d, int b)
{
	static char ring[8][RM_LABEL_SHOWN + 8];
	static unsigned next;
	char *buf = ring[next++ % 8];
	return rm_label_short(rm_bucket_label(d, b), RM_LABEL_SHOWN, buf, sizeof(ring[0]));
}

void rm_diagnosis_release(struct rm_diagnosis *d)
{
	free(d->split.trend);
	free(d->split.adjusted);
	free(d->length.adjusted);
	free(d->plot.band);
	free(d->plot.fine_n);
	free(d->plot.fine_b);
	free(d->plot.fine_at);
	free(d->plot.fine_v);
	free(d->plot.share);
	memset(d, 0, sizeof(*d));
}
