/*
 * net.h - the net layer: HTTP with retries and pacing (the only user of
 * libcurl), the flow control that paces requests by what the server says,
 * and the metrics endpoint (the only user of libmicrohttpd).
 */
#ifndef RUNMON_NET_H
#define RUNMON_NET_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"

/* ==== flow ================================================================== */
/*
 * how fast runmon asks a server: pacing by the quota the server
 * advertises, and the number of requests in flight.
 *
 * Quota. W&B tells on every response where the client stands
 * (wandb-api.md, "Rate limits"): RateLimit-Limit and RateLimit-Remaining,
 * both scaled 0..1000, and RateLimit-Reset, the seconds until the window
 * resets. The cost of one request in those units is learnt from how
 * Remaining falls between responses; what is left (less what the requests
 * sent since will spend) is then spent evenly over the time left. When
 * nothing is left, requests wait for the reset instead of drawing 429s;
 * once a window's length and size are known, the next one starts by the
 * client's clock, not a round trip later.
 *
 * Concurrency: additive increase, multiplicative decrease, as TCP's
 * congestion control (RFC 5681) and Netflix's concurrency-limits do. It
 * starts at 2 and doubles per round trip (one more per completion) until
 * the first sign of congestion, then grows by one per round trip; a 429,
 * a 5xx, a timeout or a latency jump (more than twice the recent minimum,
 * and 50 ms above it) halves it, at most once per round trip. It grows
 * only while the limit is in use. Bounds [1, max].
 *
 * Pure: times come in as arguments, so the tests drive it with a clock of
 * their own.
 */
#define RM_FLOW_RTTS    32
#define RM_FLOW_CLASSES 2 /* latency is compared within a class: small requests, history windows */

struct rm_flow {
	/* The quota, from the last responses (scaled units). */
	int quota_known;
	double remaining;  /* left in this window once the requests sent so far are counted */
	double window_end; /* monotonic seconds, at the latest */
	double cost;       /* units a request spends, 0 until learnt */
	double full;       /* units a window starts with, 0 until learnt */
	double period;     /* the window's length: the longest Reset seen */
	int seen;          /* a response of this window came */
	uint64_t obs_seq;  /* the request behind the latest response, and its Remaining */
	double obs_remaining;
	uint64_t sent;     /* requests sent: their sequence numbers */
	uint64_t roll_seq; /* the last request sent before this window rolled in */
	double last_send;  /* monotonic seconds */
	/* Concurrency. */
	int pinned; /* a fixed number (--jobs), 0 adaptive */
	int max;
	double limit;
	int congested_once; /* slow start is over */
	double rtt[RM_FLOW_CLASSES][RM_FLOW_RTTS];
	int nrtt[RM_FLOW_CLASSES];
	double last_cut;
	/* For --stats. */
	uint64_t responses, refused, cuts;
	double paced; /* seconds requests waited for the quota */
	int peak;
};

/* pinned: a fixed concurrency (0: adaptive within [1, max]). */
void rm_flow_init(struct rm_flow *f, int pinned, int max);
/* The earliest time the next request may start (<= now: at once). */
double rm_flow_next(struct rm_flow *f, double now);
/* A request starts at now, having waited `waited` seconds for the quota;
 * returns its sequence number, for rm_flow_response. */
uint64_t rm_flow_sent(struct rm_flow *f, double now, double waited);
/* A response (status 0: a transport error; timed_out: no answer in time)
 * after rtt seconds, with the RateLimit headers (-1 when absent), and the
 * requests in flight when it came, itself included. cls: the kind of
 * request (0..RM_FLOW_CLASSES-1): a round trip is a jump only against the
 * recent minimum of its own kind, as a run's metadata answers faster than
 * a window of 1000 rows. */
void rm_flow_response(struct rm_flow *f, double now, uint64_t seq, long status, int timed_out, double rtt,
                      double remaining, double reset, int inflight, int cls);
/* Requests to keep in flight. */
int rm_flow_concurrency(const struct rm_flow *f);

/* ==== http ================================================================== */
/*
 * JSON POSTs over HTTP(S) with concurrency and a retry policy.
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

/* The longest a server can hold a request back: Retry-After and
 * RateLimit-Reset above it are read as this many seconds. */
#define RM_HTTP_MAX_WAIT 600

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
/* When *flag becomes nonzero (a SIGINT/SIGTERM handler sets it), waits end
 * within 0.1 s: rm_http_wait fails every request "interrupted" and returns
 * NULL. NULL: no such flag. */
void rm_http_set_cancel(struct rm_http *h, volatile sig_atomic_t *flag);

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

/* ==== metrics server ============================================================= */
/*
 * metrics server - an HTTP endpoint that serves the latest rendering of
 * the metrics (watch --metrics), /-/healthy and /-/ready. A scrape copies
 * the text under a mutex and never waits for a tick, and a tick never
 * waits for a scraper (libmicrohttpd's own thread, non-blocking sockets,
 * a connection timeout and limit).
 */
struct rm_metrics_server;

/* Listens on spec ("PORT", ":PORT" or "ADDR:PORT", "[V6]:PORT"; no
 * address is 127.0.0.1; PORT 0 picks a free one) and serves path, /-/healthy
 * and /-/ready. *url gets the address it serves, like
 * "http://127.0.0.1:9464/metrics". */
int rm_metrics_server_start(const char *spec, const char *path, struct rm_metrics_server **out, char *url, size_t n,
                            struct rm_err *err);
/* Replaces the text scrapes get; takes ownership of text. */
void rm_metrics_server_publish(struct rm_metrics_server *s, char *text, size_t len);
/* /-/ready answers 200 from now on (503 before: the first tick runs). */
void rm_metrics_server_ready(struct rm_metrics_server *s);
void rm_metrics_server_stop(struct rm_metrics_server *s);

#endif
