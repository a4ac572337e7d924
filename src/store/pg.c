/*
 * pg.c - the PostgreSQL connection behind `--db postgresql://...`: libpq
 * opens it (its conventions hold: PGPASSWORD, ~/.pgpass, PGSERVICE,
 * sslmode), migrations from sql/postgresql/ run once under an advisory
 * lock, and messages name the database with its password redacted.
 * Facts: integrations.md section 5; libpq's connection URIs (PostgreSQL
 * docs, 34.1.1).
 */
#define _GNU_SOURCE /* memmem */
#include "runmon/store.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

/* pg_advisory_xact_lock's key for migrations: "runmon" in ASCII. */
#define MIGRATION_LOCK 0x72756e6d6f6eLL

struct rm_pg {
	PGconn *conn;
	char name[512];
	int version;
};

int rm_db_is_postgres(const char *spec)
{
	return spec && (!strncmp(spec, "postgresql://", 13) || !strncmp(spec, "postgres://", 11));
}

/* Appends s[0..k) to buf at *used, truncating. */
static void put(char *buf, size_t n, size_t *used, const char *s, size_t k)
{
	while (k-- && *used + 1 < n)
		buf[(*used)++] = *s++;
	buf[*used < n ? *used : n - 1] = '\0';
}

/* Length of a key=value value at v: up to '&' or white space, or a quoted
 * 'value' with backslash escapes (libpq's key=value strings). */
static size_t value_len(const char *v)
{
	const char *p = v;
	if (*p == '\'') {
		for (p++; *p && *p != '\''; p++)
			if (*p == '\\' && p[1])
				p++;
		return (size_t)(p - v) + (*p == '\'');
	}
	while (*p && *p != '&' && *p != ' ' && *p != '\t' && *p != '\n')
		p++;
	return (size_t)(p - v);
}

void rm_db_redact(const char *spec, char *buf, size_t n)
{
	size_t used = 0;
	const char *p = spec;
	if (!n)
		return;
	buf[0] = '\0';
	if (rm_db_is_postgres(spec)) { /* scheme://user:secret@host/... */
		/* the last '@' before the query ends the userinfo, even past a '/'
		 * (a password holding '/' that its writer did not encode) */
		const char *auth = strstr(spec, "://") + 3, *end = auth + strcspn(auth, "?#"), *at = NULL;
		for (const char *q = auth; q < end; q++)
			if (*q == '@')
				at = q;
		const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
		if (colon) {
			put(buf, n, &used, spec, (size_t)(colon + 1 - spec));
			put(buf, n, &used, "***", 3);
			p = at;
		}
	}
	while (*p) {
		int boundary = p == spec || strchr("?& \t\n", p[-1]);
		if (boundary && !strncmp(p, "password=", 9)) {
			put(buf, n, &used, p, 9);
			put(buf, n, &used, "***", 3);
			p += 9 + value_len(p + 9);
			continue;
		}
		put(buf, n, &used, p, 1);
		p++;
	}
}

static int hexdigit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* Collects the secrets of spec into sec (at most max, each NUL-ended in
 * store): a URI's userinfo after its user name (libpq may split a
 * password holding '@' or '/' elsewhere, so all of it), and each
 * password= value; each also percent-decoded, as libpq reports it. */
static int secrets_of(const char *spec, char *store, size_t cap, const char **sec, int max)
{
	int k = 0;
	size_t used = 0;
	const char *from[8];
	size_t len[8];
	int nf = 0;
	if (rm_db_is_postgres(spec)) {
		/* the last '@' before the query ends the userinfo, even past a '/'
		 * (a password holding '/' that its writer did not encode) */
		const char *auth = strstr(spec, "://") + 3, *end = auth + strcspn(auth, "?#"), *at = NULL;
		for (const char *q = auth; q < end; q++)
			if (*q == '@')
				at = q;
		const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
		if (colon && at > colon + 1)
			from[nf] = colon + 1, len[nf++] = (size_t)(at - colon - 1);
	}
	for (const char *p = spec; *p && nf < 8; p++)
		if ((p == spec || strchr("?& \t\n", p[-1])) && !strncmp(p, "password=", 9)) {
			size_t vl = value_len(p + 9);
			int quoted = p[9] == '\'';
			if (vl > (size_t)(2 * quoted))
				from[nf] = p + 9 + quoted, len[nf++] = vl - (size_t)(2 * quoted);
		}
	for (int i = 0; i < nf && k + 2 <= max; i++) {
		for (int decode = 0; decode < 2; decode++) {
			if (used + len[i] + 1 > cap)
				return k;
			char *o = store + used;
			size_t ol = 0;
			for (size_t j = 0; j < len[i]; j++) {
				int hi = j + 2 < len[i] ? hexdigit(from[i][j + 1]) : -1,
				    lo = j + 2 < len[i] ? hexdigit(from[i][j + 2]) : -1;
				if (decode && from[i][j] == '%' && hi >= 0 && lo >= 0)
					o[ol++] = (char)(hi << 4 | lo), j += 2;
				else
					o[ol++] = from[i][j];
			}
			o[ol] = '\0';
			used += ol + 1;
			sec[k++] = o;
		}
	}
	return k;
}

