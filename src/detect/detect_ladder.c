/*
 * detect_ladder.c - staircases in the loss as reported, and length ramps.
 *
 * The reported loss is the mean over logging intervals (the trainer's own
 * interval when it logs every K steps; groups of ladder_interval points
 * otherwise). A staircase is >= 3 rises, each above tau = 3 * 1.4826 *
 * MAD(first differences), with plateaus but no fall in between, followed
 * within 3 intervals by a fall to below half its height. Each is explained
 * by the share of long-bucket batches in its span, and its trend checked
 * with Mann-Kendall's S and tie-corrected variance (Kendall 1975).
 * Significance: the ladder count is compared with the counts obtained when
 * the same residuals are recombined with the bucket offsets in shuffled
 * bucket order (a permutation test, fixed seed; p = (1 + #{>=}) / (1 + P)).
 * Length ramps: Hugging Face's group_by_length sorts megabatches of about
 * 50 batches by length, descending, so max_len falls over consecutive
 * batches and the loss saw-tooths; the period is the strongest
 * autocorrelation peak of max_len.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"
#include "runmon/stats.h"

#define MIN_RISES   3
#define FALL_WITHIN 3
#define RAMP_WINDOW 100000
#define RAMP_MAXLAG 200

/* Share-weighted offset of point j under the given shares. */
static double offset_at(const struct rm_split_result *sp, const float *share, int k, size_t j)
{
	double v = 0;
	const float *s = share + j * (size_t)k;
	for (int i = 0; i < k; i++)
		v += s[i] * sp->offset[i];
	return v;
}

/* Interval means of the detrended loss y (x[0..m)). */
static size_t intervals(const double *y, const double *trend, size_t n, int g, double *x)
{
	size_t m = 0;
	for (size_t j = 0; j + (size_t)g <= n; j += (size_t)g) {
		double s = 0;
		for (int i = 0; i < g; i++)
			s += y[j + (size_t)i] - trend[j + (size_t)i];
		x[m++] = s / g;
	}
	return m;
}

/* y = 3-point running median of x (ends copied). */
static void median3(const double *x, size_t m, double *y)
{
	for (size_t i = 0; i < m; i++) {
		if (i == 0 || i + 1 == m) {
			y[i] = x[i];
			continue;
		}
		double a = x[i - 1], b = x[i], c = x[i + 1];
		y[i] = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
	}
}

/* The step threshold: 3 robust sigmas of the differences of the smoothed
 * interval means. */
static double diff_tau(const double *raw, size_t m)
{
	if (m < 3)
		return INFINITY;
	double *d = rm_xmalloc((m - 1) * sizeof(double)), *x = rm_xmalloc(m * sizeof(double));
	median3(raw, m, x);
	for (size_t i = 1; i < m; i++)
		d[i - 1] = fabs(x[i] - x[i - 1]);
	free(x);
	double mad = rm_median_inplace(d, m - 1); /* median |d|: d is centred at 0 */
	free(d);
	return 3 * 1.4826 * fmax(mad, 1e-12);
}

/* Scans x (interval means, smoothed by a 3-point running median so a
 * single outlier is no step) for staircases; records up to cap of them in
 * out (if not NULL) as [first, last] interval indexes and returns how many
 * there are. A climb must also trend: Mann-Kendall z > 2. */
static size_t scan(const double *raw, size_t m, double tau, size_t (*out)[2], int *rises_out, double *height_out,
                   size_t cap)
{
	size_t count = 0, base = 0;
	int rises = 0;
	double *x = rm_xmalloc((m ? m : 1) * sizeof(double));
	median3(raw, m, x);
	double top = m ? x[0] : 0;
	for (size_t i = 1; i < m; i++) {
		double d = x[i] - x[i - 1];
		if (d > tau) {
			rises++;
			if (x[i] > top)
				top = x[i];
			continue;
		}
		if (d < -tau) {
			if (rises >= MIN_RISES) {
				double lowest = x[i];
				for (size_t f = i; f < m && f < i + FALL_WITHIN; f++)
					lowest = fmin(lowest, x[f]);
				if (lowest <= x[base] + (top - x[base]) / 2 &&
				    rm_mann_kendall(x + base, i - base).z > 2) {
					if (out && count < cap) {
						out[count][0] = base;
						out[count][1] = i - 1;
						rises_out[count] = rises;
						height_out[count] = top - x[base];
					}
					count++;
				}
			}
			base = i;
			rises = 0;
			top = x[i];
			continue;
		}
		if (rises == 0 && x[i] < x[base]) { /* still looking for the foot */
			base = i;
			top = x[i];
		}
	}
	free(x);
	return count;
}

