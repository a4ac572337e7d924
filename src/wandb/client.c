/*
 * client.c - the W&B GraphQL client; see runmon/wandb.h. Query texts are W&B's own
 * (wandb-api.md section 2, from the SDK's runs.py and history.py); field
 * names and shapes are the wire format.
 */
#include "runmon/wandb.h"

#include "runmon/parse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* wandb-api.md 2b (RunFragment trimmed to the fields runmon stores). */
static const char run_query[] = "query Run($project: String!, $entity: String!, $name: String!) {\n"
                                "    project(name: $project, entityName: $entity) {\n"
                                "        run(name: $name) {\n"
                                "            id name displayName state config createdAt heartbeatAt\n"
                                "            historyLineCount historyKeys\n"
                                "        }\n"
                                "    }\n"
                                "}";

/* wandb-api.md 2a. */
static const char runs_query[] =
    "query Runs($project: String!, $entity: String!, $cursor: String, $perPage: Int = 50, $order: String,"
    " $filters: JSONString) {\n"
    "    project(name: $project, entityName: $entity) {\n"
    "        runCount(filters: $filters)\n"
    "        runs(filters: $filters, after: $cursor, first: $perPage, order: $order) {\n"
    "            edges { node { name state } cursor }\n"
    "            pageInfo { endCursor hasNextPage }\n"
    "        }\n"
    "    }\n"
    "}";

/* wandb-api.md 2c: HistoryScan.QUERY. */
static const char history_query[] =
    "query HistoryPage($entity: String!, $project: String!, $run: String!, $minStep: Int64!, $maxStep: Int64!,"
    " $pageSize: Int!) {\n"
    "    project(name: $project, entityName: $entity) {\n"
    "        run(name: $run) {\n"
    "            history(minStep: $minStep, maxStep: $maxStep, samples: $pageSize)\n"
    "        }\n"
    "    }\n"
    "}";

struct rm_wandb {
	char *base_url;
	char *graphql_url;
	char *shown_url, *shown_graphql; /* for messages: without a user and password */
	char *userpwd;                   /* "api:KEY": secret, wiped on close */
	struct rm_http *http;
};

/* host[:port] of a URL: the netrc machine name (urlsplit().netloc). */
static char *netloc(const char *url)
{
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	size_t n = strcspn(p, "/?#");
	const char *at = memchr(p, '@', n);
	if (at) {
		n -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	return rm_xstrndup(p, n);
}

/* netrc tokens: whitespace separated; "machine M login L password P",
 * "default". Returns the password of machine host, else of default. */
static char *netrc_password(const char *path, const char *host)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return NULL;
	char tok[1024], *found = NULL, *fallback = NULL;
	int in_match = 0, in_default = 0;
	while (fscanf(fp, "%1023s", tok) == 1) {
		if (!strcmp(tok, "machine")) {
			if (fscanf(fp, "%1023s", tok) != 1)
				break;
			in_match = !strcmp(tok, host);
			in_default = 0;
		} else if (!strcmp(tok, "default")) {
			in_default = 1;
			in_match = 0;
		} else if (!strcmp(tok, "login") || !strcmp(tok, "account")) {
			if (fscanf(fp, "%1023s", tok) != 1) /* its value, whatever it spells ("login password") */
				break;
		} else if (!strcmp(tok, "password")) {
			if (fscanf(fp, "%1023s", tok) != 1)
				break;
			if (in_match && !found)
				found = rm_xstrdup(tok);
			else if (in_default && !fallback)
				fallback = rm_xstrdup(tok);
		}
	}
	memset(tok, 0, sizeof(tok));
	fclose(fp);
	if (found) {
		free(fallback);
		return found;
	}
	return fallback;
}

char *rm_wandb_find_key(const char *base_url)
{
	const char *env = getenv("WANDB_API_KEY");
	if (env && *env)
		return rm_xstrdup(env);
	/* $NETRC, else ~/.netrc, else ~/_netrc (wbnetrc.py). */
	const char *home = getenv("HOME"), *nr = getenv("NETRC");
	char *host = netloc(base_url), *key = NULL;
	if (nr && *nr) {
		key = netrc_password(nr, host);
	} else if (home) {
		char *p = rm_xasprintf("%s/.netrc", home);
		key = netrc_password(p, host);
		free(p);
		if (!key) {
			p = rm_xasprintf("%s/_netrc", home);
			key = netrc_password(p, host);
			free(p);
		}
	}
	free(host);
	return key;
}

