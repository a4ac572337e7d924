/*
 * fuzz_diagnose.c - libFuzzer target for what comes after parsing: a small
 * store with arbitrary steps and batches (written with SQL, past import's
 * checks, as an older runmon or another writer may have left them), then
 * the whole diagnosis as `diagnose` and `report` run it: the bucket map,
 * every detector, the cost side, the stored findings and levels, and the
 * text and JSON renderers.
 *
 * Input: one options byte, then 8-byte records: step delta, loss, bucket,
 * n, min_len, max_len, tokens, flags. Each value byte picks from a table
 * of edge cases (0, -1, 2^31, 2^53, 2^61, INT64_MAX, NaN, inf, ...) or is
 * taken as a small number.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "runmon/analyze.h"
#include "runmon/render.h"

static const double edge[] = {0,
                              -1,
                              1,
                              2,
                              -0.0,
                              1e308,
                              -1e308,
                              INFINITY,
                              -INFINITY,
                              NAN,
                              2147483648.0,
                              9007199254740992.0,
                              2305843009213693952.0,
                              9.3e18,
                              -9.3e18,
                              1e12,
                              55000,
                              0.5,
                              1.5,
                              1125899906842624.0 /* 2^50 */};
#define NEDGE (sizeof(edge) / sizeof(edge[0]))

static double value(uint8_t b, double scale)
{
	return b < 256 - NEDGE ? (double)b * scale : edge[b - (256 - NEDGE)];
}

/* Binds a value as SQLite would hold it: an integer when it is one and
 * fits, else a real (NaN as NULL). */
static void bind_num(sqlite3_stmt *s, int i, double v)
{
	if (isnan(v))
		sqlite3_bind_null(s, i);
	else if (v == floor(v) && fabs(v) < 9.2e18)
		sqlite3_bind_int64(s, i, (sqlite3_int64)v);
	else
		sqlite3_bind_double(s, i, v);
}

static struct rm_store *st;
static sqlite3 *db;
static int64_t run_id;
static FILE *devnull;

