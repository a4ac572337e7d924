/*
 * db_pg.c - the driver on PostgreSQL (libpq). Statements run with
 * PQexecParams, parameters sent as text (bytea as bytes) and typed by the
 * server from where they stand; results come back as text, parsed as the
 * caller reads them. A long scan (RM_DBQ_STREAM) is a COPY (query) TO
 * STDOUT, its parameters written in as literals, read a row at a time:
 * 1M rows are never held at once, and a row costs one allocation (the
 * single-row mode of libpq costs a result, column descriptions included,
 * a row: 0.5 s more CPU over a run of 1M steps).
 *
 * Upserts are staged: rows are encoded in COPY's binary format into a
 * buffer per table (a header, then per row a field count and each field's
 * length and big-endian bytes; PostgreSQL docs, COPY, "Binary Format").
 * Before the connection's next statement or commit, or when a buffer
 * passes 8 MiB, each buffer is COPY'd into a temporary table and upserted
 * from it (INSERT ... SELECT ... ON CONFLICT DO UPDATE) in the caller's
 * transaction, so an import is one transaction as on SQLite. A row whose
 * key repeats in a buffer (a restart re-logging steps) makes the upsert
 * keep the last one (DISTINCT ON, latest first), else the server would
 * refuse to update a row twice in one statement.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "pgbuf.h"
#include "runmon/store.h"
#include "store_internal.h"

/* Type oids of the columns staged (pg_type.dat). */
enum { OID_BOOL = 16, OID_BYTEA = 17, OID_INT8 = 20, OID_INT4 = 23, OID_TEXT = 25, OID_FLOAT8 = 701 };

#define MAX_PARAMS   16
#define MAX_FIELDS   32
#define STAGE_FLUSH  (8u << 20)
#define ANALYZE_ROWS 100000

struct param {
	enum { P_NULL, P_INT, P_DBL, P_TEXT, P_BLOB } kind;
	int64_t i;
	double d;
	struct rm_pgbuf bytes; /* text or blob */
	char num[32];
};

struct rm_pgq {
	struct rm_db *db;
	char *sql; /* $N form; NULL for a stage */
	unsigned flags;
	int nparams;
	struct param p[MAX_PARAMS];
	PGresult *res;
	int row, ntuples, streaming, done;
	char *line; /* a streamed row, its fields unescaped in place */
	char *field[MAX_FIELDS];
	int nfields;
	struct rm_pgbuf blob; /* a bytea column decoded */
	/* A stage: */
	char *table, *create, *upsert, *upsert_dedup; /* create: again at each landing (a rollback drops it) */
	Oid types[MAX_PARAMS];
	int nkeys;
	struct rm_pgbuf rows, key, prev; /* COPY rows; this row's key and the last one's */
	int repeats;                     /* some key may repeat in rows */
	int64_t nrows, landed;           /* rows staged; rows landed and committed */
	int analyzed;                    /* this connection ran ANALYZE on the table */
	struct rm_pgq *next_stage;
};

struct rm_pgdb {
	struct rm_pg *pg;
	PGconn *conn;
	struct rm_pgq *stages;
	int settling;
	char msg[256]; /* the last error's first line */
};

/* Keeps res's (or the connection's) first error line for rm_db_fail. */
static int fail(struct rm_db *db, PGresult *res, struct rm_err *err, const char *what)
{
	const char *m = res ? PQresultErrorMessage(res) : PQerrorMessage(db->pg->conn);
	snprintf(db->pg->msg, sizeof(db->pg->msg), "%.*s", (int)strcspn(m, "\n"), m);
	PQclear(res);
	return rm_pgdb_fail(db, err, what);
}

int rm_pgdb_fail(struct rm_db *db, struct rm_err *err, const char *what)
{
	return rm_err_set(err, RM_E_STORE, "%s in PostgreSQL database '%s': %s", what, db->name,
	                  db->pg->msg[0] ? db->pg->msg : "no message");
}

static int settle(struct rm_db *db, struct rm_err *err);

