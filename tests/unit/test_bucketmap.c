/*
 * test_bucketmap.c - bucket labels to dense buckets: length order, text
 * labels, grouping beyond RM_MAX_BUCKETS, many distinct ids; a batch's
 * lengths as stored and their token shares by bucket.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/cost.h"
#include "runmon/model.h"
#include "testutil.h"

/* Labels by upper bound, in no particular order: dense by length. */
static void length_order(void **state)
{
	const int64_t ids[] = {8192, 770, RM_BUCKET_NONE, 1216, 770, 8192, -1};
	const double len[] = {5000, 700, NAN, 1100, 760, NAN, NAN};
	int dense[7];
	struct rm_bucket_map m;
	rm_bucket_map_build(&m, ids, len, 7, NULL, dense);
	assert_int_equal(m.k, 4);
	assert_int_equal(m.labels, 4);
	assert_string_equal(m.label[0], "770");
	assert_string_equal(m.label[1], "1216");
	assert_string_equal(m.label[2], "8192");
	assert_string_equal(m.label[3], "-1"); /* no length known: after the others */
	const int want[] = {2, 0, -1, 1, 0, 2, 3};
	assert_memory_equal(dense, want, sizeof(want));
	assert_int_equal(rm_bucket_map_dense(&m, 1216), 1);
	assert_int_equal(rm_bucket_map_dense(&m, 5), -1);
	rm_bucket_map_release(&m);
}

static void text_labels(void **state)
{
	const int64_t t0 = RM_BUCKET_TEXT_ID, ids[] = {t0 + 1, t0, t0 + 1};
	const double len[] = {3000, 200, 2900};
	const int64_t tid[] = {t0, t0 + 1};
	char *tl[] = {"short",
	              "long: a label far longer than the 40 bytes of a table's column, kept whole (issue 35.2)"};
	struct rm_bucket_texts texts = {2, tid, tl};
	struct rm_bucket_map m;
	rm_bucket_map_build(&m, ids, len, 3, &texts, NULL);
	assert_int_equal(m.k, 2);
	assert_string_equal(m.label[0], "short");
	assert_string_equal(m.label[1], tl[1]);
	rm_bucket_map_release(&m);
}

/* 100 labels: 32 buckets of neighbours in length order, labelled a..b. */
static void grouped(void **state)
{
	enum { N = 1000 };
	static int64_t ids[N];
	static double len[N];
	static int dense[N];
	for (int i = 0; i < N; i++) {
		ids[i] = 99 - i % 100; /* labels against length order */
		len[i] = 10.0 * (i % 100);
	}
	struct rm_bucket_map m;
	rm_bucket_map_build(&m, ids, len, N, NULL, dense);
	assert_int_equal(m.k, RM_MAX_BUCKETS);
	assert_int_equal(m.labels, 100);
	assert_string_equal(m.label[0], "99..96"); /* i * 32 / 100 == 0 for i < 4 */
	assert_string_equal(m.label[RM_MAX_BUCKETS - 1], "2..0");
	for (int i = 1; i < N; i++) /* longer batches never get a lower bucket */
		if (len[i] > len[i - 1])
			assert_true(dense[i] >= dense[i - 1]);
	rm_bucket_map_release(&m);
}

/* A column of distinct numbers put in "bucket" by mistake: bounded work. */
static void many_distinct(void **state)
{
	enum { N = 300000 };
	int64_t *ids = malloc(N * sizeof(*ids));
	int *dense = malloc(N * sizeof(*dense));
	for (int i = 0; i < N; i++)
		ids[i] = (int64_t)i * 7919 - 1000000;
	struct rm_bucket_map m;
	rm_bucket_map_build(&m, ids, NULL, N, NULL, dense);
	assert_int_equal(m.k, RM_MAX_BUCKETS);
	assert_int_equal(m.labels, N);
	assert_int_equal(m.nraw, N);
	for (int i = 0; i < N; i += 997)
		assert_int_equal(rm_bucket_map_dense(&m, ids[i]), dense[i]);
	rm_bucket_map_release(&m);
	free(ids);
	free(dense);
}

/* Lengths round-trip sorted, one byte each below 128 and two below 16k;
 * cut or overlong bytes are refused. */
