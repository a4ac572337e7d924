/*
 * test_arrow.c - the Arrow reader against fixtures written by the reference
 * implementation (tests/data/arrow/make.mjs, npm's apache-arrow): the
 * lengths read equal the writer's, row for row, for an integer column, list
 * and large_list offsets, nulls, shards and both IPC formats; and every
 * damaged file (each truncation, flipped bytes) is an error, never a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runmon/parse.h"
#include "runmon/common.h"
#include "testutil.h"

static char *slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	long sz = ftell(fp);
	rewind(fp);
	char *buf = malloc((size_t)sz + 1);
	assert_int_equal(fread(buf, 1, (size_t)sz, fp), (size_t)sz);
	fclose(fp);
	buf[sz] = '\0';
	*n = (size_t)sz;
	return buf;
}

/* Reads a dataset and compares with NAME.expected ("null" for null rows). */
static void check(const char *name, const char *column, const char *list_column, const char *expected,
                  const char *want_column, size_t shards, size_t nulls)
{
	char path[512], exp[512];
	snprintf(path, sizeof(path), "%s/arrow/%s", RUNMON_TEST_DATA, name);
	snprintf(exp, sizeof(exp), "%s/arrow/%s", RUNMON_TEST_DATA, expected);
	struct rm_arrow_opts o = {column, list_column, NULL};
	struct rm_arrow_lengths a;
	struct rm_err err;
	int rc = rm_arrow_read_lengths(path, &o, &a, &err);
	if (rc)
		fail_msg("%s: %s", name, err.msg);
	assert_string_equal(a.column, want_column);
	assert_int_equal(a.shards, shards);
	assert_int_equal(a.nulls, nulls);
	size_t n;
	char *text = slurp(exp, &n), *save = NULL;
	size_t row = 0, seen_nulls = 0;
	for (char *tok = strtok_r(text, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save), row++) {
		assert_true(row < a.n);
		int64_t want = strcmp(tok, "null") ? strtoll(tok, NULL, 10) : -1;
		seen_nulls += want < 0;
		if (a.len[row] != want)
			fail_msg("%s row %zu: read %lld, the writer wrote %lld", name, row, (long long)a.len[row],
			         (long long)want);
	}
	assert_int_equal(row, a.n);
	assert_int_equal(seen_nulls, nulls);
	free(text);
	rm_arrow_lengths_release(&a);
}

static void writer_lengths_row_for_row(void **state)
{
	(void)state;
	check("seqlen", NULL, NULL, "seqlen.expected", "seq_len", 3, 0);
	check("seqlen", NULL, "input_ids", "seqlen.expected", "input_ids", 3, 0); /* offsets agree */
	check("seqlen", "attention_mask", NULL, "seqlen.expected", "attention_mask", 3, 0);
	check("ids", NULL, NULL, "ids.expected", "input_ids", 2, 7);
	check("large", NULL, NULL, "large.length.expected", "length", 1, 30); /* uint16 with nulls */
	check("large", NULL, "tokens", "large.expected", "tokens", 1, 0);     /* large_list after a struct */
	check("large", "tokens", NULL, "large.expected", "tokens", 1, 0);
	check("filefmt", NULL, NULL, "filefmt.expected", "n_tokens", 1, 0); /* the file format */
}

static void expect_error(const char *path, const struct rm_arrow_opts *o, const char *needle)
{
	struct rm_arrow_lengths a;
	struct rm_err err;
	int rc = rm_arrow_read_lengths(path, o, &a, &err);
	assert_int_not_equal(rc, RM_OK);
	if (!strstr(err.msg, needle))
		fail_msg("wanted '%s' in: %s", needle, err.msg);
	assert_null(a.len);
}

static void bad_columns_are_named(void **state)
{
	(void)state;
	char seq[512], ids[512], ff[512];
	snprintf(seq, sizeof(seq), "%s/arrow/seqlen", RUNMON_TEST_DATA);
	snprintf(ids, sizeof(ids), "%s/arrow/ids", RUNMON_TEST_DATA);
	snprintf(ff, sizeof(ff), "%s/arrow/filefmt", RUNMON_TEST_DATA);
	struct rm_arrow_opts o = {"nope", NULL, NULL};
	expect_error(seq, &o, "no column nope; the columns are: text, input_ids, attention_mask, seq_len");
	o.column = "text";
	expect_error(seq, &o, "column text is utf8");
	o.column = "lang";
	expect_error(ids, &o, "column lang is dictionary-encoded");
	o.column = "score";
	expect_error(ff, &o, "column score is float64");
	o.column = NULL;
	o.list_column = "labels";
	expect_error(ids, &o, "column labels is int64; lengths want a list");
	o.list_column = NULL;
	o.split = "train";
	expect_error(seq, &o, "no dataset_dict.json");
}