int rm_wandb_open(struct rm_wandb **out, const struct rm_wandb_opts *o, struct rm_err *err)
{
	const char *base = o->base_url;
	if (!base || !*base)
		base = getenv("WANDB_BASE_URL");
	if (!base || !*base)
		base = RM_WANDB_DEFAULT_URL;
	char *key = rm_wandb_find_key(base);
	*out = NULL;
	if (!key) {
		char *host = netloc(base);
		int rc = rm_err_set(err, RM_E_USAGE,
		                    "no W&B API key: set WANDB_API_KEY, or add 'machine %s' with the key as password"
		                    " to ~/.netrc (or $NETRC)",
		                    host);
		free(host);
		return rc;
	}
	struct rm_wandb *w = rm_xcalloc(1, sizeof(*w));
	w->base_url = rm_xstrdup(base);
	size_t bl = strlen(w->base_url);
	while (bl && w->base_url[bl - 1] == '/')
		w->base_url[--bl] = '\0';
	w->graphql_url = rm_xasprintf("%s/graphql", w->base_url);
	w->shown_url = rm_url_without_userinfo(w->base_url);
	w->shown_graphql = rm_url_without_userinfo(w->graphql_url);
	w->userpwd = rm_xasprintf("api:%s", key);
	memset(key, 0, strlen(key));
	free(key);
	struct rm_http_opts ho;
	rm_http_opts_default(&ho);
	ho.url = w->graphql_url;
	ho.userpwd = w->userpwd;
	const char *t = getenv("WANDB_HTTP_TIMEOUT");
	if (o->timeout_ms > 0)
		ho.timeout_ms = o->timeout_ms;
	else if (t && strtod(t, NULL) > 0)
		ho.timeout_ms = (long)(strtod(t, NULL) * 1000);
	if (o->retry_max >= 0)
		ho.retry_max = o->retry_max;
	if (o->backoff_min > 0)
		ho.backoff_min = o->backoff_min;
	if (o->backoff_max > 0)
		ho.backoff_max = o->backoff_max;
	if (o->max_connections > 0)
		ho.max_connections = o->max_connections;
	ho.jobs = o->jobs;
	if (o->max_jobs > 0)
		ho.max_jobs = o->max_jobs;
	w->http = rm_http_new(&ho);
	*out = w;
	return RM_OK;
}

void rm_wandb_close(struct rm_wandb *w)
{
	if (!w)
		return;
	rm_http_free(w->http);
	memset(w->userpwd, 0, strlen(w->userpwd));
	free(w->userpwd);
	free(w->graphql_url);
	free(w->base_url);
	free(w->shown_url);
	free(w->shown_graphql);
	free(w);
}

const char *rm_wandb_base_url(const struct rm_wandb *w)
{
	return w->base_url;
}

struct rm_http *rm_wandb_http(struct rm_wandb *w)
{
	return w->http;
}

int rm_run_path_parse(const char *spec, struct rm_run_path *p)
{
	const char *a = strchr(spec, '/'), *b = a ? strchr(a + 1, '/') : NULL;
	memset(p, 0, sizeof(*p));
	if (!(a && b && a > spec && b > a + 1 && b[1] && !strchr(b + 1, '/')))
		return 0;
	p->buf = rm_xstrdup(spec);
	p->buf[a - spec] = p->buf[b - spec] = '\0';
	p->entity = p->buf;
	p->project = p->buf + (a - spec) + 1;
	p->id = p->buf + (b - spec) + 1;
	return 1;
}

void rm_run_path_release(struct rm_run_path *p)
{
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

double rm_wandb_parse_time(const char *s)
{
	struct tm tm = {0};
	int frac_digits = 0;
	double frac = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
	                 &tm.tm_sec) != 6)
		return 0;
	const char *dot = strchr(s, '.');
	double scale = 0.1;
	if (dot)
		for (const char *p = dot + 1; isdigit((unsigned char)*p) && frac_digits < 9; p++, frac_digits++) {
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + frac;
}

/* Sends one request and waits for it; returns the parsed body. */
static int call(struct rm_wandb *w, json_t *payload, json_t **data, struct rm_err *err)
{
	char *body = json_dumps(payload, JSON_COMPACT);
	struct rm_http_req req = {.body = body, .body_len = strlen(body)};
	json_error_t jerr;
	int rc = RM_OK;
	*data = NULL;
	rm_http_start(w->http, &req);
	for (;;) {
		struct rm_http_req *done = rm_http_wait(w->http);
		if (!done || !done->ok) {
			char msg[512];
			rm_wandb_describe_failure(w, &req, msg, sizeof(msg));
			rc = rm_err_set(err, req.code ? req.code : RM_E_NET, "%s", msg);
			break;
		}
		json_t *doc = json_loadb(req.resp, req.resp_len, 0, &jerr);
		if (!doc) {
			char why[256];
			snprintf(why, sizeof(why), "invalid JSON from %s: %s", w->shown_graphql, jerr.text);
			if (rm_http_retry(w->http, &req, why))
				continue;
			rc = rm_err_set(err, RM_E_NET, "%s", req.err);
			break;
		}
		json_t *errors = json_object_get(doc, "errors");
		if (json_is_array(errors) && json_array_size(errors) > 0) {
			json_t *e0 = json_array_get(errors, 0);
			const char *m = json_is_string(e0) ? json_string_value(e0)
			                                   : json_string_value(json_object_get(e0, "message"));
			rc = rm_err_set(err, RM_E_NET, "W&B API error: %.300s", m ? m : "(no message)");
			json_decref(doc);
			break;
		}
		*data = json_incref(json_object_get(doc, "data"));
		json_decref(doc);
		if (!*data)
			rc = rm_err_set(err, RM_E_NET, "W&B API answered without data (%s)", w->shown_graphql);
		break;
	}
	rm_http_req_release(&req);
	free(body);
	return rc;
}

