/*
 * lens.c - see runmon/model.h. LEB128 as DWARF defines it (DWARF 5, section
 * 7.6): seven bits a byte, low group first, the high bit set on every
 * byte but the last.
 */
#include "runmon/model.h"

#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

size_t rm_lens_encode(int64_t *len, size_t n, uint8_t *out)
{
	qsort(len, n, sizeof(*len), by_value);
	size_t w = 0;
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = (uint64_t)len[i], d = v - prev;
		prev = v;
		do {
			uint8_t byte = d & 0x7f;
			d >>= 7;
			out[w++] = (uint8_t)(byte | (d ? 0x80 : 0));
		} while (d);
	}
	return w;
}

/* The next length after *prev from in[*i..nbytes): 1 with *prev moved
 * on, 0 at the end, -1 when the bytes are cut short or pass 2^31. */
static int next_len(const uint8_t *in, size_t nbytes, size_t *i, uint64_t *prev)
{
	if (*i == nbytes)
		return 0;
	uint64_t d = 0;
	for (int shift = 0;; shift += 7) {
		if (*i == nbytes || shift > 28)
			return -1;
		uint8_t byte = in[(*i)++];
		d |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			break;
	}
	if (*prev + d > INT32_MAX)
		return -1;
	*prev += d;
	return 1;
}

long rm_lens_decode(const uint8_t *in, size_t nbytes, int64_t *out, size_t cap)
{
	size_t n = 0, i = 0;
	uint64_t v = 0;
	int rc;
	while ((rc = next_len(in, nbytes, &i, &v)) == 1) {
		if (n == cap)
			return -1;
		out[n++] = (int64_t)v;
	}
	return rc < 0 ? -1 : (long)n;
}

int rm_lens_shares(const uint8_t *in, size_t nbytes, const struct rm_length_cuts *cuts, uint8_t *bucket, float *share)
{
	double tokens[RM_MAX_BUCKETS] = {0}, total = 0;
	size_t i = 0;
	uint64_t v = 0;
	int rc, cut = 0;
	while ((rc = next_len(in, nbytes, &i, &v)) == 1) {
		if (cuts->n <= 0)
			continue;
		while (cut < cuts->n - 1 && (int64_t)v > cuts->hi[cut]) /* ascending: the cut only moves up */
			cut++;
		int b = cuts->dense[cut];
		if (b >= 0 && b < RM_MAX_BUCKETS) {
			tokens[b] += (double)v;
			total += (double)v;
		}
	}
	if (rc < 0)
		return -1;
	int parts = 0;
	for (int b = 0; b < RM_MAX_BUCKETS && total > 0; b++)
		if (tokens[b] > 0) {
			bucket[parts] = (uint8_t)b;
			share[parts++] = (float)(tokens[b] / total);
		}
	return parts;
}

void rm_mix_add(struct rm_mix *m, size_t row, const uint8_t *bucket, const float *share, int parts)
{
	size_t used = m->n ? m->from[m->n] : 0;
	if (m->n + 1 >= m->cap) {
		m->cap = m->cap ? m->cap * 2 : 1024;
		m->row = rm_xrealloc(m->row, m->cap * sizeof(*m->row));
		m->from = rm_xrealloc(m->from, (m->cap + 1) * sizeof(*m->from));
	}
	if (used + (size_t)parts > m->pcap) {
		m->pcap = (used + (size_t)parts) * 2;
		m->bucket = rm_xrealloc(m->bucket, m->pcap * sizeof(*m->bucket));
		m->share = rm_xrealloc(m->share, m->pcap * sizeof(*m->share));
	}
	memcpy(m->bucket + used, bucket, (size_t)parts * sizeof(*bucket));
	memcpy(m->share + used, share, (size_t)parts * sizeof(*share));
	m->row[m->n] = row;
	m->from[m->n] = (uint32_t)used;
	m->from[++m->n] = (uint32_t)(used + (size_t)parts);
}

void rm_mix_release(struct rm_mix *m)
{
	free(m->row);
	free(m->from);
	free(m->bucket);
	free(m->share);
	memset(m, 0, sizeof(*m));
}