static char *copy_dir_file(const char *from_dir, const char *name, const char *to_dir)
{
	char src[512], dst[512];
	size_t n;
	snprintf(src, sizeof(src), "%s/%s", from_dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", to_dir, name);
	char *buf = slurp(src, &n);
	FILE *fp = fopen(dst, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(buf, 1, n, fp), n);
	fclose(fp);
	free(buf);
	return strdup(dst);
}

/* A DatasetDict: dataset_dict.json names the splits, each a saved dataset;
 * and a folder of .arrow files without state.json is read in name order. */
static void dataset_dict_and_bare_folders(void **state)
{
	(void)state;
	char src[512], dict[512], train[600], test[600];
	snprintf(src, sizeof(src), "%s/arrow/seqlen", RUNMON_TEST_DATA);
	snprintf(dict, sizeof(dict), "%s", tu_tmp_path("dd"));
	snprintf(train, sizeof(train), "%s/train", dict);
	snprintf(test, sizeof(test), "%s/test", dict);
	assert_int_equal(mkdir(dict, 0700), 0);
	assert_int_equal(mkdir(train, 0700), 0);
	assert_int_equal(mkdir(test, 0700), 0);
	const char *shards[] = {"data-00000-of-00003.arrow", "data-00001-of-00003.arrow", "data-00002-of-00003.arrow"};
	for (int i = 0; i < 3; i++)
		free(copy_dir_file(src, shards[i], train)); /* no state.json: by name */
	free(copy_dir_file(src, shards[2], test));
	char meta[700];
	snprintf(meta, sizeof(meta), "%s/dataset_dict.json", dict);
	FILE *fp = fopen(meta, "w");
	assert_non_null(fp);
	fputs("{\"splits\": [\"train\", \"test\"]}", fp);
	fclose(fp);
	struct rm_arrow_opts o = {NULL, NULL, NULL};
	struct rm_arrow_lengths a;
	struct rm_err err;
	assert_int_equal(rm_arrow_read_lengths(dict, &o, &a, &err), RM_OK);
	assert_string_equal(a.split, "train");
	assert_int_equal(a.n, 900);
	assert_int_equal(a.shards, 3);
	rm_arrow_lengths_release(&a);
	o.split = "test";
	assert_int_equal(rm_arrow_read_lengths(dict, &o, &a, &err), RM_OK);
	assert_int_equal(a.n, 300);
	rm_arrow_lengths_release(&a);
	o.split = "validation";
	expect_error(dict, &o, "no split validation; the splits are: train, test");
	/* One shard on its own is a file path. */
	snprintf(meta, sizeof(meta), "%s/%s", train, shards[1]);
	o.split = NULL;
	assert_int_equal(rm_arrow_read_lengths(meta, &o, &a, &err), RM_OK);
	assert_int_equal(a.n, 300);
	assert_int_equal(a.shards, 1);
	rm_arrow_lengths_release(&a);
}

/* Every prefix of a stream and of a file-format file, and bytes flipped
 * all over: an error naming the file, or (for a flip in a value) lengths,
 * never a crash or a read out of bounds (ASan and valgrind watch). */
static void damaged_files_fail_cleanly(void **state)
{
	(void)state;
	const char *files[] = {"seqlen/data-00000-of-00003.arrow", "filefmt/data-00000-of-00001.arrow",
	                       "large/data-00000-of-00001.arrow"};
	struct rm_arrow_opts o = {NULL, NULL, NULL};
	for (int f = 0; f < 3; f++) {
		char path[512];
		size_t n;
		snprintf(path, sizeof(path), "%s/arrow/%s", RUNMON_TEST_DATA, files[f]);
		uint8_t *buf = (uint8_t *)slurp(path, &n);
		size_t step = n / 997 + 1;
		for (size_t cut = 0; cut < n; cut += cut < 4096 ? 1 : step) {
			struct rm_arrow_lengths a;
			struct rm_err err;
			memset(&a, 0, sizeof(a));
			uint8_t *copy = malloc(cut ? cut : 1); /* exactly cut bytes: ASan sees any overread */
			memcpy(copy, buf, cut);
			int rc = rm_arrow_read_buffer(copy, cut, "cut.arrow", &o, &a, &err);
			/* a stream cut at a message boundary is a shorter valid stream */
			if (rc)
				assert_non_null(strstr(err.msg, "cut.arrow"));
			free(copy);
			rm_arrow_lengths_release(&a);
		}
		uint64_t x = 88172645463325252ull;
		for (int i = 0; i < 4000; i++) {
			struct rm_arrow_lengths a;
			struct rm_err err;
			memset(&a, 0, sizeof(a));
			uint8_t *copy = malloc(n);
			memcpy(copy, buf, n);
			for (int k = 0; k < 1 + i % 4; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				size_t at =
				    i % 2 ? (size_t)(x % (n < 2048 ? n : 2048)) : (size_t)(x % n); /* metadata often */
				copy[at] ^= (uint8_t)(1u << (x >> 60 & 7));
			}
			if (rm_arrow_read_buffer(copy, n, "flip.arrow", &o, &a, &err))
				assert_non_null(strstr(err.msg, "flip.arrow"));
			free(copy);
			rm_arrow_lengths_release(&a);
		}
		free(buf);
	}
}

/* The source note and the filtering of null and empty rows. */
static void length_source_filters(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof(path), "%s/arrow/large", RUNMON_TEST_DATA);
	struct rm_arrow_opts o = {NULL, "tokens", NULL};
	struct rm_length_source src;
	struct rm_err err;
	int64_t *lens;
	size_t n;
	assert_int_equal(rm_lengths_read(path, &o, &lens, &n, &src, &err), RM_OK);
	assert_int_equal(src.arrow, 1);
	assert_int_equal(src.empty, 8); /* every 50th row is empty */
	assert_int_equal(n, 400 - 8);
	for (size_t i = 0; i < n; i++)
		assert_true(lens[i] >= 1);
	free(lens);
	/* --list-column on a text file is a usage error. */
	const char *txt = tu_write_file("l.txt", "5\n6\n", 4);
	assert_int_equal(rm_lengths_read(txt, &o, &lens, &n, &src, &err), RM_E_USAGE);
	assert_non_null(strstr(err.msg, "--list-column is for Arrow data"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(writer_lengths_row_for_row),    cmocka_unit_test(bad_columns_are_named),
	    cmocka_unit_test(dataset_dict_and_bare_folders), cmocka_unit_test(damaged_files_fail_cleanly),
	    cmocka_unit_test(length_source_filters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