/* Share of long-bucket batches among the points [from, to). */
static double long_share(const struct rm_prepared *p, size_t from, size_t to)
{
	double s = 0, c = 0;
	for (size_t j = from; j < to && j < p->n; j++) {
		if (p->dom[j] < 0)
			continue;
		if (p->onehot[j])
			s += p->dom[j] >= p->long_from;
		else
			for (int i = p->long_from; i < p->k; i++)
				s += p->share[j * (size_t)p->k + (size_t)i];
		c++;
	}
	return c ? s / c : 0;
}

static void ramps(const struct rm_prepared *p, const struct rm_series *s, const struct rm_split_result *sp,
                  struct rm_ladder_result *r)
{
	/* Up to RAMP_MAXLAG lags, fewer on a short run: one logged every 10
	 * steps may hold a few hundred batches (interval means). */
	size_t maxlag = s->nb / 4 < RAMP_MAXLAG ? s->nb / 4 : RAMP_MAXLAG;
	if (!s->max_len || maxlag < 10)
		return;
	/* With several ranks, rank 0's batches: consecutive batch rows of a
	 * step belong to other ranks, a rank's own order is what ramps. */
	int ranked = s->brank && s->nranks > 1;
	size_t window = RAMP_WINDOW * (ranked ? (size_t)s->nranks : 1);
	size_t from = s->nb > window ? s->nb - window : 0, n = 0;
	double *x = rm_xmalloc((s->nb - from + 1) * sizeof(double)), desc = 0, pairs = 0;
	for (size_t t = from; t < s->nb; t++) {
		if (!isfinite(s->max_len[t]) || (ranked && s->brank[t] != 0))
			continue;
		x[n] = s->max_len[t];
		if (n > 0) {
			desc += x[n] < x[n - 1];
			pairs++;
		}
		n++;
	}
	r->ramp_desc_share = pairs ? desc / pairs : 0;
	double acf[RAMP_MAXLAG + 1];
	if (n >= 4 * maxlag) {
		rm_acf(x, n, maxlag, acf);
		int best = 0;
		for (int lag = 3; lag < (int)maxlag; lag++)
			if (acf[lag] > acf[lag - 1] && acf[lag] >= acf[lag + 1] && acf[lag] > 0.3 &&
			    (!best || acf[lag] > acf[best]))
				best = lag;
		r->ramp_period = best;
		r->ramp_acf_len = best ? acf[best] : 0;
	}
	free(x);
	/* The loss at the same lag, when points are per batch. */
	if (r->ramp_period && sp->trend && p->n > 4 * (size_t)r->ramp_period) {
		size_t m = p->n > RAMP_WINDOW ? RAMP_WINDOW : p->n, off = p->n - m;
		double *e = rm_xmalloc(m * sizeof(double)), a[RAMP_MAXLAG + 1];
		for (size_t j = 0; j < m; j++)
			e[j] = p->y[off + j] - sp->trend[off + j];
		rm_acf(e, m, (size_t)r->ramp_period, a);
		r->ramp_acf_loss = a[r->ramp_period];
		free(e);
	}
	r->ramp = r->ramp_period > 0 && r->ramp_desc_share >= 0.7;
}

/* The ladder's permutation test. Shuffle i is done by worker i % 2, each
 * with its own order array and random stream, so the counts do not depend
 * on which thread ran or how fast; the test reads the shuffles 0..L-1 in
 * index order, L where the sequential stop falls. */
