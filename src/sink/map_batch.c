/*
 * map_batch.c - a record's batch fields as the mapper reads them: lists of
 * lengths (encoded for the store), text bucket labels (decoded, interned
 * per file), the statistics a batch derives, and the bounds no real batch
 * passes. See map_internal.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map_internal.h"
#include "runmon/model.h"

/* A number in a message, as all its digits when whole (rm_num). */
#define NUM(v) rm_num((v), (char[32]){0}, 32)

/* Batch statistics, in enum rm_target order from T_BUCKET. */
const char *const rm_map_batch_names[] = {"bucket",        "n",    "min_len", "max_len", "mean_len", "tokens",
                                          "padded_tokens", "rank", "micro",   "lens"};

/* Keeps length v of the list for the store's encoding (lens.h). */
static void lens_keep(struct rm_mapper *m, size_t i, double v)
{
	if (i >= RM_LENS_MAX_SEQS)
		return;
	if (i == m->lens_cap) {
		m->lens_cap = m->lens_cap ? m->lens_cap * 2 : 256;
		m->lens = rm_xrealloc(m->lens, m->lens_cap * sizeof(*m->lens));
		m->lens_code = rm_xrealloc(m->lens_code, m->lens_cap * 5);
	}
	m->lens[i] = v <= INT32_MAX ? llround(v) : INT32_MAX + 1LL; /* beyond: check_batch refuses the line */
}

/* Parses a list of lengths from a number array or a text cell such as
 * "[1801, 1755]" or "1801 1755", and encodes it into the mapper's buffer
 * for the record. Returns the count, or -1. */
int rm_map_lens_stats(struct rm_mapper *m, const struct rm_row *row, const struct rm_field *f, struct rm_batch *b)
{
	double n = 0, sum = 0, lo = INFINITY, hi = -INFINITY;
	if (f->type == RM_F_NUMARR) {
		for (uint32_t i = 0; i < f->arr_len; i++) {
			double v = row->nums[f->arr_off + i];
			if (!isfinite(v) || v < 0)
				return -1;
			lens_keep(m, (size_t)n, v);
			n++, sum += v, lo = fmin(lo, v), hi = fmax(hi, v);
		}
	} else if (f->type == RM_F_CELL || f->type == RM_F_STR) {
		const char *p = f->raw, *end = f->raw + f->rlen;
		while (p < end) {
			while (p < end && strchr("[] ,;\t", *p))
				p++;
			if (p >= end)
				break;
			const char *q = p;
			while (q < end && !strchr("[] ,;\t", *q))
				q++;
			double v;
			if (!rm_parse_double(p, (size_t)(q - p), &v) || !isfinite(v) || v < 0)
				return -1;
			lens_keep(m, (size_t)n, v);
			n++, sum += v, lo = fmin(lo, v), hi = fmax(hi, v);
			p = q;
		}
	} else {
		return -1;
	}
	if (n == 0)
		return 0;
	b->v[RM_B_N] = n;
	b->v[RM_B_MIN_LEN] = lo;
	b->v[RM_B_MAX_LEN] = hi;
	b->v[RM_B_MEAN_LEN] = sum / n;
	b->v[RM_B_TOKENS] = sum;
	b->v[RM_B_PADDED] = n * hi - sum;
	b->have |= 1u << RM_B_N | 1u << RM_B_MIN_LEN | 1u << RM_B_MAX_LEN | 1u << RM_B_MEAN_LEN | 1u << RM_B_TOKENS |
	           1u << RM_B_PADDED;
	if (n <= RM_LENS_MAX_SEQS && hi <= INT32_MAX) { /* a longer list is summarised, not kept */
		b->lens = m->lens_code;
		b->lens_bytes = (uint32_t)rm_lens_encode(m->lens, (size_t)n, m->lens_code);
	}
	return (int)n;
}

/* Fills the batch statistics a sidecar left out but that follow from the
 * others. */
void rm_map_complete_batch(struct rm_batch *b)
{
#define HAS(f)    ((b->have >> (f)) & 1)
#define SET(f, x) (b->v[f] = (x), b->have |= 1u << (f))
	if (!HAS(RM_B_TOKENS) && HAS(RM_B_MEAN_LEN) && HAS(RM_B_N))
		SET(RM_B_TOKENS, round(b->v[RM_B_MEAN_LEN] * b->v[RM_B_N]));
	if (!HAS(RM_B_MEAN_LEN) && HAS(RM_B_TOKENS) && HAS(RM_B_N) && b->v[RM_B_N] > 0)
		SET(RM_B_MEAN_LEN, b->v[RM_B_TOKENS] / b->v[RM_B_N]);
	if (!HAS(RM_B_PADDED) && HAS(RM_B_TOKENS) && HAS(RM_B_N) && HAS(RM_B_MAX_LEN))
		SET(RM_B_PADDED, b->v[RM_B_N] * b->v[RM_B_MAX_LEN] - b->v[RM_B_TOKENS]);
#undef HAS
#undef SET
}

/* A bucket label: an integer as it is, or a text given an index into the
 * mapper's texts (the sink turns it into the store's id). */
