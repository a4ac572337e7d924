/*
 * test_pg.c - the PostgreSQL store's foundation against a real server
 * (tests/tools/pg/with_cluster.sh starts a throwaway cluster and names it in
 * RUNMON_TEST_PG): passwords redacted, migrations applied once even by
 * collectors starting together, foreign and newer databases refused, and
 * the views answering as SQLite's do on the same rows.
 */
#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/store.h"
#include "testutil.h"

/* The cluster's URI with database db instead of runmon. */
static const char *uri_of(const char *db)
{
	static char buf[4][512];
	static int k;
	const char *base = getenv("RUNMON_TEST_PG");
	const char *slash = strstr(base, "@/runmon?");
	char *out = buf[k++ % 4];
	snprintf(out, 512, "%.*s@/%s?%s", (int)(slash - base), base, db, slash + 9);
	return out;
}

/* A fresh, empty database of the cluster. */
static const char *fresh_db(const char *db)
{
	PGconn *c = PQconnectdb(getenv("RUNMON_TEST_PG"));
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	char sql[256];
	PQclear(PQexec(c, "SET client_min_messages = warning"));
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", db);
	PQclear(PQexec(c, sql));
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	PGresult *r = PQexec(c, sql);
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	PQfinish(c);
	return uri_of(db);
}

static long long pg_int(const char *uri, const char *sql)
{
	PGconn *c = PQconnectdb(uri);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PGresult *r = PQexec(c, sql);
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	long long v = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	PQfinish(c);
	return v;
}

static void pg_exec(const char *uri, const char *sql)
{
	PGconn *c = PQconnectdb(uri);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fail_msg("%s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
}

/* One field as text: numbers at 9 significant digits (the engines print
 * 950.0 and 950), NULL as -. */
static size_t field(char *out, size_t n, const char *f)
{
	char *end;
	double v = strtod(f, &end);
	return (size_t)(*f && !*end ? snprintf(out, n, "%.9g|", v) : snprintf(out, n, "%s|", f));
}

static void sqlite_rows(const char *db, const char *sql, char *out, size_t n)
{
	char cmd[1024], line[512];
	snprintf(cmd, sizeof(cmd), "sqlite3 -separator , -nullvalue - '%s' \"%s\"", db, sql);
	FILE *p = popen(cmd, "r");
	size_t used = 0;
	out[0] = '\0';
	while (p && fgets(line, sizeof(line), p))
		for (char *f = strtok(line, ",\n"); f; f = strtok(NULL, ",\n"))
			used += field(out + used, n - used, f);
	assert_int_equal(pclose(p), 0);
}

static void pg_rows(const char *uri, const char *sql, char *out, size_t n)
{
	PGconn *c = PQconnectdb(uri);
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQresultErrorMessage(r));
	size_t used = 0;
	out[0] = '\0';
	for (int i = 0; i < PQntuples(r); i++)
		for (int j = 0; j < PQnfields(r); j++)
			used += field(out + used, n - used, PQgetisnull(r, i, j) ? "-" : PQgetvalue(r, i, j));
	PQclear(r);
	PQfinish(c);
}

