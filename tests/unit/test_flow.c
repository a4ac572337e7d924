/*
 * test_flow.c - pacing by an advertised quota and the adaptive number of
 * requests in flight, driven by a simulated server and clock.
 */
#include <math.h>
#include <string.h>

#include "runmon/net.h"
#include "testutil.h"

/* A server with a fixed-window quota (quota requests per `window`
 * seconds; 0: none), answering each request `latency` seconds after it is
 * sent; it counts a request when it arrives, halfway. RateLimit-Reset is
 * rounded up to whole seconds, as the fake W&B server does. */
struct sim {
	int quota;
	double window, latency;
	double due[64];
	long status[64];
	double remaining[64], reset[64];
	uint64_t seq[64];
	int n; /* in flight */
	int per_window[256];
	long sent, refused;
};

static void send(struct sim *s, struct rm_flow *f, double t)
{
	double arrive = t + s->latency / 2;
	int w = s->quota ? (int)(arrive / s->window) : 0;
	int used = ++s->per_window[w];
	int i = s->n++;
	s->due[i] = t + s->latency;
	s->status[i] = s->quota && used > s->quota ? 429 : 200;
	s->remaining[i] = !s->quota ? -1 : used >= s->quota ? 0 : 1000.0 * (s->quota - used) / s->quota;
	s->reset[i] = s->quota ? ceil((w + 1) * s->window - arrive) : -1;
	s->refused += s->status[i] == 429;
	s->sent++;
	s->seq[i] = rm_flow_sent(f, t, 0);
}

/* Runs until `total` requests succeeded; returns the time it took. A
 * refused request is sent again (its retry waits like any other). */
static double run(struct sim *s, struct rm_flow *f, long total)
{
	double t = 0;
	long done = 0;
	while (done < total) {
		double next = INFINITY;
		if (s->n < rm_flow_concurrency(f) && s->sent - s->refused < total) {
			double at = rm_flow_next(f, t);
			if (at <= t) {
				send(s, f, t);
				continue;
			}
			next = at;
		}
		int first = 0;
		for (int i = 1; i < s->n; i++)
			if (s->due[i] < s->due[first])
				first = i;
		if (s->n && s->due[first] <= next) {
			t = s->due[first];
			rm_flow_response(f, t, s->seq[first], s->status[first], 0, s->latency, s->remaining[first],
			                 s->reset[first], s->n, 0);
			done += s->status[first] == 200;
			s->n--;
			s->due[first] = s->due[s->n];
			s->status[first] = s->status[s->n];
			s->remaining[first] = s->remaining[s->n];
			s->reset[first] = s->reset[s->n];
			s->seq[first] = s->seq[s->n];
		} else {
			assert_true(isfinite(next));
			t = next;
		}
	}
	return t;
}

static void spends_the_quota_evenly(void **state)
{
	/* 20 a second: 300 requests take 15 s at best. 10 ms away, and 200 ms
	 * (the window's end is learnt later, by a round trip's share). */
	double latency[] = {0.01, 0.2}, most[] = {1.1, 1.25};
	for (int k = 0; k < 2; k++) {
		struct sim s = {.quota = 20, .window = 1, .latency = latency[k]};
		struct rm_flow f;
		rm_flow_init(&f, 0, 16);
		double t = run(&s, &f, 300);
		assert_int_equal(s.refused, 0);
		assert_true(t <= 15 * most[k]);
		for (int w = 0; w < (int)t; w++)
			assert_true(s.per_window[w] <= 20);
	}
	/* A 10 s window of 50, 200 ms away. */
	struct sim slow = {.quota = 50, .window = 10, .latency = 0.2};
	struct rm_flow f;
	rm_flow_init(&f, 0, 16);
	double t = run(&slow, &f, 200);
	assert_int_equal(slow.refused, 0);
	assert_true(t <= 40 * 1.2);
}

static void bursts_without_a_quota(void **state)
{
	/* No headers: no pacing; the limit climbs to the maximum. */
	struct sim s = {.latency = 0.05};
	struct rm_flow f;
	rm_flow_init(&f, 0, 16);
	double t = run(&s, &f, 400);
	assert_int_equal(rm_flow_concurrency(&f), 16);
	assert_int_equal(f.cuts, 0);
	assert_true(t < 400 * 0.05 / 8); /* far beyond one at a time */
	assert_true(f.paced == 0);
}