static char *dup_str(json_t *v)
{
	return json_is_string(v) ? rm_xstrdup(json_string_value(v)) : NULL;
}

void rm_wandb_run_release(struct rm_wandb_run *r)
{
	free(r->name);
	free(r->display_name);
	free(r->state);
	free(r->config_json);
	memset(r, 0, sizeof(*r));
}

int rm_wandb_get_run(struct rm_wandb *w, const char *entity, const char *project, const char *name,
                     struct rm_wandb_run *out, struct rm_err *err)
{
	json_t *payload = json_pack("{s:s, s:{s:s, s:s, s:s}}", "query", run_query, "variables", "project", project,
	                            "entity", entity, "name", name),
	       *data;
	memset(out, 0, sizeof(*out));
	out->last_step = -1;
	int rc = call(w, payload, &data, err);
	json_decref(payload);
	if (rc)
		return rc;
	json_t *proj = json_object_get(data, "project"), *run = json_object_get(proj, "run");
	if (!json_is_object(run)) {
		json_decref(data);
		return rm_err_set(err, RM_E_NOTFOUND, "run %s/%s/%s not found on %s (or no access with this API key)",
		                  entity, project, name, w->shown_url);
	}
	out->name = dup_str(json_object_get(run, "name"));
	if (!out->name)
		out->name = rm_xstrdup(name);
	out->display_name = dup_str(json_object_get(run, "displayName"));
	out->state = dup_str(json_object_get(run, "state"));
	json_t *cfg = json_object_get(run, "config");
	out->config_json = json_is_string(cfg)         ? rm_xstrdup(json_string_value(cfg))
	                   : cfg && !json_is_null(cfg) ? json_dumps(cfg, JSON_COMPACT)
	                                               : NULL;
	out->created_at = rm_wandb_parse_time(json_string_value(json_object_get(run, "createdAt")));
	out->heartbeat_at = rm_wandb_parse_time(json_string_value(json_object_get(run, "heartbeatAt")));
	json_t *hl = json_object_get(run, "historyLineCount");
	out->history_lines = json_is_integer(hl) ? json_integer_value(hl) : 0;
	json_t *hk = json_object_get(run, "historyKeys");
	json_t *parsed = json_is_string(hk) ? json_loads(json_string_value(hk), 0, NULL) : NULL; /* JSON in a string */
	json_t *ls = json_object_get(parsed ? parsed : hk, "lastStep");
	double v = json_number_value(ls);
	if (json_is_number(ls) && v >= 0 && v < 9007199254740992.0) /* a larger cast is undefined */
		out->last_step = (int64_t)v;
	json_decref(parsed);
	json_decref(data);
	return RM_OK;
}

int rm_wandb_list_runs(struct rm_wandb *w, const char *entity, const char *project, const char *filters_json,
                       char ***ids, size_t *n, struct rm_err *err)
{
	char *cursor = NULL;
	size_t cap = 0;
	int rc = RM_OK;
	*ids = NULL;
	*n = 0;
	for (int page = 0; page < 100000; page++) {
		json_t *vars = json_pack("{s:s, s:s, s:s, s:s, s:i}", "project", project, "entity", entity, "order",
		                         "+created_at", "filters", filters_json ? filters_json : "{}", "perPage", 50);
		json_object_set_new(vars, "cursor", cursor ? json_string(cursor) : json_null());
		json_t *payload = json_pack("{s:s, s:o}", "query", runs_query, "variables", vars), *data;
		rc = call(w, payload, &data, err);
		json_decref(payload);
		if (rc)
			break;
		json_t *runs = json_object_get(json_object_get(data, "project"), "runs");
		if (!json_is_object(runs)) {
			json_decref(data);
			rc = rm_err_set(err, RM_E_NOTFOUND, "project %s/%s not found on %s (or no access)", entity,
			                project, w->shown_url);
			break;
		}
		size_t i;
		json_t *edge;
		json_array_foreach (json_object_get(runs, "edges"), i, edge) {
			const char *id = json_string_value(json_object_get(json_object_get(edge, "node"), "name"));
			if (!id)
				continue;
			if (*n == cap)
				*ids = rm_xrealloc(*ids, (cap = cap ? cap * 2 : 64) * sizeof(char *));
			(*ids)[(*n)++] = rm_xstrdup(id);
			free(cursor);
			cursor = dup_str(json_object_get(edge, "cursor"));
		}
		json_t *info = json_object_get(runs, "pageInfo");
		int more = json_is_true(json_object_get(info, "hasNextPage"));
		json_decref(data);
		if (!more)
			break;
	}
	free(cursor);
	return rc;
}

