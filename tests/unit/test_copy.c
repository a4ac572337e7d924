/*
 * test_copy.c - `runmon copy` between two SQLite files: every table of a
 * named run arrives row for row, a second copy changes nothing, a run in
 * the destination is replaced (its id kept), --all carries the reports,
 * and a run that is not there is an error that names it.
 */
#include <stdlib.h>
#include <string.h>

#include "runmon/analyze.h"
#include "runmon/sim.h"
#include "runmon/store.h"
#include "testutil.h"

static void simulate(const char *db, const char *name, enum rm_sim_strategy strat, int64_t steps, uint64_t seed)
{
	struct rm_store *st;
	struct rm_err err;
	struct rm_sim_opts o;
	rm_sim_opts_default(&o);
	o.strategy = strat;
	o.steps = steps;
	o.seed = seed;
	assert_int_equal(rm_store_open(&st, db, &err), RM_OK);
	assert_int_equal(rm_sim_store(st, name, &o, &err), RM_OK);
	/* a diagnosis, so findings and fitted levels exist to copy */
	int64_t id;
	struct rm_analyze_opts ao;
	struct rm_diagnosis d;
	struct rm_run_info info;
	rm_analyze_opts_default(&ao);
	assert_int_equal(rm_store_find_run(st, name, &id, &err), RM_OK);
	assert_int_equal(rm_analyze_run(st, id, &ao, &d, &info, &err), RM_OK);
	rm_diagnosis_release(&d);
	rm_run_info_release(&info);
	rm_store_close(st);
}

/* A table's rows of a run, in a fixed order and without the run's id. */
static char *rows(const char *db, const char *table, const char *run)
{
	char sql[512];
	snprintf(sql, sizeof(sql),
	         "SELECT COUNT(*) || ':' || COALESCE(SUM(LENGTH(quote(t.step)) + LENGTH(quote(t.loss))), 0)"
	         " FROM %s t JOIN runs r ON r.id = t.run_id WHERE r.name = '%s'",
	         table, run);
	return strdup(tu_q_text(db, sql));
}

static void named_run_arrives_row_for_row(void **state)
{
	const char *src = tu_tmp_path("src.db"), *dst = tu_tmp_path("dst.db");
	simulate(src, "homog", RM_SIM_CHUNKED, 3000, 1);
	simulate(src, "other", RM_SIM_INTERLEAVED, 2000, 2);
	char *names[] = {"homog"};
	struct rm_copy_counts c;
	struct rm_err err;
	assert_int_equal(rm_copy(src, dst, names, 1, NULL, NULL, &c, &err), RM_OK);
	assert_int_equal(c.runs, 1);
	assert_int_equal(tu_q_int(dst, "SELECT COUNT(*) FROM runs"), 1);
	const char *q = "SELECT group_concat(step || ',' || quote(loss) || ',' || quote(lr), ';')"
	                " FROM (SELECT * FROM steps ORDER BY step)";
	char *want_steps = strdup(tu_q_text(src, "SELECT group_concat(x, ';') FROM (SELECT step || ',' ||"
	                                         " quote(loss) || ',' || quote(lr) AS x FROM steps WHERE run_id ="
	                                         " (SELECT id FROM runs WHERE name = 'homog') ORDER BY step)"));
	assert_string_equal(want_steps, tu_q_text(dst, q));
	free(want_steps);
	const char *bq = "SELECT group_concat(x, ';') FROM (SELECT step || ',' || rank || ',' || quote(bucket) || ','"
	                 " || quote(n) || ',' || quote(max_len) || ',' || quote(tokens) AS x FROM batches b"
	                 " JOIN runs r ON r.id = b.run_id WHERE r.name = 'homog' ORDER BY step, rank, micro)";
	char *want = strdup(tu_q_text(src, bq));
	assert_string_equal(want, tu_q_text(dst, bq));
	free(want);
	/* findings and the counts agree */
	assert_int_equal(tu_q_int(dst, "SELECT COUNT(*) FROM findings"),
	                 tu_q_int(src, "SELECT COUNT(*) FROM findings f JOIN runs r ON r.id = f.run_id"
	                               " WHERE r.name = 'homog'"));
	assert_int_equal(c.rows[0] > 0, 1);
}

