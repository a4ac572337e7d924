/*
 * detect_period.c - do the loss resets recur every N steps? For runs whose
 * config names no save interval: a checkpoint save, an evaluation or a
 * shard boundary every N steps shows in the spike steps themselves.
 *
 * Spikes closer than MERGE steps are one event (a burst is one incident).
 * Candidate periods come from the gaps between an event and its next four,
 * divided by 1..4 (an event may be missed), each widened by +/-2 steps for
 * jitter. For a period P and a phase window of width w (1, 3, 5 or P/50
 * steps), the statistic is the most events that fall in one window of
 * phases (step mod P); by chance each event falls in it with probability
 * w / P, a binomial tail. The search is paid for with Bonferroni over
 * every (period, width, phase) triple of the whole range, not only the
 * candidates tried, since they were picked from the same data.
 * A periodic cause must also show in at least MIN_COVER of the cycles: a
 * save that resets the loss does so at most saves, while spikes of one
 * bucket under a periodic (stride) order fill few of its cycles.
 *
 * Against the bucket that spikes most (its steps may be periodic too, in a
 * stride-interleaved order), two conditional binomial tests: among that
 * bucket's events, do they fall in the window more than its steps do (the
 * period beyond the bucket); among the window's events, are they of that
 * bucket more than the window's steps are (the bucket beyond the period).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define MERGE      10 /* spikes this close are one event */
#define MIN_EVENTS 5
#define MIN_PERIOD 20
#define MIN_CYCLES 4
#define MIN_COVER  0.25

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int64_t mod(int64_t x, int64_t p)
{
	int64_t r = x % p;
	return r < 0 ? r + p : r;
}

/* Windows of width w tried per period P: w = 1, 3, 5 and P / 50. */
static int widths(int64_t P, int64_t *w)
{
	int n = 0;
	w[n++] = 1;
	w[n++] = 3;
	w[n++] = 5;
	if (P / 50 > 5)
		w[n++] = P / 50;
	return n;
}

/* (period, width, phase) triples over periods lo..hi: the Bonferroni factor. */
static double search_size(double lo, double hi)
{
	double sum = (1 + 1.0 / 3 + 1.0 / 5) * (hi * (hi + 1) - lo * (lo - 1)) / 2;
	if (hi > 300) /* the P / 50 width: about 50 windows per period */
		sum += 50 * (hi - fmax(lo, 300) + 1);
	return sum;
}

struct best {
	int64_t P, phase, w;
	size_t hits;
	double p;
};

/* The best window of phases for period P. ph is scratch of 2 * ne. */
static void try_period(const int64_t *ev, size_t ne, int64_t P, int64_t *ph, struct best *b)
{
	for (size_t i = 0; i < ne; i++)
		ph[i] = mod(ev[i], P);
	qsort(ph, ne, sizeof(int64_t), cmp_i64);
	for (size_t i = 0; i < ne; i++)
		ph[ne + i] = ph[i] + P; /* circular */
	int64_t w[4];
	int nw = widths(P, w);
	for (int k = 0; k < nw; k++) {
		if (w[k] >= P)
			continue;
		size_t best = 0, at = 0;
		for (size_t i = 0, j = 0; i < ne; i++) {
			if (j < i)
				j = i;
			while (j < i + ne && ph[j] < ph[i] + w[k])
				j++;
			if (j - i > best)
				best = j - i, at = i;
		}
		double p = rm_binom_sf((double)best, (double)ne, (double)w[k] / (double)P);
		if (best >= MIN_EVENTS - 1 && p < b->p) {
			*b = (struct best){P, ph[at], w[k], best, p};
		}
	}
}

static int in_window(int64_t step, const struct rm_resets_result *r)
{
	return mod(step - r->period_phase, r->period) < r->period_width;
}

