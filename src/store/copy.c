/*
 * copy.c - moves runs between stores, SQLite and PostgreSQL either way
 * (`runmon copy`). Each run's rows replace the destination's rows of the
 * same run (matched by entity, project and name; its id there is kept),
 * table by table, in one transaction per run, so copying again changes
 * nothing. Rows stream through COPY: into PostgreSQL in the binary format
 * (a header, then per row a field count and each field's length and
 * big-endian bytes), out of it in the text format (tab-separated, \N for
 * NULL, backslash escapes, bytea as \x hex); PostgreSQL docs, COPY, "File
 * Formats".
 */
#include "runmon/store.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgbuf.h"
#include "store_internal.h"

enum col_type { C_INT, C_DBL, C_TEXT, C_BLOB };

struct col {
	const char *name;
	enum col_type type;
};

/* A table copied run by run: its first column is run_id. */
struct table {
	const char *name;
	struct col cols[16];
};

#define RUN_COLS                                                                                                       \
	{"source", C_TEXT}, {"entity", C_TEXT}, {"project", C_TEXT}, {"name", C_TEXT}, {"display_name", C_TEXT},       \
	    {"state", C_TEXT}, {"created_at", C_DBL}, {"heartbeat_at", C_DBL}, {"config_json", C_TEXT},                \
	    {"loss_key", C_TEXT}, {"last_step", C_INT}, {"synced_at", C_DBL}, {"sync_cursor", C_INT},                  \
	    {"remote_last_step", C_INT},                                                                               \
	{                                                                                                              \
		"history_lines", C_INT                                                                                 \
	}

static const struct table runs_table = {"runs", {{"id", C_INT}, RUN_COLS}};

#define RUN_ID                                                                                                         \
	{                                                                                                              \
		"run_id", C_INT                                                                                        \
	}
static const struct table tables[] = {
    {"steps",
     {RUN_ID,
      {"step", C_INT},
      {"loss", C_DBL},
      {"lr", C_DBL},
      {"epoch", C_DBL},
      {"grad_norm", C_DBL},
      {"runtime", C_DBL},
      {"ts", C_DBL},
      {"nan_mask", C_INT}}},
    {"batches",
     {RUN_ID,
      {"step", C_INT},
      {"rank", C_INT},
      {"micro", C_INT},
      {"bucket", C_INT},
      {"n", C_INT},
      {"min_len", C_INT},
      {"max_len", C_INT},
      {"mean_len", C_DBL},
      {"tokens", C_INT},
      {"padded_tokens", C_INT},
      {"lens", C_BLOB}}},
    {"evals", {RUN_ID, {"step", C_INT}, {"key", C_TEXT}, {"value", C_DBL}}},
    {"rank_losses", {RUN_ID, {"step", C_INT}, {"rank", C_INT}, {"loss", C_DBL}}},
    {"other_losses", {RUN_ID, {"step", C_INT}, {"key", C_TEXT}, {"loss", C_DBL}}},
    {"buckets", {RUN_ID, {"bucket", C_INT}, {"lo", C_INT}, {"hi", C_INT}}},
    {"findings",
     {RUN_ID,
      {"detector", C_TEXT},
      {"severity", C_TEXT},
      {"first_step", C_INT},
      {"last_step", C_INT},
      {"statistic", C_DBL},
      {"p_value", C_DBL},
      {"evidence_json", C_TEXT},
      {"created_at", C_DBL}}},
    {"imports",
     {RUN_ID,
      {"path", C_TEXT},
      {"format", C_TEXT},
      {"lines", C_INT},
      {"steps", C_INT},
      {"batches", C_INT},
      {"replaced", C_INT},
      {"restarts", C_INT},
      {"skipped", C_INT},
      {"imported_at", C_DBL},
      {"composition", C_TEXT},
      {"first_step", C_INT},
      {"last_step", C_INT}}},
    {"bucket_levels", {RUN_ID, {"bucket", C_INT}, {"scale", C_TEXT}, {"shift", C_DBL}, {"level", C_DBL}}},
    {"bucket_labels", {RUN_ID, {"bucket", C_INT}, {"label", C_TEXT}}},
    {"length_levels", {RUN_ID, {"scale", C_TEXT}, {"slope", C_DBL}, {"ref_len", C_DBL}, {"r2", C_DBL}}},
    {"length_factors", {RUN_ID, {"lo", C_DBL}, {"hi", C_DBL}, {"effect", C_DBL}}},
    {"tails",
     {RUN_ID,
      {"path", C_TEXT},
      {"dev", C_INT},
      {"ino", C_INT},
      {"\"offset\"", C_INT},
      {"lineno", C_INT},
      {"updated_at", C_DBL},
      {"head_len", C_INT},
      {"head_hash", C_INT}}},
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))
_Static_assert(NTABLES == RM_COPY_TABLES, "copy.h counts every table copied");