static int run_plain(struct rm_db *db, const char *sql, struct rm_err *err, const char *what)
{
	PGresult *r = PQexec(db->pg->conn, sql);
	ExecStatusType s = PQresultStatus(r);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		return fail(db, r, err, what);
	PQclear(r);
	return RM_OK;
}

int rm_pgdb_exec(struct rm_db *db, const char *sql, struct rm_err *err, const char *what)
{
	int rc = settle(db, err);
	return rc ? rc : run_plain(db, sql, err, what);
}

int rm_pgdb_latest_version(void)
{
	return rm_pg_migrations[rm_pg_migrations_count - 1].version;
}

int rm_pgdb_open(struct rm_db *db, int max_version, unsigned flags, struct rm_err *err)
{
	(void)flags;
	db->pg = rm_xcalloc(1, sizeof(*db->pg));
	int rc =
	    rm_pg_open_version(&db->pg->pg, db->spec,
	                       max_version < rm_pgdb_latest_version() ? max_version : rm_pgdb_latest_version(), err);
	if (rc)
		return rc;
	db->pg->conn = rm_pg_conn(db->pg->pg);
	/* Who a waiting writer is told holds its run (pg_stat_activity). */
	char host[64] = "", sql[160];
	gethostname(host, sizeof(host) - 1);
	for (char *c = host; *c; c++)
		if (*c == '\'' || *c == '\\')
			*c = '_';
	snprintf(sql, sizeof(sql), "SET application_name = 'runmon pid %ld on %.40s'", (long)getpid(), host);
	if ((rc = run_plain(db, sql, err, "cannot configure the connection")))
		return rc;
	/* A role that may not write reads, as a read-only SQLite file does. */
	PGresult *r = PQexec(db->pg->conn, "SELECT has_table_privilege('runs', 'INSERT')");
	db->readonly = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "f");
	PQclear(r);
	return RM_OK;
}

void rm_pgdb_close(struct rm_db *db)
{
	while (db->pg->stages) /* a stage unsettled here was never committed */
		rm_pgq_finalize(db->pg->stages);
	rm_pg_close(db->pg->pg);
	free(db->pg);
	db->pg = NULL;
}

int rm_pgdb_schema_version(struct rm_db *db)
{
	return rm_pg_schema_version(db->pg->pg);
}

static void discard_stages(struct rm_db *db)
{
	for (struct rm_pgq *s = db->pg->stages; s; s = s->next_stage) {
		s->rows.len = s->prev.len = 0;
		s->repeats = 0;
		s->nrows = s->landed = 0;
	}
}

int rm_pgdb_commit(struct rm_db *db, struct rm_err *err)
{
	int rc = rm_pgdb_exec(db, "COMMIT", err, "cannot commit");
	if (rc) {
		discard_stages(db);
		return rc;
	}
	/* A table that just took many rows gets its statistics at once, not
	 * at autovacuum's next round: until then the planner takes a run of
	 * 1M rows for one and sorts it on disk (3.6 s to diagnose, not 2).
	 * Once a connection: autovacuum keeps them from there. */
	for (struct rm_pgq *s = db->pg->stages; s; s = s->next_stage) {
		char sql[128];
		if (s->analyzed || s->landed < ANALYZE_ROWS)
			continue;
		s->analyzed = 1;
		snprintf(sql, sizeof(sql), "ANALYZE %s", s->table + strlen("pg_temp.rm_stage_"));
		run_plain(db, sql, err, "cannot analyze"); /* statistics only: the rows are committed */
	}
	return RM_OK;
}

void rm_pgdb_rollback(struct rm_db *db)
{
	discard_stages(db);
	PQclear(PQexec(db->pg->conn, "ROLLBACK"));
}

/* Commits from any connection show in the runs they touch: their count,
 * last steps and sync times, and the import log. A heuristic where SQLite
 * has a counter: two commits that change none of these look the same. */
