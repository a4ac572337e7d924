/*
 * detect_compare.c - see rm_compare in runmon/detect.h: what changed from
 * one diagnosis to another, cause by cause, and whether anything got worse.
 */
#include <math.h>
#include <string.h>

#include "runmon/detect.h"

static const char *const outcome_names[RM_OUTCOME_COUNT] = {"no worse", "resolved", "no worse in loss, at a price",
                                                            "resolved at a price", "worse"};

const char *rm_outcome_name(enum rm_outcome o)
{
	return outcome_names[o];
}

void rm_compare_tolerance_default(struct rm_compare_tolerance *t)
{
	t->max_loss = 0.01;
	t->max_cost = 5;
}

int rm_compare_exit(const struct rm_comparison *c)
{
	if (c->outcome == RM_OUTCOME_WORSE)
		return RM_EXIT_FINDINGS;
	if (c->outcome == RM_OUTCOME_PRICE || c->outcome == RM_OUTCOME_RESOLVED_PRICE)
		return RM_EXIT_PRICE;
	return RM_EXIT_OK;
}

static const char *const delta_names[RM_DELTA_COUNT] = {"unchanged", "resolved", "new",
                                                        "better",    "worse",    "not tested"};

const char *rm_delta_name(enum rm_delta c)
{
	return delta_names[c];
}

int rm_diagnosis_too_short(const struct rm_diagnosis *d)
{
	return !d->split.ok && d->finite < 50;
}

static enum rm_severity severity_of(const struct rm_diagnosis *d, enum rm_hypothesis h)
{
	for (int i = 0; i < RM_H_COUNT; i++)
		if (d->rank[i].h == h)
			return d->rank[i].severity;
	return RM_SEV_NONE;
}

/* Compared at the levels a reader acts on, as the report's changes are:
 * below warn (info is the healthy verdict's own level) counts as none. */
static enum rm_delta delta_of(enum rm_severity a, enum rm_severity b)
{
	a = a < RM_SEV_WARN ? RM_SEV_NONE : a;
	b = b < RM_SEV_WARN ? RM_SEV_NONE : b;
	if (a == b)
		return RM_DELTA_UNCHANGED;
	if (b == RM_SEV_NONE)
		return RM_DELTA_RESOLVED;
	if (a == RM_SEV_NONE)
		return RM_DELTA_NEW;
	return b < a ? RM_DELTA_BETTER : RM_DELTA_WORSE;
}

/* The mean of a curve's bins whose middle step lies in [lo, hi]; NaN when
 * none does. */
static double mean_over(const struct rm_curves *c, const double *bins, int64_t lo, int64_t hi)
{
	if (c->bins <= 0 || c->last_step < c->first_step)
		return NAN;
	double span = (double)(c->last_step - c->first_step + 1) / c->bins, sum = 0;
	int n = 0;
	for (int i = 0; i < c->bins; i++) {
		double mid = (double)c->first_step + (i + 0.5) * span;
		if (mid >= (double)lo && mid <= (double)hi + 1 && isfinite(bins[i])) {
			sum += bins[i];
			n++;
		}
	}
	return n ? sum / n : NAN;
}

static int streaky(const struct rm_diagnosis *d)
{
	return d->runs.flagged || d->ladder.ramp || d->suspected;
}

/* The paired change of the adjusted loss over the common steps. */
static void adjusted_change(const struct rm_diagnosis *a, const struct rm_diagnosis *b, struct rm_comparison *c)
{
	double span = (double)(c->common_last - c->common_first + 1) / RM_COMPARE_SEGMENTS, sum = 0, sq = 0;
	int m = 0;
	for (int i = 0; i < RM_COMPARE_SEGMENTS; i++) {
		int64_t lo = c->common_first + (int64_t)(span * i),
		        hi = c->common_first + (int64_t)(span * (i + 1)) - 1;
		double x = mean_over(&a->curves, a->curves.adjusted, lo, hi);
		double y = mean_over(&b->curves, b->curves.adjusted, lo, hi);
		if (!(x > 0) || !isfinite(y))
			continue;
		sum += y / x - 1;
		sq += (y / x - 1) * (y / x - 1);
		m++;
	}
	c->segments = m;
	if (m < 4)
		return;
	double mean = sum / m, var = fmax(0, (sq - m * mean * mean) / (m - 1));
	c->adjusted_change = mean;
	c->adjusted_se = sqrt(var / m);
	/* Buckets in streaks are partly confounded with the trend (the split
	 * gives them no level intervals for it): such a run's adjusted loss
	 * is no yardstick. */
	c->adjusted_judged = !streaky(a) && !streaky(b);
	c->adjusted_worse = c->adjusted_judged && mean > c->tol.max_loss && mean > 2 * c->adjusted_se;
	if (c->adjusted_worse)
		c->worse = 1;
}

