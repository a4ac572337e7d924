/*
 * test_store.c - migrations, upserts, non-finite values, rollback, errors.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runmon/cost.h"
#include "runmon/store.h"
#include "store/store_internal.h"
#include "runmon/model.h"
#include "testutil.h"

static const struct rm_run_key key = {"file", "", "", "r1"};

static void fresh_database_is_at_latest_version(void **state)
{
	const char *db = tu_tmp_path("fresh.db");
	struct rm_store *st;
	struct rm_err err;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_schema_version(st), rm_store_latest_version());
	assert_true(rm_store_latest_version() >= 2);
	rm_store_close(st);
	assert_string_equal(tu_q_text(db, "PRAGMA journal_mode"), "wal");
	/* Reopening migrates nothing and keeps the version. */
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_schema_version(st), rm_store_latest_version());
	rm_store_close(st);
}

/* A database made by the first schema keeps its rows through migration. */
static void migration_from_first_version(void **state)
{
	const char *db = tu_tmp_path("v1.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	assert_int_equal(rm_store_open_version(&st, db, 1, &err), 0);
	assert_int_equal(rm_store_schema_version(st), 1);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	struct rm_step s = {.step = 5, .v = {[RM_S_LOSS] = 1.5}, .have = 1u << RM_S_LOSS};
	assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
	rm_store_close(st);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'imports'"), 0);

	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_schema_version(st), rm_store_latest_version());
	rm_store_close(st);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'imports'"), 1);
	assert_true(tu_q_dbl(db, "SELECT loss FROM step_batches WHERE step = 5") == 1.5);
}

/* Batches written under version 7 (keyed by step and rank) keep every row
 * and column when 008 re-keys them by micro-batch too, and the views that
 * read them still work. */
static void migration_adds_micro(void **state)
{
	(void)state;
	const char *db = tu_tmp_path("v7.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	assert_int_equal(rm_store_open_version(&st, db, 7, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	struct rm_step s = {.step = 3, .v = {[RM_S_LOSS] = 2.5}, .have = 1u << RM_S_LOSS};
	assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
	rm_store_close(st);
	tu_exec(db, "INSERT INTO batches(run_id, step, rank, bucket, n, min_len, max_len, mean_len, tokens,"
	            " padded_tokens) VALUES (1, 3, 0, 2, 4, 10, 40, 25.0, 100, 60), (1, 3, 1, 1, 2, 5, 7, 6.0, 12, 2)");

	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_schema_version(st), rm_store_latest_version());
	struct rm_batch b = {.step = 3, .rank = 1, .micro = 1, .v = {[RM_B_N] = 1}, .have = 1u << RM_B_N};
	assert_int_equal(rm_store_put_batch(st, run, &b, &err), 0);
	rm_store_close(st);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches"), 3);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(rank || ':' || micro || ':' || bucket || ':' || n || ':'"
	                                  " || min_len || ':' || max_len || ':' || mean_len || ':' || tokens || ':'"
	                                  " || padded_tokens, ' ') FROM batches WHERE micro = 0"),
	                    "0:0:2:4:10:40:25.0:100:60 1:0:1:2:5:7:6.0:12:2");
	assert_int_equal(tu_q_int(db, "SELECT n FROM step_batches WHERE step = 3"), 7);
}

/* A run's batch rows, one per step, rank and micro-batch, come back in
 * that order with their ranks, whether read in one scan or in two halves
 * on two connections (as runs of 2M rows and more are). */
