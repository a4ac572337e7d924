/*
 * test_import.c - every input format against fixtures in tests/data, and
 * the messy-log rules: restarts, replacements, bad lines, idempotence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import/import_internal.h"
#include "runmon/cost.h"
#include "runmon/import.h"
#include "testutil.h"

static const int64_t bounds[] = {0, 770, 1216, 1728, 2432, 3296, 8192};

/* Imports files into db; returns the status and fills rep/err. */
static int imp(const char *db, const struct rm_import_opts *o, const char *f1, const char *f2,
               struct rm_import_report *rep, struct rm_err *err)
{
	struct rm_store *st;
	char *files[2] = {(char *)f1, (char *)f2};
	assert_int_equal(rm_store_open(&st, db, err), 0);
	int rc = rm_import(st, o, files, f2 ? 2 : 1, rep, err);
	rm_store_close(st);
	return rc;
}

/* Found by fuzz_textimport: a rank too large for an integer is a bad line;
 * so are negative and fractional ranks and micro-batches. */
static void rank_out_of_range(void **state)
{
	static const struct {
		const char *row, *why;
	} cases[] = {
	    {"1,5e86,0,2,1200", "rank.csv:3: rank 5e+86 is not a whole number >= 0"},
	    {"1,-1,0,2,1200", "rank.csv:3: rank -1 is not a whole number >= 0"},
	    {"1,0,1.5,2,1200", "rank.csv:3: micro 1.5 is not a whole number >= 0"},
	    {"1,0,-2,2,1200", "rank.csv:3: micro -2 is not a whole number >= 0"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];
		int len =
		    snprintf(text, sizeof(text), "step,rank,micro,bucket,max_len\n0,0,0,3,1800\n%s\n", cases[i].row);
		const char *db = tu_tmp_path("rank.db");
		unlink(db);
		const char *f = tu_write_file("rank.csv", text, (size_t)len);
		struct rm_import_opts o = {.run_name = "r", .format = RM_FMT_SIDECAR_CSV};
		struct rm_import_report rep;
		struct rm_err err;
		assert_int_equal(imp(db, &o, f, NULL, &rep, &err), RM_E_INPUT);
		if (!strstr(err.msg, cases[i].why))
			fail_msg("%s: got '%s'", cases[i].row, err.msg);
	}
}

/* Micro-batches of one step and rank are rows of their own, and a step's
 * composition sums them. */
static void micro_batches_keyed(void **state)
{
	(void)state;
	const char *db = tu_tmp_path("micro.db");
	static const char text[] = "{\"step\":1,\"rank\":0,\"micro\":0,\"lens\":[10,12]}\n"
	                           "{\"step\":1,\"rank\":0,\"micro\":1,\"lens\":[100]}\n"
	                           "{\"step\":1,\"rank\":1,\"micro\":0,\"lens\":[5]}\n"
	                           "{\"step\":1,\"rank\":1,\"micro\":1,\"lens\":[6]}\n";
	const char *f = tu_write_file("micro.jsonl", text, sizeof(text) - 1);
	struct rm_import_opts o = {.run_name = "r"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), RM_OK);
	assert_int_equal(rep.r[0].batches, 4);
	assert_int_equal(rep.r[0].replaced, 0);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches"), 4);
	assert_int_equal(tu_q_int(db, "SELECT n FROM step_batch WHERE step = 1"), 5);
	assert_int_equal(tu_q_int(db, "SELECT max_len FROM step_batch WHERE step = 1"), 100);
	rm_import_report_release(&rep);
}

/* A sidecar's "lens" is kept (sorted, LEB128 deltas), and a batch whose
 * lengths span buckets loads as a mixed batch with the token share of
 * each, a bucket that is no batch's longest included; through the
 * pipeline, with --buckets and with buckets derived from the lengths. */
static void lens_kept_and_mixed(void **state)
{
	(void)state;
	const char *db = tu_tmp_path("lens.db");
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);
	for (int t = 0; t < 3000; t++) /* every third batch mixes buckets 0 and 2; the rest are bucket 1 or 2 */
		if (t % 3 == 0)
			fprintf(fp, "{\"step\":%d,\"lens\":[150, 20, 300]}\n", t);
		else if (t % 3 == 1)
			fprintf(fp, "{\"step\":%d,\"lens\":\"[120 130]\"}\n", t);
		else
			fprintf(fp, "{\"step\":%d,\"lens\":[900]}\n", t);
	fclose(fp);
	const char *f = tu_write_file("lens.jsonl", text, len);
	free(text);
	const int64_t cuts[] = {0, 100, 200, 1000};
	struct rm_import_opts o = {.run_name = "cut", .bounds = cuts, .nbounds = 4};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), RM_OK);
	rm_import_report_release(&rep);
	/* 20, 150, 300: deltas 20, 130 (two bytes), 150 (two bytes) */
	assert_string_equal(tu_q_text(db, "SELECT hex(lens) FROM batches WHERE step = 0"), "1482019601");
	assert_string_equal(tu_q_text(db, "SELECT hex(lens) FROM batches WHERE step = 1"), "780A");
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 0"), 2); /* by its longest */
	o.run_name = "derived";
	o.bounds = NULL;
	o.nbounds = 0;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), RM_OK);
	rm_import_report_release(&rep);

	struct rm_store *st;
	int64_t run;
	struct rm_store_series ss;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_store_find_run(st, "cut", &run, &err), 0);
	assert_int_equal(rm_store_load_series(st, run, 0, &rm_derive_own, &ss, &err), 0);
	assert_int_equal(ss.map.k, 3);      /* bucket 0 holds no batch's longest: reserved for the shares */
	assert_int_equal(ss.map.labels, 2); /* ids seen on batches */
	assert_int_equal(ss.mix.n, 1000);
	assert_int_equal(ss.mix.row[1], 3);
	assert_int_equal(ss.mix.from[1] - ss.mix.from[0], 3);
	int b0 = rm_bucket_map_dense(&ss.map, 0), b2 = rm_bucket_map_dense(&ss.map, 2);
	assert_int_equal(ss.mix.bucket[0], b0);
	assert_float_equal(ss.mix.share[0], 20.0 / 470, 1e-6);
	assert_int_equal(ss.mix.bucket[2], b2);
	assert_float_equal(ss.mix.share[2], 300.0 / 470, 1e-6);
	rm_store_series_release(&ss);
	assert_int_equal(rm_store_find_run(st, "derived", &run, &err), 0);
	assert_int_equal(rm_store_load_series(st, run, 0, &rm_derive_own, &ss, &err), 0);
	/* No batch's lengths straddle 300: the cut points of a bucketing
	 * sampler, not a least-padding fit, and so no batch spans them. */
	assert_true(ss.map.derived && ss.map.cut_points);
	assert_int_equal(ss.map.nbound, 3);
	assert_int_equal(ss.map.bound[1], 300);
	assert_int_equal(ss.map.bound[2], 900);
	assert_int_equal(ss.mix.n, 0);
	rm_store_series_release(&ss);
	rm_store_close(st);
}