static int ncols(const struct table *t)
{
	int n = 0;
	while (n < 16 && t->cols[n].name)
		n++;
	return n;
}

/* One store, either engine. */
struct end {
	char name[512]; /* for messages: a path, or a redacted URI */
	struct rm_store *st;
	sqlite3 *db;
	struct rm_pg *pg;
	PGconn *conn;
};

struct val {
	int null;
	int64_t i;
	double d;
	const char *s; /* text or blob bytes */
	size_t n;
};

static int open_end(struct end *e, const char *spec, int source, struct rm_err *err)
{
	memset(e, 0, sizeof(*e));
	rm_db_redact(spec, e->name, sizeof(e->name));
	if (rm_db_is_postgres(spec)) {
		int rc = rm_pg_open(&e->pg, spec, err);
		if (!rc)
			e->conn = rm_pg_conn(e->pg);
		return rc;
	}
	int rc = rm_store_open_flags(&e->st, spec, source ? RM_STORE_MUST_EXIST : 0, err);
	if (!rc)
		e->db = rm_store_sqlite(e->st);
	if (!rc && !source && rm_store_readonly(e->st))
		rc = rm_err_set(err, RM_E_STORE, "cannot copy into '%s': the database is read-only", e->name);
	return rc;
}

static void close_end(struct end *e)
{
	rm_store_close(e->st);
	rm_pg_close(e->pg);
}

static int sqlite_fail(struct end *e, struct rm_err *err, const char *what)
{
	return rm_err_set(err, RM_E_STORE, "%s in database '%s': %s", what, e->name, sqlite3_errmsg(e->db));
}

static int pg_fail(struct end *e, PGresult *r, struct rm_err *err, const char *what)
{
	const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(e->conn);
	int len = (int)strcspn(m, "\n");
	rm_err_set(err, RM_E_STORE, "%s in PostgreSQL database '%s': %.*s", what, e->name, len, m);
	PQclear(r);
	return RM_E_STORE;
}

/* Runs sql with params v[0..n) typed as cols (SQLite ?N; rewritten to $N
 * for PostgreSQL); *id, when not NULL, gets the first column of the first
 * row (0 when none). */