static void lens_codec(void **state)
{
	int64_t len[] = {1801, 0, 5, 1755, 127, 128, 16383, 2147483647}, back[8];
	uint8_t code[5 * 8];
	size_t n = rm_lens_encode(len, 8, code);
	const int64_t sorted[] = {0, 5, 127, 128, 1755, 1801, 16383, 2147483647};
	assert_memory_equal(len, sorted, sizeof(sorted));
	/* deltas 0, 5, 122, 1 (one byte each), 1627, 46 (two and one), 14582 (two), the rest (five) */
	assert_int_equal(n, 1 + 1 + 1 + 1 + 2 + 1 + 2 + 5);
	assert_int_equal(rm_lens_decode(code, n, back, 8), 8);
	assert_memory_equal(back, sorted, sizeof(sorted));
	assert_int_equal(rm_lens_decode(code, n, back, 7), -1);     /* more than cap */
	assert_int_equal(rm_lens_decode(code, n - 1, back, 8), -1); /* cut inside the last varint */
	const uint8_t past[] = {0xff, 0xff, 0xff, 0xff, 0x08};      /* 2^31 + ... */
	assert_int_equal(rm_lens_decode(past, sizeof(past), back, 8), -1);
	assert_int_equal(rm_lens_decode(code, 0, back, 8), 0);
}

/* Token shares by bucket: (lo, hi] as import --buckets cuts, the last
 * bucket taking longer lengths; a bucket the map does not count is left
 * out. */
static void lens_shares(void **state)
{
	struct rm_length_cuts cuts = {.n = 3, .hi = {100, 200, 300}, .dense = {0, 1, 2}};
	int64_t len[] = {100, 101, 200, 700}; /* 100 -> 0, 101 and 200 -> 1, 700 -> 2 */
	uint8_t code[20], bucket[RM_MAX_BUCKETS];
	float share[RM_MAX_BUCKETS];
	size_t n = rm_lens_encode(len, 4, code);
	assert_int_equal(rm_lens_shares(code, n, &cuts, bucket, share), 3);
	assert_int_equal(bucket[0], 0);
	assert_int_equal(bucket[2], 2);
	assert_float_equal(share[0], 100.0 / 1101, 1e-6);
	assert_float_equal(share[1], 301.0 / 1101, 1e-6);
	assert_float_equal(share[2], 700.0 / 1101, 1e-6);
	cuts.dense[1] = -1;
	assert_int_equal(rm_lens_shares(code, n, &cuts, bucket, share), 2);
	assert_float_equal(share[0] + share[1], 1.0, 1e-6);
	assert_float_equal(share[1], 700.0 / 800, 1e-6);
	int64_t zero[] = {0, 0};
	n = rm_lens_encode(zero, 2, code);
	assert_int_equal(rm_lens_shares(code, n, &cuts, bucket, share), 0); /* no tokens at all */
	const uint8_t cut[] = {0x80};
	assert_int_equal(rm_lens_shares(cut, 1, &cuts, bucket, share), -1);
}

/* The cuts of a map: its derived boundaries, the run's recorded ones when
 * its ids are their indexes, else its buckets' longest batches when they
 * rise with the length order. */
static void map_cuts(void **state)
{
	const int64_t ids[] = {2, 0, 2}, bounds[] = {0, 770, 1216, 8192};
	const double len[] = {5000, 500, 6000};
	struct rm_bucket_map m;
	struct rm_length_cuts c;
	rm_bucket_map_build(&m, ids, len, 3, NULL, NULL);
	assert_true(rm_bucket_map_cuts(&m, bounds, 4, &c));
	assert_int_equal(c.n, 3);
	assert_true(c.hi[0] == 770 && c.hi[2] == 8192);
	assert_int_equal(c.dense[0], 0);
	assert_int_equal(c.dense[1], -1); /* no batch of bucket 1: not counted */
	assert_int_equal(c.dense[2], 1);
	assert_true(rm_bucket_map_cuts(&m, NULL, 0, &c)); /* buckets 0 and 2 up to 500 and 6000 */
	assert_true(c.n == 2 && c.hi[0] == 500 && c.hi[1] == 6000);
	rm_bucket_map_release(&m);
	/* upper bounds as ids, not the indexes: each bucket up to its longest batch */
	const int64_t labels[] = {8192, 770, 770};
	const double llen[] = {5000, 500, 700};
	rm_bucket_map_build(&m, labels, llen, 3, NULL, NULL);
	assert_true(rm_bucket_map_cuts(&m, bounds, 4, &c));
	assert_int_equal(c.n, 2);
	assert_true(c.hi[0] == 700 && c.hi[1] == 5000);
	rm_bucket_map_release(&m);
	const int64_t overlap[] = {1, 1, 2}; /* bucket 1 reaches past bucket 2: no telling */
	const double olen[] = {100, 900, 500};
	rm_bucket_map_build(&m, overlap, olen, 3, NULL, NULL);
	assert_false(rm_bucket_map_cuts(&m, NULL, 0, &c));
	rm_bucket_map_release(&m);
	/* reserved for mixed batches: a bucket in the order, with no batch of its own */
	struct rm_bucket_ids t = {0};
	rm_bucket_ids_add(&t, 2, 5000);
	rm_bucket_ids_reserve(&t, 1, 993);
	rm_bucket_ids_reserve(&t, 2, 1);
	int dense_of[2];
	rm_bucket_map_from_ids(&m, &t, NULL, dense_of);
	assert_int_equal(m.k, 2);
	assert_int_equal(m.labels, 1);    /* the reserved one is no label seen */
	assert_int_equal(dense_of[1], 0); /* 993 tokens: before the batches of 5000 */
	assert_int_equal(dense_of[0], 1);
	rm_bucket_map_release(&m);
	rm_bucket_ids_release(&t);
	double dl[] = {100, 200, 900, 1000, 5000, 6000};
	assert_true(rm_bucket_map_derive(&m, NULL, 0, NULL, dl, 6, NULL));
	assert_true(rm_bucket_map_cuts(&m, NULL, 0, &c));
	assert_int_equal(c.n, m.k);
	assert_true(c.hi[c.n - 1] == m.bound[m.nbound - 1]);
	rm_bucket_map_release(&m);
}