static void redacts_passwords(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	    {"postgresql://ann:s3cret@db.example.com:5432/runmon?sslmode=require",
	     "postgresql://ann:***@db.example.com:5432/runmon?sslmode=require"},
	    {"postgres://ann:p%40ss@db/runmon", "postgres://ann:***@db/runmon"},
	    {"postgresql://ann@db/runmon?password=s3cret&sslmode=verify-full",
	     "postgresql://ann@db/runmon?password=***&sslmode=verify-full"},
	    {"postgresql://db/runmon?application_name=x&password=s3cret",
	     "postgresql://db/runmon?application_name=x&password=***"},
	    {"postgresql:///runmon?host=/run/postgresql", "postgresql:///runmon?host=/run/postgresql"},
	    {"host=db dbname=runmon password='a b\\' c' user=ann", "host=db dbname=runmon password=*** user=ann"},
	    {"postgresql://ann:x@y@db/runmon", "postgresql://ann:***@db/runmon"}, /* the last @ ends the userinfo */
	    {"postgresql://db/runmon?mypassword=1", "postgresql://db/runmon?mypassword=1"},  /* not the key */
	    {"postgresql://ann:Hunter2/Secret@db/runmon", "postgresql://ann:***@db/runmon"}, /* '/' unencoded */
	};
	char buf[256];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rm_db_redact(cases[i][0], buf, sizeof(buf));
		assert_string_equal(buf, cases[i][1]);
	}
	/* libpq's own messages about a URI it could not parse (issue 35.8) */
	static const char *const scrub[][3] = {
	    {"postgresql://ann:Hunter2Secret%@db/x", "invalid percent-encoded token: \"Hunter2Secret%\"",
	     "invalid percent-encoded token: \"***\""},
	    {"postgresql://ann:Hunter2/Secret@db/x", "invalid integer value \"Hunter2\" for connection option \"port\"",
	     "invalid integer value \"***\" for connection option \"port\""},
	    {"postgresql://ann:p%40ss-word@db/x", "password p@ss-word and p%40ss-word", "password *** and ***"},
	    {"postgresql://ann:pw12345@[::1/x", "looking for \"]\" in URI: \"postgresql://ann:pw12345@[::1/x\"",
	     "looking for \"]\" in URI: \"postgresql://ann:***@[::1/x\""},
	    {"host=db password='Hunter2 Secret' user=ann", "bad \"Hunter2 Sec\" for user \"ann\"",
	     "bad \"***\" for user \"ann\""},
	    {"postgresql://ann@db/x", "password authentication failed for user \"ann\"",
	     "password authentication failed for user \"ann\""},
	};
	for (size_t i = 0; i < sizeof(scrub) / sizeof(scrub[0]); i++) {
		rm_db_scrub(scrub[i][0], scrub[i][1], buf, sizeof(buf));
		assert_string_equal(buf, scrub[i][2]);
	}
	rm_db_redact(cases[0][0], buf, 20); /* truncated, still terminated, no secret */
	assert_int_equal(strlen(buf), 19);
	assert_true(rm_db_is_postgres("postgresql://x") && rm_db_is_postgres("postgres://x"));
	assert_false(rm_db_is_postgres("runmon.db") || rm_db_is_postgres("./postgresql://x"));
}

static void migrates_once(void **state)
{
	(void)state;
	const char *uri = fresh_db("t_migrate");
	struct rm_pg *pg;
	struct rm_err err;
	assert_int_equal(rm_pg_open(&pg, uri, &err), 0);
	assert_int_equal(rm_pg_schema_version(pg), rm_pg_latest_version());
	rm_pg_close(pg);
	/* Every table, view and column SQLite has, by name; schema_migrations
	 * is PostgreSQL's user_version. */
	const char *db = tu_tmp_path("schema.db");
	struct rm_store *st;
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	rm_store_close(st);
	static char a[8192], b[8192];
	sqlite_rows(db,
	            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p"
	            " WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite%' ORDER BY 1, 2",
	            a, sizeof(a));
	pg_rows(uri,
	        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
	        " AND table_name <> 'schema_migrations' ORDER BY table_name COLLATE \"C\", column_name COLLATE \"C\"",
	        b, sizeof(b));
	assert_true(strlen(a) > 1000);
	assert_string_equal(a, b);
	assert_int_equal(rm_pg_open(&pg, uri, &err), 0);
	rm_pg_close(pg);
	assert_int_equal(pg_int(uri, "SELECT count(*) FROM schema_migrations"), rm_pg_latest_version());
}

static void *open_one(void *arg)
{
	struct rm_pg *pg;
	struct rm_err err;
	long rc = rm_pg_open(&pg, arg, &err);
	if (!rc)
		rm_pg_close(pg);
	else
		fprintf(stderr, "%s\n", err.msg);
	return (void *)rc;
}

static void collectors_starting_together_migrate_once(void **state)
{
	(void)state;
	const char *uri = fresh_db("t_together");
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, open_one, (void *)uri), 0);
	for (int i = 0; i < 8; i++) {
		void *rc;
		pthread_join(t[i], &rc);
		assert_null(rc);
	}
	assert_int_equal(pg_int(uri, "SELECT count(*) FROM schema_migrations"), rm_pg_latest_version());
}

struct creator {
	const char *uri;
	int64_t id;
	int rc;
	char msg[512];
};

static void *create_run(void *arg)
{
	struct creator *c = arg;
	struct rm_store *st;
	struct rm_err err;
	struct rm_run_key key = {"wandb", "acme", "llm", "same"};
	c->rc = rm_store_open(&st, c->uri, &err);
	if (!c->rc)
		c->rc = rm_store_run_ensure(st, &key, &c->id, &err);
	if (c->rc)
		snprintf(c->msg, sizeof(c->msg), "%s", err.msg);
	rm_store_close(st);
	return NULL;
}