static int run_sql(struct end *e, const char *sql, const struct col *cols, const struct val *v, int n, int64_t *id,
                   struct rm_err *err)
{
	if (id)
		*id = 0;
	if (e->db) {
		sqlite3_stmt *s;
		if (sqlite3_prepare_v2(e->db, sql, -1, &s, NULL) != SQLITE_OK)
			return sqlite_fail(e, err, "cannot prepare");
		for (int i = 0; i < n; i++) {
			if (v[i].null)
				continue;
			switch (cols[i].type) {
			case C_INT: sqlite3_bind_int64(s, i + 1, v[i].i); break;
			case C_DBL: sqlite3_bind_double(s, i + 1, v[i].d); break;
			case C_TEXT: sqlite3_bind_text(s, i + 1, v[i].s, (int)v[i].n, SQLITE_STATIC); break;
			case C_BLOB: sqlite3_bind_blob(s, i + 1, v[i].s, (int)v[i].n, SQLITE_STATIC); break;
			}
		}
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW && id)
			*id = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
		return rc == SQLITE_ROW || rc == SQLITE_DONE ? RM_OK : sqlite_fail(e, err, "cannot write");
	}
	char pgsql[2048], num[16][32];
	const char *vals[16];
	int lens[16], fmts[16];
	size_t k = 0;
	for (const char *p = sql; *p && k + 1 < sizeof(pgsql); p++)
		pgsql[k++] = *p == '?' ? '$' : *p;
	pgsql[k] = '\0';
	for (int i = 0; i < n; i++) {
		vals[i] = v[i].null ? NULL : num[i];
		lens[i] = fmts[i] = 0;
		if (v[i].null)
			continue;
		if (cols[i].type == C_INT)
			snprintf(num[i], sizeof(num[i]), "%" PRId64, v[i].i);
		else if (cols[i].type == C_DBL)
			snprintf(num[i], sizeof(num[i]), "%.17g", v[i].d);
		else {
			vals[i] = v[i].s;
			lens[i] = (int)v[i].n;
			fmts[i] = 1; /* bytes as they are: no escaping, no NUL termination needed */
		}
	}
	PGresult *r = PQexecParams(e->conn, pgsql, n, NULL, vals, lens, fmts, 0);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		return pg_fail(e, r, err, "cannot write");
	if (id && PQntuples(r))
		*id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return RM_OK;
}

static int exec_plain(struct end *e, const char *sql, struct rm_err *err)
{
	return run_sql(e, sql, NULL, NULL, 0, NULL, err);
}

/* ---- Reading: a cursor over a table's rows of one run ------------------ */

struct reader {
	struct end *e;
	const struct table *t;
	int n;
	sqlite3_stmt *s;
	char *row;            /* PostgreSQL: the COPY row, unescaped in place */
	unsigned char *bytes; /* decoded bytea */
	size_t cap;
	int copying; /* PostgreSQL: a COPY TO STDOUT not read to its end */
	struct val v[16];
};

static int read_open(struct reader *r, struct end *e, const struct table *t, int64_t run_id, struct rm_err *err)
{
	char sql[1024];
	int k;
	memset(r, 0, sizeof(*r));
	r->e = e;
	r->t = t;
	r->n = ncols(t);
	k = snprintf(sql, sizeof(sql), "%sSELECT ", e->conn ? "COPY (" : "");
	for (int i = 0; i < r->n; i++)
		k += snprintf(sql + k, sizeof(sql) - (size_t)k, "%s%s", i ? ", " : "", t->cols[i].name);
	k += snprintf(sql + k, sizeof(sql) - (size_t)k, " FROM %s", t->name);
	if (run_id >= 0)
		k += snprintf(sql + k, sizeof(sql) - (size_t)k, " WHERE %s = %" PRId64, t->cols[0].name, run_id);
	snprintf(sql + k, sizeof(sql) - (size_t)k, "%s", e->conn ? ") TO STDOUT" : "");
	if (e->db)
		return sqlite3_prepare_v2(e->db, sql, -1, &r->s, NULL) == SQLITE_OK
		           ? RM_OK
		           : sqlite_fail(e, err, "cannot read");
	PGresult *res = PQexec(e->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_OUT)
		return pg_fail(e, res, err, "cannot read");
	PQclear(res);
	r->copying = 1;
	return RM_OK;
}