/* Batch statistics no batch can have are bad lines, named by line (issue
 * 19: an n of 2^61 overflowed the cost side's buffer). */
static void implausible_batches(void **state)
{
	static const struct {
		const char *line, *why;
	} cases[] = {
	    {"{\"step\":0,\"bucket\":0,\"n\":2305843009213693952,\"max_len\":100,\"tokens\":100}",
	     "n 2305843009213693952 is not a sequence count in 1..1048576"},
	    {"{\"step\":0,\"bucket\":0,\"n\":1e12,\"max_len\":100}", "is not a sequence count"},
	    {"{\"step\":0,\"bucket\":0,\"n\":2.5,\"max_len\":100}", "n 2.5 is not a sequence count"},
	    {"{\"step\":0,\"bucket\":0,\"n\":0,\"max_len\":100}", "n 0 is not a sequence count"},
	    {"{\"step\":0,\"bucket\":0,\"n\":4,\"max_len\":-5}", "max_len -5 is not a length"},
	    {"{\"step\":0,\"bucket\":0,\"n\":4,\"max_len\":9e18}", "max_len 9000000000000000000 is not a length"},
	    {"{\"step\":0,\"bucket\":0,\"n\":4,\"min_len\":90,\"max_len\":50}", "min_len 90 is above max_len 50"},
	    {"{\"step\":0,\"bucket\":0,\"n\":4,\"min_len\":10,\"max_len\":50,\"mean_len\":70}",
	     "mean_len 70 is outside"},
	    {"{\"step\":0,\"bucket\":0,\"n\":4,\"max_len\":100,\"tokens\":55000}", "tokens 55000 exceed n * max_len"},
	    {"{\"step\":0,\"bucket\":0,\"n\":55000,\"min_len\":20,\"max_len\":100,\"tokens\":4000}",
	     "tokens 4000 are below n * min_len"},
	    {"{\"step\":0,\"bucket\":0,\"n\":4,\"max_len\":100,\"padded_tokens\":-50}",
	     "padded_tokens -50 is not a token count"},
	    {"{\"step\":0,\"lens\":[5,1e300]}", "max_len 1e+300 is not a length"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256], name[32];
		snprintf(text, sizeof(text), "{\"step\":0,\"bucket\":1,\"n\":4,\"max_len\":10}\n%s\n", cases[i].line);
		snprintf(name, sizeof(name), "bad%zu.jsonl", i);
		const char *f = tu_write_file(name, text, strlen(text));
		struct rm_import_opts o = {.run_name = "r", .format = RM_FMT_SIDECAR_JSONL};
		struct rm_import_report rep;
		struct rm_err err;
		assert_int_equal(imp(tu_tmp_path("bad.db"), &o, f, NULL, &rep, &err), RM_E_INPUT);
		char want[96];
		snprintf(want, sizeof(want), "%s:2: ", name);
		if (!strstr(err.msg, want) || !strstr(err.msg, cases[i].why))
			fail_msg("case %zu: got '%s', want '%s' and '%s'", i, err.msg, want, cases[i].why);
	}
	/* Rounded statistics as trainers print them stay good. */
	static const char ok[] = "{\"step\":0,\"n\":3,\"min_len\":10,\"max_len\":12,\"mean_len\":11.33,"
	                         "\"tokens\":34}\n{\"step\":1,\"lens\":[7,9,8]}\n";
	struct rm_import_opts o = {.run_name = "r", .format = RM_FMT_SIDECAR_JSONL};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(tu_tmp_path("ok.db"), &o, tu_write_file("ok.jsonl", ok, sizeof(ok) - 1), NULL, &rep, &err),
	                 0);
	rm_import_report_release(&rep);
}

/* A chart export of a sweep: one series a run, every run imported with its
 * own steps (issue 19: grouping was quadratic in the runs); runs with no
 * value in the chart's range are left out (found by the bench: one empty
 * run of 50000 failed the whole import). */
