/*
 * test_changes.c - what changed since the last report: classification of
 * runs and findings, --fail-on-new's rule, reports kept in the store and
 * read back per run at a cutoff, JSON baselines, UTC times.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runmon/render.h"
#include "runmon/store.h"
#include "testutil.h"

/* was/now: every kind of change once. */
static void two_reports(struct rm_seen *was, struct rm_seen *now)
{
	struct rm_seen_run *r;
	r = rm_seen_push(was, "steady", RM_SEV_CRITICAL, "homogeneous batching", 100, 10);
	rm_seen_push_finding(r, "same_bucket_runs", RM_SEV_WARN, 40);
	r = rm_seen_push(now, "steady", RM_SEV_CRITICAL, "homogeneous batching", 200, 0);
	rm_seen_push_finding(r, "same_bucket_runs", RM_SEV_WARN, 40);

	rm_seen_push(was, "rising", RM_SEV_INFO, "healthy", 100, 10); /* info reads as ok */
	r = rm_seen_push(now, "rising", RM_SEV_WARN, "homogeneous batching", 200, 0);
	rm_seen_push_finding(r, "same_bucket_runs", RM_SEV_WARN, 150);

	r = rm_seen_push(was, "falling", RM_SEV_CRITICAL, "homogeneous batching", 100, 10);
	rm_seen_push_finding(r, "resets_by_bucket", RM_SEV_WARN, 7);
	rm_seen_push_finding(r, "same_bucket_runs", RM_SEV_WARN, 3);
	r = rm_seen_push(now, "falling", RM_SEV_WARN, "homogeneous batching", 200, 0);
	rm_seen_push_finding(r, "same_bucket_runs", RM_SEV_WARN, 3);

	r = rm_seen_push(was, "fixed", RM_SEV_WARN, "homogeneous batching", 100, 10);
	rm_seen_push_finding(r, "same_bucket_runs", RM_SEV_WARN, 3);
	rm_seen_push(now, "fixed", RM_SEV_NONE, "healthy", 200, 0);

	r = rm_seen_push(was, "moved", RM_SEV_WARN, "checkpoint interference", 100, 10);
	rm_seen_push_finding(r, "length_coupling", RM_SEV_INFO, 0);
	r = rm_seen_push(now, "moved", RM_SEV_WARN, "checkpoint interference", 200, 0);
	rm_seen_push_finding(r, "length_coupling", RM_SEV_WARN, 0); /* the same finding, more severe */

	rm_seen_push(now, "newcomer", RM_SEV_INFO, "healthy", 200, 0);
	rm_seen_push(was, "gone", RM_SEV_CRITICAL, "homogeneous batching", 100, 10); /* not reported now */
}

static void classifies_each_change(void **state)
{
	(void)state;
	struct rm_seen was = {0}, now = {0};
	struct rm_changes c = {0};
	two_reports(&was, &now);
	rm_changes_compute(&now, &was, &c);
	static const enum rm_change want[] = {RM_CH_UNCHANGED, RM_CH_RISEN,   RM_CH_FALLEN,
	                                      RM_CH_RESOLVED,  RM_CH_CHANGED, RM_CH_NEW};
	assert_int_equal(c.n, 6);
	for (size_t i = 0; i < c.n; i++) {
		assert_ptr_equal(c.runs[i].now, &now.runs[i]);
		assert_int_equal(c.runs[i].kind, want[i]);
	}
	assert_null(c.runs[5].was);
	assert_int_equal(c.count[RM_CH_UNCHANGED], 1);
	assert_int_equal(c.count[RM_CH_NEW], 1);
	/* rising: the runs finding appeared; falling: the resets went away. */
	assert_int_equal(c.runs[1].nappeared, 1);
	assert_string_equal(now.runs[1].f[c.runs[1].appeared[0]].detector, "same_bucket_runs");
	assert_int_equal(c.runs[2].nappeared, 0);
	assert_int_equal(c.runs[2].ngone, 1);
	assert_string_equal(c.runs[2].was->f[c.runs[2].gone[0]].detector, "resets_by_bucket");
	/* moved: info -> warn counts as appeared, and nothing went away. */
	assert_int_equal(c.runs[4].nappeared, 1);
	assert_int_equal(c.runs[4].ngone, 0);
	/* --fail-on-new: the risen run and the finding at warn are news at warn;
	 * nothing reached critical that was not critical before. */
	assert_true(rm_changes_new_at(&c, RM_SEV_INFO));
	assert_true(rm_changes_new_at(&c, RM_SEV_WARN));
	assert_false(rm_changes_new_at(&c, RM_SEV_CRITICAL));
	rm_changes_release(&c);

	/* Compared with itself, nothing is news at any level. */
	rm_changes_compute(&now, &now, &c);
	assert_int_equal(c.count[RM_CH_UNCHANGED], 6);
	assert_false(rm_changes_new_at(&c, RM_SEV_INFO));
	rm_changes_release(&c);
	/* Without a baseline everything is new, critical included. */
	rm_changes_compute(&was, NULL, &c);
	assert_int_equal(c.count[RM_CH_NEW], was.n);
	assert_true(rm_changes_new_at(&c, RM_SEV_CRITICAL));
	rm_changes_release(&c);
	rm_seen_release(&was);
	rm_seen_release(&now);
}

