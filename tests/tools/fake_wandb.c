/*
 * fake_wandb.c - a fake W&B GraphQL server for the tests: the queries and
 * response shapes of shared/wandb-api.md on an ephemeral loopback port.
 *
 * usage: fake_wandb --port-file F [--key KEY] [--run SPEC]... [--latency-ms N]
 *                   [--fault KIND:COUNT]... [--retry-after S] [--slow-ms N]
 *                   [--log FILE] [--quota N/S] [--stats FILE]
 *        fake_wandb --dump SPEC       (print the run's rows as wandb-history.jsonl)
 *
 * SPEC is ENTITY/PROJECT/ID[:key=value,...] with keys steps (default 1000),
 * start (first step, default 0), nan (every Kth loss is a bare NaN), nested
 * (1: the loss is logged as {"train": {"loss": x}}; 2: as "train/nll", a
 * name runmon does not know), gap (A-B: no rows for
 * steps A..B-1, so whole windows are empty), grow (G: the run starts half
 * visible and G more steps appear with each history request; it is
 * "running" until complete), resets (R: from step R on, the loss jumps to
 * four times its level at the start of every bucket-5 streak and decays
 * over the next steps), state, display.
 * Fault kinds (each applies to the first COUNT HistoryPage requests): 429,
 * ratelimit (429 with RateLimit-Reset only), 500, 502, 503, slow, truncate
 * (the body is cut short), badjson, gqlerror (a GraphQL errors array),
 * badrow (a malformed row string), zerobatch (a row whose batch/n is 0,
 * which runmon refuses), drained (a 200 whose RateLimit headers
 * say nothing is left for 999999999 s); and alertfail, which applies to the
 * first COUNT alert mutations instead (a GraphQL error: the alert was not
 * raised). A wrong API key gets 401.
 *
 * --quota N/S: N requests in each fixed window of S seconds, as W&B limits
 * them (wandb-api.md, "Rate limits"): every response carries
 * RateLimit-Limit (1000), RateLimit-Remaining (what is left, scaled to
 * 0..1000) and RateLimit-Reset (seconds to the window's end, rounded up);
 * beyond the quota, 429. --stats FILE keeps "requests R refused F
 * max_inflight M" up to date (M: requests the server held at once).
 */
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS   128
#define MAX_FAULTS 16

struct run {
	char entity[64], project[64], id[64], display[80], state[64];
	long start, steps, nan, nested, gap_lo, gap_hi, grow, visible, resets;
	long long far; /* one more row, at this step (0: none) */
};

struct fault {
	char kind[16];
	int left;
};

static struct run runs[MAX_RUNS];
static int nruns;
static struct fault faults[MAX_FAULTS];
static int nfaults;
static char key[256] = "0123456789abcdef0123456789abcdef01234567";
static long latency_ms, slow_ms = 5000;
static double retry_after = 1;
static FILE *reqlog;
static long quota_n, requests, refused, inflight, max_inflight;
static double quota_s, window_at = -1;
static long window_used;
static const char *stats_path;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void parse_run(const char *spec, struct run *r)
{
	memset(r, 0, sizeof(*r));
	r->steps = 1000;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", spec);
	char *opts = strchr(buf, ':');
	if (opts)
		*opts++ = '\0';
	if (sscanf(buf, "%63[^/]/%63[^/]/%63s", r->entity, r->project, r->id) != 3) {
		fprintf(stderr, "fake_wandb: bad run spec '%s'\n", spec);
		exit(2);
	}
	snprintf(r->display, sizeof(r->display), "fake-%s", r->id);
	snprintf(r->state, sizeof(r->state), "finished");
	for (char *kv = opts ? strtok(opts, ",") : NULL; kv; kv = strtok(NULL, ",")) {
		char k[32], v[64];
		if (sscanf(kv, "%31[^=]=%63s", k, v) != 2)
			continue;
		if (!strcmp(k, "steps"))
			r->steps = atol(v);
		else if (!strcmp(k, "start"))
			r->start = atol(v);
		else if (!strcmp(k, "nan"))
			r->nan = atol(v);
		else if (!strcmp(k, "nested"))
			r->nested = atol(v);
		else if (!strcmp(k, "gap"))
			sscanf(v, "%ld-%ld", &r->gap_lo, &r->gap_hi);
		else if (!strcmp(k, "grow"))
			r->grow = atol(v);
		else if (!strcmp(k, "resets"))
			r->resets = atol(v);
		else if (!strcmp(k, "far"))
			r->far = atoll(v);
		else if (!strcmp(k, "state"))
			snprintf(r->state, sizeof(r->state), "%s", v);
		else if (!strcmp(k, "display"))
			snprintf(r->display, sizeof(r->display), "%s", v);
	}
	r->visible = r->grow ? r->steps / 2 : r->steps;
}