static void chart_export_many_runs(void **state)
{
	enum { RUNS = 3000, STEPS = 4 };
	size_t cap = RUNS * 40 + STEPS * RUNS * 8 + 64, n = 0;
	char *text = malloc(cap);
	n += (size_t)sprintf(text + n, "Step");
	for (int r = 0; r < RUNS; r++)
		n += (size_t)sprintf(text + n, ",\"r%d - loss\",\"r%d - loss__MIN\"", r, r);
	text[n++] = '\n';
	for (int s = 0; s < STEPS; s++) {
		n += (size_t)sprintf(text + n, "%d", s);
		for (int r = 0; r < RUNS; r++) /* every 1000th run has no value at all */
			n += (size_t)sprintf(text + n, (r + s) % 2 && r % 1000 != 5 ? ",%d.5," : ",,", r % 7);
		text[n++] = '\n';
	}
	const char *f = tu_write_file("sweep.csv", text, n);
	free(text);
	const char *db = tu_tmp_path("sweep.db");
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), 0);
	assert_int_equal(rep.n, RUNS - 3); /* runs with no value are left out, and counted */
	assert_int_equal(rep.r[0].empty_series, 3);
	for (size_t i = 0; i < rep.n; i++)
		assert_int_equal(rep.r[i].steps, STEPS / 2);
	rm_import_report_release(&rep);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM runs"), RUNS - 3);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM runs WHERE name = 'r1005'"), 0);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), (RUNS - 3) * STEPS / 2);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE run_id = (SELECT id FROM runs WHERE name = 'r2999')"
	                         " AND step = 0") == 3.5); /* 2999 % 7 */
}

/* Two processes appending every step to one log, one a line or two behind:
 * reported as two writers, not as hundreds of restarts (issue 15). */
static void two_writers_interleaved(void **state)
{
	char *text = malloc(64 * 1000);
	size_t n = 0;
	int a = 0, b = 0;
	while (a < 300 || b < 300) {
		int lag = 1 + (a * 7 + b) % 3;
		int from_a = a < 300 && (b >= 300 || a - b < lag);
		int s = from_a ? a++ : b++;
		n += (size_t)sprintf(text + n, "{\"step\": %d, \"loss\": %.4f}\n", s,
		                     2.0 - 0.001 * s + (from_a ? 0 : 1e-4));
	}
	const char *f = tu_write_file("two.jsonl", text, n);
	free(text);
	struct rm_import_opts o = {.run_name = "two"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(tu_tmp_path("two.db"), &o, f, NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].writers, 2);
	assert_true(rep.r[0].restarts > 100);
	assert_int_equal(rep.r[0].new_steps, 300);
	rm_import_report_release(&rep);
	/* A real resume stays a restart. */
	assert_int_equal(imp(tu_tmp_path("h2.db"), &o, tu_data("wandb-history.jsonl"), NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].writers, 0);
	assert_int_equal(rep.r[0].restarts, 1);
	rm_import_report_release(&rep);
}

static void wandb_history(void **state)
{
	const char *db = tu_tmp_path("h.db");
	struct rm_import_opts o = {.run_name = "h"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("wandb-history.jsonl"), NULL, &rep, &err), 0);
	assert_int_equal(rep.n, 1);
	struct rm_import_result *r = &rep.r[0];
	assert_int_equal(r->format, RM_FMT_WANDB_HISTORY);
	assert_int_equal(r->lines, 9);
	assert_int_equal(r->steps, 7);
	assert_int_equal(r->new_steps, 5);
	assert_int_equal(r->replaced, 2);
	assert_int_equal(r->restarts, 1);
	assert_int_equal(r->restart[0].line, 5);
	assert_int_equal(r->restart[0].step, 2);
	assert_int_equal(r->restart[0].prev_step, 3);
	assert_int_equal(r->batches, 2);
	assert_int_equal(r->evals, 2);
	assert_string_equal(r->loss_key, "train/loss");
	rm_import_report_release(&rep);

	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 5);
	assert_string_equal(tu_q_text(db, "SELECT quote(loss) || ',' || nan_mask FROM steps WHERE step = 1"), "NULL,1");
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 2") == 1.5);
	assert_int_equal(tu_q_int(db, "SELECT epoch IS NULL FROM steps WHERE step = 2"), 1);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 3") == 1.2);
	assert_true(isinf(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 4")));
	assert_true(tu_q_dbl(db, "SELECT lr FROM steps WHERE step = 0") == 0.0003);
	assert_true(tu_q_dbl(db, "SELECT ts FROM steps WHERE step = 0") == 1714556403.1);
	assert_true(tu_q_dbl(db, "SELECT runtime FROM steps WHERE step = 0") == 3.2);
	assert_string_equal(
	    tu_q_text(db, "SELECT bucket || ',' || n || ',' || padded_tokens FROM batches WHERE step = 0"),
	    "0,32,9584");
	assert_string_equal(tu_q_text(db, "SELECT bucket || ',' || max_len FROM batches WHERE step = 2"), "2,2000");
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM evals"), 3);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE step = 5 AND key = 'eval/acc'") == 0.5);
	assert_string_equal(tu_q_text(db, "SELECT loss_key || ',' || last_step FROM runs"), "train/loss,4");
	assert_string_equal(tu_q_text(db, "SELECT format || ',' || replaced || ',' || restarts FROM imports"),
	                    "wandb-history,2,1");
}

static void nested_loss_key(void **state)
{
	const char text[] = "{\"_step\": 0, \"train\": {\"loss\": 2.0}}\n{\"_step\": 1, \"train\": {\"loss\": 1.0}}\n";
	const char *f = tu_write_file("nested.jsonl", text, sizeof(text) - 1);
	const char *db = tu_tmp_path("nested.db");
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), 0);
	assert_string_equal(rep.r[0].loss_key, "train.loss");
	assert_int_equal(rep.r[0].steps, 2);
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT SUM(loss) FROM steps") == 3.0);
}