static void store_keeps_reports_per_run(void **state)
{
	(void)state;
	const char *path = tu_tmp_path("changes.db");
	struct rm_store *st;
	struct rm_err err;
	struct rm_seen was = {0}, now = {0}, got = {0};
	double latest = -1;
	assert_int_equal(rm_store_open(&st, path, &err), 0);
	two_reports(&was, &now);
	assert_int_equal(rm_store_put_report(st, 1000, &was, &err), 0);
	assert_int_equal(rm_store_put_report(st, 2000, &now, &err), 0);
	const char *names[] = {"falling", "gone", "newcomer", "nobody"};

	/* Before the first report: nothing. */
	assert_int_equal(rm_store_get_seen(st, names, 4, 999, &got, &latest, &err), 0);
	assert_int_equal(got.n, 0);
	assert_true(latest == 0);
	/* Between the two: the first. */
	assert_int_equal(rm_store_get_seen(st, names, 4, 1500, &got, &latest, &err), 0);
	assert_int_equal(got.n, 2);
	assert_string_equal(got.runs[0].run, "falling");
	assert_int_equal(got.runs[0].severity, RM_SEV_CRITICAL);
	assert_int_equal(got.runs[0].nf, 2);
	assert_string_equal(got.runs[0].f[0].detector, "resets_by_bucket");
	assert_int_equal(got.runs[0].f[0].first_step, 7);
	assert_int_equal(got.runs[0].last_step, 100);
	assert_true(got.runs[0].at == 1000 && latest == 1000);
	rm_seen_release(&got);
	/* After both: each run as the latest report that saw it saw it ("gone"
	 * from the first), and the newest report's time. */
	assert_int_equal(rm_store_get_seen(st, names, 4, 2000, &got, &latest, &err), 0);
	assert_int_equal(got.n, 3);
	assert_int_equal(got.runs[0].severity, RM_SEV_WARN);
	assert_int_equal(got.runs[0].nf, 1);
	assert_true(got.runs[0].at == 2000);
	assert_string_equal(got.runs[1].run, "gone");
	assert_true(got.runs[1].at == 1000);
	assert_string_equal(got.runs[2].run, "newcomer");
	assert_int_equal(got.runs[2].severity, RM_SEV_INFO);
	assert_string_equal(got.runs[2].verdict, "healthy");
	assert_true(latest == 2000);
	rm_seen_release(&got);
	assert_int_equal(tu_q_int(path, "SELECT COUNT(*) FROM report_findings"), 9);
	rm_store_close(st);
	rm_seen_release(&was);
	rm_seen_release(&now);
}