static long long last_step(const struct run *r)
{
	return r->far && r->visible == r->steps ? r->far : r->start + r->visible - 1;
}

static long long line_count(const struct run *r)
{
	return r->visible + (r->far && r->visible == r->steps);
}

static const char *run_state(const struct run *r)
{
	return r->grow && r->visible < r->steps ? "running" : r->state;
}

/* Deterministic pseudo-random in [0, 1) from the step. */
static double hash01(long t, unsigned salt)
{
	unsigned long long z = (unsigned long long)t * 0x9E3779B97F4A7C15ull + salt;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

/* The row logged at step t, as W&B stores it (bare NaN tokens included). */
static int row_json(const struct run *r, long t, char *buf, size_t n)
{
	int bucket = (int)((t / 50) % 6);
	double loss =
	    (0.5 + 0.3 * bucket) * (1 + 2 * exp(-(double)(t - r->start) / 2000.0)) * (0.95 + 0.1 * hash01(t, 1));
	if (r->resets && t >= r->resets && bucket == 5 && t % 50 < 12) /* a reset: 4x, decaying */
		loss *= 1 + 3 * exp(-(double)(t % 50) / 3);
	int max_len = 100 + bucket * 1300 + (int)(hash01(t, 2) * 1000);
	char lossbuf[64];
	if (r->nan && t % r->nan == r->nan - 1)
		snprintf(lossbuf, sizeof(lossbuf), "NaN");
	else
		snprintf(lossbuf, sizeof(lossbuf), "%.17g", loss);
	int len = snprintf(buf, n,
	                   "{\"_step\": %ld, \"_runtime\": %.3f, \"_timestamp\": %.3f, %s%s%s, \"lr\": %.6g,"
	                   " \"batch/bucket\": %d, \"batch/n\": 16, \"batch/max_len\": %d, \"batch/tokens\": %d",
	                   t, (double)(t - r->start) * 0.5, 1714556400.0 + (double)t * 0.5,
	                   r->nested == 1   ? "\"train\": {\"loss\": "
	                   : r->nested == 2 ? "\"train/nll\": "
	                                    : "\"train/loss\": ",
	                   lossbuf, r->nested == 1 ? "}" : "",
	                   3e-4 * (1 - (double)(t - r->start) / (double)(r->steps + 1)), bucket, max_len, max_len * 12);
	if (t % 100 == 0) /* a media object and an eval metric now and then */
		len += snprintf(
		    buf + len, n - (size_t)len,
		    ", \"samples\": {\"_type\": \"image-file\", \"path\": \"media/%ld.png\"}, \"eval/loss\": %.6g", t,
		    loss * 1.1);
	len += snprintf(buf + len, n - (size_t)len, "}");
	return len;
}

static int has_row(const struct run *r, long long t)
{
	if (r->far && t == r->far)
		return r->visible == r->steps;
	return t >= r->start && t < r->start + r->visible && !(t >= r->gap_lo && t < r->gap_hi);
}

static struct run *find_run(const char *e, const char *p, const char *id)
{
	for (int i = 0; i < nruns; i++)
		if (!strcmp(runs[i].entity, e) && !strcmp(runs[i].project, p) && (!id || !strcmp(runs[i].id, id)))
			return &runs[i];
	return NULL;
}

/* Takes one use of a fault of this kind, if any is left. */
static int take_fault(const char *kind)
{
	for (int i = 0; i < nfaults; i++)
		if (!strcmp(faults[i].kind, kind) && faults[i].left > 0) {
			faults[i].left--;
			return 1;
		}
	return 0;
}

struct reply {
	int status;
	char *body;
	size_t len;
	int truncate;
	char header[64], hvalue[64];
	int quota; /* the RateLimit headers go out */
	long remaining, reset;
};

static void set_json(struct reply *rp, int status, json_t *doc)
{
	rp->status = status;
	rp->body = json_dumps(doc, JSON_COMPACT);
	rp->len = strlen(rp->body);
	json_decref(doc);
}

static void history(json_t *vars, struct reply *rp, const char *fault)
{
	struct run *r = find_run(json_string_value(json_object_get(vars, "entity")),
	                         json_string_value(json_object_get(vars, "project")),
	                         json_string_value(json_object_get(vars, "run")));
	json_int_t lo = json_integer_value(json_object_get(vars, "minStep"));
	json_int_t hi = json_integer_value(json_object_get(vars, "maxStep"));
	if (!r) {
		set_json(rp, 200, json_pack("{s:{s:{s:n}}}", "data", "project", "run"));
		return;
	}
	if (!strcmp(fault, "gqlerror")) {
		set_json(rp, 200, json_pack("{s:[{s:s}], s:n}", "errors", "message", "query is too complex", "data"));
		return;
	}
	json_t *rows = json_array();
	char buf[1024];
	/* The steps that hold rows in [lo, hi): the run's range, then far. More
	 * rows than samples are sampled down, evenly here, as the server does. */
	json_int_t a = lo > r->start ? lo : r->start, b = hi < r->start + r->visible ? hi : r->start + r->visible;
	json_int_t samples = json_integer_value(json_object_get(vars, "pageSize"));
	int far = r->far && r->far >= lo && r->far < hi && has_row(r, r->far);
	long long n = far, k = 0;
	if (a > b)
		a = b; /* no step of the run's range: far alone, if it is here */
	for (json_int_t t = a; t < b; t++)
		n += has_row(r, t);
	for (json_int_t t = a; t < b + far; t++) {
		json_int_t step = t < b ? t : r->far;
		if (!has_row(r, step))
			continue;
		k++;
		if (samples > 0 && n > samples && k > 1 && (k - 1) * samples / n == (k - 2) * samples / n)
			continue;
		int len = row_json(r, (long)step, buf, sizeof(buf));
		if (!strcmp(fault, "badrow") && json_array_size(rows) == 3)
			len = snprintf(buf, sizeof(buf), "{\"_step\": %lld, \"train/loss\": }", (long long)step);
		char *n16 = strstr(buf, "\"batch/n\": 16");
		if (!strcmp(fault, "zerobatch") && json_array_size(rows) == 3 && n16) /* valid JSON, no batch */
			memcpy(n16, "\"batch/n\":  0", 13);
		json_array_append_new(rows, json_stringn(buf, (size_t)len));
	}
	set_json(rp, 200, json_pack("{s:{s:{s:{s:o}}}}", "data", "project", "run", "history", rows));
	if (!strcmp(fault, "badjson")) { /* a 200 whose body breaks off mid-document */
		rp->len /= 2;
		memcpy(rp->body + rp->len - 3, "}}}", 3);
	}
	if (!strcmp(fault, "truncate"))
		rp->truncate = 1;
	if (r->grow && r->visible < r->steps)
		r->visible = r->visible + r->grow < r->steps ? r->visible + r->grow : r->steps;
}

static void run_meta(json_t *vars, struct reply *rp)
{
	struct run *r = find_run(json_string_value(json_object_get(vars, "entity")),
	                         json_string_value(json_object_get(vars, "project")),
	                         json_string_value(json_object_get(vars, "name")));
	if (!r) {
		set_json(rp, 200, json_pack("{s:{s:{s:n}}}", "data", "project", "run"));
		return;
	}
	char summary[128], config[128];
	snprintf(summary, sizeof(summary), "{\"_step\": %lld}", last_step(r));
	snprintf(config, sizeof(config), "{\"save_steps\": {\"value\": 500, \"desc\": null}}");
	json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:{s:I, s:{}}}", "projectId", "1", "id",
	                        "UnVuOmZha2U=", "name", r->id, "displayName", r->display, "state", run_state(r),
	                        "createdAt", "2024-05-01T10:00:00", "heartbeatAt", "2024-05-01T10:42:13.5Z",
	                        "historyLineCount", (json_int_t)line_count(r), "config", config, "historyKeys",
	                        "lastStep", (json_int_t)last_step(r), "keys");
	json_object_set_new(run, "summaryMetrics", json_string(summary));
	set_json(rp, 200, json_pack("{s:{s:{s:o}}}", "data", "project", "run", run));
}