struct shuffles {
	const struct rm_prepared *p;
	const struct rm_split_result *sp;
	int g, perms, stop;
	size_t count; /* ladders in the run's own order */
	uint64_t seed;
	double delta[RM_MAX_BUCKETS][RM_MAX_BUCKETS]; /* offset change, bucket b to a */
	double *bare, *moved; /* whole steps shuffled: loss without its offset, and the offset */
	double *base;         /* each point's offset under its own shares */
	pthread_mutex_t lock;
	size_t *counts; /* per shuffle, once done */
	char *done;
	int halt; /* shuffles from here on are not needed */
	int counted, ge;
	double sum;
};

/* Reads the finished prefix of shuffles; halts at the sequential stop. */
static void shuffles_settle(struct shuffles *sh)
{
	while (sh->counted < sh->perms && sh->done[sh->counted] && sh->ge < sh->stop) {
		size_t c = sh->counts[sh->counted++];
		sh->sum += (double)c;
		sh->ge += c >= sh->count;
	}
	if (sh->ge >= sh->stop || sh->counted == sh->perms)
		sh->halt = sh->counted;
}

struct shuffler {
	struct shuffles *sh;
	int first;
	struct rm_rng rng;
	int *order;       /* steps (whole steps shuffled) or batch buckets */
	uint8_t *buckets; /* batch buckets instead, when each point is one batch: a byte each */
	float *share;
	int *dom;
	double *x; /* interval means */
};

/* Point j's loss with the offsets of the shuffled order. */
static double shuffled_loss(const struct shuffler *w, size_t j)
{
	const struct shuffles *sh = w->sh;
	const struct rm_prepared *p = sh->p;
	int lg = sh->sp->log_scale;
	if (sh->bare) {
		double m = sh->moved[w->order[j]];
		return p->dom[j] < 0 || isnan(m) ? p->y[j] : lg ? sh->bare[j] * m : sh->bare[j] + m;
	}
	if (p->one_each) {
		double f = sh->delta[w->buckets[rm_pt_from(p, j)]][p->bseq[rm_pt_from(p, j)]];
		return lg ? p->y[j] * f : p->y[j] + f;
	}
	double d = p->dom[j] >= 0 ? offset_at(sh->sp, w->share, p->k, j) - sh->base[j] : 0;
	return lg ? p->y[j] * exp(d) : p->y[j] + d;
}

static void *shuffle_worker(void *arg)
{
	struct shuffler *w = arg;
	struct shuffles *sh = w->sh;
	const struct rm_prepared *p = sh->p;
	const struct rm_split_result *sp = sh->sp;
	for (int it = w->first; it < sh->perms; it += 2) {
		pthread_mutex_lock(&sh->lock);
		int go = it < sh->halt;
		pthread_mutex_unlock(&sh->lock);
		if (!go)
			break;
		if (sh->bare) {
			rm_rng_shuffle_int(&w->rng, w->order, p->n);
		} else if (p->one_each) {
			rm_rng_shuffle_u8(&w->rng, w->buckets, p->nb);
		} else {
			rm_rng_shuffle_int(&w->rng, w->order, p->nb);
			rm_prepared_shares(p, w->order, w->share, w->dom);
		}
		/* the interval means of the loss under the shuffled order, as
		 * intervals() makes them of the loss as logged */
		size_t mm = 0, g = (size_t)sh->g;
		for (size_t j0 = 0; j0 + g <= p->n; j0 += g) {
			double sum = 0;
			for (size_t j = j0; j < j0 + g; j++)
				sum += shuffled_loss(w, j) - sp->trend[j];
			w->x[mm++] = sum / (double)g;
		}
		size_t c = scan(w->x, mm, diff_tau(w->x, mm), NULL, NULL, NULL, 0);
		pthread_mutex_lock(&sh->lock);
		sh->counts[it] = c;
		sh->done[it] = 1;
		shuffles_settle(sh);
		pthread_mutex_unlock(&sh->lock);
	}
	return NULL;
}

