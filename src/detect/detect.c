/*
 * detect.c - what every detector reads: the loss points joined with the
 * batches they cover (rm_prepare), dense buckets, and the rank x
 * micro-batch slots. rm_detect_all (detect_verdict.c) runs the detectors.
 *
 * A loss point covers the batches of the steps since the previous loss
 * row: one batch when the trainer logs every step, K of them when it logs
 * every K steps. Its bucket shares are what the split, ladder and reset
 * detectors attribute the loss to.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

void rm_detect_opts_default(struct rm_detect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 20261129;
	o->hampel_k = 5;
	o->runs_z = -4;
	o->alpha = 0.01;
}

int rm_dense_buckets(const struct rm_series *s, int with_mix, int dense[RM_BUCKET_IDS], int id[RM_MAX_BUCKETS])
{
	char seen[RM_BUCKET_IDS] = {0};
	int k = 0;
	for (size_t t = 0; t < s->nb; t++)
		if (s->bucket[t] >= 0 && s->bucket[t] < RM_BUCKET_IDS)
			seen[s->bucket[t]] = 1;
	/* a bucket may hold no batch's longest sequence, only its share of mixed batches */
	for (size_t q = 0; with_mix && s->mix && s->mix->n && q < s->mix->from[s->mix->n]; q++)
		seen[s->mix->bucket[q]] = 1;
	for (int b = 0; b < RM_BUCKET_IDS; b++) {
		dense[b] = -1;
		if (seen[b] && k < RM_MAX_BUCKETS) {
			dense[b] = k;
			id[k++] = b;
		}
	}
	return k;
}

int rm_slots_init(struct slots *it, const int64_t *bstep, const int *brank, size_t nb, int nranks)
{
	it->bstep = bstep;
	it->brank = brank;
	it->R = brank && nranks > 1 ? nranks : 1;
	it->M = 1;
	it->micro = 0;
	/* M: the most micro-batches a rank has in one step */
	for (size_t t = 1, micro = 0; t < nb; t++) {
		micro = bstep[t] == bstep[t - 1] && (it->R == 1 || brank[t - 1] == brank[t]) ? micro + 1 : 0;
		if ((int)micro + 1 > it->M)
			it->M = (int)micro + 1;
	}
	if ((int64_t)it->R * it->M > RM_MAX_SLOTS)
		it->M = RM_MAX_SLOTS / it->R > 0 ? RM_MAX_SLOTS / it->R
		                                 : 1; /* beyond: the last micro slot takes the rest */
	return it->R * it->M;
}

int rm_slots_next(struct slots *it, size_t t)
{
	int rank = it->R > 1 ? it->brank[t] : 0;
	if (t > 0 && it->bstep[t] == it->bstep[t - 1] && (it->R == 1 || it->brank[t - 1] == rank))
		it->micro++;
	else
		it->micro = 0;
	return rank * it->M + (it->micro < it->M ? it->micro : it->M - 1);
}

void rm_prepared_shares(const struct rm_prepared *p, const int *bseq, float *share, int *dom)
{
	int k = p->k;
	size_t mx = 0; /* the next mixed batch */
	for (size_t j = 0; j < p->n; j++) {
		float *sh = share + j * (size_t)k;
		size_t from = rm_pt_from(p, j), to = rm_pt_to(p, j);
		memset(sh, 0, (size_t)k * sizeof(*sh));
		dom[j] = -1;
		if (to == from)
			continue;
		while (mx < p->mix.n && p->mix.row[mx] < from)
			mx++;
		for (size_t t = from; t < to; t++) {
			if (mx < p->mix.n && p->mix.row[mx] == t) { /* each bucket by its share of the batch's tokens */
				for (uint32_t q = p->mix.from[mx]; q < p->mix.from[mx + 1]; q++)
					sh[p->mix.bucket[q]] += p->mix.share[q];
				mx++;
				continue;
			}
			sh[bseq[t]] += 1;
		}
		float best = 0;
		for (int i = 0; i < k; i++) {
			sh[i] /= (float)(to - from);
			if (sh[i] > best) {
				best = sh[i];
				dom[j] = i;
			}
		}
	}
}