/* A run created by one collector while another creates it: the second
 * waits for the first to commit and finds it (a unique-key error had
 * failed a sync under valgrind's slowness). */
static void two_collectors_create_one_run(void **state)
{
	(void)state;
	const char *uri = fresh_db("t_create");
	struct rm_store *st;
	struct rm_err err;
	struct rm_run_key key = {"wandb", "acme", "llm", "same"};
	int64_t id;
	assert_int_equal(rm_store_open(&st, uri, &err), 0);
	assert_int_equal(rm_store_begin(st, &err), 0);
	assert_int_equal(rm_store_run_ensure(st, &key, &id, &err), 0);
	struct creator c = {.uri = uri};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, create_run, &c), 0);
	usleep(300000); /* the other has looked, found nothing, and waits on the insert */
	assert_int_equal(rm_store_commit(st, &err), 0);
	pthread_join(t, NULL);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.id, id);
	assert_int_equal(pg_int(uri, "SELECT count(*) FROM runs"), 1);
	rm_store_close(st);
}

static void refuses_foreign_and_newer_databases(void **state)
{
	(void)state;
	struct rm_pg *pg;
	struct rm_err err;
	const char *uri = fresh_db("t_foreign");
	pg_exec(uri, "CREATE TABLE invoices (id int)");
	assert_int_equal(rm_pg_open(&pg, uri, &err), RM_E_STORE);
	assert_non_null(strstr(err.msg, "no runmon schema"));
	assert_int_equal(pg_int(uri, "SELECT (to_regclass('schema_migrations') IS NULL)::int"), 1); /* untouched */
	/* golang-migrate's own schema_migrations (issue 35.12): not runmon's */
	uri = fresh_db("t_migrate");
	pg_exec(uri, "CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL);"
	             " INSERT INTO schema_migrations VALUES (3, false); CREATE TABLE users (id int)");
	assert_int_equal(rm_pg_open(&pg, uri, &err), RM_E_STORE);
	assert_non_null(strstr(err.msg, "no runmon schema (its schema_migrations is another tool's)"));
	assert_int_equal(pg_int(uri, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"), 2);

	uri = fresh_db("t_newer");
	assert_int_equal(rm_pg_open(&pg, uri, &err), 0);
	rm_pg_close(pg);
	pg_exec(uri, "INSERT INTO schema_migrations VALUES (999, '999_future', 0)");
	assert_int_equal(rm_pg_open(&pg, uri, &err), RM_E_STORE);
	assert_non_null(strstr(err.msg, "newer than this runmon"));
}

static void password_never_shown(void **state)
{
	(void)state;
	struct rm_pg *pg;
	struct rm_err err;
	const char *base = getenv("RUNMON_TEST_PG"), *host = strstr(base, "?host=");
	char uri[512];
	snprintf(uri, sizeof(uri), "postgresql://runmon:Hunter2-wrong@/runmon%s", host);
	setenv("PGPASSFILE", "/nonexistent", 1); /* the URI's password is the one tried */
	char *saved = getenv("PGPASSWORD");
	assert_null(saved);
	assert_int_equal(rm_pg_open(&pg, uri, &err), RM_E_STORE);
	assert_null(strstr(err.msg, "Hunter2"));
	assert_non_null(strstr(err.msg, "runmon:***@"));
	assert_non_null(strstr(err.msg, "password authentication failed"));
	/* PGPASSWORD (libpq's convention) with a wrong value: not shown either. */
	snprintf(uri, sizeof(uri), "postgresql://runmon@/runmon%s", host);
	setenv("PGPASSWORD", "Hunter2-env", 1);
	assert_int_equal(rm_pg_open(&pg, uri, &err), RM_E_STORE);
	assert_null(strstr(err.msg, "Hunter2"));
	unsetenv("PGPASSWORD");
	/* Passwords with '%', '@' or '/' left unencoded: libpq's message quotes
	 * the token it could not parse, or the URI (issue 35.8). */
	static const char *const bad[] = {"postgresql://runmon:Hunter2Secret%@localhost/runmon",
	                                  "postgresql://runmon:Hunter2/Secret@localhost/runmon",
	                                  "postgresql://runmon:Hunter2Secret@[::1/runmon"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rm_pg_open(&pg, bad[i], &err), RM_E_STORE);
		assert_null(strstr(err.msg, "Hunter2"));
		assert_non_null(strstr(err.msg, "runmon:***@"));
	}
}

/* The same rows on both engines: every view gives the same answers. */
static const char rows_sql[] =
    "INSERT INTO runs(id, source, name) VALUES (1, 'file', 'r');"
    "INSERT INTO steps(run_id, step, loss, ts, nan_mask) VALUES (1, 0, 2.5, 100, 0), (1, 1, 0.5, 101, 0),"
    " (1, 2, NULL, 102, 1), (1, 3, 1.25, 103, 0), (1, 4, 3.0, 104, 0);"
    "INSERT INTO batches(run_id, step, rank, micro, bucket, n, min_len, max_len, mean_len, tokens, padded_tokens)"
    " VALUES (1, 0, 0, 0, 2, 4, 900, 1000, 950, 3800, 200), (1, 0, 1, 0, 1, 4, 100, 300, 200, 800, 400),"
    " (1, 1, 0, 0, 0, 8, 10, 50, 30, 240, 160), (1, 3, 0, 0, 1, 2, 200, 700, 450, 900, 500),"
    " (1, 4, 0, 0, 2, 1, 1200, 1200, 1200, 1200, 0);"
    "INSERT INTO bucket_levels(run_id, bucket, scale, shift, level) VALUES (1, 0, 'log', -0.5, 0.6),"
    " (1, 1, 'log', 0.1, 1.1), (1, 2, 'linear', 0.9, 0.9);"
    "INSERT INTO bucket_labels(run_id, bucket, label) VALUES (1, 2, 'long');"
    "INSERT INTO length_levels(run_id, scale, slope, ref_len, r2) VALUES (1, 'log', 0.3, 500, 0.8);"
    "INSERT INTO length_factors(run_id, lo, hi, effect) VALUES (1, 0, 600, 0.9), (1, 600, 2000, 1.2);";

static const char *const view_sql[] = {
    "SELECT step, bucket, ranks, n, min_len, max_len, mean_len, tokens, padded_tokens FROM step_batch ORDER BY step",
    "SELECT step, loss, nan_mask, bucket, mean_len FROM step_batches ORDER BY step",
    ("SELECT bucket, steps, mean_loss, min_loss, max_loss, var_loss, padding_efficiency FROM bucket_loss"
     " ORDER BY bucket"),
    "SELECT step, bucket, loss, adjusted FROM adjusted_loss ORDER BY step",
    "SELECT bucket, name FROM bucket_names ORDER BY bucket",
    "SELECT step, length, adjusted FROM length_adjusted_loss ORDER BY step",
};

static void views_answer_as_on_sqlite(void **state)
{
	(void)state;
	const char *uri = fresh_db("t_views"), *db = tu_tmp_path("views.db");
	struct rm_pg *pg;
	struct rm_store *st;
	struct rm_err err;
	assert_int_equal(rm_pg_open(&pg, uri, &err), 0);
	rm_pg_close(pg);
	assert_int_equal(rm_store_open(&st, db, &err), 0);
	rm_store_close(st);
	pg_exec(uri, rows_sql);
	tu_exec(db, rows_sql);
	static char a[4096], b[4096];
	for (size_t i = 0; i < sizeof(view_sql) / sizeof(view_sql[0]); i++) {
		sqlite_rows(db, view_sql[i], a, sizeof(a));
		pg_rows(uri, view_sql[i], b, sizeof(b));
		assert_true(strlen(a) > 10);
		if (strcmp(a, b))
			fail_msg("%s\n sqlite:     %s\n postgresql: %s", view_sql[i], a, b);
	}
}

int main(void)
{
	if (!getenv("RUNMON_TEST_PG")) {
		fprintf(stderr, "test_pg: run it through tests/tools/pg/with_cluster.sh (RUNMON_TEST_PG is not set)\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(redacts_passwords),
	    cmocka_unit_test(migrates_once),
	    cmocka_unit_test(collectors_starting_together_migrate_once),
	    cmocka_unit_test(two_collectors_create_one_run),
	    cmocka_unit_test(refuses_foreign_and_newer_databases),
	    cmocka_unit_test(views_answer_as_on_sqlite),
	    cmocka_unit_test(password_never_shown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