int rm_pgdb_data_version(struct rm_db *db, int64_t *v, struct rm_err *err)
{
	struct rm_pgq *q =
	    rm_pgq_prepare(db,
	                   "SELECT (SELECT COUNT(*) FROM runs), (SELECT COALESCE(SUM(last_step), 0) FROM runs),"
	                   " (SELECT COALESCE(MAX(synced_at), 0) FROM runs),"
	                   " (SELECT COALESCE(MAX(id), 0) FROM imports)",
	                   0, err);
	if (!q)
		return RM_E_STORE;
	int rc = rm_pgq_step(q, err);
	*v = 0;
	if (rc == RM_DB_ROW) {
		uint64_t h = 1469598103934665603u; /* FNV-1a over the four */
		for (int i = 0; i < 4; i++) {
			h ^= (uint64_t)rm_pgq_int(q, i) + (uint64_t)(rm_pgq_double(q, i) * 1000);
			h *= 1099511628211u;
		}
		*v = (int64_t)(h >> 1);
	}
	rm_pgq_finalize(q);
	return rc < 0 ? -rc : RM_OK;
}

#define RUN_LOCK_KEY "hashtextextended(entity || '/' || project || '/' || name, 0)"

int rm_pgdb_lock_run(struct rm_db *db, int64_t run_id, void (*wait)(void *arg, const char *holder), void *arg,
                     struct rm_err *err)
{
	struct rm_pgq *q = rm_pgq_prepare(
	    db, "SELECT pg_try_advisory_xact_lock(" RUN_LOCK_KEY ")::int, " RUN_LOCK_KEY " FROM runs WHERE id = ?1", 0,
	    err);
	if (!q)
		return RM_E_STORE;
	rm_pgq_bind_int(q, 1, run_id);
	int rc = rm_pgq_step(q, err);
	int got = rc != RM_DB_ROW || rm_pgq_int(q, 0);
	int64_t key = rc == RM_DB_ROW ? rm_pgq_int(q, 1) : 0;
	rm_pgq_finalize(q);
	if (rc < 0)
		return -rc;
	if (got)
		return RM_OK;
	/* pg_locks shows a bigint key as its high and low halves (classid, objid). */
	char holder[256] = "another writer";
	if ((q = rm_pgq_prepare(
	         db,
	         "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
	         " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
	         " AND l.classid::bigint = ?1 AND l.objid::bigint = ?2 LIMIT 1",
	         0, err))) {
		rm_pgq_bind_int(q, 1, (int64_t)((uint64_t)key >> 32));
		rm_pgq_bind_int(q, 2, (int64_t)((uint64_t)key & 0xffffffffu));
		if (rm_pgq_step(q, err) == RM_DB_ROW)
			snprintf(holder, sizeof(holder), "%s (server pid %" PRId64 ")",
			         rm_pgq_text(q, 0) && *rm_pgq_text(q, 0) ? rm_pgq_text(q, 0) : "a client",
			         rm_pgq_int(q, 1));
		rm_pgq_finalize(q);
	}
	if (wait)
		wait(arg, holder);
	if (!(q = rm_pgq_prepare(db, "SELECT pg_advisory_xact_lock(" RUN_LOCK_KEY ") FROM runs WHERE id = ?1", 0, err)))
		return RM_E_STORE;
	rm_pgq_bind_int(q, 1, run_id);
	rc = rm_pgq_step(q, err);
	rm_pgq_finalize(q);
	return rc < 0 ? -rc : RM_OK;
}

/* ---- Statements ------------------------------------------------------------ */

/* sql with ?N made $N (our SQL has no '?' inside its literals); the highest N. */
static char *dollars(const char *sql, int *n)
{
	char *out = rm_xstrdup(sql);
	*n = 0;
	for (char *p = out; *p; p++)
		if (*p == '?') {
			*p = '$';
			int k = (int)strtol(p + 1, NULL, 10);
			*n = k > *n ? k : *n;
		}
	return out;
}