/* The two conditional tests against dense bucket x. */
static void against_bucket(const struct rm_prepared *p, const int64_t *ev, const int *ev_bucket, size_t ne, int x,
                           struct rm_resets_result *r)
{
	size_t x_pts = 0, x_in = 0, in_pts = 0;
	for (size_t j = 0; j < p->n; j++) {
		int in = in_window(p->step[j], r), isx = p->dom[j] == x;
		x_pts += isx;
		x_in += isx && in;
		in_pts += in;
	}
	size_t x_ev = 0, x_ev_in = 0, in_ev = 0;
	for (size_t i = 0; i < ne; i++) {
		int in = in_window(ev[i], r), isx = ev_bucket[i] == x;
		x_ev += isx;
		x_ev_in += isx && in;
		in_ev += in;
	}
	r->period_beyond_bucket_p =
	    x_ev && x_pts ? rm_binom_sf((double)x_ev_in, (double)x_ev, (double)x_in / (double)x_pts) : 1;
	r->bucket_beyond_period_p =
	    in_ev && in_pts ? rm_binom_sf((double)x_ev_in, (double)in_ev, (double)x_in / (double)in_pts) : 1;
}

void rm_detect_period(const struct rm_prepared *p, const char *spike, struct rm_resets_result *r)
{
	r->period_p = r->period_beyond_bucket_p = r->bucket_beyond_period_p = 1;
	if (p->n < 2)
		return;
	int64_t lo = p->step[0], hi = p->step[p->n - 1];
	int64_t *ev = rm_xmalloc((p->n ? p->n : 1) * sizeof(int64_t));
	int *ev_bucket = rm_xmalloc((p->n ? p->n : 1) * sizeof(int));
	size_t ne = 0;
	int64_t last = INT64_MIN;
	for (size_t j = 0; j < p->n; j++) {
		if (!spike[j])
			continue;
		if (ne == 0 || p->step[j] - last > MERGE) {
			ev_bucket[ne] = p->dom[j];
			ev[ne++] = p->step[j];
		}
		last = p->step[j];
	}
	r->period_events = ne;
	int64_t Pmax = (hi - lo + 1) / MIN_CYCLES;
	r->period_tested = ne >= MIN_EVENTS && Pmax >= MIN_PERIOD;
	if (!r->period_tested)
		goto out;
	/* Candidates: gaps to the next four events, over 1..4, +/-2. */
	size_t cap = ne * 4 * 4 * 5, nc = 0;
	int64_t *cand = rm_xmalloc(cap * sizeof(int64_t));
	for (size_t i = 0; i < ne; i++)
		for (size_t j = i + 1; j < ne && j <= i + 4; j++)
			for (int64_t m = 1; m <= 4; m++)
				for (int64_t d = -2; d <= 2; d++) {
					int64_t P = (ev[j] - ev[i] + m / 2) / m + d;
					if (P >= MIN_PERIOD && P <= Pmax)
						cand[nc++] = P;
				}
	qsort(cand, nc, sizeof(int64_t), cmp_i64);
	struct best b = {0, 0, 0, 0, 2};
	int64_t *ph = rm_xmalloc(2 * ne * sizeof(int64_t));
	for (size_t i = 0; i < nc; i++)
		if (i == 0 || cand[i] != cand[i - 1])
			try_period(ev, ne, cand[i], ph, &b);
	free(ph);
	free(cand);
	if (b.P == 0)
		goto out;
	r->period = b.P;
	r->period_phase = b.phase;
	r->period_width = b.w;
	r->period_hits = b.hits;
	r->period_cycles = (double)(hi - lo + 1) / (double)b.P;
	r->period_p = fmin(1, b.p * search_size(MIN_PERIOD, (double)Pmax));
	/* The bucket whose events are most over-represented. */
	int x = -1;
	double best_ratio = 0;
	for (int k = 0; k < p->k; k++) {
		size_t pts = 0, evs = 0;
		for (size_t j = 0; j < p->n; j++)
			pts += p->dom[j] == k;
		for (size_t i = 0; i < ne; i++)
			evs += ev_bucket[i] == k;
		double ratio = pts ? ((double)evs / (double)ne) / ((double)pts / (double)p->n) : 0;
		if (evs && ratio > best_ratio)
			best_ratio = ratio, x = k;
	}
	if (x >= 0)
		against_bucket(p, ev, ev_bucket, ne, x, r);
out:
	free(ev);
	free(ev_bucket);
}

int rm_period_covers(const struct rm_resets_result *r)
{
	return r->period_cycles > 0 && (double)r->period_hits >= MIN_COVER * r->period_cycles;
}