static void sidecar_jsonl(void **state)
{
	const char *db = tu_tmp_path("s.db");
	struct rm_import_opts o = {.run_name = "s", .bounds = bounds, .nbounds = 7};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("sidecar.jsonl"), NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].format, RM_FMT_SIDECAR_JSONL);
	assert_int_equal(rep.r[0].batches, 4);
	assert_int_equal(rep.r[0].steps, 0);
	assert_int_equal(rep.r[0].replaced, 0);
	assert_int_equal(rep.r[0].restarts, 0);
	assert_int_equal(rep.r[0].over_bounds, 1);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db,
	                              "SELECT bucket || ',' || n || ',' || min_len || ',' || max_len || ',' ||"
	                              " mean_len || ',' || tokens || ',' || padded_tokens FROM batches WHERE step = 0"),
	                    "3,3,1755,1801,1782.0,5346,57");
	assert_string_equal(tu_q_text(db, "SELECT bucket || ',' || tokens FROM batches WHERE step = 1"), "1,13608");
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 2 AND rank = 0"), 1);
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 2 AND rank = 1"), 5);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM buckets"), 6);
	/* The per-step view aggregates ranks. */
	assert_string_equal(tu_q_text(db, "SELECT ranks || ',' || n || ',' || max_len FROM step_batch WHERE step = 2"),
	                    "2,5,9000");
}

static void sidecar_csv(void **state)
{
	const char *db = tu_tmp_path("sc.db");
	struct rm_import_opts o = {.run_name = "s", .bounds = bounds, .nbounds = 7};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("sidecar.csv"), NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].format, RM_FMT_SIDECAR_CSV);
	assert_int_equal(rep.r[0].batches, 3);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT bucket || ',' || padded_tokens FROM batches WHERE step = 0"),
	                    "3,616");
	assert_string_equal(tu_q_text(db, "SELECT bucket || ',' || mean_len || ',' || padded_tokens FROM batches"
	                                  " WHERE step = 1 AND rank = 0"),
	                    "0,434.5,669");
	assert_string_equal(tu_q_text(db, "SELECT bucket || ',' || quote(padded_tokens) FROM batches"
	                                  " WHERE step = 1 AND rank = 1"),
	                    "2,NULL");
}

static void wandb_chart_export(void **state)
{
	const char *db = tu_tmp_path("w.db");
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("wandb_export.csv"), NULL, &rep, &err), 0);
	assert_int_equal(rep.n, 2);
	assert_string_equal(rep.r[0].run_name, "brisk-sun-7");
	assert_string_equal(rep.r[1].run_name, "calm-sea-2");
	assert_int_equal(rep.r[0].steps, 3);
	assert_int_equal(rep.r[1].steps, 3);
	assert_string_equal(rep.r[0].loss_key, "train/loss");
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(quote(loss), ';') FROM steps s JOIN runs r ON"
	                                  " r.id = s.run_id WHERE r.name = 'brisk-sun-7'"),
	                    "2.5;2.25;NULL");
	assert_int_equal(tu_q_int(db, "SELECT MIN(step) FROM steps s JOIN runs r ON r.id = s.run_id"
	                              " WHERE r.name = 'calm-sea-2'"),
	                 1);
	/* --run cannot name two runs at once. */
	o.run_name = "x";
	assert_int_equal(imp(tu_tmp_path("w2.db"), &o, tu_data("wandb_export.csv"), NULL, &rep, &err), RM_E_USAGE);
	assert_non_null(strstr(err.msg, "holds 2 runs"));
}

static void hf_trainer_state(void **state)
{
	const char *db = tu_tmp_path("hf.db");
	struct rm_import_opts o = {.run_name = "hf"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("trainer_state.json"), NULL, &rep, &err), 0);
	struct rm_import_result *r = &rep.r[0];
	assert_int_equal(r->format, RM_FMT_HF_STATE);
	assert_int_equal(r->lines, 5);
	assert_int_equal(r->steps, 3);
	assert_int_equal(r->evals, 1);
	assert_int_equal(r->ignored, 1); /* the summary row's train_loss is an average */
	assert_int_equal(r->replaced, 0);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(quote(loss), ';') FROM steps"), "2.3;1.9;NULL");
	assert_int_equal(tu_q_int(db, "SELECT nan_mask FROM steps WHERE step = 20"), 8);
	assert_int_equal(tu_q_int(db, "SELECT nan_mask FROM steps WHERE step = 30"), 1);
	assert_true(tu_q_dbl(db, "SELECT lr FROM steps WHERE step = 10") == 5e-05);
	assert_true(tu_q_dbl(db, "SELECT epoch FROM steps WHERE step = 20") == 0.67);
	assert_true(tu_q_dbl(db, "SELECT value FROM evals WHERE key = 'eval_loss'") == 2.1);
}

static void hf_malformed_names_line(void **state)
{
	const char text[] = "{\n  \"log_history\": [\n    {\"step\": 1,}\n  ]\n}\n";
	const char *f = tu_write_file("trainer_state.json", text, sizeof(text) - 1);
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(tu_tmp_path("hfbad.db"), &o, f, NULL, &rep, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "trainer_state.json:3: "));
}

static void tensorboard_csv(void **state)
{
	const char *db = tu_tmp_path("tb.db");
	struct rm_import_opts o = {.run_name = "tb"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("tensorboard.csv"), NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].format, RM_FMT_TB_CSV);
	assert_string_equal(rep.r[0].loss_key, "Value");
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || '=' || quote(loss), ';') FROM steps"),
	                    "100=2.5;200=2.25;300=NULL");
	assert_true(tu_q_dbl(db, "SELECT ts FROM steps WHERE step = 100") == 1714556403.5);
}

/* Every name docs/formats.md lists for a column is read as that column, in a
 * plain JSON-lines history: the step, the loss, the learning rate, the
 * epoch and the gradient norm. A name dropped from the importer's tables
 * would leave a real trainer's log without steps or losses. */