/* 1 with a row in r->v, 0 at the end, or an error status < 0. */
static int read_next(struct reader *r, struct rm_err *err)
{
	if (r->s) {
		int rc = sqlite3_step(r->s);
		if (rc == SQLITE_DONE)
			return 0;
		if (rc != SQLITE_ROW)
			return -sqlite_fail(r->e, err, "cannot read");
		for (int i = 0; i < r->n; i++) {
			struct val *v = &r->v[i];
			enum col_type type = r->t->cols[i].type;
			v->null = sqlite3_column_type(r->s, i) == SQLITE_NULL;
			if (type == C_INT)
				v->i = sqlite3_column_int64(r->s, i);
			else if (type == C_DBL)
				v->d = sqlite3_column_double(r->s, i);
			else {
				v->s = type == C_BLOB ? sqlite3_column_blob(r->s, i)
				                      : (const char *)sqlite3_column_text(r->s, i);
				v->n = (size_t)sqlite3_column_bytes(r->s, i);
			}
		}
		return 1;
	}
	PQfreemem(r->row);
	r->row = NULL;
	int len = PQgetCopyData(r->e->conn, &r->row, 0);
	if (len < 0)
		r->copying = 0;
	if (len == -1) { /* done: the COPY's own result follows */
		PGresult *res = PQgetResult(r->e->conn);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			return -pg_fail(r->e, res, err, "cannot read");
		PQclear(res);
		while ((res = PQgetResult(r->e->conn)))
			PQclear(res);
		return 0;
	}
	if (len < 0)
		return -pg_fail(r->e, NULL, err, "cannot read");
	if (len && r->row[len - 1] == '\n')
		r->row[len - 1] = '\0';
	char *p = r->row;
	for (int i = 0; i < r->n; i++) {
		char *f = p, *tab = strchr(p, '\t');
		if (tab)
			*tab = '\0';
		p = tab ? tab + 1 : p + strlen(p);
		struct val *v = &r->v[i];
		size_t n = 0;
		char *s = rm_pgcopy_unescape(f, &n);
		v->null = !s;
		if (!s)
			continue;
		v->s = s;
		v->n = n;
		if (r->t->cols[i].type == C_INT)
			v->i = strtoll(s, NULL, 10);
		else if (r->t->cols[i].type == C_DBL)
			v->d = strtod(s, NULL); /* also Infinity and NaN */
		else if (r->t->cols[i].type == C_BLOB && n >= 2 && s[0] == '\\' && s[1] == 'x') {
			size_t bytes = (n - 2) / 2;
			if (bytes + 1 > r->cap)
				r->bytes = rm_xrealloc(r->bytes, r->cap = 2 * bytes + 1);
			for (size_t j = 0; j < bytes; j++)
				r->bytes[j] =
				    (unsigned char)(rm_pgcopy_hex(s[2 + 2 * j]) << 4 | rm_pgcopy_hex(s[3 + 2 * j]));
			v->s = (const char *)r->bytes;
			v->n = bytes;
		}
	}
	return 1;
}

static void read_close(struct reader *r)
{
	sqlite3_finalize(r->s);
	PQfreemem(r->row);
	free(r->bytes);
	if (r->copying) { /* a COPY cut short: read it out, so the connection can go on */
		char *buf;
		while (PQgetCopyData(r->e->conn, &buf, 0) > 0)
			PQfreemem(buf);
		PGresult *res;
		while ((res = PQgetResult(r->e->conn)))
			PQclear(res);
	}
}

/* ---- Writing: a table's rows, prepared on SQLite, COPY on PostgreSQL ---- */

struct writer {
	struct end *e;
	const struct table *t;
	int n;
	sqlite3_stmt *s;
	struct rm_pgbuf buf;
};

static int write_open(struct writer *w, struct end *e, const struct table *t, struct rm_err *err)
{
	char sql[1024];
	int k;
	memset(w, 0, sizeof(*w));
	w->e = e;
	w->t = t;
	w->n = ncols(t);
	k = snprintf(sql, sizeof(sql), "%s %s (", e->db ? "INSERT INTO" : "COPY", t->name);
	for (int i = 0; i < w->n; i++)
		k += snprintf(sql + k, sizeof(sql) - (size_t)k, "%s%s", i ? ", " : "", t->cols[i].name);
	k += snprintf(sql + k, sizeof(sql) - (size_t)k, ")%s", e->db ? " VALUES (" : " FROM STDIN (FORMAT binary)");
	for (int i = 0; e->db && i < w->n; i++)
		k += snprintf(sql + k, sizeof(sql) - (size_t)k, "%s?%d", i ? ", " : "", i + 1);
	if (e->db) {
		snprintf(sql + k, sizeof(sql) - (size_t)k, ")");
		return sqlite3_prepare_v2(e->db, sql, -1, &w->s, NULL) == SQLITE_OK
		           ? RM_OK
		           : sqlite_fail(e, err, "cannot write");
	}
	PGresult *res = PQexec(e->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_IN)
		return pg_fail(e, res, err, "cannot write");
	PQclear(res);
	/* The binary format's header: signature, flags, extension length. */
	rm_pgbuf_header(&w->buf);
	return RM_OK;
}