int rm_map_bucket_label(struct rm_mapper *m, const struct rm_field *f, int rc, double v, struct rm_record *rec,
                        char *why, size_t whylen)
{
	struct rm_batch *b = &rec->b;
	if (rc == 0)
		return 0;
	if (rc == 1) {
		if (!(v == floor(v) && fabs(v) < (double)RM_BUCKET_TEXT_ID)) {
			snprintf(why, whylen, "bucket %s is neither an integer below 2^50 nor a text label", NUM(v));
			return -1;
		}
		b->v[RM_B_BUCKET] = v;
		b->have |= 1u << RM_B_BUCKET;
		return 0;
	}
	/* a JSON string is decoded first: "\u006cong" is "long", "q\"uo" is q"uo */
	char text[MAX_LABEL_BYTES * 6 + 1];
	size_t tlen = f->rlen;
	if ((f->type != RM_F_STR && f->type != RM_F_CELL) || f->rlen == 0 || f->rlen > sizeof(text) - 1) {
		snprintf(why, whylen, "bucket label is not a number or a text of 1..%d bytes", MAX_LABEL_BYTES);
		return -1;
	}
	if (f->type == RM_F_STR && memchr(f->raw, '\\', f->rlen))
		tlen = rm_json_unescape(f->raw, f->rlen, text);
	else
		memcpy(text, f->raw, tlen);
	text[tlen] = 0;
	if (tlen == 0 || tlen > MAX_LABEL_BYTES || strlen(text) != tlen) {
		snprintf(why, whylen, "bucket label is not a number or a text of 1..%d bytes (and no NUL)",
		         MAX_LABEL_BYTES);
		return -1;
	}
	char *fixed = NULL; /* as run names: U+FFFD for a byte no UTF-8 sequence starts */
	for (size_t j = 0, c; j < tlen; j += c)
		if (!(c = rm_utf8_len((const unsigned char *)text + j, tlen - j))) {
			fixed = rm_utf8_fix(text);
			break;
		}
	const char *label = fixed ? fixed : text;
	uint32_t i = 0;
	while (i < m->ntexts && strcmp(m->texts[i], label))
		i++;
	if (i == m->ntexts) {
		if (m->ntexts == MAX_TEXT_LABELS) {
			free(fixed);
			snprintf(why, whylen, "more than %d distinct text bucket labels in one file", MAX_TEXT_LABELS);
			return -1;
		}
		if (!m->texts)
			m->texts = rm_xcalloc(MAX_TEXT_LABELS, sizeof(char *));
		m->texts[m->ntexts++] = rm_xstrdup(label);
	}
	free(fixed);
	rec->bucket_text = i + 1;
	return 0;
}

/* Refuses batch statistics no real batch has, before they reach the store
 * and the cost side: see RM_BATCH_MAX_N and RM_BATCH_MAX_LEN. */
int rm_map_check_batch(const struct rm_batch *b, char *why, size_t whylen)
{
#define HAS(f) ((b->have >> (f)) & 1)
	const double *v = b->v;
	static const enum rm_batch_field lens[] = {RM_B_MIN_LEN, RM_B_MAX_LEN, RM_B_MEAN_LEN};
	if (HAS(RM_B_N) && !(v[RM_B_N] >= 1 && v[RM_B_N] <= RM_BATCH_MAX_N && v[RM_B_N] == floor(v[RM_B_N]))) {
		snprintf(why, whylen, "n %s is not a sequence count in 1..%d", NUM(v[RM_B_N]), RM_BATCH_MAX_N);
		return -1;
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		double x = v[lens[i]];
		if (HAS(lens[i]) && !(x >= 0 && x <= RM_BATCH_MAX_LEN)) {
			snprintf(why, whylen, "%s %s is not a length in 0..%d tokens", rm_map_batch_names[lens[i]],
			         NUM(x), RM_BATCH_MAX_LEN);
			return -1;
		}
	}
	/* Rounding slack: a mean_len or tokens written with a few digits. */
	const double eps = 0.5;
	if (HAS(RM_B_MIN_LEN) && HAS(RM_B_MAX_LEN) && v[RM_B_MIN_LEN] > v[RM_B_MAX_LEN]) {
		snprintf(why, whylen, "min_len %s is above max_len %s", NUM(v[RM_B_MIN_LEN]), NUM(v[RM_B_MAX_LEN]));
		return -1;
	}
	if (HAS(RM_B_MEAN_LEN) && ((HAS(RM_B_MIN_LEN) && v[RM_B_MEAN_LEN] < v[RM_B_MIN_LEN] - eps) ||
	                           (HAS(RM_B_MAX_LEN) && v[RM_B_MEAN_LEN] > v[RM_B_MAX_LEN] + eps))) {
		snprintf(why, whylen, "mean_len %s is outside min_len..max_len", NUM(v[RM_B_MEAN_LEN]));
		return -1;
	}
	if (HAS(RM_B_TOKENS)) {
		double t = v[RM_B_TOKENS], n = HAS(RM_B_N) ? v[RM_B_N] : NAN;
		if (!(t >= 0 && t <= (double)RM_BATCH_MAX_N * RM_BATCH_MAX_LEN)) {
			snprintf(why, whylen, "tokens %s is not a token count", NUM(t));
			return -1;
		}
		if (HAS(RM_B_N) && HAS(RM_B_MAX_LEN) && t > n * v[RM_B_MAX_LEN] + eps * n) {
			snprintf(why, whylen, "tokens %s exceed n * max_len = %s", NUM(t), NUM(n * v[RM_B_MAX_LEN]));
			return -1;
		}
		if (HAS(RM_B_N) && HAS(RM_B_MIN_LEN) && t < n * v[RM_B_MIN_LEN] - eps * n) {
			snprintf(why, whylen, "tokens %s are below n * min_len = %s", NUM(t), NUM(n * v[RM_B_MIN_LEN]));
			return -1;
		}
	}
	if (HAS(RM_B_PADDED) &&
	    !(v[RM_B_PADDED] >= -eps && v[RM_B_PADDED] <= (double)RM_BATCH_MAX_N * RM_BATCH_MAX_LEN)) {
		snprintf(why, whylen, "padded_tokens %s is not a token count", NUM(v[RM_B_PADDED]));
		return -1;
	}
	return 0;
#undef HAS
}