static void shuffler_init(struct shuffler *w, struct shuffles *sh, int first)
{
	const struct rm_prepared *p = sh->p;
	memset(w, 0, sizeof(*w));
	w->sh = sh;
	w->first = first;
	w->rng.s = sh->seed + (uint64_t)first * 0x9E3779B97F4A7C15ull;
	if (sh->bare) { /* steps of several batches: whole steps move, each keeping its mixture */
		w->order = rm_xmalloc(p->n * sizeof(int));
		for (size_t j = 0; j < p->n; j++)
			w->order[j] = (int)j;
	} else if (p->one_each) { /* dense buckets are below RM_MAX_BUCKETS */
		w->buckets = rm_xmalloc(p->nb ? p->nb : 1);
		for (size_t t = 0; t < p->nb; t++)
			w->buckets[t] = (uint8_t)p->bseq[t];
	} else {
		w->order = rm_xmalloc((p->nb ? p->nb : 1) * sizeof(int));
		memcpy(w->order, p->bseq, p->nb * sizeof(int));
	}
	if (!p->one_each && !sh->bare) {
		w->share = rm_xmalloc(p->n * (size_t)p->k * sizeof(float));
		w->dom = rm_xmalloc(p->n * sizeof(int));
	}
	w->x = rm_xmalloc((p->n / (size_t)sh->g + 1) * sizeof(double));
}

static void shuffler_release(struct shuffler *w)
{
	free(w->order);
	free(w->buckets);
	free(w->share);
	free(w->dom);
	free(w->x);
}

/* Runs the shuffles on two threads (one when a thread cannot start). */
static void shuffles_run(struct shuffles *sh)
{
	const struct rm_prepared *p = sh->p;
	const struct rm_split_result *sp = sh->sp;
	for (int a = 0; a < p->k; a++)
		for (int b = 0; b < p->k; b++) {
			double d = sp->offset[a] - sp->offset[b];
			sh->delta[a][b] = sp->log_scale ? exp(d) : d;
		}
	if (!p->one_each) {
		sh->base = rm_xmalloc(p->n * sizeof(double));
		for (size_t j = 0; j < p->n; j++)
			sh->base[j] = offset_at(sp, p->share, p->k, j);
	}
	/* Whole steps shuffled (steps of several batches, or batches of
	 * several buckets: each step keeps its mixture): point j takes the
	 * offset of the step moved to it, y_j - base_j + base_perm(j) (on the
	 * log scale, a factor): the loss without its own offset and the
	 * offsets, once, not per shuffle. */
	if ((p->multi || p->mix.n) && !p->one_each) {
		sh->bare = rm_xmalloc(p->n * sizeof(double));
		sh->moved = rm_xmalloc(p->n * sizeof(double));
		for (size_t j = 0; j < p->n; j++) {
			int has = p->dom[j] >= 0;
			sh->moved[j] = !has ? NAN : sp->log_scale ? exp(sh->base[j]) : sh->base[j];
			sh->bare[j] = !has ? p->y[j] : sp->log_scale ? p->y[j] / sh->moved[j] : p->y[j] - sh->moved[j];
		}
		free(sh->base); /* all the shuffles need */
		sh->base = NULL;
	}
	sh->counts = rm_xcalloc((size_t)sh->perms, sizeof(size_t));
	sh->done = rm_xcalloc((size_t)sh->perms, 1);
	sh->halt = sh->perms;
	pthread_mutex_init(&sh->lock, NULL);
	struct shuffler w[2];
	shuffler_init(&w[0], sh, 0);
	shuffler_init(&w[1], sh, 1);
	pthread_t th;
	int threaded = pthread_create(&th, NULL, shuffle_worker, &w[1]) == 0;
	shuffle_worker(&w[0]); /* without a thread, all of its shuffles (no prefix settles): the counts are the same */
	if (threaded)
		pthread_join(th, NULL);
	else
		shuffle_worker(&w[1]);
	shuffler_release(&w[0]);
	shuffler_release(&w[1]);
	pthread_mutex_destroy(&sh->lock);
	free(sh->counts);
	free(sh->done);
	free(sh->base);
	free(sh->bare);
	free(sh->moved);
}