struct rm_pgq *rm_pgq_prepare(struct rm_db *db, const char *sql, unsigned flags, struct rm_err *err)
{
	struct rm_pgq *q = rm_xcalloc(1, sizeof(*q));
	q->db = db;
	q->flags = flags;
	q->sql = dollars(sql, &q->nparams);
	if (q->nparams > MAX_PARAMS) {
		rm_err_set(err, RM_E_STORE, "a statement of %d parameters (runmon's own bug)", q->nparams);
		rm_pgq_finalize(q);
		return NULL;
	}
	return q;
}

static void clear_result(struct rm_pgq *q)
{
	PGconn *c = q->db->pg->conn;
	PQfreemem(q->line);
	q->line = NULL;
	if (q->streaming) { /* a scan stopped early: read it out, so the connection can go on */
		char *rest;
		while (PQgetCopyData(c, &rest, 0) > 0)
			PQfreemem(rest);
		PGresult *r;
		while ((r = PQgetResult(c)))
			PQclear(r);
		q->streaming = 0;
	}
	PQclear(q->res);
	q->res = NULL;
	q->row = q->ntuples = q->done = 0;
}

void rm_pgq_reset(struct rm_pgq *q)
{
	if (q->table) /* a stage keeps its rows until they land */
		return;
	clear_result(q);
	for (int i = 0; i < MAX_PARAMS; i++)
		q->p[i].kind = P_NULL;
}

void rm_pgq_finalize(struct rm_pgq *q)
{
	if (!q)
		return;
	clear_result(q);
	for (struct rm_pgq **s = &q->db->pg->stages; *s; s = &(*s)->next_stage)
		if (*s == q) {
			*s = q->next_stage;
			break;
		}
	for (int i = 0; i < MAX_PARAMS; i++)
		free(q->p[i].bytes.s);
	free(q->blob.s);
	free(q->rows.s);
	free(q->key.s);
	free(q->prev.s);
	free(q->sql);
	free(q->table);
	free(q->create);
	free(q->upsert);
	free(q->upsert_dedup);
	free(q);
}

static struct param *param(struct rm_pgq *q, int i)
{
	return i >= 1 && i <= MAX_PARAMS ? &q->p[i - 1] : &q->p[MAX_PARAMS - 1];
}

void rm_pgq_bind_int(struct rm_pgq *q, int i, int64_t v)
{
	struct param *p = param(q, i);
	p->kind = P_INT;
	p->i = v;
}

void rm_pgq_bind_double(struct rm_pgq *q, int i, double v)
{
	struct param *p = param(q, i);
	p->kind = P_DBL;
	p->d = v;
}

void rm_pgq_bind_text(struct rm_pgq *q, int i, const char *v, int n)
{
	struct param *p = param(q, i);
	p->kind = P_TEXT;
	p->bytes.len = 0;
	rm_pgbuf_put(&p->bytes, v, n < 0 ? strlen(v) : (size_t)n);
	rm_pgbuf_put(&p->bytes, "", 1);
	p->bytes.len--;
}

void rm_pgq_bind_blob(struct rm_pgq *q, int i, const void *v, size_t n)
{
	struct param *p = param(q, i);
	p->kind = P_BLOB;
	p->bytes.len = 0;
	rm_pgbuf_put(&p->bytes, v, n);
}

void rm_pgq_bind_null(struct rm_pgq *q, int i)
{
	param(q, i)->kind = P_NULL;
}

static int stage_row(struct rm_pgq *q, struct rm_err *err);

