/*
 * bucketmap.c - see runmon/model.h.
 *
 * One pass over the batches with an open-addressing table of distinct ids
 * (a run has a handful; a hostile file may have millions, so the table
 * grows), then a sort of the distinct ids only.
 */
#include "runmon/model.h"

#define RM_BATCH_MAX_LEN_D ((double)RM_BATCH_MAX_LEN)

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rm_bucket_slot {
	int64_t id;
	int idx; /* index into the table's per-id arrays; -1 free */
};

static size_t hash(int64_t id, size_t cap)
{
	uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
	return (size_t)(x >> 32) & (cap - 1);
}

static struct rm_bucket_slot *find(const struct rm_bucket_ids *t, int64_t id)
{
	for (size_t i = hash(id, t->cap);; i = (i + 1) & (t->cap - 1))
		if (t->slot[i].idx < 0 || t->slot[i].id == id)
			return &t->slot[i];
}

static void grow(struct rm_bucket_ids *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	free(t->slot);
	t->slot = rm_xmalloc(cap * sizeof(*t->slot));
	t->cap = cap;
	for (size_t i = 0; i < cap; i++)
		t->slot[i].idx = -1;
	for (size_t i = 0; i < t->n; i++)
		*find(t, t->id[i]) = (struct rm_bucket_slot){t->id[i], (int)i};
	t->id = rm_xrealloc(t->id, cap / 2 * sizeof(*t->id));
	t->sum = rm_xrealloc(t->sum, cap / 2 * sizeof(*t->sum));
	t->top = rm_xrealloc(t->top, cap / 2 * sizeof(*t->top));
	t->known = rm_xrealloc(t->known, cap / 2 * sizeof(*t->known));
	t->seen = rm_xrealloc(t->seen, cap / 2 * sizeof(*t->seen));
}

/* The index of id, added when new. */
static int intern(struct rm_bucket_ids *t, int64_t id)
{
	if (t->n && t->id[t->last] == id) /* a run's consecutive rows mostly share one */
		return t->last;
	if ((t->n + 1) * 2 > t->cap)
		grow(t);
	struct rm_bucket_slot *s = find(t, id);
	if (s->idx < 0) {
		*s = (struct rm_bucket_slot){id, (int)t->n};
		t->id[t->n] = id;
		t->sum[t->n] = 0;
		t->top[t->n] = -INFINITY;
		t->known[t->n] = t->seen[t->n] = 0;
		t->n++;
	}
	return t->last = s->idx;
}

int rm_bucket_ids_add(struct rm_bucket_ids *t, int64_t id, double max_len)
{
	if (id == RM_BUCKET_NONE)
		return -1;
	int i = intern(t, id);
	t->seen[i]++;
	if (isfinite(max_len))
		t->sum[i] += max_len, t->known[i]++, t->top[i] = fmax(t->top[i], max_len);
	return i;
}

void rm_bucket_ids_reserve(struct rm_bucket_ids *t, int64_t id, double len)
{
	size_t before = t->n;
	int i = intern(t, id);
	if (t->n > before) {
		t->sum[i] = len;
		t->known[i] = 1;
	}
}

void rm_bucket_ids_merge(struct rm_bucket_ids *into, const struct rm_bucket_ids *from, int *remap)
{
	for (size_t i = 0; i < from->n; i++) {
		int j = remap[i] = intern(into, from->id[i]);
		into->seen[j] += from->seen[i];
		into->sum[j] += from->sum[i];
		into->top[j] = fmax(into->top[j], from->top[i]);
		into->known[j] += from->known[i];
	}
}

void rm_bucket_ids_release(struct rm_bucket_ids *t)
{
	free(t->slot);
	free(t->id);
	free(t->sum);
	free(t->top);
	free(t->known);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}

/* An id's place in the length order. */
struct ranked {
	int64_t id;
	double mean; /* of known max_len */
	size_t known;
	int idx;
};