void rm_detect_ladder(const struct rm_prepared *p, const struct rm_series *s, const struct rm_split_result *sp,
                      const struct rm_detect_opts *o, struct rm_ladder_result *r)
{
	memset(r, 0, sizeof(*r));
	if (!sp->trend || p->n < 50)
		return;
	ramps(p, s, sp, r);
	double spacing = p->n > 1 ? (double)(p->step[p->n - 1] - p->step[0]) / (double)(p->n - 1) : 1;
	int g = o->ladder_interval > 0 ? o->ladder_interval : spacing > 1.5 ? 1 : 10;
	r->interval = g;
	size_t mcap = p->n / (size_t)g + 1;
	double *x = rm_xmalloc(mcap * sizeof(double));
	size_t m = intervals(p->y, sp->trend, p->n, g, x);
	if (m < 20) {
		free(x);
		return;
	}
	r->ok = 1;
	double tau = diff_tau(x, m);
	size_t cap = m / MIN_RISES + 1; /* a ladder takes MIN_RISES intervals at least */
	size_t(*spans)[2] = rm_xmalloc(cap * sizeof(*spans));
	int *rises = rm_xmalloc(cap * sizeof(int));
	double *height = rm_xmalloc(cap * sizeof(double));
	r->count = scan(x, m, tau, spans, rises, height, cap);
	for (size_t i = 0; i < r->count && i < cap; i++) { /* every ladder in its chart columns */
		int c0 = rm_plot_col(p->step[spans[i][0] * (size_t)g], p->step[0], p->step[p->n - 1]),
		    c1 = rm_plot_col(p->step[(spans[i][1] + 1) * (size_t)g - 1], p->step[0], p->step[p->n - 1]);
		memset(r->cover + c0, 1, (size_t)(c1 - c0 + 1));
	}
	/* Without composition there is no long share and no bucket order to
	 * shuffle: the rises are reported, untested (NaN, null in JSON). */
	int composed = sp->ok && p->k >= 2;
	r->long_share_overall = composed ? long_share(p, 0, p->n) : NAN;
	for (size_t i = 0; i < r->count && i < RM_MAX_LIST; i++) {
		struct rm_ladder *l = &r->list[i];
		size_t a = spans[i][0], b = spans[i][1];
		l->first_step = p->step[a * (size_t)g];
		l->last_step = p->step[(b + 1) * (size_t)g - 1];
		l->rises = rises[i];
		l->height = height[i];
		l->long_share = composed ? long_share(p, a * (size_t)g, (b + 1) * (size_t)g) : NAN;
		struct rm_mk mk = rm_mann_kendall(x + a, b - a + 1);
		l->mk_s = mk.s;
		l->mk_z = mk.z;
	}
	free(spans);
	free(rises);
	free(height);
	if (!composed) {
		r->p = r->perm_mean = NAN;
		free(x);
		return;
	}
	/* Permutation test: the same residuals with buckets in shuffled order. */
	size_t budget = 20000000 / (p->n + p->nb + 1);
	struct shuffles sh = {.p = p, .sp = sp, .g = g, .count = r->count, .seed = o->seed};
	sh.perms = budget >= 99 ? 99 : budget < 39 ? 39 : (int)budget; /* 39: p can reach 0.025 */
	/* Sequential stop (Besag & Clifford, "Sequential Monte Carlo
	 * p-values", Biometrika 1991): once enough shuffles reach the observed
	 * count that p cannot fall below the flagging level, the rest cannot
	 * change the verdict; p is then (1 + ge) / (1 + shuffles counted). */
	sh.stop = (int)ceil(o->alpha * 5 * (sh.perms + 1) - 1e-9) - 1;
	if (sh.stop < 1)
		sh.stop = 1;
	shuffles_run(&sh);
	r->perms = sh.counted;
	r->perm_mean = sh.sum / (sh.counted ? sh.counted : 1);
	r->p = (1.0 + sh.ge) / (1.0 + sh.counted);
	r->flagged = r->count >= 1 && r->p < o->alpha * 5 && r->count > 2 * r->perm_mean;
	free(x);
}