static void every_alias_is_read(void **state)
{
	static const char *const steps[] = {"step", "global_step",       "_step",
	                                    "Step", "current_steps",     "iteration",
	                                    "iter", "train/global_step", "num_updates"};
	static const char *const losses[] = {"loss",          "train/loss",      "train_loss",     "train.loss",
	                                     "training_loss", "train/loss_step", "train_loss_step"};
	static const struct {
		const char *key, *column;
	} others[] = {
	    {"lr", "lr"},
	    {"learning_rate", "lr"},
	    {"train/lr", "lr"},
	    {"train/learning_rate", "lr"},
	    {"train.lr", "lr"},
	    {"train.learning_rate", "lr"},
	    {"train_lr", "lr"},
	    {"epoch", "epoch"},
	    {"train/epoch", "epoch"},
	    {"train.epoch", "epoch"},
	    {"grad_norm", "grad_norm"},
	    {"train/grad_norm", "grad_norm"},
	    {"train.grad_norm", "grad_norm"},
	    {"gradient_norm", "grad_norm"},
	    {"train/gradient_norm", "grad_norm"},
	};
	struct rm_import_report rep;
	struct rm_err err;
	char text[256], sql[128];
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const char *db = tu_tmp_path("alias.db");
		int n = snprintf(text, sizeof(text), "{\"%s\": 7, \"loss\": 1.5}\n{\"%s\": 9, \"loss\": 1.25}\n",
		                 steps[i], steps[i]);
		struct rm_import_opts o = {.run_name = "a"};
		assert_int_equal(imp(db, &o, tu_write_file("alias.jsonl", text, (size_t)n), NULL, &rep, &err), 0);
		assert_null(rep.r[0].inferred); /* known by its name, not guessed as a rising integer */
		rm_import_report_release(&rep);
		assert_string_equal(tu_q_text(db, "SELECT group_concat(step || '=' || loss, ';') FROM steps"),
		                    "7=1.5;9=1.25");
	}
	for (size_t i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
		const char *db = tu_tmp_path("alias.db");
		int n = snprintf(text, sizeof(text), "{\"step\": 3, \"%s\": 0.75}\n", losses[i]);
		struct rm_import_opts o = {.run_name = "a"};
		assert_int_equal(imp(db, &o, tu_write_file("alias.jsonl", text, (size_t)n), NULL, &rep, &err), 0);
		assert_string_equal(rep.r[0].loss_key, losses[i]);
		rm_import_report_release(&rep);
		assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 3") == 0.75);
	}
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		const char *db = tu_tmp_path("alias.db");
		int n = snprintf(text, sizeof(text), "{\"step\": 3, \"loss\": 0.5, \"%s\": 0.125}\n", others[i].key);
		struct rm_import_opts o = {.run_name = "a"};
		assert_int_equal(imp(db, &o, tu_write_file("alias.jsonl", text, (size_t)n), NULL, &rep, &err), 0);
		rm_import_report_release(&rep);
		snprintf(sql, sizeof(sql), "SELECT %s FROM steps WHERE step = 3", others[i].column);
		assert_true(tu_q_dbl(db, sql) == 0.125);
	}
}

/* ms-swift's logging.jsonl: the step only as text "N/M" under
 * global_step/max_steps, the step's tokens as tokens_this_step, a
 * train_runtime summary and a closing dump of the whole history, neither
 * of them a record. */
static void step_as_text_of_total(void **state)
{
	const char *db = tu_tmp_path("swift.db");
	struct rm_import_opts o = {.run_name = "s"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("msswift.jsonl"), NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].format, RM_FMT_JSONL);
	assert_int_equal(rep.r[0].steps, 4);
	assert_int_equal(rep.r[0].first_step, 1);
	assert_int_equal(rep.r[0].last_step, 4);
	assert_non_null(strstr(rep.r[0].composition, "tokens_this_step (tokens)"));
	assert_int_equal(rep.r[0].batches, 4); /* the summary's tokens_this_step is no batch of its own */
	assert_int_equal(rep.r[0].ignored, 2);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || '=' || loss, ';') FROM steps"),
	                    "1=1.92089844;2=2.71411133;3=1.5;4=1.4");
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || ':' || tokens, ';') FROM batches"),
	                    "1:919;2:2166;3:11968;4:55");
	/* "N/M" with anything else is no step */
	static const char line[] = "{\"global_step/max_steps\": \"3/4 steps\", \"loss\": 1}\n";
	const char *bad = tu_write_file("bad.jsonl", line, sizeof(line) - 1);
	assert_int_equal(imp(tu_tmp_path("b.db"), &o, bad, NULL, &rep, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "is not a number"));
}

static void plain_csv_and_jsonl(void **state)
{
	const char *db = tu_tmp_path("p.db");
	struct rm_import_opts o = {.run_name = "p"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, tu_data("plain_current_steps.csv"), NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].format, RM_FMT_CSV);
	assert_string_equal(rep.r[0].loss_key, "train_loss");
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step || '=' || loss, ';') FROM steps"),
	                    "1=3.0;2=2.9;3=2.8");

	/* "it" is no known step name, but a counter that rises with the loss:
	 * inferred, and said so... */
	assert_int_equal(imp(tu_tmp_path("p2.db"), &o, tu_data("plain_iter.jsonl"), NULL, &rep, &err), 0);
	assert_non_null(rep.r[0].inferred);
	assert_non_null(strstr(rep.r[0].inferred, "step 'it'"));
	rm_import_report_release(&rep);
	/* ...a key that does not rise is no step: the error says what was
	 * looked for... */
	static const char flat[] = "{\"it\": 3, \"loss\": 1.0}\n{\"it\": 3, \"loss\": 0.9}\n";
	const char *fl = tu_write_file("flat.jsonl", flat, sizeof(flat) - 1);
	assert_int_equal(imp(tu_tmp_path("p3.db"), &o, fl, NULL, &rep, &err), RM_E_INPUT);
	assert_string_equal(strstr(err.msg, "flat.jsonl"), "flat.jsonl:1: no step ('step')");
	/* ...and --step-key names it. */
	o.step_key = "it";
	assert_int_equal(imp(db, &o, tu_data("plain_iter.jsonl"), NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].steps, 2);
	rm_import_report_release(&rep);
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 20") == 3.25);
}