static int by_length(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if ((x->known > 0) != (y->known > 0))
		return x->known ? -1 : 1;
	if (x->known && x->mean != y->mean)
		return x->mean < y->mean ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int by_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void label_of(const struct rm_bucket_texts *texts, int64_t id, char *out, size_t n)
{
	if (id >= RM_BUCKET_TEXT_ID && texts) {
		size_t lo = 0, hi = texts->n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (texts->id[mid] < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < texts->n && texts->id[lo] == id) {
			rm_utf8_copy(out, n, texts->label[lo]);
			return;
		}
	}
	snprintf(out, n, "%lld", (long long)id);
}

void rm_bucket_map_from_ids(struct rm_bucket_map *m, const struct rm_bucket_ids *t, const struct rm_bucket_texts *texts,
                            int *dense_of)
{
	memset(m, 0, sizeof(*m));
	size_t d = t->n;
	struct ranked *order = rm_xmalloc((d ? d : 1) * sizeof(*order));
	for (size_t i = 0; i < d; i++)
		order[i] =
		    (struct ranked){t->id[i], t->known[i] ? t->sum[i] / (double)t->known[i] : 0, t->known[i], (int)i};
	qsort(order, d, sizeof(*order), by_length);
	for (size_t i = 0; i < d; i++)
		m->labels += t->seen[i] > 0; /* not the buckets reserved for mixed batches */
	m->k = d > RM_MAX_BUCKETS ? RM_MAX_BUCKETS : (int)d;
	m->nraw = d;
	m->raw = rm_xmalloc((d ? d : 1) * sizeof(int64_t));
	m->dense = rm_xmalloc((d ? d : 1) * sizeof(int));
	/* Grouped beyond the limit: neighbours in length order share a bucket. */
	for (int g = 0; g < m->k; g++)
		m->top[g] = -INFINITY;
	for (size_t i = 0; i < d; i++) {
		int g = dense_of[order[i].idx] = (int)(i * (size_t)m->k / d);
		if (t->seen[order[i].idx]) /* a reserved bucket's length places it, it bounds nothing */
			m->top[g] = fmax(m->top[g], t->top[order[i].idx]);
	}
	for (int g = 0; g < m->k; g++) {
		size_t first = ((size_t)g * d + (size_t)m->k - 1) / (size_t)m->k, last = first;
		while (last + 1 < d && dense_of[order[last + 1].idx] == g)
			last++;
		char a[RM_BUCKET_LABEL_LEN / 2 - 1], b[RM_BUCKET_LABEL_LEN / 2 - 1];
		if (first == last) {
			label_of(texts, order[first].id, m->label[g], RM_BUCKET_LABEL_LEN);
		} else { /* "a..b": both ends of the group, each cut to fit */
			label_of(texts, order[first].id, a, sizeof(a));
			label_of(texts, order[last].id, b, sizeof(b));
			snprintf(m->label[g], RM_BUCKET_LABEL_LEN, "%s..%s", a, b);
		}
	}
	for (size_t i = 0; i < d; i++)
		m->raw[i] = t->id[i];
	qsort(m->raw, d, sizeof(int64_t), by_id);
	for (size_t i = 0; i < d; i++)
		m->dense[i] = dense_of[find(t, m->raw[i])->idx];
	free(order);
}

void rm_bucket_map_build(struct rm_bucket_map *m, const int64_t *ids, const double *max_len, size_t n,
                         const struct rm_bucket_texts *texts, int *dense_out)
{
	struct rm_bucket_ids t = {0};
	int *idx = rm_xmalloc((n ? n : 1) * sizeof(int));
	for (size_t i = 0; i < n; i++)
		idx[i] = rm_bucket_ids_add(&t, ids[i], max_len ? max_len[i] : NAN);
	int *dense_of = rm_xmalloc((t.n ? t.n : 1) * sizeof(int));
	rm_bucket_map_from_ids(m, &t, texts, dense_of);
	for (size_t i = 0; dense_out && i < n; i++)
		dense_out[i] = idx[i] < 0 ? -1 : dense_of[idx[i]];
	free(dense_of);
	free(idx);
	rm_bucket_ids_release(&t);
}

int rm_bucket_map_of_length(const struct rm_bucket_map *m, double max_len)
{
	if (!(max_len == max_len) || m->nbound < 2)
		return -1;
	int b = 0;
	while (b < m->nbound - 2 && max_len > (double)m->bound[b + 1])
		b++;
	return b;
}

int rm_bucket_map_cuts(const struct rm_bucket_map *m, const int64_t *bounds, int nbounds, struct rm_length_cuts *c)
{
	memset(c, 0, sizeof(*c));
	if (m->derived) {
		c->n = m->nbound - 1;
		for (int i = 0; i < c->n; i++) {
			c->hi[i] = m->bound[i + 1];
			c->dense[i] = i;
		}
		return c->n > 0;
	}
	int indexes = nbounds >= 2 && nbounds - 1 <= RM_MAX_BUCKETS && m->nraw;
	for (size_t r = 0; r < m->nraw && indexes; r++)
		indexes = m->raw[r] >= 0 && m->raw[r] <= nbounds - 2;
	if (!indexes) {
		/* No boundaries for these ids: each bucket ends at its longest batch,
		 * when buckets in length order end in increasing lengths. */
		c->n = m->k;
		for (int i = 0; i < m->k; i++) {
			if (!(m->top[i] >= 1 && m->top[i] <= RM_BATCH_MAX_LEN_D) ||
			    (i > 0 && m->top[i] <= m->top[i - 1]))
				return c->n = 0; /* fuzz_diagnose: a stored length of -9e18 */
			c->hi[i] = (int64_t)m->top[i];
			c->dense[i] = i;
		}
		return c->n > 1;
	}
	c->n = nbounds - 1;
	for (int i = 0; i < c->n; i++) {
		c->hi[i] = bounds[i + 1];
		c->dense[i] = rm_bucket_map_dense(m, i);
	}
	return 1;
}

int rm_bucket_map_dense(const struct rm_bucket_map *m, int64_t raw)
{
	const int64_t *p = m->nraw ? bsearch(&raw, m->raw, m->nraw, sizeof(int64_t), by_id) : NULL;
	return p ? m->dense[p - m->raw] : -1;
}

void rm_bucket_map_release(struct rm_bucket_map *m)
{
	free(m->raw);
	free(m->dense);
	memset(m, 0, sizeof(*m));
}

int rm_bucket_of(const int64_t *bounds, int nbounds, double max_len, int *over)
{
	*over = 0;
	for (int i = 0; i + 1 < nbounds; i++)
		if (max_len <= (double)bounds[i + 1])
			return i;
	*over = 1;
	return nbounds - 2;
}