static void run_list(json_t *vars, struct reply *rp)
{
	const char *e = json_string_value(json_object_get(vars, "entity"));
	const char *p = json_string_value(json_object_get(vars, "project"));
	const char *cursor = json_string_value(json_object_get(vars, "cursor"));
	const char *fs = json_string_value(json_object_get(vars, "filters"));
	json_t *filters = json_loads(fs ? fs : "{}", 0, NULL);
	const char *want = json_string_value(json_object_get(filters, "state"));
	int per = (int)json_integer_value(json_object_get(vars, "perPage"));
	json_t *edges = json_array();
	int started = cursor == NULL, more = 0, count = 0;
	for (int i = 0; i < nruns; i++) {
		struct run *r = &runs[i];
		if (strcmp(r->entity, e) || strcmp(r->project, p) || (want && strcmp(run_state(r), want)))
			continue;
		count++;
		if (!started) {
			started = !strcmp(cursor, r->id);
			continue;
		}
		if ((int)json_array_size(edges) == (per > 0 ? per : 50)) {
			more = 1;
			continue;
		}
		json_array_append_new(edges, json_pack("{s:{s:s, s:s}, s:s}", "node", "name", r->id, "state",
		                                       run_state(r), "cursor", r->id));
	}
	json_decref(filters);
	set_json(rp, 200,
	         json_pack("{s:{s:{s:i, s:{s:o, s:{s:b, s:s?}}}}}", "data", "project", "runCount", count, "runs",
	                   "edges", edges, "pageInfo", "hasNextPage", more, "endCursor", NULL));
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Counts the request against the quota (under mu); 1 when it is over. */
static int over_quota(struct reply *rp)
{
	if (!quota_n)
		return 0;
	double t = now_s();
	if (window_at < 0 || t >= window_at + quota_s) { /* fixed windows from the first request */
		window_at = window_at < 0 ? t : window_at + quota_s * floor((t - window_at) / quota_s);
		window_used = 0;
	}
	window_used++;
	rp->quota = 1;
	rp->remaining = window_used >= quota_n ? 0 : 1000 * (quota_n - window_used) / quota_n;
	rp->reset = (long)ceil(window_at + quota_s - t);
	return window_used > quota_n;
}

static void write_stats(void)
{
	if (!stats_path)
		return;
	FILE *f = fopen(stats_path, "w");
	if (f) {
		fprintf(f, "requests %ld refused %ld max_inflight %ld\n", requests, refused, max_inflight);
		fclose(f);
	}
}

static void dispatch(const char *auth_ok, const char *body, size_t len, struct reply *rp)
{
	if (!auth_ok) {
		set_json(rp, 401, json_pack("{s:[{s:s}]}", "errors", "message", "user is not logged in"));
		return;
	}
	json_t *req = json_loadb(body, len, 0, NULL);
	const char *q = json_string_value(json_object_get(req, "query"));
	json_t *vars = json_object_get(req, "variables");
	if (!q) {
		set_json(rp, 400, json_pack("{s:s}", "error", "no query"));
		json_decref(req);
		return;
	}
	pthread_mutex_lock(&mu);
	requests++;
	if (over_quota(rp)) {
		refused++;
		set_json(rp, 429, json_pack("{s:[{s:s}]}", "errors", "message", "Rate limit exceeded"));
		write_stats();
		pthread_mutex_unlock(&mu);
		json_decref(req);
		return;
	}
	write_stats();
	if (reqlog) {
		char *v = json_dumps(vars, JSON_COMPACT | JSON_SORT_KEYS);
		fprintf(reqlog, "%.*s %s\n", (int)strcspn(q, "("), q, v ? v : "null");
		fflush(reqlog);
		free(v);
	}
	if (strstr(q, "query HistoryPage(")) {
		static const char *const kinds[] = {"429",     "ratelimit", "500",     "502",      "503",
		                                    "slow",    "truncate",  "badjson", "gqlerror", "badrow",
		                                    "drained", "zerobatch", NULL};
		const char *fault = "";
		for (int i = 0; kinds[i]; i++)
			if (take_fault(kinds[i])) {
				fault = kinds[i];
				break;
			}
		if (!strcmp(fault, "429") || !strcmp(fault, "ratelimit")) {
			set_json(rp, 429, json_pack("{s:[{s:s}]}", "errors", "message", "Rate limit exceeded"));
			snprintf(rp->header, sizeof(rp->header), "%s",
			         !strcmp(fault, "429") ? "Retry-After" : "RateLimit-Reset");
			snprintf(rp->hvalue, sizeof(rp->hvalue), "%g", retry_after);
		} else if (fault[0] == '5') {
			set_json(rp, atoi(fault), json_pack("{s:s}", "error", "upstream trouble"));
		} else {
			if (!strcmp(fault, "slow")) {
				pthread_mutex_unlock(&mu);
				usleep((useconds_t)slow_ms * 1000);
				pthread_mutex_lock(&mu);
			}
			history(vars, rp, fault);
			if (!strcmp(fault, "drained")) { /* a 200 that spends the quota for ~31 years */
				rp->quota = 1;
				rp->remaining = 0;
				rp->reset = 999999999;
			}
		}
	} else if (strstr(q, "query Run(")) {
		run_meta(vars, rp);
	} else if (strstr(q, "query Runs(")) {
		run_list(vars, rp);
	} else if (strstr(q, "mutation NotifyScriptableRunAlert(")) {
		if (take_fault("alertfail"))
			set_json(rp, 200, json_pack("{s:[{s:s}]}", "errors", "message", "run not found"));
		else
			set_json(rp, 200, json_pack("{s:{s:{s:b}}}", "data", "notifyScriptableRunAlert", "success", 1));
	} else if (strstr(q, "viewer")) {
		set_json(rp, 200, json_pack("{s:{s:{s:s}}}", "data", "viewer", "id", "VXNlcjox"));
	} else {
		set_json(rp, 400, json_pack("{s:[{s:s}]}", "errors", "message", "unknown query"));
	}
	pthread_mutex_unlock(&mu);
	json_decref(req);
}

struct upload {
	char *buf;
	size_t len;
};

/* Sends half the body, then fails the stream: a truncated response. */
static ssize_t half_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct reply *rp = cls;
	size_t half = rp->len / 2;
	if (pos >= half)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	size_t n = half - (size_t)pos < max ? half - (size_t)pos : max;
	memcpy(buf, rp->body + pos, n);
	return (ssize_t)n;
}

