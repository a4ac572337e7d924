/*
 * http.c - see runmon/net.h.
 */
#include "runmon/net.h"

#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct rm_http {
	struct rm_http_opts o;
	CURLM *multi;
	struct curl_slist *headers;
	struct rm_http_req *waiting; /* backing off, by due time */
	struct rm_http_req *active;  /* in the multi handle */
	int running;                 /* easy handles in the multi */
	uint64_t rng;
	struct rm_flow flow;
	volatile sig_atomic_t *cancel; /* a signal handler's flag: waits end when set */
};

static double rand01(struct rm_http *h)
{
	h->rng = h->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(h->rng >> 11) * (1.0 / 9007199254740992.0);
}

void rm_http_opts_default(struct rm_http_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->user_agent = "W&B Public Client runmon/" RM_VERSION;
	o->timeout_ms = 30000;
	o->retry_max = 8;
	o->backoff_min = 2;
	o->backoff_max = 60;
	o->max_response = 256u << 20;
	o->max_connections = 16;
	o->max_jobs = 16;
}

double rm_http_backoff(const struct rm_http_opts *o, int attempt, double retry_after, double u)
{
	if (retry_after >= 0)
		return fmin(retry_after, RM_HTTP_MAX_WAIT);
	double d = o->backoff_min * pow(2, attempt - 1) * (1 + 0.25 * u);
	return fmin(d, o->backoff_max);
}

double rm_http_parse_retry_after(const char *v, double now)
{
	char *end;
	while (*v == ' ')
		v++;
	double secs = strtod(v, &end);
	if (end != v && (*end == '\0' || *end == '\r' || *end == ' ') && secs >= 0)
		return secs;
	time_t when = curl_getdate(v, NULL);
	if (when == -1)
		return -1;
	return fmax(0, (double)when - now);
}

struct rm_http *rm_http_new(const struct rm_http_opts *o)
{
	static int inited;
	if (!inited) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		inited = 1;
	}
	struct rm_http *h = rm_xcalloc(1, sizeof(*h));
	h->o = *o;
	h->multi = curl_multi_init();
	h->headers = curl_slist_append(NULL, "Content-Type: application/json");
	h->headers = curl_slist_append(h->headers, "Accept: application/json");
	h->rng = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)h;
	rm_flow_init(&h->flow, o->jobs, o->max_jobs);
	int conns = o->max_connections > h->flow.max ? o->max_connections : h->flow.max;
	curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)(o->jobs > conns ? o->jobs : conns));
	return h;
}

void rm_http_free(struct rm_http *h)
{
	if (!h)
		return;
	curl_multi_cleanup(h->multi);
	curl_slist_free_all(h->headers);
	free(h);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct rm_http_req *r = arg;
	size_t len = size * n;
	if (r->resp_len + len > r->limit) { /* a broken or hostile server */
		r->too_big = 1;
		return 0;
	}
	if (r->resp_len + len + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 65536;
		while (cap < r->resp_len + len + 1)
			cap *= 2;
		r->resp = rm_xrealloc(r->resp, cap);
		r->cap = cap;
	}
	memcpy(r->resp + r->resp_len, data, len);
	r->resp_len += len;
	r->resp[r->resp_len] = '\0';
	return len;
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
	struct rm_http_req *r = arg;
	size_t len = size * n;
	char buf[256];
	if (len >= sizeof(buf))
		return len;
	memcpy(buf, line, len);
	buf[len] = '\0';
	char *colon = strchr(buf, ':');
	if (!colon)
		return len;
	*colon = '\0';
	const char *v = colon + 1;
	char *end;
	if (!strcasecmp(buf, "Retry-After")) {
		r->retry_after = rm_http_parse_retry_after(v, (double)time(NULL));
	} else if (!strcasecmp(buf, "RateLimit-Reset") || !strcasecmp(buf, "RateLimit-Remaining")) {
		double x = strtod(v, &end);
		if (end != v && x >= 0 && x < 1e9 && !strcasecmp(buf, "RateLimit-Reset"))
			r->rl_reset = fmin(x, RM_HTTP_MAX_WAIT); /* a quota wait is bounded as Retry-After is */
		else if (end != v && x >= 0 && x < 1e9)
			r->rl_remaining = x;
	}
	return len;
}