static void halves_once_per_round_trip(void **state)
{
	struct rm_flow f;
	rm_flow_init(&f, 0, 16);
	for (int i = 0; i < 20; i++) /* the limit in use: it grows (slow start) */
		rm_flow_response(&f, 0.1 * i, 0, 200, 0, 0.1, -1, -1, rm_flow_concurrency(&f), 0);
	assert_int_equal(rm_flow_concurrency(&f), 16);
	/* A burst of 429s within one round trip: halved once. */
	for (int i = 0; i < 5; i++)
		rm_flow_response(&f, 3 + 0.01 * i, 0, 429, 0, 0.1, -1, -1, 16, 0);
	assert_int_equal(rm_flow_concurrency(&f), 8);
	assert_int_equal(f.cuts, 1);
	assert_int_equal(f.refused, 5);
	/* A timeout a round trip later: halved again; then a latency jump. */
	rm_flow_response(&f, 3.2, 0, 0, 1, 30, -1, -1, 8, 0);
	assert_int_equal(rm_flow_concurrency(&f), 4);
	rm_flow_response(&f, 3.4, 0, 200, 0, 0.5, -1, -1, 4, 0);
	assert_int_equal(rm_flow_concurrency(&f), 2);
	/* Congestion ended slow start: now 1/limit more per response, about
	 * one per round trip: 2 + 1/2 + 1/2.5 = 2.9, then 3.24. */
	for (int i = 0; i < 2; i++)
		rm_flow_response(&f, 4 + 0.1 * i, 0, 200, 0, 0.1, -1, -1, 2, 0);
	assert_int_equal(rm_flow_concurrency(&f), 2);
	rm_flow_response(&f, 4.2, 0, 200, 0, 0.1, -1, -1, 2, 0);
	assert_int_equal(rm_flow_concurrency(&f), 3);
	/* Not in use (one request at a time): no growth. */
	for (int i = 0; i < 50; i++)
		rm_flow_response(&f, 5 + 0.1 * i, 0, 200, 0, 0.1, -1, -1, 1, 0);
	assert_int_equal(rm_flow_concurrency(&f), 3);
	for (int i = 0; i < 50; i++) /* never below one */
		rm_flow_response(&f, 10 + i, 0, 503, 0, 0.1, -1, -1, 1, 0);
	assert_int_equal(rm_flow_concurrency(&f), 1);
}

static void kinds_are_compared_apart(void **state)
{
	/* Metadata answers in 50 ms, windows of rows in 300 ms: no jump. */
	struct rm_flow f;
	rm_flow_init(&f, 0, 16);
	for (int i = 0; i < 10; i++) {
		rm_flow_response(&f, i, 0, 200, 0, 0.05, -1, -1, 1, 0);
		rm_flow_response(&f, i + 0.5, 0, 200, 0, 0.3, -1, -1, rm_flow_concurrency(&f), 1);
	}
	assert_int_equal(f.cuts, 0);
	assert_int_equal(rm_flow_concurrency(&f), 12);
	/* A window that takes three times as long as the others is one. */
	rm_flow_response(&f, 20, 0, 200, 0, 0.9, -1, -1, 12, 1);
	assert_int_equal(f.cuts, 1);
	assert_int_equal(rm_flow_concurrency(&f), 6);
}

static void pinned_stays(void **state)
{
	struct rm_flow f;
	rm_flow_init(&f, 4, 16);
	rm_flow_response(&f, 1, 0, 429, 0, 0.1, 0, 2, 4, 0);
	assert_int_equal(rm_flow_concurrency(&f), 4);
	for (int i = 0; i < 10; i++)
		rm_flow_response(&f, 2 + i, 0, 200, 0, 0.1, -1, -1, 4, 0);
	assert_int_equal(rm_flow_concurrency(&f), 4);
	/* Pinned or not, the quota holds requests back: a 429 until its reset. */
	assert_true(fabs(rm_flow_next(&f, 1.5) - 3) < 1e-9);
}

