/*
 * http.h - JSON POSTs over HTTP(S) with concurrency and a retry policy.
 *
 * The only module that talks to libcurl. Requests run concurrently on one
 * curl multi handle (keep-alive, compression); a failed attempt waits out
 * its backoff in a queue without blocking the others; requests are paced by
 * the quota the server advertises and kept in flight by the limit of
 * flow.h. Retry policy (W&B's
 * own, wandb-api.md section 4): connection errors, timeouts, 408, 429 and
 * 5xx except 501 are retried with jittered exponential backoff, honouring
 * Retry-After and RateLimit-Reset; 400, 401, 403, 404, 409, 410, 413, 422
 * and 501 fail at once. The credentials never appear in messages.
 */
#ifndef RUNMON_HTTP_H
#define RUNMON_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/flow.h"

struct rm_http_opts {
	const char *url;     /* POST target */
	const char *userpwd; /* "user:password" for Basic auth, or NULL (secret) */
	const char *user_agent;
	long timeout_ms;     /* per attempt */
	int retry_max;       /* retries after the first attempt */
	double backoff_min;  /* seconds */
	double backoff_max;  /* seconds */
	size_t max_response; /* bytes; a larger body is an error */
	int max_connections; /* connections kept to the host */
	int jobs;            /* requests in flight: a fixed number, or 0 adaptive (see flow.h) */
	int max_jobs;        /* the adaptive bound (default 16) */
};
void rm_http_opts_default(struct rm_http_opts *o);

struct rm_http_req {
	const char *body; /* borrowed until the request completes */
	size_t body_len;
	void *user; /* caller's tag */
	int cls;    /* the kind of request, for the latency signal (flow.h); 0: small */
	/* Filled on completion: */
	long status; /* HTTP status, 0 if none */
	char *resp;  /* NUL-terminated body (owned by the request) */
	size_t resp_len;
	int attempts;
	int ok;              /* 2xx */
	enum rm_status code; /* on failure: RM_E_NET (or RM_E_NOTFOUND for 404) */
	char err[384];       /* on failure: what happened */
	/* Internal. */
	void *easy;
	size_t cap;
	size_t limit; /* max_response of the client */
	int too_big;
	double due;                    /* monotonic seconds: when a retry may start */
	double retry_after;            /* seconds the server asked for, -1 if none */
	double rl_remaining, rl_reset; /* RateLimit-Remaining, RateLimit-Reset; -1 if absent */
	double held_since;             /* monotonic: when pacing first held it back, 0 if not */
	uint64_t flow_seq;             /* its number in the flow (flow.h) */
	struct rm_http_req *next;
};

struct rm_http;

struct rm_http *rm_http_new(const struct rm_http_opts *o);
void rm_http_free(struct rm_http *h);

/* Queues req; it runs during rm_http_wait. */
void rm_http_start(struct rm_http *h, struct rm_http_req *req);
/* Runs transfers until a queued request completes for good (success or a
 * final failure) and returns it; NULL when nothing is queued. */
struct rm_http_req *rm_http_wait(struct rm_http *h);
/* Sends a completed request again after a backoff, e.g. when its 200
 * body was truncated or not JSON; fails it (returns 0) when the retries
 * are used up, setting req->err from why. */
int rm_http_retry(struct rm_http *h, struct rm_http_req *req, const char *why);
/* Drops every queued and in-flight request (their responses are freed). */
void rm_http_cancel_all(struct rm_http *h);
/* Number of requests queued or in flight. */
int rm_http_pending(const struct rm_http *h);
/* Requests to keep in flight now (fixed, or the adaptive limit), and the
 * flow state behind it (quota, counts) for progress and --stats. */
int rm_http_concurrency(const struct rm_http *h);
const struct rm_flow *rm_http_flow(const struct rm_http *h);
/* Frees the response of a completed request. */
void rm_http_req_release(struct rm_http_req *req);

/* Delay before retry number `attempt` (1-based): the server's
 * Retry-After if any (capped at 600 s), else min * 2^(attempt-1) * (1 +
 * 0.25 u) capped at max, u uniform in [0,1). Exposed for the tests. */
double rm_http_backoff(const struct rm_http_opts *o, int attempt, double retry_after, double u);
/* Parses a Retry-After value: delta seconds or an RFC 1123 date; -1 if
 * neither. now is the current unix time. */
double rm_http_parse_retry_after(const char *value, double now);

#endif