static void free_reply(void *cls)
{
	struct reply *rp = cls;
	free(rp->body);
	free(rp);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *data_size, void **state)
{
	struct upload *up = *state;
	(void)cls;
	(void)version;
	if (!up) {
		*state = calloc(1, sizeof(struct upload));
		return MHD_YES;
	}
	if (*data_size) {
		up->buf = realloc(up->buf, up->len + *data_size + 1);
		memcpy(up->buf + up->len, data, *data_size);
		up->len += *data_size;
		*data_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&mu);
	if (++inflight > max_inflight)
		max_inflight = inflight;
	pthread_mutex_unlock(&mu);
	if (latency_ms)
		usleep((useconds_t)latency_ms * 1000);
	struct reply *rp = calloc(1, sizeof(*rp));
	char *user = NULL, *pass = NULL;
	user = MHD_basic_auth_get_username_password(c, &pass);
	int ok = user && pass && !strcmp(user, "api") && !strcmp(pass, key);
	free(user);
	free(pass);
	if (strcmp(method, "POST") || strcmp(url, "/graphql"))
		set_json(rp, 404, json_pack("{s:s}", "error", "not found"));
	else
		dispatch(ok ? "ok" : NULL, up->buf ? up->buf : "", up->len, rp);
	struct MHD_Response *resp;
	if (rp->truncate) {
		resp = MHD_create_response_from_callback(rp->len, 4096, half_body, rp, free_reply);
	} else {
		resp = MHD_create_response_from_buffer(rp->len, rp->body, MHD_RESPMEM_MUST_FREE);
		rp->body = NULL;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (rp->header[0])
		MHD_add_response_header(resp, rp->header, rp->hvalue);
	if (rp->quota) {
		char v[32];
		MHD_add_response_header(resp, "RateLimit-Limit", "1000");
		snprintf(v, sizeof(v), "%ld", rp->remaining);
		MHD_add_response_header(resp, "RateLimit-Remaining", v);
		snprintf(v, sizeof(v), "%ld", rp->reset);
		MHD_add_response_header(resp, "RateLimit-Reset", v);
	}
	pthread_mutex_lock(&mu);
	inflight--;
	pthread_mutex_unlock(&mu);
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)rp->status, resp);
	MHD_destroy_response(resp);
	if (!rp->truncate)
		free_reply(rp);
	free(up->buf);
	free(up);
	*state = NULL;
	return ret;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *port_file = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--dump") && v) {
			struct run r;
			char buf[1024];
			parse_run(v, &r);
			r.visible = r.steps;
			for (long t = r.start; t < r.start + r.steps; t++)
				if (has_row(&r, t)) {
					row_json(&r, t, buf, sizeof(buf));
					puts(buf);
				}
			if (r.far) {
				row_json(&r, (long)r.far, buf, sizeof(buf));
				puts(buf);
			}
			return 0;
		} else if (!strcmp(a, "--port-file") && v) {
			port_file = argv[++i];
		} else if (!strcmp(a, "--key") && v) {
			snprintf(key, sizeof(key), "%s", argv[++i]);
		} else if (!strcmp(a, "--run") && v && nruns < MAX_RUNS) {
			parse_run(argv[++i], &runs[nruns++]);
		} else if (!strcmp(a, "--latency-ms") && v) {
			latency_ms = atol(argv[++i]);
		} else if (!strcmp(a, "--slow-ms") && v) {
			slow_ms = atol(argv[++i]);
		} else if (!strcmp(a, "--retry-after") && v) {
			retry_after = atof(argv[++i]);
		} else if (!strcmp(a, "--quota") && v) {
			if (sscanf(argv[++i], "%ld/%lf", &quota_n, &quota_s) != 2 || quota_n < 1 || quota_s <= 0) {
				fprintf(stderr, "fake_wandb: --quota wants N/SECONDS\n");
				return 2;
			}
		} else if (!strcmp(a, "--stats") && v) {
			stats_path = argv[++i];
		} else if (!strcmp(a, "--log") && v) {
			reqlog = fopen(argv[++i], "a");
		} else if (!strcmp(a, "--fault") && v && nfaults < MAX_FAULTS) {
			struct fault *f = &faults[nfaults++];
			if (sscanf(argv[++i], "%15[^:]:%d", f->kind, &f->left) != 2)
				f->left = 1;
		} else {
			fprintf(stderr, "fake_wandb: bad argument '%s'\n", a);
			return 2;
		}
	}
	struct MHD_Daemon *d =
	    MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle,
	                     NULL, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "fake_wandb: cannot start\n");
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (port_file) {
		FILE *fp = fopen(port_file, "w");
		fprintf(fp, "%u\n", info->port);
		fclose(fp);
	} else {
		printf("%u\n", info->port);
		fflush(stdout);
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while (!stop)
		usleep(50000);
	MHD_stop_daemon(d);
	return 0;
}