/* Does t[0..n) share four bytes in a row with a secret? */
static int touches_secret(const char *t, size_t n, const char *const *sec, int ns)
{
	for (int i = 0; i < ns; i++) {
		size_t sl = strlen(sec[i]), w = sl < 4 ? sl : 4;
		for (size_t j = 0; w && j + w <= n; j++)
			if (memmem(sec[i], sl, t + j, w))
				return 1;
	}
	return 0;
}

void rm_db_scrub(const char *spec, const char *msg, char *buf, size_t n)
{
	char store[2048];
	const char *sec[8];
	int ns = secrets_of(spec, store, sizeof(store), sec, 8);
	size_t used = 0, speclen = strlen(spec);
	if (!n)
		return;
	buf[0] = '\0';
	for (const char *p = msg; *p;) {
		if (speclen && !strncmp(p, spec, speclen)) { /* the whole URI, as libpq may quote it */
			char red[512];
			rm_db_redact(spec, red, sizeof(red));
			put(buf, n, &used, red, strlen(red));
			p += speclen;
			continue;
		}
		const char *close = *p == '"' ? strchr(p + 1, '"') : NULL;
		if (close && (size_t)(close - p - 1) == speclen && !strncmp(p + 1, spec, speclen)) {
			put(buf, n, &used, p++, 1); /* the URI quoted: redacted above */
			continue;
		}
		if (close && touches_secret(p + 1, (size_t)(close - p - 1), sec, ns)) {
			put(buf, n, &used, "\"***\"", 5); /* a token libpq quotes from the URI */
			p = close + 1;
			continue;
		}
		int hit = 0;
		for (int i = 0; i < ns && !hit; i++) {
			size_t sl = strlen(sec[i]);
			if (sl && !strncmp(p, sec[i], sl)) {
				put(buf, n, &used, "***", 3);
				p += sl;
				hit = 1;
			}
		}
		if (!hit)
			put(buf, n, &used, p++, 1);
	}
}

/* libpq prints NOTICEs on stderr by default (CREATE ... IF NOT EXISTS). */
static void no_notices(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* Runs sql; *out (when not NULL) gets the result, else it is cleared. */
static int exec(struct rm_pg *pg, const char *sql, PGresult **out, struct rm_err *err, const char *what)
{
	PGresult *r = PQexec(pg->conn, sql);
	ExecStatusType s = PQresultStatus(r);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		const char *m = PQresultErrorMessage(r);
		int len = (int)strcspn(m, "\n");
		rm_err_set(err, RM_E_STORE, "%s in PostgreSQL database '%s': %.*s", what, pg->name, len, m);
		PQclear(r);
		return RM_E_STORE;
	}
	if (out)
		*out = r;
	else
		PQclear(r);
	return RM_OK;
}

static int query_int(struct rm_pg *pg, const char *sql, long long *v, struct rm_err *err, const char *what)
{
	PGresult *r;
	int rc = exec(pg, sql, &r, err, what);
	if (rc)
		return rc;
	*v = PQntuples(r) && !PQgetisnull(r, 0, 0) ? atoll(PQgetvalue(r, 0, 0)) : 0;
	PQclear(r);
	return RM_OK;
}

int rm_pg_latest_version(void)
{
	return rm_pg_migrations[rm_pg_migrations_count - 1].version;
}

