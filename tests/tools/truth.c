/*
 * truth.c - see truth.h.
 */
#include "truth.h"
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/detect.h"
#include "runmon/model.h"

#define STEPS 8000

static const char *const comp_names[COMP_COUNT] = {"ids", "lengths", "loss"};
static const char *const event_names[EV_COUNT] = {"none",   "bucket", "checkpoint", "epoch",
                                                  "random", "lr",     "nan",        "explode"};
static const char *const rank_names[RK_COUNT] = {"1", "4-sharded", "4-lockstep", "4-independent", "2x2-micro"};

static int valid(enum rm_sim_strategy s, enum truth_ranks r)
{
	if (s == RM_SIM_STRIDE)
		return r == RK_ONE || r == RK_SHARDED || r == RK_MICRO;
	if (s == RM_SIM_MIXED || s == RM_SIM_HF_MEGABATCH)
		return r != RK_INDEPENDENT;
	return 1;
}

size_t truth_cells(struct truth_cell **cells)
{
	size_t n = 0, cap = 512;
	struct truth_cell *c = malloc(cap * sizeof(*c));
	static const int intervals[] = {1, 10};
	for (int s = 0; s < RM_SIM_COUNT; s++)
		for (int r = 0; r < RK_COUNT; r++)
			for (int i = 0; i < 2; i++)
				for (int k = 0; k < COMP_COUNT; k++)
					if (valid((enum rm_sim_strategy)s, (enum truth_ranks)r))
						c[n++] = (struct truth_cell){(enum rm_sim_strategy)s,
						                             (enum truth_ranks)r,
						                             intervals[i],
						                             (enum truth_comp)k,
						                             EV_NONE,
						                             0};
	static const enum rm_sim_strategy orders[] = {RM_SIM_CHUNKED, RM_SIM_INTERLEAVED};
	static const enum truth_ranks ranks[] = {RK_ONE, RK_SHARDED};
	for (int e = EV_BUCKET; e < EV_COUNT; e++)
		for (int s = 0; s < 2; s++)
			for (int r = 0; r < 2; r++)
				for (int i = 0; i < 2; i++)
					for (int k = 0; k < COMP_COUNT; k++)
						c[n++] = (struct truth_cell){orders[s],           ranks[r],
						                             intervals[i],        (enum truth_comp)k,
						                             (enum truth_event)e, 0};
	for (int o = 0; o < RP_COUNT; o++)
		for (int i = 0; i < 2; i++)
			for (int k = 0; k < COMP_COUNT; k++)
				c[n++] = (struct truth_cell){.ranks = RK_ONE,
				                             .interval = intervals[i],
				                             .comp = (enum truth_comp)k,
				                             .event = EV_NONE,
				                             .replay = 1 + o};
	*cells = c;
	return n;
}

void truth_cell_name(const struct truth_cell *c, char *buf, size_t n)
{
	if (c->replay) {
		snprintf(buf, n, "replay:%s/1/k%d/%s/none", replay_order_name((enum replay_order)(c->replay - 1)),
		         c->interval, comp_names[c->comp]);
		return;
	}
	snprintf(buf, n, "%s/%s/k%d/%s/%s", rm_sim_strategy_name(c->strategy), rank_names[c->ranks], c->interval,
	         comp_names[c->comp], event_names[c->event]);
}

void truth_opts(const struct truth_cell *c, uint64_t seed, struct rm_sim_opts *o)
{
	rm_sim_opts_default(o);
	o->strategy = c->strategy;
	o->seed = seed;
	o->steps = STEPS;
	o->log_every = c->interval;
	o->no_bucket = c->comp == COMP_LENGTHS;
	o->loss_only = c->comp == COMP_LOSS;
	switch (c->ranks) {
	case RK_ONE: break;
	case RK_SHARDED: o->ranks = 4; break;
	case RK_LOCKSTEP:
		o->ranks = 4;
		o->rank_mode = RM_SIM_LOCKSTEP;
		break;
	case RK_INDEPENDENT:
		o->ranks = 4;
		o->rank_mode = RM_SIM_INDEPENDENT;
		break;
	default: o->ranks = 2; o->micro = 2;
	}
	switch (c->event) {
	case EV_BUCKET: o->spikes = RM_SIM_SPIKES_BUCKET; break;
	case EV_CHECKPOINT: o->spikes = RM_SIM_SPIKES_CHECKPOINT; break;
	case EV_EPOCH:
		o->spikes = RM_SIM_SPIKES_EPOCH;
		o->steps_per_epoch = 640; /* not a multiple of the save interval: epochs are no saves */
		break;
	case EV_RANDOM: o->spikes = RM_SIM_SPIKES_RANDOM; break;
	case EV_LR: o->lr_restarts = 1000; break;
	case EV_NAN: o->diverge = RM_SIM_DIVERGE_NAN; break;
	case EV_EXPLODE: o->diverge = RM_SIM_DIVERGE_EXPLODE; break;
	default: break;
	}
}

static enum rm_severity named_at(const struct rm_diagnosis *d, enum rm_hypothesis h)
{
	for (int i = 0; i < RM_H_COUNT; i++)
		if (d->rank[i].h == h)
			return d->rank[i].severity;
	return RM_SEV_NONE;
}

static enum rm_severity required_level(enum rm_hypothesis h)
{
	return h == RM_H_EPOCH || h == RM_H_LR ? RM_SEV_INFO : h == RM_H_DIVERGENCE ? RM_SEV_CRITICAL : RM_SEV_WARN;
}

/* Does dense bucket j of the diagnosis hold the simulated bucket b (the
 * default boundaries)? By id, or by its derived length range. */
