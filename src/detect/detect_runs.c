/*
 * detect_runs.c - same-bucket runs: the runs test for k categories.
 *
 * R = 1 + #{t : b_t != b_(t-1)} counts maximal runs of one bucket. Under a
 * random order of the same bucket counts n_i (n = sum n_i):
 *   E[R]   = 1 + (n^2 - sum n_i^2) / n
 *   Var[R] = (sum n_i^2 (sum n_i^2 + n(n+1)) - 2n sum n_i^3 - n^3) / (n^2 (n-1))
 * (Wald & Wolfowitz 1940, generalised to k categories; the unit tests check
 * both against exact enumeration). Homogeneous batching gives far fewer runs
 * than chance (z << 0); proportional interleaving gives z >= 0.
 * Per bucket, the mean run length is compared with the geometric 1/(1-p_i)
 * and the longest run with P(longest >= L) ~ 1 - exp(-lambda), lambda =
 * p^L (1 + (n-L)(1-p)): the expected number of runs of length >= L.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

void rm_runs_moments(const size_t *c, int k, double *mean, double *var)
{
	double n = 0, s2 = 0, s3 = 0;
	for (int i = 0; i < k; i++) {
		double x = (double)c[i];
		n += x;
		s2 += x * x;
		s3 += x * x * x;
	}
	*mean = n > 0 ? 1 + (n * n - s2) / n : 0;
	*var = n > 1 ? (s2 * (s2 + n * (n + 1)) - 2 * n * s3 - n * n * n) / (n * n * (n - 1)) : 0;
}

/* Equal runs are many under megabatch orders (every streak a megabatch
 * long): the first ones found would all be at the start, so ties go by a
 * hash of where the run starts, which spreads the listed ones over the run
 * and stays the same from one diagnosis to the next. */
static uint64_t span_key(const struct rm_run_span *x)
{
	uint64_t z = (uint64_t)x->first_step * 0x9E3779B97F4A7C15u + (uint64_t)(x->rank + 1);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
	return z ^ (z >> 31);
}

static int cmp_span(const void *a, const void *b)
{
	const struct rm_run_span *x = a, *y = b;
	if (x->length != y->length)
		return (x->length < y->length) - (x->length > y->length);
	uint64_t kx = span_key(x), ky = span_key(y);
	return (kx > ky) - (kx < ky);
}

/* The list as shown: longest first, equal ones in step order. */
static int cmp_shown(const void *a, const void *b)
{
	const struct rm_run_span *x = a, *y = b;
	if (x->length != y->length)
		return (x->length < y->length) - (x->length > y->length);
	return (x->first_step > y->first_step) - (x->first_step < y->first_step);
}

/* Where one slot's current run stands. */
struct rank_run {
	int prev; /* dense bucket of the run, -1 before the slot's first batch */
	int rank; /* of the run, -1 with one slot */
	size_t len;
	int64_t first, last; /* steps */
	size_t count[RM_MAX_BUCKETS];
	size_t runs;
};

static void close_run(struct rm_runs_result *r, const struct rank_run *q, const int *id, size_t *runs_of,
                      struct rm_run_span *top, int *ntop)
{
	runs_of[q->prev]++;
	struct rm_bucket_runs *pb = &r->per[q->prev];
	if (q->len > pb->longest)
		pb->longest = q->len;
	struct rm_run_span span = {id[q->prev], q->first, q->last, q->len, q->rank};
	if (*ntop < RM_MAX_LIST || cmp_span(&span, &top[*ntop - 1]) < 0) {
		top[*ntop < RM_MAX_LIST ? (*ntop)++ : *ntop - 1] = span;
		qsort(top, (size_t)*ntop, sizeof(*top), cmp_span);
	}
}

/* With several batches per step, each slot (a rank's first micro-batch,
 * its second, ...) is a sequence of its own across steps, and runs never
 * cross slots: a step's micro-batches are averaged into one loss, so two
 * of them from one bucket are no streak. Under random order the slots are
 * independent, so the runs, their expectation and variance add up (one
 * slot: the test above as it was). */