/* A field of COPY's binary format: its length (-1 NULL), then bigint and
 * double precision as 8 big-endian bytes, text and bytea as they are.
 * The server parses no numbers, and the client formats none: 1M steps
 * took 2.7 s of the client's CPU as text, 0.9 s so. */
static void put_field(struct writer *w, enum col_type type, const struct val *v)
{
	uint64_t bits;
	if (v->null) {
		rm_pgbuf_be(&w->buf, UINT32_MAX, 4);
		return;
	}
	switch (type) {
	case C_INT:
		rm_pgbuf_be(&w->buf, 8, 4);
		rm_pgbuf_be(&w->buf, (uint64_t)v->i, 8);
		break;
	case C_DBL:
		memcpy(&bits, &v->d, 8);
		rm_pgbuf_be(&w->buf, 8, 4);
		rm_pgbuf_be(&w->buf, bits, 8);
		break;
	case C_TEXT:
	case C_BLOB:
		rm_pgbuf_be(&w->buf, v->n, 4);
		rm_pgbuf_put(&w->buf, v->s, v->n);
		break;
	}
}

static int write_row(struct writer *w, const struct val *v, struct rm_err *err)
{
	if (w->s) {
		for (int i = 0; i < w->n; i++) {
			if (v[i].null)
				sqlite3_bind_null(w->s, i + 1);
			else if (w->t->cols[i].type == C_INT)
				sqlite3_bind_int64(w->s, i + 1, v[i].i);
			else if (w->t->cols[i].type == C_DBL)
				sqlite3_bind_double(w->s, i + 1, v[i].d);
			else if (w->t->cols[i].type == C_TEXT)
				sqlite3_bind_text(w->s, i + 1, v[i].s, (int)v[i].n, SQLITE_STATIC);
			else
				sqlite3_bind_blob(w->s, i + 1, v[i].s, (int)v[i].n, SQLITE_STATIC);
		}
		int rc = sqlite3_step(w->s);
		sqlite3_reset(w->s);
		return rc == SQLITE_DONE ? RM_OK : sqlite_fail(w->e, err, "cannot write");
	}
	rm_pgbuf_be(&w->buf, (uint64_t)w->n, 2);
	for (int i = 0; i < w->n; i++)
		put_field(w, w->t->cols[i].type, &v[i]);
	if (w->buf.len < 1 << 18)
		return RM_OK;
	int rc = PQputCopyData(w->e->conn, w->buf.s, (int)w->buf.len) == 1 ? RM_OK
	                                                                   : pg_fail(w->e, NULL, err, "cannot write");
	w->buf.len = 0;
	return rc;
}

static int write_close(struct writer *w, int ok, struct rm_err *err)
{
	int rc = RM_OK;
	if (w->s)
		sqlite3_finalize(w->s);
	else if (w->e && w->e->conn) {
		rm_pgbuf_be(&w->buf, UINT16_MAX, 2); /* the trailer: a field count of -1 */
		if (ok && PQputCopyData(w->e->conn, w->buf.s, (int)w->buf.len) != 1)
			rc = pg_fail(w->e, NULL, err, "cannot write");
		PQputCopyEnd(w->e->conn, ok && !rc ? NULL : "cancelled");
		PGresult *res;
		while ((res = PQgetResult(w->e->conn))) {
			if (ok && !rc && PQresultStatus(res) != PGRES_COMMAND_OK)
				rc = pg_fail(w->e, res, err, "cannot write");
			else
				PQclear(res);
		}
	}
	free(w->buf.s);
	return rc;
}

/* ---- Runs ----------------------------------------------------------------- */

struct run_row {
	struct val v[16]; /* runs_table's columns, id first */
	char *text[16];   /* owned copies of its strings */
};