static void reads_json_baselines(void **state)
{
	(void)state;
	static const char good[] =
	    "{\"schema\": \"runmon.report/1\", \"generated\": \"2025-11-29T06:00:00Z\", \"overview\": ["
	    "{\"run\": \"acme/llm/a\", \"severity\": \"critical\", \"verdict\": \"homogeneous batching\","
	    " \"last_step\": 99, \"findings\": [{\"detector\": \"ladder\", \"severity\": \"warn\", \"first_step\": 5},"
	    " {\"detector\": \"resets_at_checkpoints\", \"severity\": \"warn\", \"first_step\": null}]},"
	    "{\"run\": \"b\", \"severity\": \"none\", \"verdict\": \"healthy\", \"last_step\": null, \"findings\": "
	    "[]}]}";
	struct rm_seen s;
	struct rm_err err;
	double at = 0;
	assert_int_equal(rm_seen_read_report(tu_write_file("good.json", good, strlen(good)), &s, &at, &err), 0);
	assert_true(at == 1764396000);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.runs[0].run, "acme/llm/a");
	assert_int_equal(s.runs[0].nf, 2);
	assert_int_equal(s.runs[0].f[0].first_step, 5);
	assert_int_equal(s.runs[0].f[1].first_step, -1);
	assert_int_equal(s.runs[1].severity, RM_SEV_NONE);
	assert_int_equal(s.runs[1].last_step, -1);
	assert_true(s.runs[1].at == at);
	rm_seen_release(&s);

	static const struct {
		const char *text, *says;
	} bad[] = {
	    {"# runmon report\n", "line 1"},
	    {"{\"schema\": \"runmon.diagnosis/3\", \"generated\": \"2025-11-29T06:00:00Z\", \"overview\": []}",
	     "not a JSON report of runmon"},
	    {"{\"schema\": \"runmon.report/1\", \"generated\": \"yesterday\", \"overview\": []}",
	     "not a JSON report of runmon"},
	    {"{\"schema\": \"runmon.report/1\", \"generated\": \"2025-11-29T06:00:00Z\", \"runs\": []}",
	     "not a JSON report of runmon"},
	    {"{\"schema\": \"runmon.report/1\", \"generated\": \"2025-11-29T06:00:00Z\", \"overview\": [{\"run\": "
	     "\"a\","
	     " \"severity\": \"loud\", \"verdict\": \"x\", \"findings\": []}]}",
	     "overview entry 1 lacks"},
	    {"{\"schema\": \"runmon.report/1\", \"generated\": \"2025-11-29T06:00:00Z\", \"overview\": [{\"run\": "
	     "\"a\","
	     " \"severity\": \"warn\", \"verdict\": \"x\", \"findings\": [{\"severity\": \"warn\"}]}]}",
	     "overview entry 1 lacks"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *path = tu_write_file("bad.json", bad[i].text, strlen(bad[i].text));
		assert_int_equal(rm_seen_read_report(path, &s, &at, &err), RM_E_INPUT);
		assert_non_null(strstr(err.msg, path));
		assert_non_null(strstr(err.msg, bad[i].says));
		assert_int_equal(s.n, 0);
	}
	assert_int_equal(rm_seen_read_report(tu_tmp_path("absent.json"), &s, &at, &err), RM_E_NOTFOUND);
	assert_non_null(strstr(err.msg, "absent.json"));
}

static void parses_utc_times(void **state)
{
	(void)state;
	double t = 0;
	assert_int_equal(rm_parse_utc("2025-11-29T06:00:00Z", &t), 0);
	assert_true(t == 1764396000);
	assert_int_equal(rm_parse_utc("2025-11-29", &t), 0);
	assert_true(t == 1764374400);
	assert_int_equal(rm_parse_utc("1970-01-01T00:00:00Z", &t), 0);
	assert_true(t == 0);
	static const char *const bad[] = {"",
	                                  "yesterday",
	                                  "2025-13-01",
	                                  "2025-11-29T06:00:00",
	                                  "2025-11-29 06:00:00Z",
	                                  "2025-11-29T25:00:00Z",
	                                  "2025-1-29",
	                                  "2025-11-29T06:00:00Zx",
	                                  "2025-11-29x",
	                                  "2025-11-00"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rm_parse_utc(bad[i], &t), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(classifies_each_change),
	    cmocka_unit_test(store_keeps_reports_per_run),
	    cmocka_unit_test(reads_json_baselines),
	    cmocka_unit_test(parses_utc_times),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
