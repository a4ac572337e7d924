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

static int cmp_span(const void *a, const void *b)
{
	const struct rm_run_span *x = a, *y = b;
	return (x->length < y->length) - (x->length > y->length);
}

void rm_detect_runs(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_runs_result *r)
{
	size_t count[RM_MAX_BUCKETS] = {0}, runs_of[RM_MAX_BUCKETS] = {0};
	int id[RM_MAX_BUCKETS], k = 0;
	memset(r, 0, sizeof(*r));
	int dense[RM_BUCKET_IDS];
	k = dense_buckets(s, dense, id);
	size_t n = 0, runs = 0, cur_len = 0;
	int prev = -1;
	int64_t cur_first = 0, prev_step = 0;
	struct rm_run_span top[RM_MAX_LIST + 1];
	int ntop = 0;
	for (size_t t = 0; t <= s->nb; t++) {
		int b = -1;
		if (t < s->nb) {
			int raw = s->bucket[t];
			if (raw < 0 || raw >= RM_BUCKET_IDS || dense[raw] < 0)
				continue;
			b = dense[raw];
		}
		if (b != prev || t == s->nb) {
			if (prev >= 0) { /* close the run of prev */
				runs_of[prev]++;
				struct rm_bucket_runs *pb = &r->per[prev];
				if (cur_len > pb->longest)
					pb->longest = cur_len;
				struct rm_run_span span = {id[prev], cur_first, prev_step, cur_len};
				if (ntop < RM_MAX_LIST || cur_len > top[ntop - 1].length) {
					top[ntop < RM_MAX_LIST ? ntop++ : ntop - 1] = span;
					qsort(top, (size_t)ntop, sizeof(*top), cmp_span);
				}
			}
			if (t == s->nb)
				break;
			runs++;
			cur_len = 0;
			cur_first = s->bstep[t];
		}
		cur_len++;
		count[b]++;
		n++;
		prev = b;
		prev_step = s->bstep[t];
	}
	r->n = n;
	r->k = k;
	if (n < 20 || k < 2)
		return;
	r->ok = 1;
	r->runs = (double)runs;
	rm_runs_moments(count, k, &r->expected, &r->var);
	r->z = r->var > 0 ? (r->runs - r->expected) / sqrt(r->var) : 0;
	r->p = 0.5 * erfc(-r->z / M_SQRT2);
	for (int i = 0; i < k; i++) {
		struct rm_bucket_runs *pb = &r->per[i];
		double p = (double)count[i] / (double)n, L = (double)pb->longest;
		pb->bucket = id[i];
		pb->steps = count[i];
		pb->share = p;
		pb->mean_run = runs_of[i] ? (double)count[i] / (double)runs_of[i] : 0;
		pb->expected_mean_run = p < 1 ? 1 / (1 - p) : (double)n;
		double lambda = pow(p, L) * (1 + ((double)n - L) * (1 - p));
		pb->p_longest = -expm1(-lambda);
	}
	memcpy(r->worst, top, (size_t)ntop * sizeof(*top));
	r->nworst = ntop;
	r->flagged = r->z <= o->runs_z;
}