static int migrate(struct rm_pg *pg, int max_version, struct rm_err *err)
{
	long long have, tables, version;
	char sql[256];
	int rc;
	if ((rc = exec(pg, "BEGIN", NULL, err, "cannot begin the migration")))
		return rc;
	snprintf(sql, sizeof(sql), "SELECT pg_advisory_xact_lock(%lld)", MIGRATION_LOCK);
	if ((rc = exec(pg, sql, NULL, err, "cannot lock for migration")) ||
	    (rc = query_int(pg, "SELECT (to_regclass('schema_migrations') IS NOT NULL)::int", &have, err,
	                    "cannot read the schema version")) ||
	    (rc = query_int(pg, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()", &tables, err,
	                    "cannot read the schema")))
		goto fail;
	/* Another tool's schema_migrations (golang-migrate's version and dirty,
	 * Rails' version alone) is no runmon schema either. */
	long long ours = 0;
	if (have && (rc = query_int(pg,
	                            "SELECT count(*) FROM information_schema.columns WHERE table_schema ="
	                            " current_schema() AND table_name = 'schema_migrations' AND column_name IN"
	                            " ('version', 'name', 'applied_at')",
	                            &ours, err, "cannot read the schema version")))
		goto fail;
	if ((!have || ours != 3) && tables) {
		rc = rm_err_set(err, RM_E_STORE,
		                "PostgreSQL database '%s' holds %lld tables but no runmon schema%s: give runmon a "
		                "database of its own",
		                pg->name, tables, have ? " (its schema_migrations is another tool's)" : "");
		goto fail;
	}
	/* Created only when missing: a role that may only read (a reporting
	 * one, Grafana's) has no right to create, even what exists. */
	if ((!have && (rc = exec(pg,
	                         "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
	                         " applied_at double precision NOT NULL)",
	                         NULL, err, "cannot create the schema version table"))) ||
	    (rc = query_int(pg, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &version, err,
	                    "cannot read the schema version")))
		goto fail;
	if (version > rm_pg_latest_version()) {
		rc = rm_err_set(err, RM_E_STORE,
		                "PostgreSQL database '%s' has schema version %lld, newer than this runmon's %d: "
		                "upgrade runmon",
		                pg->name, version, rm_pg_latest_version());
		goto fail;
	}
	for (int i = 0; i < rm_pg_migrations_count; i++) {
		const struct rm_migration *m = &rm_pg_migrations[i];
		if (m->version <= version || m->version > max_version)
			continue;
		char what[128];
		snprintf(what, sizeof(what), "migration postgresql/%s failed", m->name);
		if ((rc = exec(pg, m->sql, NULL, err, what)))
			goto fail;
		snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations VALUES (%d, '%s', %.3f)", m->version, m->name,
		         (double)time(NULL));
		if ((rc = exec(pg, sql, NULL, err, what)))
			goto fail;
		version = m->version;
	}
	if ((rc = exec(pg, "COMMIT", NULL, err, "cannot commit the migration")))
		return rc;
	pg->version = (int)version;
	return RM_OK;
fail:
	PQclear(PQexec(pg->conn, "ROLLBACK"));
	return rc;
}

/* What libpq is given: a key=value string written after the scheme
 * ("postgresql://host=db dbname=runmon") without the scheme, which libpq
 * would read as a URI; a URI as it is. */
static const char *conninfo_of(const char *uri)
{
	const char *rest = strstr(uri, "://") + 3;
	size_t key = strspn(rest, "abcdefghijklmnopqrstuvwxyz_");
	const char *p = rest + key;
	while (*p == ' ' || *p == '\t')
		p++;
	return key && *p == '=' ? rest : uri;
}

int rm_pg_open_version(struct rm_pg **out, const char *uri, int max_version, struct rm_err *err)
{
	struct rm_pg *pg = rm_xcalloc(1, sizeof(*pg));
	rm_db_redact(uri, pg->name, sizeof(pg->name));
	pg->conn = PQconnectdb(conninfo_of(uri));
	int rc;
	if (!pg->conn || PQstatus(pg->conn) != CONNECTION_OK) {
		/* PQerrorMessage's first line: the rest is context a user cannot act on. */
		const char *m = pg->conn ? PQerrorMessage(pg->conn) : "out of memory";
		char line[512], safe[1024];
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(m, "\n"), m);
		rm_db_scrub(uri, line, safe, sizeof(safe)); /* libpq quotes what it could not parse */
		rc = rm_err_set(err, RM_E_STORE, "cannot connect to PostgreSQL database '%s': %s", pg->name, safe);
		goto fail;
	}
	PQsetNoticeProcessor(pg->conn, no_notices, NULL);
	if ((rc = migrate(pg, max_version, err)))
		goto fail;
	*out = pg;
	return RM_OK;
fail:
	rm_pg_close(pg);
	return rc;
}

int rm_pg_open(struct rm_pg **out, const char *uri, struct rm_err *err)
{
	return rm_pg_open_version(out, uri, rm_pg_latest_version(), err);
}

void rm_pg_close(struct rm_pg *pg)
{
	if (!pg)
		return;
	PQfinish(pg->conn);
	free(pg);
}

int rm_pg_schema_version(struct rm_pg *pg)
{
	return pg->version;
}

PGconn *rm_pg_conn(struct rm_pg *pg)
{
	return pg->conn;
}

const char *rm_pg_name(const struct rm_pg *pg)
{
	return pg->name;
}