void rm_detect_runs_ranked(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_runs_result *r,
                           struct rank_total *per_rank)
{
	size_t count[RM_MAX_BUCKETS] = {0}, runs_of[RM_MAX_BUCKETS] = {0};
	int id[RM_MAX_BUCKETS], k = 0;
	memset(r, 0, sizeof(*r));
	int dense[RM_BUCKET_IDS];
	k = rm_dense_buckets(s, 0, dense, id);
	struct slots it;
	int nslots = rm_slots_init(&it, s->bstep, s->brank, s->nb, s->nranks);
	struct rank_run *rk = rm_xcalloc((size_t)nslots, sizeof(*rk));
	for (int i = 0; i < nslots; i++)
		rk[i].prev = -1;
	size_t n = 0, runs = 0;
	struct rm_run_span top[RM_MAX_LIST + 1];
	int ntop = 0;
	for (size_t t = 0; t < s->nb; t++) {
		int raw = s->bucket[t], slot = rm_slots_next(&it, t);
		if (raw < 0 || raw >= RM_BUCKET_IDS || dense[raw] < 0)
			continue;
		int b = dense[raw];
		struct rank_run *q = &rk[slot];
		if (b != q->prev) {
			if (q->prev >= 0)
				close_run(r, q, id, runs_of, top, &ntop);
			q->rank = nslots > 1 && s->brank ? s->brank[t] : -1;
			q->runs++;
			runs++;
			q->len = 0;
			q->first = s->bstep[t];
		}
		q->len++;
		q->count[b]++;
		count[b]++;
		n++;
		q->prev = b;
		q->last = s->bstep[t];
	}
	for (int i = 0; i < nslots; i++)
		if (rk[i].prev >= 0)
			close_run(r, &rk[i], id, runs_of, top, &ntop);
	r->n = n;
	r->k = k;
	if (n < 20 || k < 2) {
		free(rk);
		return;
	}
	r->ok = 1;
	r->runs = (double)runs;
	for (int i = 0; i < nslots; i++) {
		double mean, var;
		rm_runs_moments(rk[i].count, k, &mean, &var);
		r->expected += mean;
		r->var += var;
		r->sequences += rk[i].runs > 0;
		int rank = rk[i].rank;
		if (per_rank && rk[i].runs > 0 && rank >= 0 && rank < s->nranks) { /* a rank's slots add up as well */
			per_rank[rank].runs += (double)rk[i].runs;
			per_rank[rank].expected += mean;
			per_rank[rank].var += var;
			for (int b = 0; b < k; b++)
				per_rank[rank].n += rk[i].count[b];
		}
	}
	free(rk);
	r->z = r->var > 0 ? (r->runs - r->expected) / sqrt(r->var) : 0;
	r->p = 0.5 * erfc(-r->z / M_SQRT2);
	for (int i = 0; i < k; i++) {
		struct rm_bucket_runs *pb = &r->per[i];
		double p = (double)count[i] / (double)n, L = (double)pb->longest;
		double per_slot = (double)n / (double)(r->sequences ? r->sequences : 1); /* a slot's batches */
		pb->bucket = id[i];
		pb->steps = count[i];
		pb->share = p;
		pb->mean_run = runs_of[i] ? (double)count[i] / (double)runs_of[i] : 0;
		pb->expected_mean_run = p < 1 ? 1 / (1 - p) : per_slot;
		/* the longest of the slots' longest runs: slots times the chance of one */
		double lambda = pow(p, L) * (1 + (per_slot - L) * (1 - p)) * (double)(r->sequences ? r->sequences : 1);
		pb->p_longest = -expm1(-lambda);
	}
	qsort(top, (size_t)ntop, sizeof(*top), cmp_shown);
	memcpy(r->worst, top, (size_t)ntop * sizeof(*top));
	r->nworst = ntop;
	r->flagged = r->z <= o->runs_z;
}

void rm_detect_runs(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_runs_result *r)
{
	rm_detect_runs_ranked(s, o, r, NULL);
}