/* Spans no batch straddles are a bucketing sampler's boundaries; a stray
 * batch does not make one; overlapping spans (mixed batches) fall back to
 * the least-padding fit; given boundaries are used as they are. */
static void derive_cut_points(void **state)
{
	(void)state;
	enum { N = 600 };
	double lo[N], hi[N];
	for (int i = 0; i < N; i++) { /* three buckets: (0, 40], (40, 96], (96, 256] */
		int b = i % 3;
		lo[i] = b == 0 ? 8 + i % 5 : b == 1 ? 41 + i % 7 : 97 + i % 11;
		hi[i] = b == 0 ? 40 - i / 3 % 2 : b == 1 ? 96 - i / 3 % 3 : 256 - i / 3 % 13;
	}
	struct rm_bucket_map m;
	int dense[N];
	assert_true(rm_bucket_map_derive(&m, NULL, 0, lo, hi, N, dense));
	assert_true(m.derived && m.cut_points);
	assert_int_equal(m.nbound, 4);
	assert_true(m.bound[0] == 0 && m.bound[1] == 40 && m.bound[2] == 96 && m.bound[3] == 256);
	assert_int_equal(dense[0], 0);
	assert_int_equal(dense[1], 1);
	assert_int_equal(dense[2], 2);
	rm_bucket_map_release(&m);
	/* one stray batch alone at the top: no bucket of its own */
	lo[0] = 5000;
	hi[0] = 5100;
	assert_true(rm_bucket_map_derive(&m, NULL, 0, lo, hi, N, NULL));
	assert_true(m.cut_points && m.nbound == 4 && m.bound[3] == 5100);
	rm_bucket_map_release(&m);
	/* mixed batches: every span overlaps the next, a fit */
	for (int i = 0; i < N; i++) {
		lo[i] = 8 + i % 17;
		hi[i] = 200 + i % 50;
	}
	assert_true(rm_bucket_map_derive(&m, NULL, 0, lo, hi, N, NULL));
	assert_true(m.derived && !m.cut_points);
	rm_bucket_map_release(&m);
	/* without min_len: a fit too */
	assert_true(rm_bucket_map_derive(&m, NULL, 0, NULL, hi, N, NULL));
	assert_false(m.cut_points);
	rm_bucket_map_release(&m);
	/* boundaries given (compare: one bucketing for two runs) */
	const int64_t given[] = {0, 100, 220, 260};
	assert_true(rm_bucket_map_derive(&m, given, 4, lo, hi, N, dense));
	assert_true(m.nbound == 4 && m.bound[1] == 100 && m.bound[2] == 220);
	assert_int_equal(dense[0], 1); /* hi 200 in (100, 220] */
	rm_bucket_map_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(length_order),  cmocka_unit_test(text_labels),       cmocka_unit_test(grouped),
	    cmocka_unit_test(many_distinct), cmocka_unit_test(lens_codec),        cmocka_unit_test(lens_shares),
	    cmocka_unit_test(map_cuts),      cmocka_unit_test(derive_cut_points),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