/* entity/project/name, or the local name, of the runs row v (id first). */
static void run_key(const struct val *v, char *buf, size_t n)
{
	if (v[2].s && *v[2].s)
		snprintf(buf, n, "%s/%s/%s", v[2].s, v[3].s, v[4].s);
	else
		snprintf(buf, n, "%s", v[4].s);
}

/* Rows of a table held in memory (strings copied): a connection reads one
 * COPY at a time, so what is looked up row by row is read first. */
struct held {
	struct run_row *rows;
	size_t n;
};

static int hold(struct end *src, const struct table *t, struct held *h, struct rm_err *err)
{
	struct reader r;
	int rc = read_open(&r, src, t, -1, err), got = 0;
	while (!rc && (got = read_next(&r, err)) > 0) {
		h->rows = rm_xrealloc(h->rows, (h->n + 1) * sizeof(*h->rows));
		struct run_row *row = &h->rows[h->n++];
		memset(row, 0, sizeof(*row));
		for (int i = 0; i < r.n; i++) {
			row->v[i] = r.v[i];
			if (!r.v[i].null && t->cols[i].type == C_TEXT)
				row->v[i].s = row->text[i] = rm_xstrndup(r.v[i].s, r.v[i].n);
		}
	}
	if (!rc && got < 0)
		rc = -got;
	read_close(&r);
	return rc;
}

static void release(struct held *h)
{
	for (size_t i = 0; i < h->n; i++)
		for (int j = 0; j < 16; j++)
			free(h->rows[i].text[j]);
	free(h->rows);
}

/* The source's runs, all or those named. */
static int list_runs(struct end *src, char *const *names, size_t nnames, struct held *runs, struct rm_err *err)
{
	int rc = hold(src, &runs_table, runs, err);
	size_t kept = 0;
	for (size_t i = 0; i < runs->n; i++) {
		char key[1024];
		int want = !nnames;
		run_key(runs->rows[i].v, key, sizeof(key));
		for (size_t j = 0; j < nnames && !want; j++)
			want = !strcmp(names[j], key);
		if (want)
			runs->rows[kept++] = runs->rows[i];
		else
			for (int j = 0; j < 16; j++)
				free(runs->rows[i].text[j]);
	}
	runs->n = kept;
	return rc;
}

/* Finds or creates the run in dst and sets its columns; *id is its id there. */
static int put_run(struct end *dst, const struct run_row *row, int64_t *id, struct rm_err *err)
{
	static const struct col key[3] = {{"entity", C_TEXT}, {"project", C_TEXT}, {"name", C_TEXT}};
	const struct col *cols = runs_table.cols + 1;
	const struct val *v = row->v + 1;
	int rc = run_sql(dst, "SELECT id FROM runs WHERE entity = ?1 AND project = ?2 AND name = ?3", key, v + 1, 3, id,
	                 err);
	if (rc)
		return rc;
	if (!*id &&
	    (rc = run_sql(dst, "INSERT INTO runs(source, entity, project, name) VALUES (?1, ?2, ?3, ?4) RETURNING id",
	                  cols, v, 4, id, err)))
		return rc;
	struct col c[16];
	struct val x[16];
	char sql[1024];
	int k = snprintf(sql, sizeof(sql), "UPDATE runs SET ");
	int n = ncols(&runs_table) - 1;
	for (int i = 0; i < n; i++) {
		k += snprintf(sql + k, sizeof(sql) - (size_t)k, "%s%s = ?%d", i ? ", " : "", cols[i].name, i + 1);
		c[i] = cols[i];
		x[i] = v[i];
	}
	snprintf(sql + k, sizeof(sql) - (size_t)k, " WHERE id = ?%d", n + 1);
	c[n] = (struct col){"id", C_INT};
	x[n] = (struct val){.i = *id};
	return run_sql(dst, sql, c, x, n + 1, NULL, err);
}