static void second_copy_changes_nothing(void **state)
{
	const char *src = tu_tmp_path("src.db"), *dst = tu_tmp_path("dst.db");
	simulate(src, "homog", RM_SIM_CHUNKED, 2000, 3);
	char *names[] = {"homog"};
	struct rm_copy_counts c;
	struct rm_err err;
	assert_int_equal(rm_copy(src, dst, names, 1, NULL, NULL, &c, &err), RM_OK);
	char *once = rows(dst, "steps", "homog");
	int64_t id = tu_q_int(dst, "SELECT id FROM runs WHERE name = 'homog'");
	assert_int_equal(rm_copy(src, dst, names, 1, NULL, NULL, &c, &err), RM_OK);
	char *twice = rows(dst, "steps", "homog");
	assert_string_equal(once, twice);
	free(twice);
	assert_int_equal(tu_q_int(dst, "SELECT COUNT(*) FROM steps"), 2000);
	assert_int_equal(tu_q_int(dst, "SELECT id FROM runs WHERE name = 'homog'"), id);
	free(once);
}

/* The destination's rows of the run are replaced, not merged: a step the
 * source no longer has is gone after the copy. */
static void destination_run_is_replaced(void **state)
{
	const char *src = tu_tmp_path("src.db"), *dst = tu_tmp_path("dst.db");
	simulate(dst, "homog", RM_SIM_CHUNKED, 3000, 4);
	simulate(src, "homog", RM_SIM_INTERLEAVED, 1000, 5);
	char *names[] = {"homog"};
	struct rm_copy_counts c;
	struct rm_err err;
	assert_int_equal(rm_copy(src, dst, names, 1, NULL, NULL, &c, &err), RM_OK);
	assert_int_equal(tu_q_int(dst, "SELECT COUNT(*) FROM steps"), 1000);
	assert_int_equal(tu_q_int(dst, "SELECT MAX(step) FROM steps"), tu_q_int(src, "SELECT MAX(step) FROM steps"));
}

static void missing_run_is_named(void **state)
{
	const char *src = tu_tmp_path("src.db"), *dst = tu_tmp_path("dst.db");
	simulate(src, "homog", RM_SIM_CHUNKED, 1000, 6);
	char *names[] = {"nosuchrun"};
	struct rm_copy_counts c;
	struct rm_err err;
	assert_int_not_equal(rm_copy(src, dst, names, 1, NULL, NULL, &c, &err), RM_OK);
	assert_non_null(strstr(err.msg, "nosuchrun"));
}

static void all_runs_copy(void **state)
{
	const char *src = tu_tmp_path("src.db"), *dst = tu_tmp_path("dst.db");
	simulate(src, "a", RM_SIM_CHUNKED, 1000, 7);
	simulate(src, "b", RM_SIM_BUCKETED_RANDOM, 1000, 8);
	struct rm_copy_counts c;
	struct rm_err err;
	assert_int_equal(rm_copy(src, dst, NULL, 0, NULL, NULL, &c, &err), RM_OK);
	assert_int_equal(c.runs, 2);
	assert_string_equal(tu_q_text(dst, "SELECT group_concat(name, ',') FROM (SELECT name FROM runs ORDER BY name)"),
	                    "a,b");
	assert_int_equal(tu_q_int(dst, "SELECT COUNT(*) FROM steps"), 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(named_run_arrives_row_for_row),
	    cmocka_unit_test(second_copy_changes_nothing),
	    cmocka_unit_test(destination_run_is_replaced),
	    cmocka_unit_test(missing_run_is_named),
	    cmocka_unit_test(all_runs_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