/* COPY (the query, each $N written as its value's literal) TO STDOUT. */
static char *copy_out(struct rm_pgq *q)
{
	struct rm_pgbuf b = {0};
	char num[48];
	rm_pgbuf_put(&b, "COPY (", 6);
	for (const char *p = q->sql; *p; p++) {
		int n = *p == '$' ? (int)strtol(p + 1, NULL, 10) : 0;
		if (n < 1 || n > q->nparams) {
			rm_pgbuf_put(&b, p, 1);
			continue;
		}
		while (p[1] >= '0' && p[1] <= '9')
			p++;
		const struct param *v = &q->p[n - 1];
		char *lit = NULL;
		switch (v->kind) {
		case P_NULL: snprintf(num, sizeof(num), "NULL"); break;
		case P_INT: snprintf(num, sizeof(num), "%" PRId64, v->i); break;
		case P_DBL: snprintf(num, sizeof(num), "'%.17g'::float8", v->d); break;
		case P_TEXT:
		case P_BLOB: /* a blob as text: \x and its hex digits */
			if (v->kind == P_BLOB) {
				struct rm_pgbuf h = {0};
				rm_pgbuf_put(&h, "\\x", 2);
				for (size_t j = 0; j < v->bytes.len; j++) {
					snprintf(num, sizeof(num), "%02x", (unsigned char)v->bytes.s[j]);
					rm_pgbuf_put(&h, num, 2);
				}
				lit = PQescapeLiteral(q->db->pg->conn, h.s ? h.s : "", h.len);
				free(h.s);
			} else {
				lit = PQescapeLiteral(q->db->pg->conn, v->bytes.s ? v->bytes.s : "", v->bytes.len);
			}
			break;
		}
		rm_pgbuf_put(&b, lit ? lit : num, strlen(lit ? lit : num));
		if (v->kind == P_BLOB)
			rm_pgbuf_put(&b, "::bytea", 7);
		PQfreemem(lit);
	}
	rm_pgbuf_put(&b, ") TO STDOUT", 12); /* with its NUL */
	return b.s;
}

int rm_pgq_step(struct rm_pgq *q, struct rm_err *err)
{
	struct rm_db *db = q->db;
	int rc;
	if (q->table)
		return (rc = stage_row(q, err)) ? -rc : RM_DB_DONE;
	if (q->done)
		return RM_DB_DONE;
	if (!q->res && !q->streaming) {
		const char *vals[MAX_PARAMS];
		int lens[MAX_PARAMS], fmts[MAX_PARAMS];
		if ((rc = settle(db, err)))
			return -rc;
		for (int i = 0; i < q->nparams; i++) {
			struct param *p = &q->p[i];
			lens[i] = fmts[i] = 0;
			vals[i] = p->num;
			switch (p->kind) {
			case P_NULL: vals[i] = NULL; break;
			case P_INT: snprintf(p->num, sizeof(p->num), "%" PRId64, p->i); break;
			case P_DBL: snprintf(p->num, sizeof(p->num), "%.17g", p->d); break; /* also inf, nan */
			case P_TEXT: vals[i] = p->bytes.len ? p->bytes.s : ""; break;
			case P_BLOB:
				vals[i] = p->bytes.len ? p->bytes.s : "";
				lens[i] = (int)p->bytes.len;
				fmts[i] = 1; /* bytes as they are */
				break;
			}
		}
		if (q->flags & RM_DBQ_STREAM) {
			char *copy = copy_out(q);
			PGresult *r = PQexec(db->pg->conn, copy);
			free(copy);
			if (PQresultStatus(r) != PGRES_COPY_OUT) {
				q->done = 1;
				return -fail(db, r, err, "cannot read");
			}
			PQclear(r);
			q->streaming = 1;
		} else {
			q->res = PQexecParams(db->pg->conn, q->sql, q->nparams, NULL, vals, lens, fmts, 0);
			ExecStatusType s = PQresultStatus(q->res);
			if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
				rc = fail(db, q->res, err, "cannot run");
				q->res = NULL;
				q->done = 1;
				return -rc;
			}
			q->ntuples = PQntuples(q->res);
			q->row = -1;
		}
	}
	if (!q->streaming) {
		if (++q->row < q->ntuples)
			return RM_DB_ROW;
		q->done = 1;
		return RM_DB_DONE;
	}
	PQfreemem(q->line);
	q->line = NULL;
	int len = PQgetCopyData(db->pg->conn, &q->line, 0);
	if (len > 0) {
		char *p = q->line;
		if (p[len - 1] == '\n')
			p[len - 1] = '\0';
		for (q->nfields = 0; q->nfields < MAX_FIELDS; q->nfields++) {
			char *tab = strchr(p, '\t');
			size_t n;
			if (tab)
				*tab = '\0';
			q->field[q->nfields] = rm_pgcopy_unescape(p, &n);
			if (!tab) {
				q->nfields++;
				break;
			}
			p = tab + 1;
		}
		return RM_DB_ROW;
	}
	q->streaming = 0; /* the COPY's own result follows */
	PGresult *r = PQgetResult(db->pg->conn);
	rc = len == -1 && PQresultStatus(r) == PGRES_COMMAND_OK ? RM_OK : fail(db, r, err, "cannot read");
	if (!rc)
		PQclear(r);
	while ((r = PQgetResult(db->pg->conn)))
		PQclear(r);
	q->done = 1;
	return rc ? -rc : RM_DB_DONE;
}