static int begin(struct end *e, int writer, const struct run_row *row, struct rm_err *err)
{
	if (e->db)
		return exec_plain(e, writer ? "BEGIN IMMEDIATE" : "BEGIN", err);
	int rc = exec_plain(e, writer ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
	if (rc || !writer || !row)
		return rc;
	/* Writers of one run take turns (two collectors, or a copy and a sync). */
	static const struct col key[3] = {{"e", C_TEXT}, {"p", C_TEXT}, {"n", C_TEXT}};
	return run_sql(
	    e, "SELECT pg_advisory_xact_lock(hashtextextended(?1::text || '/' || ?2::text || '/' || ?3::text, 0))", key,
	    row->v + 2, 3, NULL, err);
}

static void rollback(struct end *e)
{
	struct rm_err ignored;
	exec_plain(e, "ROLLBACK", &ignored);
}

static int copy_run(struct end *src, struct end *dst, const struct run_row *row, struct rm_copy_counts *c,
                    struct rm_err *err)
{
	int64_t id;
	int rc;
	if ((rc = begin(src, 0, row, err)))
		return rc;
	if ((rc = begin(dst, 1, row, err)) || (rc = put_run(dst, row, &id, err)))
		goto fail;
	for (size_t t = 0; t < NTABLES; t++) {
		char sql[128];
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE run_id = ?1", tables[t].name);
		struct val key = {.i = id};
		if ((rc = run_sql(dst, sql, tables[t].cols, &key, 1, NULL, err)))
			goto fail;
		struct reader r;
		struct writer w;
		int got = 0;
		if ((rc = read_open(&r, src, &tables[t], row->v[0].i, err))) {
			read_close(&r);
			goto fail;
		}
		if ((rc = write_open(&w, dst, &tables[t], err))) {
			read_close(&r);
			write_close(&w, 0, err);
			goto fail;
		}
		while ((got = read_next(&r, err)) > 0) {
			r.v[0].i = id;
			if ((rc = write_row(&w, r.v, err)))
				break;
			c->rows[t]++;
		}
		if (got < 0)
			rc = -got;
		read_close(&r);
		int wrc = write_close(&w, !rc, err);
		if (rc || (rc = wrc))
			goto fail;
	}
	if ((rc = exec_plain(dst, "COMMIT", err)))
		goto fail;
	rollback(src); /* a read: nothing to commit */
	c->runs++;
	return RM_OK;
fail:
	rollback(dst);
	rollback(src);
	return rc;
}

/* ---- The history beside the runs (--all) --------------------------------- */

static const struct table reports_table = {"reports", {{"id", C_INT}, {"generated_at", C_DBL}}};
static const struct table report_tables[] = {
    {"report_runs",
     {{"report_id", C_INT}, {"run", C_TEXT}, {"severity", C_TEXT}, {"verdict", C_TEXT}, {"last_step", C_INT}}},
    {"report_findings",
     {{"report_id", C_INT}, {"run", C_TEXT}, {"detector", C_TEXT}, {"severity", C_TEXT}, {"first_step", C_INT}}},
};
static const struct table alerts_table = {
    "alerts",
    {{"fingerprint", C_TEXT}, {"channel", C_TEXT}, {"severity", C_TEXT}, {"sent_at", C_DBL}, {"status", C_TEXT}}};

/* A report of SRC into DST: the one generated at the same time, or a new
 * one; what it saw replaces what DST's saw. */
static int copy_report(struct end *src, struct end *dst, const struct val *rep, struct rm_err *err)
{
	int64_t id;
	int rc = run_sql(dst, "SELECT id FROM reports WHERE generated_at = ?1", reports_table.cols + 1, rep + 1, 1, &id,
	                 err);
	if (!rc && !id)
		rc = run_sql(dst, "INSERT INTO reports(generated_at) VALUES (?1) RETURNING id", reports_table.cols + 1,
		             rep + 1, 1, &id, err);
	for (size_t t = 0; !rc && t < sizeof(report_tables) / sizeof(report_tables[0]); t++) {
		char sql[128];
		struct val key = {.i = id};
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE report_id = ?1", report_tables[t].name);
		if ((rc = run_sql(dst, sql, report_tables[t].cols, &key, 1, NULL, err)))
			break;
		struct reader r;
		struct writer w;
		int got = 0;
		if ((rc = read_open(&r, src, &report_tables[t], rep[0].i, err)) ||
		    (rc = write_open(&w, dst, &report_tables[t], err))) {
			read_close(&r);
			return rc;
		}
		while ((got = read_next(&r, err)) > 0) {
			r.v[0].i = id;
			if ((rc = write_row(&w, r.v, err)))
				break;
		}
		if (got < 0)
			rc = -got;
		read_close(&r);
		int wrc = write_close(&w, !rc, err);
		rc = rc ? rc : wrc;
	}
	return rc;
}

static int copy_history(struct end *src, struct end *dst, struct rm_copy_counts *c, struct rm_err *err)
{
	struct held reports = {0}, alerts = {0};
	int rc;
	if ((rc = hold(src, &reports_table, &reports, err)) || (rc = hold(src, &alerts_table, &alerts, err)) ||
	    (rc = begin(dst, 1, NULL, err)))
		goto out;
	for (size_t i = 0; !rc && i < reports.n; i++)
		if (!(rc = copy_report(src, dst, reports.rows[i].v, err)))
			c->reports++;
	for (size_t i = 0; !rc && i < alerts.n; i++) { /* the ones DST lacks */
		int64_t have;
		const struct val *v = alerts.rows[i].v;
		static const struct col key[3] = {{"fingerprint", C_TEXT}, {"channel", C_TEXT}, {"sent_at", C_DBL}};
		struct val kv[3] = {v[0], v[1], v[3]};
		rc = run_sql(dst, "SELECT 1 FROM alerts WHERE fingerprint = ?1 AND channel = ?2 AND sent_at = ?3", key,
		             kv, 3, &have, err);
		if (!rc && !have &&
		    !(rc = run_sql(dst,
		                   "INSERT INTO alerts(fingerprint, channel, severity, sent_at, status)"
		                   " VALUES (?1, ?2, ?3, ?4, ?5)",
		                   alerts_table.cols, v, 5, NULL, err)))
			c->alerts++;
	}
	rc = rc ? rc : exec_plain(dst, "COMMIT", err);
	if (rc)
		rollback(dst);
out:
	release(&reports);
	release(&alerts);
	return rc;
}

const char *rm_copy_table_name(int i)
{
	return tables[i].name;
}

int rm_copy(const char *from, const char *to, char *const *names, size_t nnames, rm_copy_progress progress, void *arg,
            struct rm_copy_counts *c, struct rm_err *err)
{
	struct end src, dst;
	struct held runs = {0};
	int rc;
	memset(c, 0, sizeof(*c));
	if ((rc = open_end(&src, from, 1, err))) {
		close_end(&src);
		return rc;
	}
	if ((rc = open_end(&dst, to, 0, err)))
		goto out;
	if ((rc = list_runs(&src, names, nnames, &runs, err)))
		goto out;
	for (size_t i = 0; i < nnames; i++) { /* every named run must exist */
		int found = 0;
		for (size_t j = 0; j < runs.n && !found; j++) {
			char key[1024];
			run_key(runs.rows[j].v, key, sizeof(key));
			found = !strcmp(key, names[i]);
		}
		if (!found) {
			rc = rm_err_set(err, RM_E_NOTFOUND, "no run '%s' in '%s'", names[i], src.name);
			goto out;
		}
	}
	if (!nnames && (rc = copy_history(&src, &dst, c, err)))
		goto out;
	for (size_t i = 0; i < runs.n; i++) {
		struct rm_copy_counts before = *c;
		if ((rc = copy_run(&src, &dst, &runs.rows[i], c, err)))
			goto out;
		if (progress) {
			struct rm_copy_counts one = {.runs = 1};
			for (size_t t = 0; t < NTABLES; t++)
				one.rows[t] = c->rows[t] - before.rows[t];
			char key[1024];
			run_key(runs.rows[i].v, key, sizeof(key));
			progress(arg, key, &one);
		}
	}
out:
	release(&runs);
	close_end(&src);
	close_end(&dst);
	return rc;
}