static void bad_line_commits_nothing(void **state)
{
	const char *db = tu_tmp_path("bad.db");
	struct rm_import_opts o = {.run_name = "b"};
	struct rm_import_report rep;
	struct rm_err err;
	/* A good file first: it must be rolled back with the bad one. */
	assert_int_equal(imp(db, &o, tu_data("tensorboard.csv"), tu_data("bad.jsonl"), &rep, &err), RM_E_INPUT);
	assert_string_equal(strstr(err.msg, "bad.jsonl"), "bad.jsonl:3: column 32: expected a string key");
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 0);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM runs"), 0);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM imports"), 0);

	o.skip_bad = 1;
	assert_int_equal(imp(db, &o, tu_data("bad.jsonl"), NULL, &rep, &err), 0);
	struct rm_import_result *r = &rep.r[0];
	assert_int_equal(r->skipped, 2);
	assert_int_equal(r->bad_line[0], 3);
	assert_int_equal(r->bad_line[1], 5);
	assert_string_equal(r->bad_msg, "column 32: expected a string key");
	assert_int_equal(r->steps, 4);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, "SELECT group_concat(step, ',') FROM steps"), "0,1,3,5");
}

static void reimport_changes_nothing(void **state)
{
	const char *db = tu_tmp_path("again.db");
	struct rm_import_opts o = {.run_name = "a", .bounds = bounds, .nbounds = 7};
	struct rm_import_report rep;
	struct rm_err err;
	const char *sum = "SELECT (SELECT COUNT(*) || ':' || total(loss * step) || ':' || total(nan_mask) FROM steps)"
	                  " || '/' || (SELECT COUNT(*) || ':' || total(bucket * step + padded_tokens) FROM batches)"
	                  " || '/' || (SELECT COUNT(*) FROM evals)";
	char first[256];
	assert_int_equal(imp(db, &o, tu_data("wandb-history.jsonl"), tu_data("sidecar.jsonl"), &rep, &err), 0);
	rm_import_report_release(&rep);
	snprintf(first, sizeof(first), "%s", tu_q_text(db, sum));
	assert_int_equal(imp(db, &o, tu_data("wandb-history.jsonl"), tu_data("sidecar.jsonl"), &rep, &err), 0);
	assert_int_equal(rep.r[0].new_steps, 0);
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db, sum), first);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM runs"), 1);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM imports"), 4);
}

/* Many pipeline chunks: values, eval keys and a late bad line survive the
 * hand-over between the reader and the writer thread. */
static void large_file_crosses_chunks(void **state)
{
	size_t cap = 1 << 20, len = 0;
	char *text = malloc(cap);
	for (int i = 0; i < 10000; i++) {
		if (i == 9000)
			len += (size_t)snprintf(text + len, cap - len, "{\"_step\": %d, \"train/loss\": }\n", i);
		else if (i % 7 == 0)
			len += (size_t)snprintf(text + len, cap - len,
			                        "{\"_step\": %d, \"train/loss\": %d.5, \"eval/k%d\": %d}\n", i, i % 10,
			                        i % 3, i);
		else
			len += (size_t)snprintf(text + len, cap - len, "{\"_step\": %d, \"train/loss\": %d.5}\n", i,
			                        i % 10);
	}
	const char *f = tu_write_file("big.jsonl", text, len);
	free(text);
	const char *db = tu_tmp_path("big.db");
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "big.jsonl:9001: column"));
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 0);

	o.skip_bad = 1;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].steps, 9999);
	assert_int_equal(rep.r[0].skipped, 1);
	assert_int_equal(rep.r[0].evals, 1429);
	rm_import_report_release(&rep);
	/* sum over i != 9000 of (i % 10 + 0.5) */
	assert_true(tu_q_dbl(db, "SELECT SUM(loss) FROM steps") == 45000.0 + 4999.5);
	assert_int_equal(tu_q_int(db, "SELECT SUM(value) FROM evals"), 7 * (1428 * 1429 / 2));
	assert_int_equal(tu_q_int(db, "SELECT COUNT(DISTINCT key) FROM evals"), 3);
	assert_int_equal(tu_q_int(db, "SELECT value FROM evals WHERE step = 9996 AND key = 'eval/k0'"), 9996);
}

static void empty_and_missing_files(void **state)
{
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	const char *f = tu_write_file("empty.jsonl", "\n\n", 2);
	assert_int_equal(imp(tu_tmp_path("e.db"), &o, f, NULL, &rep, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "empty.jsonl: file is empty"));
	assert_false(err.bad_line); /* --skip-bad would not help: not suggested */
	/* A missing input file is the user's to fix: an input error (exit 2). */
	assert_int_equal(imp(tu_tmp_path("e.db"), &o, "/nonexistent.jsonl", NULL, &rep, &err), RM_E_INPUT);
	assert_string_equal(err.msg, "cannot read '/nonexistent.jsonl': No such file or directory");
}

static void crlf_and_bom_jsonl(void **state)
{
	const char text[] = "\xef\xbb\xbf{\"step\": 1, \"loss\": 2}\r\n{\"step\": 2, \"loss\": 1}\r\n";
	const char *f = tu_write_file("crlf.jsonl", text, sizeof(text) - 1);
	const char *db = tu_tmp_path("crlf.db");
	struct rm_import_opts o = {0};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), 0);
	assert_int_equal(rep.r[0].format, RM_FMT_JSONL);
	assert_string_equal(rep.r[0].run_name, "crlf");
	rm_import_report_release(&rep);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 2);
}

