/*
 * buckets.c - see runmon/cost.h.
 *
 * With distinct lengths v_1 < ... < v_D, counts c and prefix sums C (count)
 * and S (tokens), a bucket of v_a..v_b costs
 *   cost(a, b) = v_b (C_b - C_{a-1}) - (S_b - S_{a-1}).
 * DP: f_j(b) = min over a <= b of f_{j-1}(a-1) + cost(a, b). For a <= b <=
 * c <= d, [cost(a,d) - cost(b,d)] - [cost(a,c) - cost(b,c)] =
 * (v_d - v_c)(C_{b-1} - C_{a-1}) >= 0: the quadrangle inequality, so the
 * best split point is monotone in b and divide and conquer finds each
 * layer in O(D log D) (Galil & Park 1992; tested against the O(D^2) DP).
 */
#include "runmon/cost.h"

#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/stats.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void rm_lengths_from(struct rm_lengths *d, const int64_t *lens, size_t n)
{
	int64_t lo = n ? lens[0] : 0, hi = lo;
	for (size_t i = 1; i < n; i++) {
		lo = lens[i] < lo ? lens[i] : lo;
		hi = lens[i] > hi ? lens[i] : hi;
	}
	memset(d, 0, sizeof(*d));
	d->total = (int64_t)n;
	/* Lengths span a small range (tokens, at most a few hundred thousand):
	 * count them; sort only a wide range. */
	if (n && (uint64_t)hi - (uint64_t)lo < 4 * (uint64_t)n + 65536) {
		size_t span = (size_t)(hi - lo) + 1, k = 0;
		int64_t *cnt = rm_xcalloc(span, sizeof(int64_t));
		for (size_t i = 0; i < n; i++)
			cnt[lens[i] - lo]++;
		for (size_t v = 0; v < span; v++)
			k += cnt[v] != 0;
		d->len = rm_xmalloc(k * sizeof(int64_t));
		d->count = rm_xmalloc(k * sizeof(int64_t));
		for (size_t v = 0; v < span; v++)
			if (cnt[v]) {
				d->len[d->n] = lo + (int64_t)v;
				d->count[d->n++] = cnt[v];
			}
		free(cnt);
		return;
	}
	int64_t *s = rm_xmalloc((n ? n : 1) * sizeof(int64_t));
	memcpy(s, lens, n * sizeof(int64_t));
	qsort(s, n, sizeof(int64_t), cmp_i64);
	d->len = rm_xmalloc((n ? n : 1) * sizeof(int64_t));
	d->count = rm_xmalloc((n ? n : 1) * sizeof(int64_t));
	for (size_t i = 0; i < n; i++) {
		if (d->n && d->len[d->n - 1] == s[i]) {
			d->count[d->n - 1]++;
		} else {
			d->len[d->n] = s[i];
			d->count[d->n++] = 1;
		}
	}
	free(s);
}

void rm_lengths_release(struct rm_lengths *d)
{
	free(d->len);
	free(d->count);
	memset(d, 0, sizeof(*d));
}

struct dp {
	const struct rm_lengths *d;
	int64_t *C, *S; /* prefix count and tokens, 1-based: C[0] = 0 */
	int64_t *prev, *cur;
	int *arg; /* best start a for each b in the current layer */
};

static int64_t cost(const struct dp *p, size_t a, size_t b) /* 1-based, a <= b */
{
	return p->d->len[b - 1] * (p->C[b] - p->C[a - 1]) - (p->S[b] - p->S[a - 1]);
}

/* Fills cur[b] for b in [lo, hi] knowing the best a lies in [alo, ahi]. */
static void solve(struct dp *p, size_t lo, size_t hi, size_t alo, size_t ahi, int layer)
{
	if (lo > hi)
		return;
	size_t mid = (lo + hi) / 2, best = alo;
	int64_t bestv = INT64_MAX;
	for (size_t a = alo; a <= ahi && a <= mid; a++) {
		if (p->prev[a - 1] == INT64_MAX) /* a - 1 lengths cannot fill layer - 1 buckets */
			continue;
		int64_t v = p->prev[a - 1] + cost(p, a, mid);
		if (v < bestv) {
			bestv = v;
			best = a;
		}
	}
	p->cur[mid] = bestv;
	p->arg[(size_t)layer * (p->d->n + 1) + mid] = (int)best;
	if (mid > lo)
		solve(p, lo, mid - 1, alo, best, layer);
	solve(p, mid + 1, hi, best, ahi, layer);
}

static void result_from_cuts(const struct rm_lengths *d, const size_t *cut, int k, struct rm_bucketing *out)
{
	/* cut[i] = 1-based index of the last distinct length of bucket i. */
	int64_t bound[65];
	bound[0] = 0;
	for (int i = 0; i < k; i++)
		bound[i + 1] = d->len[cut[i] - 1];
	rm_buckets_eval(d, bound, k, out);
}