char *rm_wandb_history_body_n(const char *entity, const char *project, const char *name, int64_t lo, int64_t hi,
                              int64_t samples)
{
	json_t *p = json_pack("{s:s, s:{s:s, s:s, s:s, s:I, s:I, s:I}}", "query", history_query, "variables", "entity",
	                      entity, "project", project, "run", name, "minStep", (json_int_t)lo, "maxStep",
	                      (json_int_t)hi, "pageSize", (json_int_t)samples);
	char *s = json_dumps(p, JSON_COMPACT);
	json_decref(p);
	return s;
}

char *rm_wandb_history_body(const char *entity, const char *project, const char *name, int64_t lo, int64_t hi)
{
	/* samples == hi - lo: the window cannot hold more rows, so the server
	 * has nothing to downsample (wandb-api.md 2c). */
	return rm_wandb_history_body_n(entity, project, name, lo, hi, hi - lo);
}

int rm_wandb_parse_history(const char *body, size_t len, struct rm_row *outer, const struct rm_field **history,
                           char *why, size_t n)
{
	struct rm_err perr;
	*history = NULL;
	if (rm_jsonrow_parse(outer, body, len, &perr)) {
		snprintf(why, n, "truncated or invalid JSON (%s)", perr.msg);
		return RM_E_NET;
	}
	const struct rm_field *errors = rm_row_get(outer, "errors");
	if (errors && errors->type != RM_F_NULL) {
		/* Rare: let jansson dig out W&B's message. */
		json_t *doc = json_loadb(body, len, 0, NULL), *e0 = json_array_get(json_object_get(doc, "errors"), 0);
		const char *m =
		    json_is_string(e0) ? json_string_value(e0) : json_string_value(json_object_get(e0, "message"));
		snprintf(why, n, "W&B API error: %.300s", m ? m : "(no message)");
		json_decref(doc);
		return RM_E_INPUT;
	}
	*history = rm_row_get(outer, "data.project.run.history");
	if (*history && (*history)->type == RM_F_STRARR)
		return RM_OK;
	if (*history &&
	    (((*history)->type == RM_F_NUMARR && (*history)->arr_len == 0) || (*history)->type == RM_F_NULL)) {
		*history = NULL; /* [] or null: an empty window */
		return RM_OK;
	}
	if (!*history && !rm_row_get(outer, "data.project.run.id") && !rm_row_get(outer, "data.project.run.history")) {
		const struct rm_field *run = rm_row_get(outer, "data.project.run");
		const struct rm_field *proj = rm_row_get(outer, "data.project");
		if ((run && run->type == RM_F_NULL) || (proj && proj->type == RM_F_NULL)) {
			snprintf(why, n, "run not found (or no access)");
			return RM_E_NOTFOUND;
		}
	}
	snprintf(why, n, "no history array in the response");
	*history = NULL;
	return RM_E_NET;
}

void rm_wandb_describe_failure(const struct rm_wandb *w, const struct rm_http_req *r, char *buf, size_t n)
{
	const char *hint = "";
	if (r->status == 401)
		hint = ": the API key was rejected (check WANDB_API_KEY or ~/.netrc)";
	else if (r->status == 403)
		hint = ": permission denied for this API key";
	/* W&B's own message: {"errors":[{"message":..}]} or {"error": ..}. */
	char msg[256] = "";
	json_t *doc = r->resp ? json_loadb(r->resp, r->resp_len, 0, NULL) : NULL;
	if (doc) {
		json_t *e = json_object_get(doc, "errors"), *one = json_is_array(e) ? json_array_get(e, 0) : NULL;
		if (!one)
			one = json_object_get(doc, "error");
		const char *m =
		    json_is_string(one) ? json_string_value(one) : json_string_value(json_object_get(one, "message"));
		if (m)
			snprintf(msg, sizeof(msg), " (%.200s)", m);
		json_decref(doc);
	}
	snprintf(buf, n, "W&B API at %s: %s%s%s", w->shown_graphql, r->err[0] ? r->err : "request failed", hint, msg);
}