int rm_pgq_null(struct rm_pgq *q, int i)
{
	if (q->line)
		return i < 0 || i >= q->nfields || !q->field[i];
	return !q->res || PQgetisnull(q->res, q->row, i);
}

static const char *value(struct rm_pgq *q, int i)
{
	return q->line ? q->field[i] : PQgetvalue(q->res, q->row, i);
}

int64_t rm_pgq_int(struct rm_pgq *q, int i)
{
	return rm_pgq_null(q, i) ? 0 : strtoll(value(q, i), NULL, 10);
}

double rm_pgq_double(struct rm_pgq *q, int i)
{
	return rm_pgq_null(q, i) ? 0 : strtod(value(q, i), NULL); /* also Infinity, NaN */
}

const char *rm_pgq_text(struct rm_pgq *q, int i)
{
	return rm_pgq_null(q, i) ? NULL : value(q, i);
}

/* bytea's text output is \x and two hex digits a byte. */
const void *rm_pgq_blob(struct rm_pgq *q, int i, size_t *n)
{
	const char *s = rm_pgq_text(q, i);
	size_t len = s ? strlen(s) : 0;
	*n = 0;
	if (len < 4 || s[0] != '\\' || s[1] != 'x')
		return NULL;
	q->blob.len = 0;
	for (size_t j = 2; j + 1 < len; j += 2) {
		unsigned char b = (unsigned char)(rm_pgcopy_hex(s[j]) << 4 | rm_pgcopy_hex(s[j + 1]));
		rm_pgbuf_put(&q->blob, &b, 1);
	}
	*n = q->blob.len;
	return q->blob.s;
}

/* ---- Stages ----------------------------------------------------------------- */

/* Appends "a, b, c" of cols[from..to) to b, each prefixed by pre. */
static void put_list(struct rm_pgbuf *b, const char *pre, const char *const *cols, int from, int to)
{
	for (int i = from; i < to; i++) {
		if (i > from)
			rm_pgbuf_put(b, ", ", 2);
		rm_pgbuf_put(b, pre, strlen(pre));
		rm_pgbuf_put(b, cols[i], strlen(cols[i]));
	}
}

static char *finish(struct rm_pgbuf *b)
{
	rm_pgbuf_put(b, "", 1);
	return b->s;
}