static void launch(struct rm_http *h, struct rm_http_req *r)
{
	CURL *e = curl_easy_init();
	r->easy = e;
	r->attempts++;
	r->status = 0;
	r->resp_len = 0;
	r->retry_after = -1;
	r->rl_remaining = r->rl_reset = -1;
	r->limit = h->o.max_response;
	r->too_big = 0;
	if (r->resp)
		r->resp[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, h->o.url);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(e, CURLOPT_USERAGENT, h->o.user_agent);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* every encoding curl knows */
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, h->o.timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, h->o.timeout_ms < 10000 ? h->o.timeout_ms : 10000L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->o.max_response);
	if (h->o.userpwd) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERPWD, h->o.userpwd);
	}
	curl_multi_add_handle(h->multi, e);
	r->next = h->active;
	h->active = r;
	h->running++;
	double now = rm_monotonic();
	r->flow_seq = rm_flow_sent(&h->flow, now, r->held_since > 0 ? now - r->held_since : 0);
	r->held_since = 0;
}

static void queue_waiting(struct rm_http *h, struct rm_http_req *r)
{
	struct rm_http_req **p = &h->waiting;
	while (*p && (*p)->due <= r->due)
		p = &(*p)->next;
	r->next = *p;
	*p = r;
}

/* Holds r back when the quota wants the next request later; 1 if held. */
static int hold(struct rm_http *h, struct rm_http_req *r, double now)
{
	double at = rm_flow_next(&h->flow, now);
	if (at <= now)
		return 0;
	if (!r->held_since)
		r->held_since = now;
	r->due = at;
	queue_waiting(h, r);
	return 1;
}

void rm_http_start(struct rm_http *h, struct rm_http_req *r)
{
	r->attempts = 0;
	r->ok = 0;
	r->code = RM_OK;
	r->err[0] = '\0';
	r->held_since = 0;
	if (!hold(h, r, rm_monotonic()))
		launch(h, r);
}

int rm_http_concurrency(const struct rm_http *h)
{
	return rm_flow_concurrency(&h->flow);
}

const struct rm_flow *rm_http_flow(const struct rm_http *h)
{
	return &h->flow;
}

void rm_http_set_cancel(struct rm_http *h, volatile sig_atomic_t *flag)
{
	h->cancel = flag;
}

void rm_http_cancel_all(struct rm_http *h)
{
	for (struct rm_http_req *r = h->active, *next; r; r = next) {
		next = r->next;
		curl_multi_remove_handle(h->multi, (CURL *)r->easy);
		curl_easy_cleanup((CURL *)r->easy);
		r->easy = NULL;
		r->next = NULL;
		rm_http_req_release(r);
	}
	for (struct rm_http_req *r = h->waiting, *next; r; r = next) {
		next = r->next;
		r->next = NULL;
		rm_http_req_release(r);
	}
	h->active = h->waiting = NULL;
	h->running = 0;
	h->running = 0;
}

int rm_http_pending(const struct rm_http *h)
{
	int n = h->running;
	for (const struct rm_http_req *r = h->waiting; r; r = r->next)
		n++;
	return n;
}

void rm_http_req_release(struct rm_http_req *r)
{
	free(r->resp);
	r->resp = NULL;
	r->resp_len = r->cap = 0;
}

/* Queues r for another attempt after its backoff; a terminal is told
 * (the why never holds the URL's secrets: it is curl's or the status's). */
static void wait_retry(struct rm_http *h, struct rm_http_req *r, const char *why)
{
	double wait = rm_http_backoff(&h->o, r->attempts, r->retry_after, rand01(h));
	r->due = rm_monotonic() + wait;
	rm_progress_note("retrying %d/%d in %.0f s: %s", r->attempts, h->o.retry_max, wait, why);
	queue_waiting(h, r);
}

/* Queues r again after its backoff (the server's Retry-After when
 * retry_after >= 0); 0 when the retries are used up. */
static int retry(struct rm_http *h, struct rm_http_req *r, const char *why, double retry_after)
{
	if (r->attempts > h->o.retry_max) {
		snprintf(r->err, sizeof(r->err), "%s (gave up after %d attempts)", why, r->attempts);
		r->ok = 0;
		r->code = RM_E_NET;
		return 0;
	}
	r->ok = 0;
	r->retry_after = retry_after;
	wait_retry(h, r, why);
	return 1;
}