static void forced_format_and_run_paths(void **state)
{
	const char text[] = "{\"_step\": 1, \"step\": 100, \"loss\": 2}\n";
	const char *f = tu_write_file("forced.jsonl", text, sizeof(text) - 1);
	const char *db = tu_tmp_path("forced.db");
	struct rm_import_opts o = {.format = RM_FMT_JSONL, .run_name = "acme/llm/ab12cd34"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), 0);
	rm_import_report_release(&rep);
	/* As plain JSONL, "step" outranks "_step". */
	assert_int_equal(tu_q_int(db, "SELECT step FROM steps"), 100);
	assert_string_equal(tu_q_text(db, "SELECT entity || '|' || project || '|' || name FROM runs"),
	                    "acme|llm|ab12cd34");
}

static void run_names_from_paths(void **state)
{
	struct rm_import_opts o = {0};
	const char *cases[][2] = {
	    {"wandb/run-20240501_100000-ab12cd34/files/wandb-history.jsonl", "ab12cd34"},
	    {"wandb/offline-run-20240501_100000-zz99/wandb-history.jsonl", "zz99"},
	    {"out/my-model/checkpoint-500/trainer_state.json", "my-model"},
	    {"logs/run_7.jsonl", "run_7"},
	    {"batches.csv", "batches"},
	    {"sim/batches.jsonl", "sim"},
	    {"out/my-model/runmon-batches-rank3.jsonl", "my-model"},
	    {"./runmon-batches-rank0.jsonl", "runmon-batches-rank0"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *name = rm_run_name_for(&o, cases[i][0]);
		assert_string_equal(name, cases[i][1]);
		free(name);
	}
	o.run_name = "given";
	char *name = rm_run_name_for(&o, "x/y.jsonl");
	assert_string_equal(name, "given");
	free(name);
}

static void quote_nonfinite(void **state)
{
	const char in[] = "{\"a\": NaN, \"s\": \"NaN \\\" Infinity\", \"b\": -Infinity, \"c\": [Infinity]}";
	size_t n;
	char *out = rm_json_quote_nonfinite(in, sizeof(in) - 1, &n);
	assert_string_equal(
	    out, "{\"a\": \"NaN\", \"s\": \"NaN \\\" Infinity\", \"b\": \"-Infinity\", \"c\": [\"Infinity\"]}");
	assert_int_equal(n, strlen(out));
	free(out);
}

static void bucket_of_boundaries(void **state)
{
	int over;
	assert_int_equal(rm_bucket_of(bounds, 7, 1, &over), 0);
	assert_int_equal(rm_bucket_of(bounds, 7, 770, &over), 0);
	assert_int_equal(rm_bucket_of(bounds, 7, 771, &over), 1);
	assert_int_equal(over, 0);
	assert_int_equal(rm_bucket_of(bounds, 7, 8192, &over), 5);
	assert_int_equal(over, 0);
	assert_int_equal(rm_bucket_of(bounds, 7, 8193, &over), 5);
	assert_int_equal(over, 1);
}

/* Writes text to path (mode "w" or "a"). */
/* Cumulative counters become per-interval means: Marian-style sentence
 * counts that fall at each epoch start the differencing over, and a
 * counter that is no count is a bad line naming the key. */
static void cumulative_counters(void **state)
{
	const char *db = tu_tmp_path("cum.db");
	static const char text[] = "step,loss,consumed_tokens,consumed_samples\n"
	                           "100,3.0,409600,800\n"
	                           "200,2.9,819200,1600\n"  /* 4096 tokens and 8 samples a step: 512 tokens each */
	                           "300,2.8,1024000,2400\n" /* 2048 tokens a step, 8 samples: 256 each */
	                           "400,2.7,51200,100\n"    /* fell: a new epoch; no batch */
	                           "500,2.6,563200,1100\n"; /* 5120 tokens and 10 samples a step */
	const char *f = tu_write_file("cum.csv", text, sizeof(text) - 1);
	struct rm_import_opts o = {.run_name = "c"};
	struct rm_import_report rep;
	struct rm_err err;
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), 0);
	assert_string_equal(rep.r[0].composition, "consumed_tokens (cumulative tokens, differenced), consumed_samples"
	                                          " (cumulative sequences, differenced)");
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db,
	                              "SELECT group_concat(step || ':' || n || ':' || tokens || ':' || mean_len, ' ')"
	                              " FROM (SELECT * FROM batches ORDER BY step)"),
	                    "200:8:4096:512.0 300:8:2048:256.0 500:10:5120:512.0");
	assert_string_equal(tu_q_text(db, "SELECT composition FROM imports"),
	                    "consumed_tokens (cumulative tokens, differenced), consumed_samples"
	                    " (cumulative sequences, differenced)");
	static const char bad[] = "step,loss,elapsed_tokens\n1,3.0,100\n2,2.9,-5\n";
	f = tu_write_file("cumbad.csv", bad, sizeof(bad) - 1);
	o.run_name = "b";
	assert_int_equal(imp(db, &o, f, NULL, &rep, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "cumbad.csv:3: 'elapsed_tokens' is not a counter"));
}