static void setup(void)
{
	char path[64];
	struct rm_err err;
	snprintf(path, sizeof(path), "/tmp/runmon-fuzz-diag-%d.db", (int)getpid());
	unlink(path);
	struct rm_run_key key = {"file", "", "", "f"};
	if (rm_store_open(&st, path, &err) || rm_store_run_ensure(st, &key, &run_id, &err) ||
	    sqlite3_open(path, &db) != SQLITE_OK || !(devnull = fopen("/dev/null", "w")))
		abort();
	sqlite3_busy_timeout(db, 10000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!st)
		setup();
	if (size < 1 || size > 1 + 8 * 4096)
		return 0;
	uint8_t opt = data[0];
	char sql[512];
	snprintf(sql, sizeof(sql),
	         "BEGIN; DELETE FROM steps; DELETE FROM batches; DELETE FROM buckets; DELETE FROM bucket_labels;"
	         " UPDATE runs SET config_json = %s WHERE id = %lld;",
	         opt & 1 ? "'{\"save_steps\": 7, \"steps_per_epoch\": 50}'" : "NULL", (long long)run_id);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		abort();
	/* The two text labels: "long" and "", or (opt & 64) the input's own
	 * bytes as one (up to 200 of them: any UTF-8, controls, quotes) and a
	 * second sharing its first 40 bytes, as long labels do. */
	sqlite3_stmt *pl;
	if (sqlite3_prepare_v2(db, "INSERT INTO bucket_labels VALUES (?1, ?2, ?3)", -1, &pl, NULL) != SQLITE_OK)
		abort();
	char other[256];
	size_t llen = size - 1 < 200 ? size - 1 : 200;
	snprintf(other, sizeof(other), "%.40s~2",
	         llen >= 40 ? (const char *)data + 1 : "a label of forty bytes, or nearly so!");
	const char *label[2] = {opt & 64 ? (const char *)data + 1 : "long", opt & 64 ? other : ""};
	for (int i = 0; i < 2; i++) {
		sqlite3_bind_int64(pl, 1, run_id);
		sqlite3_bind_int64(pl, 2, 1125899906842624LL + i);
		sqlite3_bind_text(pl, 3, label[i], i == 0 && opt & 64 ? (int)llen : -1, SQLITE_TRANSIENT);
		sqlite3_step(pl);
		sqlite3_reset(pl);
	}
	sqlite3_finalize(pl);
	if (opt & 2)
		sqlite3_exec(
		    db,
		    "INSERT INTO buckets SELECT id, 0, 0, 770 FROM runs; INSERT INTO buckets SELECT id, 1, 770,"
		    " 8192 FROM runs",
		    NULL, NULL, NULL);
	sqlite3_stmt *ps, *pb;
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO steps(run_id, step, loss, runtime) VALUES (?1, ?2, ?3, ?4)",
	                       -1, &ps, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
	                       "INSERT OR REPLACE INTO batches(run_id, step, rank, bucket, n, min_len, max_len, tokens,"
	                       " micro, lens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	                       -1, &pb, NULL) != SQLITE_OK)
		abort();
	int64_t step = 0;
	for (size_t i = 1; i + 8 <= size; i += 8) {
		const uint8_t *r = data + i;
		step += r[0] < 250 ? r[0] % 4 : r[0] == 250 ? -5 : (int64_t)1 << (r[0] - 200); /* restarts, gaps */
		if (step < 0)
			step = 0;
		uint8_t flags = r[7];
		if (!(flags & 1)) {
			sqlite3_bind_int64(ps, 1, run_id);
			sqlite3_bind_int64(ps, 2, step);
			bind_num(ps, 3, value(r[1], 0.01));
			bind_num(ps, 4, (double)step * 0.1);
			sqlite3_step(ps);
			sqlite3_reset(ps);
		}
		if (!(flags & 2)) {
			double bucket = value(r[2], 1);
			if (flags & 4)
				bucket = r[2] % 2 ? 1125899906842624.0 : 1125899906842625.0;
			sqlite3_bind_int64(pb, 1, run_id);
			sqlite3_bind_int64(pb, 2, step);
			sqlite3_bind_int64(pb, 3, flags >> 6);
			bind_num(pb, 4, flags & 8 ? NAN : bucket);
			bind_num(pb, 5, value(r[3], 1));
			bind_num(pb, 6, value(r[4], 8));
			bind_num(pb, 7, value(r[5], 32));
			bind_num(pb, 8, value(r[6], 64));
			sqlite3_bind_int(pb, 9, (flags >> 4) & 3); /* micro-batches: several rows a step and rank */
			if (r[6] & 0x80) /* recorded lengths, as the fuzzer's bytes have them: varints or not */
				sqlite3_bind_blob(pb, 10, r + 1, 6, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(pb, 10);
			sqlite3_step(pb);
			sqlite3_reset(pb);
		}
	}
	sqlite3_finalize(ps);
	sqlite3_finalize(pb);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		abort();

	struct rm_analyze_opts o;
	rm_analyze_opts_default(&o);
	o.since = opt & 4 ? 3 : 0;
	o.window = opt & 8 ? 1000 : 0;
	o.detect.ladder_interval = opt & 16 ? 1 + (opt >> 5) : 0;
	struct rm_diagnosis d;
	struct rm_run_info info;
	struct rm_err err;
	if (rm_analyze_run(st, run_id, &o, &d, &info, &err))
		return 0;
	struct rm_render_ctx rc = {.run = &info, .since = o.since};
	rm_render_text(devnull, &d, &rc);
	json_t *doc = rm_render_json(&d, &rc);
	if (!doc)
		abort(); /* a diagnosis that cannot be written as JSON */
	json_decref(doc);
	struct rm_report_run one = {&d, &info, NULL, NULL};
	struct rm_comparison cmp; /* compare and its report section, against itself */
	rm_compare(&d, &d, NULL, &cmp);
	struct rm_compare_side sides[2] = {{"before", &d}, {"after", &d}};
	rm_render_compare_text(devnull, sides, &cmp, 0);
	json_decref(rm_render_compare_json(sides, &cmp));
	struct rm_report report = {
	    .runs = &one, .n = 1, .compare = &cmp, .compare_side = sides, .overlay = sides, .noverlay = 2};
	rm_render_report_html(devnull, &report);
	rm_render_report_md(devnull, &report);
	rm_diagnosis_release(&d);
	rm_run_info_release(&info);
	return 0;
}
