/*
 * padding.c - see runmon/cost.h.
 *
 * The store keeps per-batch statistics, not every length, so each batch's
 * lengths are rebuilt: one at min_len, one at max_len, the rest at the
 * value that keeps the batch's token count (its n, extremes and tokens are
 * exact; the spread inside is not). Strategies re-pack those lengths into
 * batches greedily: a batch takes sequences while (count) * (its longest)
 * stays within the budget, the run's own median n * max_len.
 * Interleaving reorders batches without changing what is in them, so its
 * padding equals bucketing with the same boundaries.
 */
#include "runmon/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/stats.h"

static const char *const names[RM_PACK_COUNT] = {"sorted", "bucketed (current boundaries)",
                                                 "bucketed (fitted boundaries)", "stride-interleaved", "fully random"};

const char *rm_strategy_name(enum rm_strategy s)
{
	return names[s];
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The run's own boundaries cur[0..kc] and the fit `runmon buckets --k K`
 * makes of the same lengths, packed by the same model; the fit is never
 * worse: the run's own stand for it when they pack at least as well. */
static void bucketings(const int64_t *seq, size_t ns, const int64_t *cur, int kc, uint64_t seed,
                       struct rm_padding_result *out)
{
	struct rm_lengths dist;
	struct rm_bucketing fit;
	rm_lengths_from(&dist, seq, ns);
	double own = rm_buckets_packed(&dist, cur, kc, out->budget, seed);
	rm_buckets_fit(&dist, kc, &fit);
	double fitted = rm_buckets_packed(&dist, fit.bound, fit.k, out->budget, seed);
	rm_lengths_release(&dist);
	out->strategy_eff[RM_PACK_BUCKETED] = own;
	out->fit_kept_own = !(fitted > own);
	out->fitted_k = out->fit_kept_own ? kc : fit.k;
	memcpy(out->fitted, out->fit_kept_own ? cur : fit.bound, (size_t)(out->fitted_k + 1) * sizeof(int64_t));
	out->strategy_eff[RM_PACK_FITTED] = out->fit_kept_own ? own : fitted;
}

void rm_padding_analyze(const struct rm_padding_input *in, struct rm_padding_result *out)
{
	memset(out, 0, sizeof(*out));
	out->tokens_per_s = NAN;
	double tok = 0, pad = 0, btok[RM_PAD_MAX] = {0}, bpad[RM_PAD_MAX] = {0};
	int id_of[256], k = 0;
	for (int i = 0; i < 256; i++)
		id_of[i] = -1;
	/* Dense ids in bucket order. */
	char seen[256] = {0};
	for (size_t t = 0; t < in->nb; t++)
		if (in->bucket[t] >= 0 && in->bucket[t] < 256)
			seen[in->bucket[t]] = 1;
	for (int b = 0; b < 256; b++)
		if (seen[b] && k < RM_PAD_MAX) {
			id_of[b] = k;
			out->bucket[k++] = b;
		}
	/* Recorded efficiency, and the lengths rebuilt. */
	size_t cap = 0, ns = 0;
	int64_t *seq = NULL, *budgets = rm_xmalloc((in->nb ? in->nb : 1) * sizeof(int64_t));
	int64_t maxlen_seen[RM_PAD_MAX] = {0};
	for (size_t t = 0; t < in->nb; t++) {
		double n = in->n[t], lo = in->min_len[t], hi = in->max_len[t], tk = in->tokens[t];
		double pd = isfinite(in->padded[t]) ? in->padded[t] : n * hi - tk;
		/* The store may hold what an older import let through: bound the
		 * work by what import accepts now, whatever the values. */
		if (!(n >= 1 && n <= RM_BATCH_MAX_N && hi >= 0 && hi <= RM_BATCH_MAX_LEN && tk >= 0 &&
		      tk <= n * hi + n && pd >= -n && pd <= n * hi))
			continue;
		int b = in->bucket[t], d = b >= 0 && b < 256 ? id_of[b] : -1;
		tok += tk;
		pad += pd;
		if (d >= 0) {
			btok[d] += tk;
			bpad[d] += pd;
			maxlen_seen[d] = (int64_t)fmax((double)maxlen_seen[d], hi);
		}
		budgets[out->batches++] = (int64_t)(n * hi);
		size_t cnt = (size_t)n;
		if (ns + cnt > RM_PAD_MAX_SEQS)
			continue; /* counted above; too many to rebuild */
		if (ns + cnt > cap) {
			cap = (ns + cnt) * 2;
			seq = rm_xrealloc(seq, cap * sizeof(int64_t));
		}
		if (!(lo >= 0 && lo <= hi))
			lo = hi;
		if (in->lens_n && in->lens_n[t] == cnt) { /* recorded: as they are */
			memcpy(seq + ns, in->lens + in->lens_at[t], cnt * sizeof(int64_t));
			ns += cnt;
			out->recorded_batches++;
		} else if (cnt == 1) {
			seq[ns++] = (int64_t)hi;
		} else {
			seq[ns++] = (int64_t)lo;
			seq[ns++] = (int64_t)hi;
			double rest = (tk - lo - hi) / (double)(cnt - 2 > 0 ? cnt - 2 : 1);
			rest = fmin(fmax(rest, lo), hi);
			for (size_t i = 2; i < cnt; i++)
				seq[ns++] = (int64_t)llround(rest);
		}
	}
	out->reconstructed = out->recorded_batches < out->batches;
	if (in->lengths && in->nlengths && ns) { /* the real lengths, an even sample when too many */
		size_t m = in->nlengths < RM_PAD_MAX_SEQS ? in->nlengths : RM_PAD_MAX_SEQS;
		seq = rm_xrealloc(seq, m * sizeof(int64_t));
		for (size_t i = 0; i < m; i++)
			seq[i] = in->lengths[(size_t)((double)i * (double)in->nlengths / (double)m)];
		ns = m;
		out->reconstructed = 0;
		out->dataset_lengths = (int64_t)m;
	}
	out->k = k;
	if (out->batches == 0 || ns == 0) {
		free(seq);
		free(budgets);
		return;
	}
	out->ok = 1;
	out->efficiency = tok / (tok + pad);
	for (int d = 0; d < k; d++)
		out->bucket_eff[d] = btok[d] + bpad[d] > 0 ? btok[d] / (btok[d] + bpad[d]) : NAN;
	qsort(budgets, out->batches, sizeof(int64_t), cmp_i64);
	out->budget = budgets[out->batches / 2];
	free(budgets);
	/* Throughput: real tokens over the time their steps took (the ranks'
	 * batches in parallel), and per bucket over its batches' own time. */
	double tsec[RM_PAD_MAX] = {0}, ttok[RM_PAD_MAX] = {0}, all_s = 0, all_t = 0;
	int timed = 0; /* the current step's time is known */
	for (size_t t = 0; in->dt && t < in->nb; t++) {
		double sdt = in->step_dt ? in->step_dt[t] : in->dt[t];
		if (!in->step_dt || t == 0 || in->step[t] != in->step[t - 1]) {
			timed = sdt > 0 && isfinite(sdt);
			if (timed)
				all_s += sdt;
		}
		if (!timed || !isfinite(in->tokens[t]))
			continue;
		all_t += in->tokens[t];
		int b = in->bucket[t], d = b >= 0 && b < 256 ? id_of[b] : -1;
		if (d >= 0 && in->dt[t] > 0) {
			tsec[d] += in->dt[t];
			ttok[d] += in->tokens[t];
		}
	}
	if (all_s > 0)
		out->tokens_per_s = all_t / all_s;
	for (int d = 0; d < k; d++)
		out->bucket_tps[d] = tsec[d] > 0 ? ttok[d] / tsec[d] : NAN;
	/* Re-packing under each strategy. */
	qsort(seq, ns, sizeof(int64_t), cmp_i64);
	double st = 0, sp = 0;
	rm_pack_greedy(seq, ns, out->budget, &st, &sp);
	out->strategy_eff[RM_PACK_SORTED] = st / (st + sp);
	int64_t cur[RM_PAD_MAX + 1];
	int kc = 0;
	if (in->bounds && in->nbounds >= 2 && in->nbounds <= RM_PAD_MAX + 1) {
		kc = in->nbounds - 1;
		memcpy(cur, in->bounds, (size_t)in->nbounds * sizeof(int64_t));
	} else { /* boundaries from the longest length seen in each bucket */
		int64_t m[RM_PAD_MAX];
		memcpy(m, maxlen_seen, sizeof(m));
		qsort(m, (size_t)k, sizeof(int64_t), cmp_i64);
		cur[0] = 0;
		for (int d = 0; d < k; d++)
			if (m[d] > cur[kc])
				cur[++kc] = m[d];
	}
	if (kc >= 1)
		bucketings(seq, ns, cur, kc, in->seed, out);
	else
		out->strategy_eff[RM_PACK_BUCKETED] = out->strategy_eff[RM_PACK_FITTED] = NAN;
	out->strategy_eff[RM_PACK_INTERLEAVED] = out->strategy_eff[RM_PACK_BUCKETED];
	struct rm_rng r = {in->seed};
	rm_shuffle_i64(&r, seq, ns);
	st = sp = 0;
	rm_pack_greedy(seq, ns, out->budget, &st, &sp);
	out->strategy_eff[RM_PACK_RANDOM] = st / (st + sp);
	free(seq);
}
