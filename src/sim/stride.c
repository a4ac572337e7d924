/*
 * stride.c - see runmon/sim.h: the stride sampler of
 * contrib/python/runmon_sampler.py, to the same specification (written
 * there, numbered 1-5 below), batch for batch.
 *
 * Its randomness is CPython's: random.Random(key) is MT19937 (Matsumoto
 * and Nishimura, 1998) seeded by init_by_array with the key's 32-bit words,
 * least significant first; shuffle is Fisher-Yates from the end with
 * _randbelow(i + 1), which draws getrandbits(bit_length(i + 1)), the top
 * bits of one 32-bit output, until the draw is below i + 1.
 */
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/sim.h"

enum { MT_N = 624, MT_M = 397 };

struct mt {
	uint32_t s[MT_N];
	int i;
};

static void mt_init(struct mt *m, uint32_t seed)
{
	m->s[0] = seed;
	for (int i = 1; i < MT_N; i++)
		m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
	m->i = MT_N;
}

static void mt_init_by_array(struct mt *m, const uint32_t *key, int len)
{
	mt_init(m, 19650218u);
	int i = 1, j = 0;
	for (int k = MT_N > len ? MT_N : len; k; k--) {
		m->s[i] = (m->s[i] ^ ((m->s[i - 1] ^ (m->s[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
		if (++i >= MT_N) {
			m->s[0] = m->s[MT_N - 1];
			i = 1;
		}
		if (++j >= len)
			j = 0;
	}
	for (int k = MT_N - 1; k; k--) {
		m->s[i] = (m->s[i] ^ ((m->s[i - 1] ^ (m->s[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
		if (++i >= MT_N) {
			m->s[0] = m->s[MT_N - 1];
			i = 1;
		}
	}
	m->s[0] = 0x80000000u;
}

static uint32_t mt_next(struct mt *m)
{
	if (m->i >= MT_N) {
		for (int k = 0; k < MT_N; k++) {
			uint32_t y = (m->s[k] & 0x80000000u) | (m->s[(k + 1) % MT_N] & 0x7fffffffu);
			m->s[k] = m->s[(k + MT_M) % MT_N] ^ (y >> 1) ^ (y & 1 ? 0x9908b0dfu : 0);
		}
		m->i = 0;
	}
	uint32_t y = m->s[m->i++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	return y ^ (y >> 18);
}

/* Python's _randbelow(n) for 0 < n < 2^32. */
static uint32_t mt_below(struct mt *m, uint32_t n)
{
	int k = 0;
	while (k < 32 && (n >> k))
		k++;
	for (;;) {
		uint32_t r = mt_next(m) >> (32 - k);
		if (r < n)
			return r;
	}
}

/* random.Random((seed << 32) | epoch): the key's words, low first, with
 * no zero words on top (but one). */
static void mt_seed(struct mt *m, uint64_t seed, uint32_t epoch)
{
	uint32_t key[3] = {epoch, (uint32_t)seed, (uint32_t)(seed >> 32)};
	int len = 3;
	while (len > 1 && key[len - 1] == 0)
		len--;
	mt_init_by_array(m, key, len);
}

/* 1: B[b] < len <= B[b+1], clamped to the first and last bucket. */
static int stride_bucket(const int64_t *b, int nb, int64_t len)
{
	int k = 0;
	while (k < nb - 2 && len > b[k + 1])
		k++;
	return k;
}

struct batches {
	size_t *idx;         /* the indices, bucket after bucket */
	size_t *start, *end; /* batch j is idx[start[j] .. end[j]) */
	size_t n, cap;
	int *bucket;
};

static void batch_open(struct batches *out, size_t at, int b)
{
	if (out->n == out->cap) {
		out->cap = out->cap ? 2 * out->cap : 64;
		out->start = rm_xrealloc(out->start, out->cap * sizeof(size_t));
		out->end = rm_xrealloc(out->end, out->cap * sizeof(size_t));
		out->bucket = rm_xrealloc(out->bucket, out->cap * sizeof(int));
	}
	out->start[out->n] = out->end[out->n] = at;
	out->bucket[out->n++] = b;
}

/* 3: one bucket's members, in their shuffled order, into batches appended
 * to out (their indices already sit at out->idx[at ..]). */
static void stride_batch(struct batches *out, size_t at, size_t count, const int64_t *len,
                         const struct rm_stride_opts *o, int b)
{
	size_t first = out->n, end = at + count;
	int64_t longest = 0;
	size_t in = 0; /* members of the open batch */
	for (size_t p = at; p < end; p++) {
		int64_t l = len[out->idx[p]] > 1 ? len[out->idx[p]] : 1; /* a slot of one token at least */
		int64_t top = l > longest ? l : longest;
		int full =
		    o->max_tokens > 0 ? in && (int64_t)(in + 1) * top > o->max_tokens : in == (size_t)o->batch_size;
		if (out->n == first || full) {
			batch_open(out, p, b);
			in = 0;
			top = l;
		}
		in++;
		longest = top;
		out->end[out->n - 1] = p + 1;
	}
	if (o->drop_last && out->n > first) {
		int short_ =
		    o->max_tokens > 0 ? (int64_t)(in + 1) * longest <= o->max_tokens : in < (size_t)o->batch_size;
		if (short_)
			out->n--;
	}
}

/* 4: the batches in proportion, the bucket most behind its share next, as
 * indices of out's batches. */
static size_t *stride_interleave(const struct batches *out, const size_t *first, const size_t *count, int k)
{
	size_t total = out->n, *order = rm_xmalloc((total ? total : 1) * sizeof(size_t));
	size_t *taken = rm_xcalloc((size_t)k, sizeof(size_t));
	for (size_t t = 1; t <= total; t++) {
		int best = -1;
		int64_t lag = 0; /* t n_b - N k_b: below 2^62 with fewer than 2^31 samples */
		for (int b = 0; b < k; b++) {
			if (taken[b] == count[b])
				continue;
			int64_t behind = (int64_t)(t * count[b]) - (int64_t)(total * taken[b]);
			if (best < 0 || behind > lag) {
				best = b;
				lag = behind;
			}
		}
		order[t - 1] = first[best] + taken[best]++;
	}
	free(taken);
	return order;
}

/* 5: rank's batches of the order, as indices of out's batches. */
static size_t stride_shard(const struct batches *out, const size_t *order, int k, const struct rm_stride_opts *o,
                           size_t **mine)
{
	size_t total = out->n, W = (size_t)o->world_size;
	size_t steps = o->drop_last ? total / W : (total + W - 1) / W;
	if (!total)
		steps = 0;
	size_t *got = rm_xcalloc(W * (size_t)k, sizeof(size_t)), *free_ = rm_xmalloc(W * sizeof(size_t));
	*mine = rm_xmalloc((steps ? steps : 1) * sizeof(size_t));
	for (size_t s = 0; s < steps; s++) {
		size_t nfree = W;
		for (size_t i = 0; i < W; i++)
			free_[i] = (s + i) % W;
		for (size_t j = s * W; j < (s + 1) * W; j++) {
			size_t batch = order[j % total];
			int b = out->bucket[batch];
			size_t pos = 0;
			for (size_t p = 1; p < nfree; p++)
				if (got[free_[p] * (size_t)k + (size_t)b] < got[free_[pos] * (size_t)k + (size_t)b])
					pos = p;
			size_t r = free_[pos];
			memmove(free_ + pos, free_ + pos + 1, (nfree - pos - 1) * sizeof(size_t));
			nfree--;
			got[r * (size_t)k + (size_t)b]++;
			if (r == (size_t)o->rank)
				(*mine)[s] = batch;
		}
	}
	free(got);
	free(free_);
	return steps;
}

int64_t rm_stride_epoch(const int64_t *len, size_t n, const struct rm_stride_opts *o, struct rm_stride_epoch *ep)
{
	memset(ep, 0, sizeof(*ep));
	int k = o->nbounds - 1;
	if (k < 1 || k > RM_STRIDE_MAX_BUCKETS || (o->batch_size > 0) == (o->max_tokens > 0) || o->world_size < 1 ||
	    o->rank < 0 || o->rank >= o->world_size || n >= ((size_t)1 << 31))
		return -1;
	for (int b = 0; b + 1 < o->nbounds; b++)
		if (o->bounds[b] >= o->bounds[b + 1])
			return -1;
	for (size_t i = 0; i < n; i++)
		if (len[i] < 0)
			return -1;
	/* 1-2: each bucket's members, ascending, then shuffled in bucket order. */
	size_t count[RM_STRIDE_MAX_BUCKETS] = {0}, at[RM_STRIDE_MAX_BUCKETS];
	int *bucket = rm_xmalloc((n ? n : 1) * sizeof(int));
	for (size_t i = 0; i < n; i++)
		count[bucket[i] = stride_bucket(o->bounds, o->nbounds, len[i])]++;
	struct batches all = {.idx = rm_xmalloc((n ? n : 1) * sizeof(size_t))};
	for (int b = 0, sum = 0; b < k; b++) {
		at[b] = (size_t)sum;
		sum += (int)count[b];
	}
	size_t fill[RM_STRIDE_MAX_BUCKETS];
	memcpy(fill, at, sizeof(fill));
	for (size_t i = 0; i < n; i++)
		all.idx[fill[bucket[i]]++] = i;
	free(bucket);
	struct mt m;
	mt_seed(&m, o->seed, o->epoch);
	size_t first[RM_STRIDE_MAX_BUCKETS], nbat[RM_STRIDE_MAX_BUCKETS];
	for (int b = 0; b < k; b++) {
		size_t *x = all.idx + at[b];
		for (size_t i = count[b]; i > 1; i--) {
			size_t j = mt_below(&m, (uint32_t)i), t = x[i - 1];
			x[i - 1] = x[j];
			x[j] = t;
		}
		first[b] = all.n;
		stride_batch(&all, at[b], count[b], len, o, b);
		nbat[b] = all.n - first[b];
	}
	/* 4-5 */
	size_t *order = stride_interleave(&all, first, nbat, k), *mine = NULL;
	size_t steps = stride_shard(&all, order, k, o, &mine);
	free(order);
	ep->nbatches = steps;
	ep->start = rm_xmalloc((steps + 1) * sizeof(size_t));
	size_t used = 0;
	for (size_t s = 0; s < steps; s++)
		used += all.end[mine[s]] - all.start[mine[s]];
	ep->idx = rm_xmalloc((used ? used : 1) * sizeof(size_t));
	ep->bucket = rm_xmalloc((steps ? steps : 1) * sizeof(int));
	used = 0;
	for (size_t s = 0; s < steps; s++) {
		size_t a = all.start[mine[s]], z = all.end[mine[s]];
		ep->start[s] = used;
		ep->bucket[s] = all.bucket[mine[s]];
		memcpy(ep->idx + used, all.idx + a, (z - a) * sizeof(size_t));
		used += z - a;
	}
	ep->start[steps] = used;
	free(mine);
	free(all.idx);
	free(all.start);
	free(all.end);
	free(all.bucket);
	return (int64_t)steps;
}

void rm_stride_epoch_free(struct rm_stride_epoch *ep)
{
	free(ep->idx);
	free(ep->start);
	free(ep->bucket);
	memset(ep, 0, sizeof(*ep));
}