/* The price: padding efficiency in points, throughput in percent, each
 * worse when it fell beyond tol.max_cost (and better when it rose so). */
static void cost_change(const struct rm_diagnosis *a, const struct rm_diagnosis *b, struct rm_comparison *c)
{
	const struct rm_diagnosis *d[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		c->efficiency[i] = d[i]->cost.ok ? 100 * d[i]->cost.efficiency : NAN;
		c->tokens_per_s[i] = d[i]->cost.ok ? d[i]->cost.tokens_per_s : NAN;
	}
	c->efficiency_change = c->efficiency[1] - c->efficiency[0];
	c->tokens_per_s_change = c->tokens_per_s[0] > 0 ? c->tokens_per_s[1] / c->tokens_per_s[0] - 1 : NAN;
	/* A side of fewer batches than the detectors need is no measure of
	 * its price either: one batch's padding is that batch's. */
	if (!a->cost.ok || !b->cost.ok || a->cost.batches < RM_COMPARE_MIN_BATCHES ||
	    b->cost.batches < RM_COMPARE_MIN_BATCHES)
		return;
	c->cost_judged = 1;
	double tol = c->tol.max_cost;
	c->efficiency_worse = c->efficiency_change < -tol;
	c->efficiency_better = c->efficiency_change > tol;
	c->tokens_per_s_worse = 100 * c->tokens_per_s_change < -tol;
	c->tokens_per_s_better = 100 * c->tokens_per_s_change > tol;
	c->cost_worse = c->efficiency_worse || c->tokens_per_s_worse;
}

static enum rm_outcome outcome_of(const struct rm_comparison *c)
{
	if (c->worse)
		return RM_OUTCOME_WORSE;
	if (c->resolved)
		return c->cost_worse ? RM_OUTCOME_RESOLVED_PRICE : RM_OUTCOME_RESOLVED;
	return c->cost_worse ? RM_OUTCOME_PRICE : RM_OUTCOME_NO_WORSE;
}

void rm_compare(const struct rm_diagnosis *a, const struct rm_diagnosis *b, const struct rm_compare_tolerance *tol,
                struct rm_comparison *c)
{
	memset(c, 0, sizeof(*c));
	if (tol)
		c->tol = *tol;
	else
		rm_compare_tolerance_default(&c->tol);
	c->before = a->severity;
	c->after = b->severity;
	c->untested = rm_diagnosis_too_short(a) | rm_diagnosis_too_short(b) << 1;
	c->finite[0] = a->finite;
	c->finite[1] = b->finite;
	int untested = c->untested != 0;
	c->severity = delta_of(a->severity, b->severity);
	for (int h = 0; h < RM_H_COUNT; h++) {
		struct rm_hypothesis_change *x = &c->hyp[h];
		x->h = (enum rm_hypothesis)h;
		x->before = severity_of(a, x->h);
		x->after = severity_of(b, x->h);
		x->change = delta_of(x->before, x->after);
		if (untested && x->h != RM_H_DIVERGENCE && x->change != RM_DELTA_UNCHANGED)
			x->change = RM_DELTA_UNTESTED;
		/* A cause new or risen at warn or above is worse news whatever
		 * the verdict's level says. */
		if (x->change == RM_DELTA_NEW || x->change == RM_DELTA_WORSE)
			c->worse = 1;
		if (x->change == RM_DELTA_RESOLVED || x->change == RM_DELTA_BETTER)
			c->resolved = 1;
	}
	/* The verdict's level moved by an untested side: not tested, unless
	 * a divergence (seen at any length) moved it. */
	if (untested && c->severity != RM_DELTA_UNCHANGED && c->hyp[RM_H_DIVERGENCE].change == RM_DELTA_UNCHANGED)
		c->severity = RM_DELTA_UNTESTED;
	if (c->severity == RM_DELTA_NEW || c->severity == RM_DELTA_WORSE)
		c->worse = 1;
	/* The adjusted loss over the steps both runs cover. */
	c->common_first = a->first_step > b->first_step ? a->first_step : b->first_step;
	c->common_last = a->last_step < b->last_step ? a->last_step : b->last_step;
	c->adjusted[0] = c->adjusted[1] = c->length_adjusted[0] = c->length_adjusted[1] = NAN;
	c->adjusted_change = c->adjusted_se = NAN;
	if (a->points && b->points && c->common_first <= c->common_last) {
		c->common = 1;
		const struct rm_diagnosis *d[2] = {a, b};
		for (int i = 0; i < 2; i++) {
			c->adjusted[i] =
			    mean_over(&d[i]->curves, d[i]->curves.adjusted, c->common_first, c->common_last);
			c->length_adjusted[i] =
			    mean_over(&d[i]->curves, d[i]->curves.length_adjusted, c->common_first, c->common_last);
		}
		adjusted_change(a, b, c);
	}
	cost_change(a, b, c);
	c->outcome = outcome_of(c);
}