struct rm_pgq *rm_pgq_stage(struct rm_db *db, const char *table, const char *const *cols, int ncols, int nkeys,
                            struct rm_err *err)
{
	char sql[1024];
	struct rm_pgbuf b = {0};
	int rc;
	if (ncols > MAX_PARAMS || nkeys > ncols) {
		rm_err_set(err, RM_E_STORE, "a stage of %d columns (runmon's own bug)", ncols);
		return NULL;
	}
	struct rm_pgq *q = rm_xcalloc(1, sizeof(*q));
	q->db = db;
	q->table = rm_xasprintf("pg_temp.rm_stage_%s", table);
	q->nparams = ncols;
	q->nkeys = nkeys;
	/* The temporary table has the columns' types, read back to encode rows. */
	rm_pgbuf_put(&b, "CREATE TEMPORARY TABLE IF NOT EXISTS ", 37);
	rm_pgbuf_put(&b, q->table, strlen(q->table));
	rm_pgbuf_put(&b, " AS SELECT ", 11);
	put_list(&b, "", cols, 0, ncols);
	snprintf(sql, sizeof(sql), " FROM %s WITH NO DATA", table);
	rm_pgbuf_put(&b, sql, strlen(sql));
	q->create = rm_xstrdup(finish(&b));
	if ((rc = rm_pgdb_exec(db, q->create, err, "cannot stage rows"))) {
		free(b.s);
		rm_pgq_finalize(q);
		return NULL;
	}
	snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT 0", q->table);
	PGresult *r = PQexec(db->pg->conn, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQnfields(r) != ncols) {
		fail(db, r, err, "cannot stage rows");
		free(b.s);
		rm_pgq_finalize(q);
		return NULL;
	}
	for (int i = 0; i < ncols; i++)
		q->types[i] = PQftype(r, i);
	PQclear(r);
	/* INSERT INTO t(cols) SELECT [DISTINCT ON (keys)] cols FROM stage
	 * [ORDER BY keys, ctid DESC] ON CONFLICT (keys) DO UPDATE SET c = excluded.c */
	for (int dedup = 0; dedup < 2; dedup++) {
		b.len = 0;
		snprintf(sql, sizeof(sql), "INSERT INTO %s(", table);
		rm_pgbuf_put(&b, sql, strlen(sql));
		put_list(&b, "", cols, 0, ncols);
		rm_pgbuf_put(&b, ") SELECT ", 9);
		if (dedup) {
			rm_pgbuf_put(&b, "DISTINCT ON (", 13);
			put_list(&b, "", cols, 0, nkeys);
			rm_pgbuf_put(&b, ") ", 2);
		}
		put_list(&b, "", cols, 0, ncols);
		rm_pgbuf_put(&b, " FROM ", 6);
		rm_pgbuf_put(&b, q->table, strlen(q->table));
		if (dedup) {
			rm_pgbuf_put(&b, " ORDER BY ", 10);
			put_list(&b, "", cols, 0, nkeys);
			rm_pgbuf_put(&b, ", ctid DESC", 11);
		}
		rm_pgbuf_put(&b, " ON CONFLICT (", 14);
		put_list(&b, "", cols, 0, nkeys);
		rm_pgbuf_put(&b, ") DO UPDATE SET ", 16);
		for (int i = nkeys; i < ncols; i++) {
			snprintf(sql, sizeof(sql), "%s%s = excluded.%s", i > nkeys ? ", " : "", cols[i], cols[i]);
			rm_pgbuf_put(&b, sql, strlen(sql));
		}
		*(dedup ? &q->upsert_dedup : &q->upsert) = rm_xstrdup(finish(&b));
	}
	free(b.s);
	q->next_stage = db->pg->stages;
	db->pg->stages = q;
	return q;
}

/* A field of the binary format: its length (-1 NULL), then the value as
 * the column's type holds it. */
static int put_field(struct rm_pgbuf *b, Oid type, const struct param *p)
{
	uint64_t bits;
	double d;
	if (p->kind == P_NULL) {
		rm_pgbuf_be(b, UINT32_MAX, 4);
		return RM_OK;
	}
	switch (type) {
	case OID_INT8:
	case OID_INT4:
		if (p->kind != P_INT && p->kind != P_DBL)
			return RM_E_STORE;
		rm_pgbuf_be(b, type == OID_INT8 ? 8 : 4, 4);
		rm_pgbuf_be(b, (uint64_t)(p->kind == P_INT ? p->i : (int64_t)llround(p->d)), type == OID_INT8 ? 8 : 4);
		return RM_OK;
	case OID_FLOAT8:
		if (p->kind != P_INT && p->kind != P_DBL)
			return RM_E_STORE;
		d = p->kind == P_INT ? (double)p->i : p->d;
		memcpy(&bits, &d, 8);
		rm_pgbuf_be(b, 8, 4);
		rm_pgbuf_be(b, bits, 8);
		return RM_OK;
	case OID_TEXT:
	case OID_BYTEA:
		if (p->kind != P_TEXT && p->kind != P_BLOB)
			return RM_E_STORE;
		rm_pgbuf_be(b, p->bytes.len, 4);
		rm_pgbuf_put(b, p->bytes.s, p->bytes.len);
		return RM_OK;
	default: return RM_E_STORE;
	}
}