static void waits_for_the_reset_when_spent(void **state)
{
	struct rm_flow f;
	rm_flow_init(&f, 0, 16);
	uint64_t a = rm_flow_sent(&f, 9.9, 0), b = rm_flow_sent(&f, 10.0, 0);
	/* Arrived at 9.95 and 10.05 (halfway): 300, then 200 left, 5 s to go. */
	rm_flow_response(&f, 10.0, a, 200, 0, 0.1, 300, 5, 2, 0);
	rm_flow_response(&f, 10.1, b, 200, 0, 0.1, 200, 5, 1, 0);
	assert_true(fabs(f.cost - 100) < 1e-9);
	assert_true(fabs(f.window_end - 14.95) < 1e-9); /* the earliest arrival + Reset */
	/* 2 requests left over 4.85 s would be one every 2.425 s; the quota's
	 * own rate (a window holds 300: 3 requests in 5 s) is one every 1.67 s,
	 * and the faster of the two wins, so that requests reach the end. */
	assert_true(fabs(rm_flow_next(&f, 10.1) - (10.0 + 5.0 / 3)) < 1e-9);
	rm_flow_sent(&f, 12.5, 0);
	assert_true(fabs(rm_flow_next(&f, 12.5) - (12.5 + 5.0 / 3)) < 1e-9);
	rm_flow_sent(&f, 13, 0);
	/* Spent, counting the one in flight: wait for the reset; then a window
	 * as full as this one was (its first response: 300 + one request). */
	assert_true(fabs(rm_flow_next(&f, 13.5) - 14.95) < 1e-9);
	assert_true(rm_flow_next(&f, 14.95) <= 14.95);
	assert_true(fabs(f.remaining - 300) < 1e-9 && fabs(f.window_end - 19.95) < 1e-9);
	/* A new window seen early by a rise in Remaining: the cost learnt stays. */
	struct rm_flow g;
	rm_flow_init(&g, 0, 16);
	uint64_t s1 = rm_flow_sent(&g, 0, 0), s2 = rm_flow_sent(&g, 0.1, 0), s3 = rm_flow_sent(&g, 0.2, 0);
	rm_flow_response(&g, 0.1, s1, 200, 0, 0.1, 800, 60, 3, 0);
	rm_flow_response(&g, 0.2, s2, 200, 0, 0.1, 700, 60, 2, 0);
	rm_flow_response(&g, 0.3, s3, 200, 0, 0.1, 950, 60, 1, 0);
	assert_true(fabs(g.remaining - 950) < 1e-9 && fabs(g.window_end - 60.25) < 1e-9);
	assert_true(fabs(g.cost - 100) < 1e-9);
}

static void late_answers_of_a_spent_window_are_old_news(void **state)
{
	struct rm_flow f;
	rm_flow_init(&f, 0, 16);
	uint64_t s1 = rm_flow_sent(&f, 0, 0), s2 = rm_flow_sent(&f, 0.05, 0), s3 = rm_flow_sent(&f, 0.99, 0);
	rm_flow_response(&f, 0.01, s1, 200, 0, 0.01, 950, 1, 3, 0);
	rm_flow_response(&f, 0.06, s2, 200, 0, 0.01, 900, 1, 2, 0);
	assert_true(fabs(f.window_end - 1.005) < 1e-9 && fabs(f.full - 950) < 1e-9);
	/* The window rolls by the client's clock: full again, and the next
	 * request goes at the quota's rate after the last (950 a second). */
	assert_true(fabs(rm_flow_next(&f, 1.006) - (0.99 + 50.0 / 950)) < 1e-3);
	assert_true(fabs(f.remaining - 950) < 1e-9 && fabs(f.window_end - 2.005) < 1e-9);
	/* s3, sent before the roll, answers after it with the old window's
	 * nearly spent quota: not this window's. */
	rm_flow_response(&f, 1.02, s3, 200, 0, 0.002, 100, 1, 1, 0);
	assert_true(fabs(f.remaining - 950) < 1e-9 && fabs(f.window_end - 2.005) < 1e-9);
	/* A request sent after the roll tells how the new window stands. */
	uint64_t s4 = rm_flow_sent(&f, 1.03, 0);
	rm_flow_response(&f, 1.05, s4, 200, 0, 0.02, 900, 1, 1, 0);
	assert_true(fabs(f.remaining - 900) < 1e-9 && fabs(f.window_end - 2.005) < 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(spends_the_quota_evenly),
	    cmocka_unit_test(bursts_without_a_quota),
	    cmocka_unit_test(halves_once_per_round_trip),
	    cmocka_unit_test(pinned_stays),
	    cmocka_unit_test(kinds_are_compared_apart),
	    cmocka_unit_test(waits_for_the_reset_when_spent),
	    cmocka_unit_test(late_answers_of_a_spent_window_are_old_news),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
