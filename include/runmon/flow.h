/*
 * flow.h - how fast runmon asks a server: pacing by the quota the server
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
#ifndef RUNMON_FLOW_H
#define RUNMON_FLOW_H

#include <stdint.h>

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

#endif