/* A copy of the entries of src (or NaN when src is NULL) where keep[i]. */
static double *pick(const double *src, const char *keep, size_t n, size_t m)
{
	double *out = rm_xmalloc((m ? m : 1) * sizeof(double));
	for (size_t i = 0, j = 0; i < n; i++)
		if (keep[i])
			out[j++] = src ? src[i] : NAN;
	return out;
}

static float *pick_float(const float *src, const char *keep, size_t n, size_t m)
{
	float *out = rm_xmalloc((m ? m : 1) * sizeof(float));
	for (size_t i = 0, j = 0; i < n; i++)
		if (keep[i])
			out[j++] = src ? src[i] : NAN;
	return out;
}

/* How ordered the lengths are: the autocorrelation of batch log length
 * (of a step's mean log length when a step has several batches: the
 * sequence of a step's batches alternates ranks). */
static void length_order(struct rm_prepared *p)
{
	p->len_run = 1;
	if (!p->blog)
		return;
	size_t cap = p->nb; /* one value per step: fewer than batches when steps hold several */
	if (p->multi) {
		cap = p->nb ? 1 : 0;
		for (size_t t = 1; t < p->nb; t++)
			cap += p->bstep[t] != p->bstep[t - 1];
	}
	double *v = rm_xmalloc((cap ? cap : 1) * sizeof(double));
	size_t m = 0, within = 0;
	p->len_min = INFINITY;
	p->len_max = -INFINITY;
	int64_t last = 0; /* the step of v[m - 1] */
	for (size_t t = 0; t < p->nb; t++)
		if (!isnan(p->blog[t])) {
			p->len_min = fmin(p->len_min, p->blog[t]);
			p->len_max = fmax(p->len_max, p->blog[t]);
			if (p->multi && m > 0 && p->bstep[t] == last) {
				v[m - 1] = (v[m - 1] * (double)within + p->blog[t]) / (double)(within + 1);
				within++;
				continue;
			}
			v[m++] = p->blog[t];
			last = p->bstep[t];
			within = 1;
		}
	p->len_min = exp(p->len_min);
	p->len_max = exp(p->len_max);
	p->len_batches = m;
	rm_acf(v, m, RM_LEN_LAGS, p->len_acf);
	/* The correlation time: the first lag where the autocorrelation falls
	 * below 1/e, searched at lags growing by half. A ramp of lengths (sorted
	 * over an epoch) decays slowly, not geometrically, so lag 1 alone would
	 * understate it. */
	double mean = 0, ss = 0;
	for (size_t i = 0; i < m; i++)
		mean += v[i];
	mean /= (double)(m ? m : 1);
	for (size_t i = 0; i < m; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	size_t lag = 1;
	while (lag < m / 2 && (lag <= RM_LEN_LAGS ? p->len_acf[lag] : rm_acf_lag(v, m, mean, ss, lag)) >= exp(-1))
		lag = lag < 4 ? lag + 1 : lag + lag / 2;
	p->len_run = (double)lag;
	free(v);
}

/* Mixed batch i of the series, as prepared row p->nb: its parts in the
 * prepared dense buckets (a part in a bucket no batch was counted in is
 * left out, the rest renormalised). */
static void prepare_mixed(struct rm_prepared *p, const struct rm_mix *m, size_t i, const int dense[RM_BUCKET_IDS])
{
	uint8_t bucket[RM_MAX_BUCKETS];
	float share[RM_MAX_BUCKETS], sum = 0;
	int parts = 0;
	for (uint32_t q = m->from[i]; q < m->from[i + 1] && parts < RM_MAX_BUCKETS; q++) {
		int d = dense[m->bucket[q]]; /* bucket ids are below RM_BUCKET_IDS */
		if (d < 0)
			continue;
		bucket[parts] = (uint8_t)d;
		share[parts++] = m->share[q];
		sum += m->share[q];
	}
	for (int q = 0; q < parts; q++)
		share[q] /= sum;
	if (parts)
		rm_mix_add(&p->mix, p->nb, bucket, share, parts);
}

void rm_prepare(const struct rm_series *s, struct rm_prepared *p)
{
	int dense[RM_BUCKET_IDS];
	memset(p, 0, sizeof(*p));
	p->k = rm_dense_buckets(s, 1, dense, p->bucket_id);
	/* The series' own steps and ranks serve when no batch is left out (the
	 * usual case), which saves a copy of each on a long run. */
	size_t kept = 0;
	for (size_t t = 0; t < s->nb; t++)
		kept += s->bucket[t] >= 0 && s->bucket[t] < RM_BUCKET_IDS && dense[s->bucket[t]] >= 0;
	int copy = kept != s->nb, identity = 1;
	for (int i = 0; i < p->k && identity; i++)
		identity = p->bucket_id[i] == i;
	/* buckets 0..k-1 all seen, none left out: the series' buckets are the dense ones */
	int *bseq = copy || !identity ? (p->own_bseq = rm_xmalloc((kept ? kept : 1) * sizeof(int))) : NULL;
	p->bseq = bseq ? bseq : s->bucket;
	int64_t *bstep = copy ? rm_xmalloc((kept ? kept : 1) * sizeof(*bstep)) : NULL;
	p->bstep = copy ? (p->own_bstep = bstep) : s->bstep;
	for (size_t t = 1; t < s->nb && !p->multi; t++)
		p->multi = s->bstep[t] == s->bstep[t - 1];
	p->nranks = 1;
	if (s->brank && s->nranks > 1) {
		p->nranks = s->nranks;
		p->brank = copy ? (p->own_brank = rm_xmalloc((kept ? kept : 1) * sizeof(int))) : s->brank;
	}
	if (s->max_len)
		p->blog = rm_xmalloc((kept ? kept : 1) * sizeof(float));
	size_t known = 0, mx = 0;
	for (size_t t = 0; t < s->nb; t++) {
		while (s->mix && mx < s->mix->n && s->mix->row[mx] < t)
			mx++;
		int b = s->bucket[t];
		if (b < 0 || b >= RM_BUCKET_IDS || dense[b] < 0)
			continue;
		if (p->blog) {
			double len = s->max_len[t];
			int ok = isfinite(len) && len > 0;
			p->blog[p->nb] = ok ? logf((float)len) : NAN;
			known += (size_t)ok;
		}
		if (copy) {
			if (p->own_brank)
				p->own_brank[p->nb] = s->brank[t];
			bstep[p->nb] = s->bstep[t];
		}
		if (bseq)
			bseq[p->nb] = dense[b];
		if (s->mix && mx < s->mix->n && s->mix->row[mx] == t)
			prepare_mixed(p, s->mix, mx++, dense);
		p->nb++;
	}
	if (!known) {
		free(p->blog);
		p->blog = NULL;
	}
	length_order(p);
	char *keep = rm_xmalloc(s->n ? s->n : 1);
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += keep[i] = isfinite(s->loss[i]) != 0;
	if (n == s->n && s->lr && s->epoch) {
		p->y = s->loss;
		p->step = s->step;
		p->lr = s->lr;
		p->epoch = s->epoch;
	} else {
		p->y = p->own_y = pick(s->loss, keep, s->n, n);
		p->lr = p->own_lr = pick_float(s->lr, keep, s->n, n);
		p->epoch = p->own_epoch = pick_float(s->epoch, keep, s->n, n);
		int64_t *step = rm_xmalloc((n ? n : 1) * sizeof(int64_t));
		for (size_t i = 0, j = 0; i < s->n; i++)
			if (keep[i])
				step[j++] = s->step[i];
		p->step = p->own_step = step;
	}
	/* Point i covers batches in (step of the previous loss row, step_i];
	 * the first covers as many steps as the second does. One step's loss
	 * (RM_READ_STEP) covers the batches of its own step (shifted) only.
	 * Two passes: the first finds whether point j is batch j, when no
	 * index is kept. */
	int one = s->reading == RM_READ_STEP;
	int64_t shift = one ? s->stamp_shift : 0;
	int64_t first_gap = one ? 1 : s->n > 1 ? s->step[1] - s->step[0] : 1;
	size_t b0 = 0;
	while (b0 < p->nb && s->n && p->bstep[b0] <= s->step[0] + shift - first_gap)
		b0++;
	int identity_points = n == p->nb;
	for (int pass = identity_points ? 0 : 1; pass < 2; pass++) {
		if (pass == 1) {
			p->bfrom = rm_xmalloc((n ? n : 1) * sizeof(size_t));
			p->bto = rm_xmalloc((n ? n : 1) * sizeof(size_t));
		}
		size_t b = b0, at = 0;
		for (size_t i = 0; i < s->n && (pass || identity_points); i++) {
			while (one && b < p->nb && p->bstep[b] < s->step[i] + shift)
				b++; /* the steps between points are no point's */
			size_t from = b;
			while (b < p->nb && p->bstep[b] <= s->step[i] + shift)
				b++;
			if (!keep[i])
				continue;
			if (pass) {
				p->bfrom[at] = from;
				p->bto[at] = b;
			} else {
				identity_points = from == at && b == at + 1;
			}
			at++;
		}
		p->n = at;
		if (pass == 0 && identity_points)
			break;
	}
	free(keep);
	p->onehot = rm_xcalloc(p->n ? p->n : 1, 1);
	p->one_each = p->k > 0 && !p->mix.n;
	for (size_t j = 0; j < p->n && p->one_each; j++)
		p->one_each = rm_pt_to(p, j) - rm_pt_from(p, j) == 1;
	if (p->one_each) {
		/* Every point covers one batch (the trainer logs every step): the
		 * dominant bucket is that batch's, and no share matrix is needed;
		 * when point j is batch j, the batches' buckets are the points'. */
		if (identity_points) {
			p->dom = p->bseq;
		} else {
			int *dom = p->own_dom = rm_xmalloc((p->n ? p->n : 1) * sizeof(int));
			for (size_t j = 0; j < p->n; j++)
				dom[j] = p->bseq[p->bfrom[j]];
			p->dom = dom;
		}
		memset(p->onehot, 1, p->n);
	} else if (p->k) {
		size_t k = (size_t)p->k;
		p->share = rm_xmalloc((p->n ? p->n : 1) * k * sizeof(float));
		p->dom = p->own_dom = rm_xmalloc((p->n ? p->n : 1) * sizeof(int));
		rm_prepared_shares(p, p->bseq, p->share, p->own_dom);
		for (size_t j = 0; j < p->n; j++)
			p->onehot[j] = p->dom[j] >= 0 && p->share[j * k + (size_t)p->dom[j]] == 1.0f;
	} else {
		p->dom = p->own_dom = rm_xmalloc((p->n ? p->n : 1) * sizeof(int));
		for (size_t j = 0; j < p->n; j++)
			p->own_dom[j] = -1;
	}
	for (size_t j = 0; j < p->n; j++)
		p->with_batches += p->dom[j] >= 0;
	p->long_from = p->k - (p->k / 3 > 1 ? p->k / 3 : 1);
}

void rm_prepared_release(struct rm_prepared *p)
{
	free(p->own_y);
	free(p->own_step);
	free(p->own_lr);
	free(p->own_epoch);
	free(p->own_bstep);
	free(p->share);
	free(p->own_dom);
	free(p->onehot);
	free(p->own_bseq);
	free(p->own_brank);
	free(p->blog);
	rm_mix_release(&p->mix);

	free(p->bfrom);
	free(p->bto);
	memset(p, 0, sizeof(*p));
}

double rm_prepared_share(const struct rm_prepared *p, size_t j, int b)
{
	if (p->dom[j] < 0)
		return 0;
	if (p->onehot[j])
		return p->dom[j] == b;
	return p->share[j * (size_t)p->k + (size_t)b];
}

double rm_prepared_mix(const struct rm_prepared *p, size_t j, const double *v)
{
	if (p->dom[j] < 0)
		return 0;
	if (p->onehot[j])
		return v[p->dom[j]];
	const float *s = p->share + j * (size_t)p->k;
	double m = 0;
	for (int b = 0; b < p->k; b++)
		m += s[b] * v[b];
	return m;
}