int rm_http_retry(struct rm_http *h, struct rm_http_req *r, const char *why)
{
	return retry(h, r, why, -1); /* a 200 with a bad body: no server advice */
}

static int retryable_status(long s)
{
	switch (s) {
	case 400:
	case 401:
	case 403:
	case 404:
	case 409:
	case 410:
	case 413:
	case 422:
	case 501: return 0;
	default: return s == 0 || s >= 400;
	}
}

static int retryable_curl(CURLcode c)
{
	switch (c) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_TOO_MANY_REDIRECTS:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_FILESIZE_EXCEEDED:
	case CURLE_LOGIN_DENIED: return 0;
	default: return 1;
	}
}

/* Decides what a finished attempt means: 1 done for good, 0 retrying. */
static int finish(struct rm_http *h, struct rm_http_req *r, CURLcode c)
{
	curl_easy_getinfo((CURL *)r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	curl_off_t us = 0;
	curl_easy_getinfo((CURL *)r->easy, CURLINFO_TOTAL_TIME_T, &us);
	rm_flow_response(&h->flow, rm_monotonic(), r->flow_seq, c == CURLE_OK ? r->status : 0,
	                 c == CURLE_OPERATION_TIMEDOUT, (double)us / 1e6, r->rl_remaining, r->rl_reset, h->running,
	                 r->cls);
	/* RateLimit-Reset says when a 429's quota returns; other statuses back off. */
	if (r->status == 429 && r->retry_after < 0 && r->rl_reset >= 0)
		r->retry_after = r->rl_reset;
	for (struct rm_http_req **p = &h->active; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	r->next = NULL;
	curl_multi_remove_handle(h->multi, (CURL *)r->easy);
	curl_easy_cleanup((CURL *)r->easy);
	r->easy = NULL;
	h->running--;
	if (c == CURLE_OK && r->status >= 200 && r->status < 300) {
		r->ok = 1;
		return 1;
	}
	char why[256];
	int again;
	if (c != CURLE_OK) {
		snprintf(why, sizeof(why), "%s", curl_easy_strerror(c));
		again = retryable_curl(c) && !r->too_big;
		if (r->too_big || c == CURLE_FILESIZE_EXCEEDED)
			snprintf(why, sizeof(why), "response larger than %zu bytes", h->o.max_response);
	} else {
		snprintf(why, sizeof(why), "HTTP %ld", r->status);
		again = retryable_status(r->status);
	}
	if (again && retry(h, r, why, r->retry_after))
		return 0;
	if (!again) {
		snprintf(r->err, sizeof(r->err), "%s", why);
		r->code = r->status == 404 ? RM_E_NOTFOUND : RM_E_NET;
	}
	return 1;
}

/* Every request in flight or waiting fails "interrupted", and leaves. */
static void interrupt_all(struct rm_http *h)
{
	struct rm_http_req *lists[2] = {h->active, h->waiting};
	for (int i = 0; i < 2; i++)
		for (struct rm_http_req *r = lists[i]; r; r = r->next) {
			r->ok = 0;
			r->code = RM_E_NET;
			snprintf(r->err, sizeof(r->err), "interrupted (SIGINT or SIGTERM)");
		}
	rm_http_cancel_all(h);
}

struct rm_http_req *rm_http_wait(struct rm_http *h)
{
	for (;;) {
		if (h->cancel && *h->cancel) {
			interrupt_all(h);
			return NULL;
		}
		/* Start retries whose backoff is over. */
		double now = rm_monotonic();
		while (h->waiting && h->waiting->due <= now) {
			struct rm_http_req *r = h->waiting;
			h->waiting = r->next;
			r->next = NULL;
			if (!hold(h, r, now))
				launch(h, r);
		}
		if (!h->running && !h->waiting)
			return NULL;
		int still;
		curl_multi_perform(h->multi, &still);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(h->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct rm_http_req *r;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
			if (finish(h, r, m->data.result))
				return r;
		}
		/* at most 100 ms a wait: a signal's flag is seen that soon */
		int timeout = 100;
		if (h->waiting) {
			double ms = (h->waiting->due - rm_monotonic()) * 1000;
			timeout = ms < 0 ? 0 : ms > 100 ? 100 : (int)ms + 1;
		}
		if (h->running)
			curl_multi_poll(h->multi, NULL, 0, timeout, NULL);
		else if (timeout > 0) {
			struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
}
