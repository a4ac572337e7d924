/*
 * testutil.c - see testutil.h.
 */
#include "testutil.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void cleanup(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (tmpdir[0] && system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

const char *tu_tmp_path(const char *name)
{
	static char paths[64][512];
	static int next;
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/runmon-test-XXXXXX");
		if (!mkdtemp(tmpdir))
			abort();
		atexit(cleanup);
	}
	/* One directory per call, so the file keeps its own name. */
	char *p = paths[next++ % 64];
	snprintf(p, 512, "%s/%d", tmpdir, next);
	if (mkdir(p, 0700))
		abort();
	snprintf(p, 512, "%s/%d/%s", tmpdir, next, name);
	return p;
}

const char *tu_write_file(const char *name, const char *text, size_t len)
{
	const char *path = tu_tmp_path(name);
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	fclose(fp);
	return path;
}

const char *tu_data(const char *name)
{
	static char paths[8][512];
	static int next;
	char *p = paths[next++ % 8];
	snprintf(p, 512, "%s/%s", RUNMON_TEST_DATA, name);
	return p;
}

static sqlite3_stmt *query(const char *db, const char *sql, sqlite3 **h)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_open_v2(db, h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		fail_msg("cannot open %s", db);
	if (sqlite3_prepare_v2(*h, sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("bad query %s: %s", sql, sqlite3_errmsg(*h));
	if (sqlite3_step(s) != SQLITE_ROW)
		fail_msg("no row from %s", sql);
	return s;
}

int64_t tu_q_int(const char *db, const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *s = query(db, sql, &h);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return v;
}

double tu_q_dbl(const char *db, const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *s = query(db, sql, &h);
	double v = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return v;
}

const char *tu_q_text(const char *db, const char *sql)
{
	static char buf[1024];
	sqlite3 *h;
	sqlite3_stmt *s = query(db, sql, &h);
	const unsigned char *t = sqlite3_column_text(s, 0);
	snprintf(buf, sizeof(buf), "%s", t ? (const char *)t : "(null)");
	sqlite3_finalize(s);
	sqlite3_close(h);
	return buf;
}

void tu_exec(const char *db, const char *sql)
{
	sqlite3 *h;
	char *msg = NULL;
	if (sqlite3_open(db, &h) != SQLITE_OK)
		fail_msg("cannot open %s", db);
	if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("exec %s: %s", sql, msg);
	sqlite3_close(h);
}