static int stage_row(struct rm_pgq *q, struct rm_err *err)
{
	if (!q->rows.len) { /* the format's header: signature, flags, extension length */
		rm_pgbuf_header(&q->rows);
	}
	size_t at = q->rows.len;
	rm_pgbuf_be(&q->rows, (uint64_t)q->nparams, 2);
	for (int i = 0; i < q->nparams; i++) {
		if (i == q->nkeys) /* the key's fields, as encoded: a repeat is an equal or lower string */
			q->key.len = 0, rm_pgbuf_put(&q->key, q->rows.s + at + 2, q->rows.len - at - 2);
		if (put_field(&q->rows, q->types[i], &q->p[i])) {
			q->rows.len = at;
			return rm_err_set(err, RM_E_STORE,
			                  "a value of the wrong type for column %d of %s (runmon's own bug)", i + 1,
			                  q->table);
		}
	}
	if (q->prev.len &&
	    memcmp(q->key.s, q->prev.s, q->key.len < q->prev.len ? q->key.len : q->prev.len) <= 0) /* not rising */
		q->repeats = 1;
	q->prev.len = 0;
	rm_pgbuf_put(&q->prev, q->key.s, q->key.len);
	for (int i = 0; i < MAX_PARAMS; i++)
		q->p[i].kind = P_NULL;
	q->nrows++;
	if (q->rows.len >= STAGE_FLUSH)
		return settle(q->db, err);
	return RM_OK;
}

/* The stage's rows into its table, upserted from there. */
static int land(struct rm_pgq *q, struct rm_err *err)
{
	struct rm_db *db = q->db;
	PGconn *c = db->pg->conn;
	char sql[256];
	int rc = RM_OK;
	rm_pgbuf_be(&q->rows, UINT16_MAX, 2); /* the trailer: a field count of -1 */
	if ((rc = run_plain(db, q->create, err, "cannot stage rows")))
		return rc;
	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN (FORMAT binary)", q->table);
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN)
		return fail(db, r, err, "cannot write rows");
	PQclear(r);
	int sent = PQputCopyData(c, q->rows.s, (int)q->rows.len) == 1;
	PQputCopyEnd(c, sent ? NULL : "cancelled");
	while ((r = PQgetResult(c))) {
		if (!rc && PQresultStatus(r) != PGRES_COMMAND_OK)
			rc = fail(db, r, err, "cannot write rows");
		else
			PQclear(r);
	}
	if (!rc && !sent)
		rc = fail(db, NULL, err, "cannot write rows");
	snprintf(sql, sizeof(sql), "writing %s", q->table + strlen("pg_temp.rm_stage_"));
	if (!rc)
		rc = run_plain(db, q->repeats ? q->upsert_dedup : q->upsert, err, sql);
	snprintf(sql, sizeof(sql), "TRUNCATE %s", q->table);
	if (!rc)
		rc = run_plain(db, sql, err, "cannot empty the stage");
	q->landed += rc ? 0 : q->nrows;
	q->rows.len = q->prev.len = 0;
	q->repeats = 0;
	q->nrows = 0;
	return rc;
}

/* Every stage's rows land, before anything else runs on the connection. */
static int settle(struct rm_db *db, struct rm_err *err)
{
	int rc = RM_OK;
	if (db->pg->settling)
		return RM_OK;
	db->pg->settling = 1;
	for (struct rm_pgq *s = db->pg->stages; s && !rc; s = s->next_stage)
		if (s->rows.len)
			rc = land(s, err);
	if (rc)
		discard_stages(db);
	db->pg->settling = 0;
	return rc;
}
