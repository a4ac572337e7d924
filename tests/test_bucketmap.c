/*
 * test_bucketmap.c - bucket labels to dense buckets: length order, text
 * labels, grouping beyond RM_MAX_BUCKETS, and many distinct ids.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/bucketmap.h"
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
	char *tl[] = {"short", "long: a label far longer than a bucket label is kept for display"};
	struct rm_bucket_texts texts = {2, tid, tl};
	struct rm_bucket_map m;
	rm_bucket_map_build(&m, ids, len, 3, &texts, NULL);
	assert_int_equal(m.k, 2);
	assert_string_equal(m.label[0], "short");
	assert_int_equal(strlen(m.label[1]), RM_BUCKET_LABEL_LEN - 1);
	assert_int_equal(m.label[1][RM_BUCKET_LABEL_LEN - 2], '~');
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(length_order),
	    cmocka_unit_test(text_labels),
	    cmocka_unit_test(grouped),
	    cmocka_unit_test(many_distinct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