static void fit(const struct rm_lengths *d, int k, struct rm_bucketing *out, int slow)
{
	size_t D = d->n;
	if (k > (int)D)
		k = (int)D;
	if (k < 1)
		k = 1;
	struct dp p = {.d = d};
	p.C = rm_xcalloc(D + 1, sizeof(int64_t));
	p.S = rm_xcalloc(D + 1, sizeof(int64_t));
	p.prev = rm_xmalloc((D + 1) * sizeof(int64_t));
	p.cur = rm_xmalloc((D + 1) * sizeof(int64_t));
	p.arg = rm_xcalloc((size_t)(k + 1) * (D + 1), sizeof(int));
	for (size_t i = 1; i <= D; i++) {
		p.C[i] = p.C[i - 1] + d->count[i - 1];
		p.S[i] = p.S[i - 1] + d->count[i - 1] * d->len[i - 1];
	}
	for (size_t b = 0; b <= D; b++)
		p.prev[b] = b == 0 ? 0 : INT64_MAX;
	for (int layer = 1; layer <= k; layer++) {
		for (size_t b = 0; b <= D; b++)
			p.cur[b] = INT64_MAX;
		if (slow) {
			for (size_t b = (size_t)layer; b <= D; b++)
				for (size_t a = (size_t)layer; a <= b; a++) {
					if (p.prev[a - 1] == INT64_MAX)
						continue;
					int64_t v = p.prev[a - 1] + cost(&p, a, b);
					if (v < p.cur[b]) {
						p.cur[b] = v;
						p.arg[(size_t)layer * (D + 1) + b] = (int)a;
					}
				}
		} else {
			solve(&p, (size_t)layer, D, (size_t)layer, D, layer);
		}
		int64_t *t = p.prev;
		p.prev = p.cur;
		p.cur = t;
	}
	size_t cut[64];
	for (int layer = k, b = (int)D; layer >= 1; layer--) {
		cut[layer - 1] = (size_t)b;
		b = p.arg[(size_t)layer * (D + 1) + (size_t)b] - 1;
	}
	result_from_cuts(d, cut, k, out);
	free(p.C);
	free(p.S);
	free(p.prev);
	free(p.cur);
	free(p.arg);
}

void rm_buckets_fit(const struct rm_lengths *d, int k, struct rm_bucketing *out)
{
	fit(d, k, out, 0);
}

void rm_buckets_fit_slow(const struct rm_lengths *d, int k, struct rm_bucketing *out)
{
	fit(d, k, out, 1);
}

void rm_buckets_eval(const struct rm_lengths *d, const int64_t *bound, int k, struct rm_bucketing *out)
{
	memset(out, 0, sizeof(*out));
	out->k = k;
	memcpy(out->bound, bound, (size_t)(k + 1) * sizeof(int64_t));
	/* Each bucket pads to its longest length actually present. */
	size_t i = 0;
	for (int b = 0; b < k; b++) {
		int64_t maxlen = 0, seqs = 0, tok = 0;
		while (i < d->n && (d->len[i] <= bound[b + 1] || b == k - 1)) {
			maxlen = d->len[i];
			seqs += d->count[i];
			tok += d->count[i] * d->len[i];
			i++;
		}

		out->bucket_seqs[b] = seqs;
		out->bucket_tokens[b] = tok;
		out->bucket_padding[b] = maxlen * seqs - tok;
		out->tokens += tok;
		out->padding += out->bucket_padding[b];
	}
	out->efficiency =
	    out->tokens + out->padding > 0 ? (double)out->tokens / (double)(out->tokens + out->padding) : 1;
}

void rm_buckets_equal_width(const struct rm_lengths *d, int k, int64_t max_len, struct rm_bucketing *out)
{
	int64_t bound[65];
	if (max_len <= 0)
		max_len = d->n ? d->len[d->n - 1] : 1;
	for (int i = 0; i <= k; i++)
		bound[i] = max_len * i / k;
	rm_buckets_eval(d, bound, k, out);
}

void rm_buckets_quantile(const struct rm_lengths *d, int k, struct rm_bucketing *out)
{
	int64_t bound[65], seen = 0;
	size_t i = 0;
	bound[0] = 0;
	for (int b = 1; b <= k; b++) {
		int64_t want = d->total * b / k;
		while (i < d->n && seen + d->count[i] <= want) {
			seen += d->count[i];
			i++;
		}
		int64_t v = i > 0 ? d->len[i - 1] : d->len[0];
		bound[b] = b == k ? d->len[d->n - 1] : (v > bound[b - 1] ? v : bound[b - 1] + 1);
	}
	rm_buckets_eval(d, bound, k, out);
}

void rm_shuffle_i64(struct rm_rng *r, int64_t *a, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rm_rng_below(r, i);
		int64_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

void rm_pack_greedy(const int64_t *seq, size_t n, int64_t budget, double *tok, double *pad)
{
	int64_t mx = 0, sum = 0, cnt = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n) {
			int64_t m = seq[i] > mx ? seq[i] : mx;
			if (cnt == 0 || (cnt + 1) * m <= budget) {
				mx = m;
				sum += seq[i];
				cnt++;
				continue;
			}
		}
		if (cnt) {
			*tok += (double)sum;
			*pad += (double)(cnt * mx - sum);
		}
		if (i < n) {
			mx = seq[i];
			sum = seq[i];
			cnt = 1;
		}
	}
}

double rm_buckets_packed(const struct rm_lengths *d, const int64_t *bound, int k, int64_t tokens_per_batch,
                         uint64_t seed)
{
	struct rm_rng rng = {seed};
	double tok = 0, pad = 0;
	size_t i = 0, cap = 0;
	int64_t *seq = NULL;
	for (int b = 0; b < k; b++) {
		size_t n = 0;
		while (i < d->n && (d->len[i] <= bound[b + 1] || b == k - 1)) {
			if (n + (size_t)d->count[i] > cap) {
				cap = (n + (size_t)d->count[i]) * 2;
				seq = rm_xrealloc(seq, cap * sizeof(int64_t));
			}
			for (int64_t c = 0; c < d->count[i]; c++)
				seq[n++] = d->len[i];
			i++;
		}
		rm_shuffle_i64(&rng, seq, n);
		rm_pack_greedy(seq, n, tokens_per_batch, &tok, &pad);
	}
	free(seq);
	return tok + pad > 0 ? tok / (tok + pad) : 1;
}