static int same_bucket(const struct rm_diagnosis *d, int j, int b)
{
	static const int64_t B[] = {0, 770, 1216, 1728, 2432, 3296, 8192};
	if (!d->nderived)
		return d->resets.bucket[j] == b;
	int id = d->resets.bucket[j];
	if (id < 0 || id + 1 >= d->nderived)
		return 0;
	int64_t lo = d->derived_bound[id], hi = d->derived_bound[id + 1];
	return hi > B[b] && lo < B[b + 1] && (hi <= B[b + 1] || lo >= B[b]);
}

static void say(struct truth_outcome *out, const char *what)
{
	size_t w = strlen(out->why);
	snprintf(out->why + w, sizeof(out->why) - w, "%s%s", w ? "; " : "", what);
}

/* What a replayed run must show and may: a streaking order is homogeneous
 * batching wherever its composition is recorded, and from the loss alone
 * where its level blocks can show (chunks, as rm_sim_causes says of the
 * simulator's); a sorted order repeats each epoch (its order fixed); one
 * bucket a batch in random order braids the loss (suspected, from the loss
 * alone). A mixed or stride order may show nothing. */
static int replay_causes(const struct truth_cell *c, enum rm_hypothesis *req, unsigned *allowed)
{
	enum replay_order o = (enum replay_order)(c->replay - 1);
	int n = 0;
	unsigned ok = 0;
	if (replay_sick(o) && (c->comp != COMP_LOSS || o == RP_CHUNKED))
		req[n++] = RM_H_HOMOGENEOUS;
	if (replay_sick(o) || (o == RP_BUCKETED_RANDOM && c->comp == COMP_LOSS))
		ok |= 1u << RM_H_HOMOGENEOUS;
	if (o == RP_SORTED)
		ok |= 1u << RM_H_FIXED_ORDER | 1u << RM_H_PERIODIC;
	*allowed = ok;
	return n;
}

void truth_run(const struct truth_cell *c, uint64_t seed, struct truth_outcome *out)
{
	struct rm_sim_opts o;
	struct rm_sim_series ss;
	struct rm_detect_opts dopt;
	struct rm_diagnosis d;
	char buf[160];
	memset(out, 0, sizeof(*out));
	enum rm_hypothesis req[RM_H_COUNT];
	unsigned allowed;
	int nreq;
	if (c->replay) {
		struct replay_opts ro = {(enum replay_order)(c->replay - 1),
		                         seed,
		                         STEPS,
		                         c->interval,
		                         c->comp == COMP_LENGTHS,
		                         c->comp == COMP_LOSS};
		if (replay_series_make(&ro, &ss, out->why, sizeof(out->why))) {
			out->missed = 1;
			return;
		}
		nreq = replay_causes(c, req, &allowed);
	} else {
		truth_opts(c, seed, &o);
		rm_sim_series_make(&o, &ss);
		nreq = rm_sim_causes(&o, req, &allowed);
	}
	rm_detect_opts_default(&dopt);
	rm_detect_all(&ss.s, &dopt, &d);
	for (int i = 0; i < nreq; i++)
		if (named_at(&d, req[i]) < required_level(req[i])) {
			out->missed = 1;
			out->missed_causes |= 1u << req[i];
			snprintf(buf, sizeof(buf), "missed %s (%s)", rm_hypothesis_name(req[i]),
			         rm_severity_name(named_at(&d, req[i])));
			say(out, buf);
		}
	for (int i = 0; i < RM_H_COUNT; i++)
		if (d.rank[i].severity >= RM_SEV_WARN && !(allowed & 1u << d.rank[i].h)) {
			out->false_alarm = 1;
			out->false_causes |= 1u << d.rank[i].h;
			snprintf(buf, sizeof(buf), "false %s (%s)", rm_hypothesis_name(d.rank[i].h),
			         rm_severity_name(d.rank[i].severity));
			say(out, buf);
		}
	if (!c->replay && c->event == EV_BUCKET && c->comp != COMP_LOSS && rm_sim_onset_composition(&o)) {
		int top = -1;
		for (int b = 0; b < d.resets.k; b++)
			if (d.resets.bucket_spikes[b] && (top < 0 || d.resets.enrichment[b] > d.resets.enrichment[top]))
				top = b;
		if (!d.resets.cluster_by_bucket || top < 0 || !same_bucket(&d, top, ss.truth.reset_bucket)) {
			out->wrong_bucket = 1;
			snprintf(buf, sizeof(buf), "resets %s, top bucket %d (made in %d)",
			         d.resets.cluster_by_bucket ? "by bucket" : "not by bucket",
			         top >= 0 ? d.resets.bucket[top] : -1, ss.truth.reset_bucket);
			say(out, buf);
		}
	}
	out->onsets = ss.truth.nresets;
	out->found = d.resets.spikes;
	rm_diagnosis_release(&d);
	rm_sim_series_release(&ss);
}

const char *truth_known_gap(const struct truth_cell *c, const struct truth_outcome *out)
{
	/* A real training's chunks from the loss alone: its buckets' log losses
	 * lie 0.1 to 0.2 apart, so the level blocks are not named, and logged
	 * as means of 10 steps a block's step up and back reads as resets. */
	if (c->replay - 1 == RP_CHUNKED && c->comp == COMP_LOSS && !out->wrong_bucket &&
	    !(out->missed_causes & ~(1u << RM_H_HOMOGENEOUS)) && !(out->false_causes & ~(1u << RM_H_INSTABILITY)))
		return "issue 65.3: level blocks of real samples are not named from the loss alone, and as interval "
		       "means they can read as genuine instability";
	return NULL;
}