static void batches_load_in_halves(void **state)
{
	(void)state;
	const char *db = tu_tmp_path("halves.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	const int64_t bounds[] = {0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000};
	assert_int_equal(rm_store_put_buckets(st, run, bounds, 11, &err), 0);
	assert_int_equal(rm_store_begin(st, &err), 0);
	for (int t = 0; t < 301; t++) {
		struct rm_step s = {.step = t, .v = {[RM_S_LOSS] = 1 + t % 5}, .have = 1u << RM_S_LOSS};
		assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
		for (int r = 0; r < 3; r++)
			for (int m = 0; m < 2; m++) {
				int64_t len[] = {50 + t % 3, 150, 250 + t}; /* rank 1's batches span buckets */
				uint8_t code[15];
				size_t bytes = rm_lens_encode(len, 3, code);
				struct rm_batch b = {.step = t,
				                     .rank = r,
				                     .micro = m,
				                     .lens = r == 1 ? code : NULL,
				                     .lens_bytes = (uint32_t)bytes,
				                     /* bucket 9 only in the second half */
				                     .v = {[RM_B_BUCKET] = t >= 250 && r == 2 ? 9 : (t / 7 + r) % 4,
				                           [RM_B_MAX_LEN] = 100 + t},
				                     .have = 1u << RM_B_BUCKET | 1u << RM_B_MAX_LEN};
				assert_int_equal(rm_store_put_batch(st, run, &b, &err), 0);
			}
	}
	assert_int_equal(rm_store_commit(st, &err), 0);
	struct rm_store_series one, two;
	assert_int_equal(rm_store_load_series(st, run, 0, &rm_derive_own, &one, &err), 0);
	size_t saved = rm_store_split_rows;
	rm_store_split_rows = 10;
	assert_int_equal(rm_store_load_series(st, run, 0, &rm_derive_own, &two, &err), 0);
	rm_store_split_rows = saved;
	assert_int_equal(one.nb, 301 * 6);
	assert_int_equal(two.nb, one.nb);
	assert_true(one.multi && two.multi);
	assert_int_equal(one.nranks, 3);
	assert_int_equal(two.nranks, 3);
	assert_int_equal(one.map.k, 10); /* bucket 0..9 of the boundaries: some hold only shares of rank 1's */
	assert_int_equal(two.map.k, 10);
	assert_int_equal(one.mix.n, 301 * 2); /* rank 1's rows, read in one part and in two */
	assert_int_equal(two.mix.n, one.mix.n);
	for (size_t i = 0; i < one.mix.n; i++) {
		assert_int_equal(two.mix.row[i], one.mix.row[i]);
		assert_int_equal(one.mix.row[i] % 6 / 2, 1);
		assert_int_equal(two.mix.from[i + 1], one.mix.from[i + 1]);
	}
	for (uint32_t q = 0; q < one.mix.from[one.mix.n]; q++) {
		assert_int_equal(two.mix.bucket[q], one.mix.bucket[q]);
		assert_true(two.mix.share[q] == one.mix.share[q]);
	}
	assert_string_equal(two.map.label[rm_bucket_map_dense(&two.map, 9)], "9"); /* met in the second half only */
	for (size_t i = 0; i < one.nb; i++) {
		assert_int_equal(one.bstep[i], (int64_t)(i / 6));
		assert_int_equal(one.brank[i], (int)(i % 6) / 2);
		assert_int_equal(two.bstep[i], one.bstep[i]);
		assert_int_equal(two.brank[i], one.brank[i]);
		assert_int_equal(two.bucket[i], one.bucket[i]);
		assert_true(two.max_len[i] == one.max_len[i]);
	}
	rm_store_series_release(&one);
	rm_store_series_release(&two);
	rm_store_close(st);
}

static void newer_schema_is_refused(void **state)
{
	const char *db = tu_tmp_path("future.db");
	struct rm_store *st;
	struct rm_err err;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	rm_store_close(st);
	tu_exec(db, "PRAGMA user_version = 999");
	assert_int_equal(rm_store_open(&st, db, &err), RM_E_STORE);
	assert_non_null(strstr(err.msg, "schema version 999, newer than this runmon knows"));
}

static void not_a_database(void **state)
{
	const char *db = tu_write_file("junk.db", "this is not a database, just text that is long enough......", 60);
	struct rm_store *st;
	struct rm_err err;
	assert_int_equal(rm_store_open(&st, db, &err), RM_E_STORE);
	assert_non_null(strstr(err.msg, "junk.db"));
	assert_non_null(strstr(err.msg, "is not an SQLite database"));
}

static void upsert_replaces_and_is_idempotent(void **state)
{
	const char *db = tu_tmp_path("upsert.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run, again, n;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &again, &err), 0);
	assert_int_equal(run, again);
	struct rm_step s = {.step = 1, .v = {[RM_S_LOSS] = 2.0, [RM_S_LR] = 0.1}, .have = 3};
	for (int i = 0; i < 3; i++)
		assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
	s.v[RM_S_LOSS] = 1.0;
	s.have = 1;
	assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
	assert_int_equal(rm_store_count_steps(st, run, INT64_MIN, INT64_MAX, &n, &err), 0);
	assert_int_equal(n, 1);
	struct rm_batch b = {.step = 1, .rank = 0, .v = {[RM_B_BUCKET] = 2, [RM_B_MEAN_LEN] = 10.5}, .have = 1 | 16};
	assert_int_equal(rm_store_put_batch(st, run, &b, &err), 0);
	assert_int_equal(rm_store_put_batch(st, run, &b, &err), 0);
	assert_int_equal(rm_store_run_touch(st, run, "train/loss", &err), 0);
	rm_store_close(st);
	/* The later row replaced the whole earlier row, lr included. */
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps") == 1.0);
	assert_int_equal(tu_q_int(db, "SELECT lr IS NULL FROM steps"), 1);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches"), 1);
	assert_string_equal(tu_q_text(db, "SELECT typeof(bucket) || ',' || mean_len FROM batches"), "integer,10.5");
	assert_string_equal(tu_q_text(db, "SELECT loss_key || ',' || last_step FROM runs"), "train/loss,1");
}

static void nonfinite_values_are_told_apart(void **state)
{
	const char *db = tu_tmp_path("nan.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	struct rm_step a = {.step = 1, .v = {[RM_S_LOSS] = NAN, [RM_S_GRAD_NORM] = NAN}, .have = 1 | 8};
	struct rm_step b = {.step = 2, .v = {[RM_S_LOSS] = INFINITY}, .have = 1};
	struct rm_step c = {.step = 3, .v = {[RM_S_LOSS] = -INFINITY}, .have = 1};
	struct rm_step d = {.step = 4, .have = 0};
	assert_int_equal(rm_store_put_step(st, run, &a, &err), 0);
	assert_int_equal(rm_store_put_step(st, run, &b, &err), 0);
	assert_int_equal(rm_store_put_step(st, run, &c, &err), 0);
	assert_int_equal(rm_store_put_step(st, run, &d, &err), 0);
	rm_store_close(st);
	assert_int_equal(tu_q_int(db, "SELECT nan_mask FROM steps WHERE step = 1"), 9);
	assert_int_equal(tu_q_int(db, "SELECT loss IS NULL FROM steps WHERE step = 1"), 1);
	assert_true(isinf(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 2")));
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 3") < -1e308);
	assert_int_equal(tu_q_int(db, "SELECT nan_mask FROM steps WHERE step = 4"), 0);
	assert_int_equal(tu_q_int(db, "SELECT loss IS NULL FROM steps WHERE step = 4"), 1);
}

static void rollback_leaves_nothing(void **state)
{
	const char *db = tu_tmp_path("rollback.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_begin(st, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	struct rm_step s = {.step = 1, .v = {2.0}, .have = 1};
	assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
	rm_store_rollback(st);
	rm_store_close(st);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM runs"), 0);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 0);
}

static void buckets_and_listing(void **state)
{
	const char *db = tu_tmp_path("list.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	const int64_t bounds[] = {0, 770, 1216, 8192};
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	assert_int_equal(rm_store_put_buckets(st, run, bounds, 4, &err), 0);
	for (int i = 10; i < 20; i++) {
		struct rm_step s = {.step = i, .v = {1.0}, .have = 1};
		assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
		if (i % 2) {
			struct rm_batch b = {.step = i, .v = {1}, .have = 1};
			assert_int_equal(rm_store_put_batch(st, run, &b, &err), 0);
		}
	}
	struct rm_run_info *runs;
	size_t n;
	assert_int_equal(rm_store_list_runs(st, &runs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(runs[0].name, "r1");
	assert_int_equal(runs[0].steps, 10);
	assert_int_equal(runs[0].first_step, 10);
	assert_int_equal(runs[0].last_step, 19);
	assert_int_equal(runs[0].batch_steps, 5);
	rm_run_info_free(runs, n);
	rm_store_close(st);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM buckets"), 3);
	assert_int_equal(tu_q_int(db, "SELECT hi FROM buckets WHERE bucket = 1"), 1216);
	assert_int_equal(tu_q_int(db, "SELECT steps FROM bucket_loss WHERE bucket = 1"), 5);
}

static void find_runs_by_name(void **state)
{
	const char *db = tu_tmp_path("find.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t local, w1, w2, got;
	const struct rm_run_key k_local = {"file", "", "", "ab12"}, k_w1 = {"wandb", "acme", "llm", "ab12"},
	                        k_w2 = {"wandb", "acme", "nlp", "cd34"};
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &k_local, &local, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &k_w1, &w1, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &k_w2, &w2, &err), 0);
	struct rm_run_meta m = {.display_name = "brisk-sun-7", .remote_last_step = -1, .history_lines = -1};
	assert_int_equal(rm_store_set_run_meta(st, w1, &m, &err), 0);
	assert_int_equal(rm_store_set_run_meta(st, w2, &m, &err), 0);
	assert_int_equal(rm_store_find_run(st, "acme/llm/ab12", &got, &err), 0);
	assert_int_equal(got, w1);
	assert_int_equal(rm_store_find_run(st, "ab12", &got, &err), 0); /* the local run wins */
	assert_int_equal(got, local);
	assert_int_equal(rm_store_find_run(st, "cd34", &got, &err), 0);
	assert_int_equal(got, w2);
	assert_int_equal(rm_store_find_run(st, "brisk-sun-7", &got, &err), RM_E_USAGE);
	assert_non_null(strstr(err.msg, "ambiguous"));
	assert_int_equal(rm_store_find_run(st, "nope", &got, &err), RM_E_NOTFOUND);
	rm_store_close(st);
}

/* The length effect is tabulated in 1% bins over the run's lengths; a
 * corrupt range (a denormal mean length, a length of 1e308) widens the bins
 * rather than writing hundreds of thousands of rows. */
/* The sync cursor only moves forward: two collectors of one run commit
 * their windows in either order, and the one that finished the later
 * window must not be undone by the earlier one. */
static void sync_cursor_never_moves_back(void **state)
{
	const char *db = tu_tmp_path("cursor.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run, cursor;
	struct rm_run_key wkey = {"wandb", "acme", "llm", "r1"};
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &wkey, &run, &err), 0);
	assert_int_equal(rm_store_sync_cursor(st, run, &cursor, &err), 0);
	assert_int_equal(cursor, 0);
	assert_int_equal(rm_store_set_sync_cursor(st, run, 5000, &err), 0);
	assert_int_equal(rm_store_set_sync_cursor(st, run, 3000, &err), 0); /* the other collector's older window */
	assert_int_equal(rm_store_sync_cursor(st, run, &cursor, &err), 0);
	assert_int_equal(cursor, 5000);
	assert_int_equal(rm_store_set_sync_cursor(st, run, 8000, &err), 0);
	assert_int_equal(rm_store_sync_cursor(st, run, &cursor, &err), 0);
	assert_int_equal(cursor, 8000);
	rm_store_close(st);
}

static void length_factors_are_bounded(void **state)
{
	const char *db = tu_tmp_path("lenfit.db");
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &run, &err), 0);
	struct rm_length_fit fit = {1, 1, 0.5, 1000, 0.4, 100, 8192};
	assert_int_equal(rm_store_replace_length(st, run, &fit, &err), 0);
	rm_store_close(st);
	/* ln(81.92)/ln(1.01) = 442.3 bins, plus the one just below 100 */
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM length_factors"), 444);
	assert_true(tu_q_dbl(db, "SELECT MIN(lo) FROM length_factors") < 100);
	assert_true(tu_q_dbl(db, "SELECT MAX(hi) FROM length_factors") >= 8192);
	/* exp(0.5 * ln(4000/1000)) = 2 at 4000 tokens, within half a bin */
	assert_true(fabs(tu_q_dbl(db, "SELECT effect FROM length_factors WHERE lo <= 4000 AND hi > 4000") - 2) < 0.01);

	assert_int_equal(rm_store_open(&st, db, &err), 0);
	struct rm_length_fit absurd = {1, 1, 0.5, 1000, 0.4, 5e-309, 1e308};
	assert_int_equal(rm_store_replace_length(st, run, &absurd, &err), 0);
	rm_store_close(st);
	assert_true(tu_q_int(db, "SELECT COUNT(*) FROM length_factors") <= 2001);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM length_factors WHERE effect IS NULL OR hi <= lo"), 0);
	assert_true(tu_q_dbl(db, "SELECT MAX(hi) FROM length_factors") >= 1e308);

	/* An infinite range is no fit to tabulate: the old one is removed. */
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	absurd.max_len = INFINITY;
	assert_int_equal(rm_store_replace_length(st, run, &absurd, &err), 0);
	rm_store_close(st);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM length_factors"), 0);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM length_levels"), 0);
}

/* The share of steps with batch composition is at most 1 at every logging
 * interval, the store's count and the in-memory one agree, and a run with
 * batches for only its first half shows about a half. */
static void batch_share_at_every_log_interval(void **state)
{
	(void)state;
	for (int every = 1; every <= 40; every++) {
		for (int half = 0; half < 2; half++) {
			char name[32];
			snprintf(name, sizeof(name), "share-%d-%d.db", every, half);
			const char *db = tu_tmp_path(name);
			struct rm_store *st;
			struct rm_err err = {0};
			struct rm_run_key rkey = {"file", "", "", "r"};
			int64_t run, steps[400], bsteps[400 * 40];
			size_t n = 0, nb = 0;
			const int total = 400 * every / 4;
			unlink(db);
			assert_int_equal(rm_store_open(&st, db, &err), 0);
			assert_int_equal(rm_store_run_ensure(st, &rkey, &run, &err), 0);
			assert_int_equal(rm_store_begin(st, &err), 0);
			for (int i = 0; i < total; i++) {
				if (!half || i < total / 2) {
					struct rm_batch b = {.step = i, .v = {4}, .have = 1};
					assert_int_equal(rm_store_put_batch(st, run, &b, &err), 0);
					bsteps[nb++] = i;
				}
				if (i % every == every - 1) { /* logged at the interval's last step */
					struct rm_step s = {.step = i, .v = {1.0}, .have = 1};
					assert_int_equal(rm_store_put_step(st, run, &s, &err), 0);
					steps[n++] = i;
				}
			}
			assert_int_equal(rm_store_commit(st, &err), 0);
			struct rm_run_info *runs;
			size_t nr;
			assert_int_equal(rm_store_list_runs(st, &runs, &nr, &err), 0);
			assert_int_equal(nr, 1);
			assert_int_equal(runs[0].steps, (int64_t)n);
			assert_int_equal(runs[0].batch_steps, rm_batch_steps_covered(steps, n, bsteps, nb));
			double share = rm_run_batch_share(&runs[0]);
			assert_true(share <= 1.0);
			if (half)
				assert_true(fabs(share - 0.5) <= 0.02);
			else
				assert_true(share == 1.0);
			rm_run_info_free(runs, nr);
			rm_store_close(st);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(fresh_database_is_at_latest_version),
	    cmocka_unit_test(migration_from_first_version),
	    cmocka_unit_test(migration_adds_micro),
	    cmocka_unit_test(batches_load_in_halves),
	    cmocka_unit_test(newer_schema_is_refused),
	    cmocka_unit_test(not_a_database),
	    cmocka_unit_test(upsert_replaces_and_is_idempotent),
	    cmocka_unit_test(nonfinite_values_are_told_apart),
	    cmocka_unit_test(rollback_leaves_nothing),
	    cmocka_unit_test(buckets_and_listing),
	    cmocka_unit_test(batch_share_at_every_log_interval),
	    cmocka_unit_test(find_runs_by_name),
	    cmocka_unit_test(length_factors_are_bounded),
	    cmocka_unit_test(sync_cursor_never_moves_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
