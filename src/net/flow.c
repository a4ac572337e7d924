/*
 * flow.c - see runmon/net.h.
 */
#include "runmon/net.h"

#include <math.h>
#include <string.h>

#define START_LIMIT 2
#define JUMP_FACTOR 2.0  /* a round trip this many times the recent minimum... */
#define JUMP_SLACK  0.05 /* ...and this many seconds above it is a latency jump */

void rm_flow_init(struct rm_flow *f, int pinned, int max)
{
	memset(f, 0, sizeof(*f));
	f->pinned = pinned;
	f->max = max > 0 ? max : 16;
	f->limit = pinned ? pinned : START_LIMIT < f->max ? START_LIMIT : f->max;
	f->peak = (int)f->limit;
}

/* Once the window's length and size are known, a window rolls over by the
 * client's own clock and starts as full as the last one did; a response
 * then corrects it. Before that, nothing is paced once the window is over,
 * until a response tells. */
static void roll(struct rm_flow *f, double now)
{
	if (!f->quota_known || now < f->window_end)
		return;
	if (f->period <= 0 || f->full <= 0) {
		f->quota_known = 0;
		return;
	}
	f->window_end += f->period * (floor((now - f->window_end) / f->period) + 1);
	f->remaining = f->full;
	f->seen = 0;
	f->roll_seq = f->sent;
}

double rm_flow_next(struct rm_flow *f, double now)
{
	roll(f, now);
	if (!f->quota_known)
		return now;
	if (f->remaining <= 0 || f->remaining < f->cost) /* spent, counting the requests in flight */
		return f->window_end;
	if (f->cost <= 0)
		return now;
	/* The rest, evenly over the time left; once the window's size and
	 * length are known, no slower than the quota's own rate either: when the
	 * window's end is overestimated, requests then reach past the true end,
	 * come back from a fresh window, and correct the estimate. */
	double spacing = (f->window_end - now) / (f->remaining / f->cost);
	if (f->full > 0 && f->period > 0)
		spacing = fmin(spacing, f->period * f->cost / f->full);
	double at = f->last_send + spacing;
	return at > now ? at : now;
}

uint64_t rm_flow_sent(struct rm_flow *f, double now, double waited)
{
	roll(f, now);
	if (f->quota_known && f->cost > 0)
		f->remaining -= f->cost;
	f->last_send = now;
	if (waited > 0)
		f->paced += waited;
	return ++f->sent;
}

static double min_rtt(const struct rm_flow *f, int cls)
{
	int n = f->nrtt[cls] < RM_FLOW_RTTS ? f->nrtt[cls] : RM_FLOW_RTTS;
	double m = INFINITY;
	for (int i = 0; i < n; i++)
		m = fmin(m, f->rtt[cls][i]);
	return m;
}

/* The quota from one response's headers. The server counted the request
 * when it arrived, taken as halfway through its round trip; Remaining then
 * was R, so what is left now is R less what the requests sent after it
 * spend. The window ends by arrival + Reset at the latest (Reset may be
 * whole seconds, rounded up): the earliest such bound in a window is kept.
 * The cost of a request is learnt from R's fall between requests of one
 * window; a rise past that starts a new window. */
static void observe_quota(struct rm_flow *f, double now, double rtt, uint64_t seq, long status, double remaining,
                          double reset)
{
	if (remaining < 0 || reset < 0)
		return;
	double arrived = now - rtt / 2, end = arrived + reset;
	f->period = fmax(f->period, reset);
	if (status == 429) { /* the server's word: nothing left until then */
		f->remaining = 0;
		f->window_end = now + reset;
		f->quota_known = 1;
		f->seen = 0;
		return;
	}
	roll(f, now);
	/* Counted in the window before this one: it arrived before the window
	 * began, or it was sent before the roll and reports a spent window. */
	if (f->quota_known && !f->seen && f->period > 0 &&
	    (arrived < f->window_end - f->period || (seq <= f->roll_seq && remaining + 2 * f->cost < f->full)))
		return;
	int fresh = !f->quota_known || (f->seen && seq > f->obs_seq && remaining > f->obs_remaining + 2 * f->cost);
	if (f->seen && seq <= f->obs_seq)
		return; /* older than what is known */
	if (f->seen && !fresh && remaining < f->obs_remaining) {
		double drop = (f->obs_remaining - remaining) / (double)(seq - f->obs_seq);
		f->cost = f->cost > 0 ? 0.8 * f->cost + 0.2 * drop : drop;
	}
	f->window_end = fresh ? end : fmin(f->window_end, end);
	f->quota_known = 1;
	f->seen = 1;
	f->obs_seq = seq;
	f->obs_remaining = remaining;
	f->remaining = remaining - f->cost * (double)(f->sent - seq);
	if (f->cost > 0)
		f->full = fmax(f->full, remaining + f->cost);
}

void rm_flow_response(struct rm_flow *f, double now, uint64_t seq, long status, int timed_out, double rtt,
                      double remaining, double reset, int inflight, int cls)
{
	f->responses++;
	if (status == 429)
		f->refused++;
	observe_quota(f, now, rtt, seq, status, remaining, reset);
	if (f->pinned)
		return;
	int ok = status >= 200 && status < 300;
	cls = cls >= 0 && cls < RM_FLOW_CLASSES ? cls : 0;
	if (ok && rtt > 0)
		f->rtt[cls][f->nrtt[cls]++ % RM_FLOW_RTTS] = rtt;
	double base = min_rtt(f, cls);
	int jump = ok && isfinite(base) && rtt > JUMP_FACTOR * base && rtt > base + JUMP_SLACK;
	int congested = status == 429 || (status >= 500 && status != 501) || timed_out || jump;
	if (congested) {
		/* Once per round trip: the responses of one burst are one event. */
		double rt = isfinite(base) ? base : rtt;
		if (now - f->last_cut >= rt) {
			f->limit = fmax(1, floor(f->limit / 2));
			f->last_cut = now;
			f->cuts++;
		}
		f->congested_once = 1;
	} else if (ok && inflight >= (int)f->limit) {
		f->limit += f->congested_once ? 1 / f->limit : 1;
		if (f->limit > f->max)
			f->limit = f->max;
	}
	if ((int)f->limit > f->peak)
		f->peak = (int)f->limit;
}

int rm_flow_concurrency(const struct rm_flow *f)
{
	return f->pinned ? f->pinned : (int)f->limit;
}