static void put(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int tail(const char *db, const char *path, struct rm_tail_pos *pos, struct rm_err *err)
{
	struct rm_store *st;
	struct rm_import_report rep;
	struct rm_import_opts o = {.run_name = "t"};
	assert_int_equal(rm_store_open(&st, db, err), 0);
	int rc = rm_import_tail(st, &o, path, &rep, pos, err);
	rm_store_close(st);
	if (!rc)
		rm_import_report_release(&rep);
	return rc;
}

/* Only formats that grow line by line can be followed; every format has
 * one name that parses back to it. */
static void tail_needs_a_followable_format(void **state)
{
	const char *db = tu_tmp_path("tailfmt.db"), *path = tu_tmp_path("tailfmt.csv");
	struct rm_store *st;
	struct rm_import_report rep;
	struct rm_tail_pos pos;
	struct rm_err err;
	put(path, "w", "Wall time,Step,Value\n1.5,1,0.9\n");
	struct rm_import_opts o = {.run_name = "t", .format = RM_FMT_TB_CSV};
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	assert_int_equal(rm_import_tail(st, &o, path, &rep, &pos, &err), RM_E_USAGE);
	assert_non_null(strstr(err.msg, "a tensorboard-csv file cannot be followed"));
	rm_store_close(st);
	for (int f = RM_FMT_AUTO + 1; f < RM_FMT_COUNT; f++) {
		enum rm_format back;
		assert_non_null(rm_format_name((enum rm_format)f));
		assert_int_equal(rm_format_parse(rm_format_name((enum rm_format)f), &back), 0);
		assert_int_equal(back, f);
	}
}

#define ROW(s, b) "{\"step\": " #s ", \"bucket\": " #b ", \"n\": 4, \"max_len\": 900}\n"

/* A growing sidecar: partial last line, restart, truncation, rotation. */
static void sidecar_tail(void **state)
{
	const char *db = tu_tmp_path("tail.db"), *path = tu_tmp_path("tail.jsonl");
	char rotated[4096];
	struct rm_tail_pos pos;
	struct rm_err err;
	snprintf(rotated, sizeof(rotated), "%s.1", path);
	remove(path);
	remove(rotated);

	/* Not there yet: nothing, no error. */
	assert_int_equal(tail(db, path, &pos, &err), 0);
	assert_int_equal(pos.offset, 0);

	/* Three lines and half of a fourth: the half waits. */
	put(path, "w", ROW(0, 1) ROW(1, 2) ROW(2, 3) "{\"step\": 3, \"buck");
	assert_int_equal(tail(db, path, &pos, &err), 0);
	assert_int_equal(pos.lineno, 3);
	assert_true(pos.partial);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches"), 3);

	/* The writer finishes it and adds one; a new process picks up there. */
	put(path, "a", "et\": 4, \"n\": 4, \"max_len\": 900}\n" ROW(4, 5));
	assert_int_equal(tail(db, path, &pos, &err), 0);
	assert_int_equal(pos.lineno, 5);
	assert_false(pos.partial);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches"), 5);
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 3"), 4);
	int64_t logged = tu_q_int(db, "SELECT COUNT(*) FROM imports");

	/* Nothing new: nothing read, nothing logged. */
	assert_int_equal(tail(db, path, &pos, &err), 0);
	assert_int_equal(pos.lineno, 5);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM imports"), logged);

	/* A bad line fails naming file and line; the position stays. */
	put(path, "a", "{not json\n");
	assert_int_not_equal(tail(db, path, &pos, &err), 0);
	assert_non_null(strstr(err.msg, "tail.jsonl:6"));
	assert_int_equal(tu_q_int(db, "SELECT lineno FROM tails"), 5);

	/* Truncated in place (copytruncate) and rewritten: read from the top. */
	put(path, "w", ROW(0, 2) "\n");
	assert_int_equal(tail(db, path, &pos, &err), 0);
	assert_int_equal(pos.lineno, 2);
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 0"), 2);

	/* Rotated: a line lands in the old file before the rename, and the new
	 * file starts; both are read, the old one first. */
	put(path, "a", ROW(5, 6));
	assert_int_equal(rename(path, rotated), 0);
	put(path, "w", ROW(6, 1));
	assert_int_equal(tail(db, path, &pos, &err), 0);
	assert_int_equal(pos.lineno, 1);
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 5"), 6);
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 6"), 1);
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM batches"), 7);
	remove(rotated);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sidecar_tail),
	    cmocka_unit_test(tail_needs_a_followable_format),
	    cmocka_unit_test(wandb_history),
	    cmocka_unit_test(nested_loss_key),
	    cmocka_unit_test(sidecar_jsonl),
	    cmocka_unit_test(sidecar_csv),
	    cmocka_unit_test(wandb_chart_export),
	    cmocka_unit_test(hf_trainer_state),
	    cmocka_unit_test(hf_malformed_names_line),
	    cmocka_unit_test(tensorboard_csv),
	    cmocka_unit_test(plain_csv_and_jsonl),
	    cmocka_unit_test(every_alias_is_read),
	    cmocka_unit_test(step_as_text_of_total),
	    cmocka_unit_test(bad_line_commits_nothing),
	    cmocka_unit_test(reimport_changes_nothing),
	    cmocka_unit_test(large_file_crosses_chunks),
	    cmocka_unit_test(empty_and_missing_files),
	    cmocka_unit_test(crlf_and_bom_jsonl),
	    cmocka_unit_test(forced_format_and_run_paths),
	    cmocka_unit_test(run_names_from_paths),
	    cmocka_unit_test(quote_nonfinite),
	    cmocka_unit_test(bucket_of_boundaries),
	    cmocka_unit_test(cumulative_counters),
	    cmocka_unit_test(rank_out_of_range),
	    cmocka_unit_test(micro_batches_keyed),
	    cmocka_unit_test(lens_kept_and_mixed),
	    cmocka_unit_test(implausible_batches),
	    cmocka_unit_test(chart_export_many_runs),
	    cmocka_unit_test(two_writers_interleaved),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
