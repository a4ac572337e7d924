/*
 * explain.c - the verdict in one sentence and the fix, shared by every
 * output (terminal, JSON, findings, reports, alerts).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runmon/render.h"
#include "report_internal.h"

/* The bucket with the highest spike enrichment, among those expecting
 * enough onsets to be tested alone (enrich_p below 1) when any does. */
static int top_enriched(const struct rm_resets_result *re)
{
	int best = -1;
	for (int b = 0; b < re->k; b++) {
		if (!re->bucket_spikes[b])
			continue;
		int tested = re->enrich_p[b] < 1, best_tested = best >= 0 && re->enrich_p[best] < 1;
		if (best < 0 || tested > best_tested ||
		    (tested == best_tested && re->enrichment[b] > re->enrichment[best]))
			best = b;
	}
	return best;
}

/* Where bucket id sits by the lengths of its batches: "the shortest
 * sequences, 12 to 40 long", "the longest ...", or its lengths alone; ""
 * when its lengths are not known (never a guess from its id). */
static void bucket_place(const struct rm_diagnosis *d, int id, char *buf, size_t n)
{
	const struct rm_curves *c = &d->curves;
	int at = -1, lower = 0, higher = 0;
	for (int j = 0; j < c->k; j++)
		if (c->bucket[j] == id)
			at = j;
	buf[0] = 0;
	if (at < 0 || !isfinite(c->len_hi[at]))
		return;
	for (int j = 0; j < c->k; j++)
		if (j != at && isfinite(c->len_hi[j])) {
			lower += c->len_hi[j] < c->len_hi[at];
			higher += c->len_hi[j] > c->len_hi[at];
		}
	snprintf(buf, n, "%s%.0f to %.0f long",
	         !lower    ? "the shortest sequences, "
	         : !higher ? "the longest sequences, "
	                   : "",
	         c->len_lo[at], c->len_hi[at]);
}

/* Each rank streaks (or the mixture drifts) while the steps mix buckets:
 * how far and how long the mixture strays from the run's proportions. */
static void drift_summary(const struct rm_diagnosis *d, char *buf, size_t n)
{
	const struct rm_mixture_result *mx = &d->mixture;
	int w = mx->worst;
	char far[200] = "";
	if (w >= 0)
		snprintf(far, sizeof(far),
		         ": windows of %lld steps stray from the run's proportions by a total variation of %.2f where a"
		         " random order of the steps gives %.2f",
		         (long long)mx->window[w], mx->tv[w], mx->tv_random[w]);
	if (mx->shape == RM_MIX_RANK_STREAKS)
		snprintf(buf, n,
		         "each rank streaks, the global step mixes them: %d of %d ranks run in same-bucket streaks"
		         " (median z = %.1f) while ranks agree on %.0f%% of steps (chance %.0f%%); %s%s",
		         mx->ranks_flagged, mx->ranks_tested, mx->rank_z_median, 100 * mx->concordance,
		         100 * mx->concordance_expected,
		         mx->drifts ? "the composition drifts" : "the mixture stays near its proportions",
		         mx->drifts ? far : "");
	else
		snprintf(buf, n, "the mixture of buckets drifts%s", far);
	if (mx->drifts && mx->persistence >= 2) {
		size_t len = strlen(buf);
		snprintf(buf + len, n - len, ", for ~%.0f steps at a time", mx->persistence);
	}
}

/* The levels of the loss alone: "3 levels (x1.00 for 38% of points, ...)". */
static void levels_words(const struct rm_split_result *sp, char *buf, size_t n)
{
	int w = snprintf(buf, n, "%d levels (", sp->levels);
	for (int c = 0; c < sp->levels && w > 0 && (size_t)w < n; c++)
		w += snprintf(buf + w, n - (size_t)w,
		              sp->level_log ? "%sx%.2f for %.0f%% of points" : "%s%+.3g for %.0f%% of points",
		              c ? ", " : "", sp->level_ratio[c], 100 * sp->level_share[c]);
	if (w > 0 && (size_t)w < n)
		snprintf(buf + w, n - (size_t)w, ")");
}

/* The divergence in one clause. */
static void divergence_words(const struct rm_divergence *dv, char *buf, size_t n)
{
	if (dv->nan + dv->inf >= dv->exploded)
		snprintf(buf, n, "the loss diverges at step %lld: from there %zu of its points are %s",
		         (long long)dv->first_step, dv->nan + dv->inf, dv->inf > dv->nan ? "Inf" : "NaN");
	else
		snprintf(buf, n,
		         "the loss diverges at step %lld: it explodes to %.3g, %.0fx the median loss before (%.3g),"
		         " over %zu points",
		         (long long)dv->first_step, dv->peak, dv->peak / dv->baseline, dv->baseline, dv->points);
}

/* The summary of one cause at warn or above. */
static void cause_summary(const struct rm_diagnosis *d, enum rm_hypothesis h, char *buf, size_t n)
{
	const struct rm_runs_result *ru = &d->runs;
	const struct rm_resets_result *re = &d->resets;
	const struct rm_mixture_result *mx = &d->mixture;
	switch (h) {
	case RM_H_DIVERGENCE: divergence_words(&d->divergence, buf, n); break;
	case RM_H_HOMOGENEOUS:
		if (d->suspected) {
			char lv[256];
			levels_words(&d->split, lv, sizeof(lv));
			snprintf(buf, n,
			         "suspected homogeneous batching (from the loss alone): it switches between %s, %s"
			         " (%zu runs of one level where a random order gives %.0f, z = %.1f)",
			         lv, d->split.level_runs_z < -4 ? "in blocks" : "in random order, a braid",
			         d->split.level_runs, d->split.level_runs_expected, d->split.level_runs_z);
			break;
		}
		if (mx->shape == RM_MIX_RANK_STREAKS || mx->shape == RM_MIX_DRIFT) {
			drift_summary(d, buf, n);
			break;
		}
		if (d->ladder.ramp && !ru->flagged)
			snprintf(buf, n,
			         "length ramps: max_len falls in %.0f%% of consecutive batches with a period of %d"
			         " batches (group_by_length megabatches), and the loss saw-tooths with it",
			         100 * d->ladder.ramp_desc_share, d->ladder.ramp_period);
		else {
			/* "lockstep" only when the ranks nearly always share a bucket;
			 * else the share they do (issue 65.4) */
			char ranks[96] = "";
			if (mx->shape == RM_MIX_LOCKSTEP && mx->concordance >= 0.9)
				snprintf(ranks, sizeof(ranks), ", ranks in lockstep on one bucket");
			else if (mx->shape == RM_MIX_LOCKSTEP)
				snprintf(ranks, sizeof(ranks), ", the ranks on one bucket together on %.0f%% of steps",
				         100 * mx->concordance);
			snprintf(buf, n,
			         "homogeneous batching%s: %.0f same-bucket streaks where random order gives %.0f"
			         " (z = %.1f: fewer, longer streaks than random)%s%s",
			         ranks, ru->runs, ru->expected, ru->z,
			         d->ladder.flagged ? "; the reported loss climbs in ladders" : "",
			         re->cluster_by_bucket ? "; loss resets cluster by bucket" : "");
		}
		break;
	case RM_H_BUCKET_RESETS: {
		int b = top_enriched(re);
		snprintf(buf, n,
		         "loss resets cluster in bucket %s (%.1fx its share of steps, q = %.2g) while the"
		         " batching order is healthy%s",
		         b >= 0 ? rm_bucket_label_short(d, re->bucket[b]) : "?", b >= 0 ? re->enrichment[b] : 0,
		         b >= 0 ? re->enrich_q[b] : 1,
		         re->period_alias ? " (they also recur with the order's own period, which the bucket explains)"
		                          : "");
		break;
	}
	case RM_H_CHECKPOINT:
		snprintf(buf, n,
		         "loss resets follow checkpoint saves (every %lld steps): %.0f of %zu spikes come just after"
		         " one where %.1f would by chance (q = %.2g)%s",
		         (long long)re->checkpoint_every, re->ckpt_near, re->spikes, re->ckpt_expected, re->ckpt_q,
		         re->cluster_by_bucket ? "" : ", not with buckets");
		break;
	case RM_H_PERIODIC:
		snprintf(buf, n,
		         "loss resets recur every %lld steps: %zu of %zu spikes at one phase (q = %.2g), as a save,"
		         " an evaluation or a shard boundary would make them%s",
		         (long long)re->period, re->period_hits, re->period_events, re->period_q,
		         re->bucket_alias ? "; they fall in one bucket only because the batch order repeats with it"
		                          : ", not with buckets");
		break;
	case RM_H_FIXED_ORDER: {
		const struct rm_order_result *od = &d->order;
		int w = snprintf(buf, n,
		                 "the data order repeats every epoch (no shuffle): the loss at one in-epoch step"
		                 " correlates across epochs (r = %.2f, z = %.1f)",
		                 od->r, od->z);
		for (int i = 0; i < od->nspikes && w > 0 && (size_t)w < n; i++)
			w += snprintf(buf + w, n - (size_t)w, "%s%lld", i ? ", " : "; the spikes at in-epoch steps ",
			              (long long)od->spike_pos[i]);
		if (od->nspikes && w > 0 && (size_t)w < n)
			snprintf(buf + w, n - (size_t)w, " are the same batches each epoch");
		break;
	}
	case RM_H_INSTABILITY:
		if (d->has_buckets && re->bucket_blind)
			snprintf(
			    buf, n,
			    "%zu loss resets (%zu of them at least twice their baseline) follow no checkpoint, epoch"
			    " or schedule change; whether they begin in one bucket cannot be told: each point"
			    " averages %.0f steps that hold every bucket alike (log the loss every step to tell)",
			    re->spikes, re->spikes_2x, re->interval);
		else
			snprintf(
			    buf, n,
			    "%zu loss resets (%zu of them at least twice their baseline) follow no bucket, checkpoint,"
			    " epoch or schedule change: genuine instability",
			    re->spikes, re->spikes_2x);
		break;
	default: snprintf(buf, n, "%s", rm_hypothesis_name(h));
	}
}

const char *rm_reading_basis_name(int basis)
{
	static const char *const names[] = {"dense", "given", "agrees", "fit", "convention", "assumed"};
	return basis >= 0 && basis < (int)(sizeof(names) / sizeof(names[0])) ? names[basis] : "?";
}

int rm_explain_reading(const struct rm_reading_fit *r, char *buf, size_t n)
{
	static const char *const what[RM_READINGS] = {
	    "the mean of the steps since the previous point", "one step's loss, joined to its own batch",
	    "one step's loss, stamped one step after its batch", "one step's loss, stamped one step before its batch"};
	buf[0] = 0;
	if (!r->sparse)
		return 0;
	int w = snprintf(buf, n, "each point is %s (a point every %.0f steps", what[r->best], r->steps_per_point);
	if (w < 0 || (size_t)w >= n)
		return 1;
	char *at = buf + w;
	size_t left = n - (size_t)w;
	const char *conv = "the loss key is a step's value (Lightning's <name>_step)";
	switch (r->basis) {
	case RM_BASIS_GIVEN: snprintf(at, left, "; given with --loss-is)"); break;
	case RM_BASIS_AGREES: {
		int second = -1; /* the runner-up, for the margin */
		for (int k = 0; k < RM_READINGS; k++)
			if (k != r->best && isfinite(r->r2[k]) && (second < 0 || r->r2[k] > r->r2[second]))
				second = k;
		w = snprintf(at, left, "; %s%sits composition fits the loss best, R^2 %.2f",
		             r->convention == RM_READ_STEP ? conv : "", r->convention == RM_READ_STEP ? ", and " : "",
		             r->r2[r->best]);
		if (w >= 0 && (size_t)w < left)
			snprintf(at + w, left - (size_t)w, second >= 0 ? ", %.2f as %s)" : ")",
			         second >= 0 ? r->r2[second] : 0, second >= 0 ? what[second] : "");
		break;
	}
	case RM_BASIS_FIT:
		snprintf(at, left,
		         "; its composition explains the loss where %s's cannot: R^2 %.2f against %.2f, p %.1g)",
		         r->start ? "one step" : "the mean", r->r2[r->best], r->r2[r->start], r->p_gain);
		break;
	case RM_BASIS_CONVENTION:
	case RM_BASIS_ASSUMED:
		if (r->challenger < 0)
			snprintf(at, left, "; %s: too little composition to test the readings%s)",
			         r->basis == RM_BASIS_CONVENTION ? conv : "assumed",
			         r->basis == RM_BASIS_CONVENTION ? "" : ": --loss-is step if each point is one step's");
		else
			snprintf(at, left,
			         "; %s: the batches' composition cannot tell it from %s, R^2 %.2f against %.2f%s)",
			         r->basis == RM_BASIS_CONVENTION ? conv : "assumed", what[r->challenger],
			         r->r2[r->start], r->r2[r->challenger],
			         r->basis == RM_BASIS_CONVENTION ? "" : "; --loss-is step if each point is one step's");
		break;
	default: snprintf(at, left, ")");
	}
	return 1;
}

int rm_explain_join(const struct rm_join *j, char *buf, size_t n)
{
	buf[0] = 0;
	if (!j->batches)
		return 0;
	int warn = j->with_batches * 2 < j->points;
	int w = snprintf(buf, n, "join: %zu of %zu loss points have their batches; %zu of %zu batches have a loss",
	                 j->with_batches, j->points, j->covered, j->batches);
	if (warn && w > 0 && (size_t)w < n)
		snprintf(buf + w, n - (size_t)w,
		         " (warning: under half the loss points have their batches: losses at steps %lld..%lld, batches"
		         " at %lld..%lld)",
		         (long long)j->loss_lo, (long long)j->loss_hi, (long long)j->batch_lo, (long long)j->batch_hi);
	return warn ? 2 : 1;
}

void rm_explain_verdict(const struct rm_diagnosis *d, char *buf, size_t n)
{
	const struct rm_ranked *top = &d->rank[0];
	const struct rm_runs_result *ru = &d->runs;
	const struct rm_length_result *len = &d->length;
	const struct rm_mixture_result *mx = &d->mixture;
	if (d->join.none && top->severity < RM_SEV_WARN) {
		snprintf(buf, n,
		         "the batches meet no loss step: losses at steps %lld..%lld, batches at %lld..%lld, so the"
		         " composition cannot be read; record each batch under the step its loss is logged at (a"
		         " recorder that counted from another origin?)",
		         (long long)d->join.loss_lo, (long long)d->join.loss_hi, (long long)d->join.batch_lo,
		         (long long)d->join.batch_hi);
		return;
	}
	if (top->severity < RM_SEV_WARN) {
		if (top->h == RM_H_HOMOGENEOUS && top->severity == RM_SEV_INFO &&
		    (mx->shape == RM_MIX_RANK_STREAKS || mx->shape == RM_MIX_DRIFT))
			drift_summary(d, buf, n);
		else if (d->resets_by_length && len->coupled)
			snprintf(buf, n,
			         "healthy order: batch lengths come in no streaks (lag-1 autocorrelation %.2f), and the"
			         " loss level follows length (R^2 = %.2f, slope %.2f on log length): read the"
			         " length-adjusted loss",
			         len->acf[0], len->r2, len->slope);
		else if (!d->has_buckets && !len->batches && d->tokens_only)
			snprintf(
			    buf, n,
			    "not enough to test: %zu batches have a token count but no sequence count or length, so"
			    " their length is unknown",
			    d->tokens_only);
		else if (rm_diagnosis_too_short(d))
			snprintf(buf, n, "not enough to judge: %zu loss points, the detectors need 50", d->finite);
		else if (!d->has_buckets && d->nderived)
			snprintf(buf, n,
			         "no alarm; batch lengths are recorded but hardly vary, so there is no length order to"
			         " test");
		else if (!d->has_buckets && len->batches)
			snprintf(
			    buf, n,
			    "no alarm; batch composition is recorded but holds a single bucket, so there is no bucket"
			    " order to test (length autocorrelation %.2f)",
			    len->acf[0]);
		else if (!d->has_buckets && d->split.levels >= 2) {
			char lv[256];
			levels_words(&d->split, lv, sizeof(lv));
			snprintf(
			    buf, n,
			    "no alarm: the loss alone switches between %s, but alternates faster than a random order"
			    " (z = %.1f), as interleaved buckets make it; record batch composition to confirm",
			    lv, d->split.level_runs_z);
		} else if (!d->has_buckets)
			snprintf(buf, n,
			         "no alarm from the bucket-free checks; record batch composition to test for"
			         " homogeneous batching");
		else if (d->split.flagged)
			snprintf(buf, n,
			         "healthy order: buckets are interleaved (streaks z = %.1f), so the per-bucket loss"
			         " split (%s = %.2f) is information, not an alarm; watch the bucket-adjusted loss",
			         ru->z, d->split.mixed ? "R^2 on bucket shares" : "eta^2", d->split.eta2);
		else
			snprintf(buf, n, "healthy: no homogeneous batching, no clustered resets");
		return;
	}
	/* every cause at warn or above, the strongest first: a second cause
	 * (checkpoint saves beside the batching) is never lost */
	size_t w = 0;
	for (int i = 0; i < RM_H_COUNT && d->rank[i].severity >= RM_SEV_WARN && w + 8 < n; i++) {
		w += (size_t)snprintf(buf + w, n - w, "%s", i ? "; also " : "");
		if (w < n)
			cause_summary(d, d->rank[i].h, buf + w, n - w);
		w += strlen(buf + w);
	}
}

#define ADD(s)                                                                                                         \
	do {                                                                                                           \
		if (n < max)                                                                                           \
			lines[n++] = (s);                                                                              \
	} while (0)

/* The fixes of one cause at warn or above, appended to lines[*n..max). */
static void cause_fixes(const struct rm_diagnosis *d, enum rm_hypothesis h, const char **lines, int *np, int max)
{
	static char enrich[256], price[448];
	int n = *np;
	const struct rm_mixture_result *mx = &d->mixture;
	switch (h) {
	case RM_H_DIVERGENCE: {
		static char resume[256];
		snprintf(resume, sizeof(resume),
		         "resume from a checkpoint before step %lld with a lower learning rate or gradient clipping;"
		         " look at that step's batch for non-finite inputs, and at the loss scale for an fp16 overflow",
		         (long long)d->divergence.first_step);
		ADD(resume);
		break;
	}
	case RM_H_HOMOGENEOUS:
		if (d->suspected) {
			ADD("confirm it: record each batch's bucket or lengths, one line in the training loop with the"
			    " recorder (rec.record(step, batch=batch), contrib/python/runmon_record.py; see"
			    " docs/formats.md), and import that file beside this run");
			ADD("if confirmed, interleave the buckets: the shipped StrideBucketSampler (pip install"
			    " ./contrib/python; DataLoader(dataset, batch_sampler=StrideBucketSampler(lengths, "
			    "boundaries,"
			    " batch_size))) keeps one bucket a batch and every window of batches in proportion");
			ADD("meanwhile, read the level-adjusted loss: each point less the level it sits at");
			break;
		}
		if (mx->shape == RM_MIX_RANK_STREAKS) {
			ADD("interleave per rank: give each rank's sampler stride scheduling over the buckets, so each"
			    " rank's batches (and so every step) hold the buckets in their overall proportions");
			ADD("or draw one global interleaved order and shard it across ranks, so ranks do not each"
			    " walk their own bucket streaks");
			ADD("meanwhile, read the bucket-adjusted loss: it removes the mixture's level");
			break;
		}
		if (mx->shape == RM_MIX_LOCKSTEP)
			ADD("the ranks share one bucket per step because a bucket-chunked global order is sharded"
			    " across them: interleave the global order before sharding");
		if (d->ladder.ramp)
			ADD("group_by_length sorts each megabatch by length: turn it off, or shuffle batch order"
			    " after grouping");
		ADD("interleave buckets in proportion to their size (stride scheduling): each bucket gets a"
		    " stride of 1/share and the next batch comes from the bucket furthest behind, so every"
		    " window of batches holds the buckets in their overall proportions. The shipped"
		    " StrideBucketSampler does it: pip install ./contrib/python (runmon's source tree), then"
		    " from runmon_sampler import StrideBucketSampler; sampler = StrideBucketSampler(lengths,"
		    " boundaries, batch_size=16, rank=rank, world_size=world);"
		    " DataLoader(dataset, batch_sampler=sampler) (docs/formats.md)");
		if (d->cost.ok) {
			char words[384];
			rm_price_words(&d->cost, words, sizeof(words));
			snprintf(price, sizeof(price), "the price: %s", words);
			ADD(price);
		}
		ADD("or build mixed-bucket batches (several buckets per batch), at some padding cost");
		if (d->resets_by_length)
			ADD("meanwhile, read the length-adjusted loss: it removes the length effect, and its spikes"
			    " are real ones");
		else
			ADD("meanwhile, read the bucket-adjusted loss: it removes each bucket's level, and its spikes"
			    " are real ones");
		break;
	case RM_H_BUCKET_RESETS: {
		const struct rm_resets_result *re = &d->resets;
		int b = top_enriched(re);
		char place[128];
		bucket_place(d, b >= 0 ? re->bucket[b] : -1, place, sizeof(place));
		snprintf(enrich, sizeof(enrich),
		         "inspect the samples of bucket %s (%s%struncation, corrupt data) and"
		         " consider gradient clipping; the batching order itself is fine",
		         b >= 0 ? rm_bucket_label_short(d, re->bucket[b]) : "?", place, *place ? ": " : "");
		ADD(enrich);
		break;
	}
	case RM_H_CHECKPOINT:
		ADD("check what a checkpoint save does to training: optimizer state, the data loader's"
		    " iterator or RNG, or a reloaded model");
		break;
	case RM_H_PERIODIC:
		ADD("find what runs on that period (a checkpoint save, an evaluation, a data shard boundary) and"
		    " what it does to training: optimizer state, the data loader's iterator or RNG, a reloaded model;"
		    " give --checkpoint-every (or save_steps in the config) to test the save interval directly");
		break;
	case RM_H_EPOCH:
		ADD("check what happens at each epoch start: reshuffling, dataset resets, schedule steps");
		break;
	case RM_H_LR: ADD("smooth the learning-rate schedule around its jumps, or lower the peak"); break;
	case RM_H_FIXED_ORDER:
		ADD("shuffle the data every epoch (DataLoader(shuffle=True), or sampler.set_epoch(epoch) with a"
		    " DistributedSampler): the same batches in the same order give the curve the same bumps each"
		    " epoch and the model the same sequence to fit");
		if (d->order.nspikes)
			ADD("look at the batches at the repeated spikes' in-epoch steps: they are the same samples "
			    "every"
			    " epoch (long, truncated or mislabelled ones)");
		break;
	case RM_H_INSTABILITY:
		if (d->has_buckets && d->resets.bucket_blind)
			ADD("log the loss every step (or lengths with it) so the resets can be placed in a bucket or"
			    " ruled out of all: each logged point now averages every bucket alike");
		ADD("lower the learning rate or its peak, clip gradients, and look for bad samples at the"
		    " spike steps");
		break;
	default: break;
	}
	*np = n;
}

int rm_explain_fix(const struct rm_diagnosis *d, const char **lines, int max)
{
	static char per_seq[256];
	int n = 0;
	const struct rm_ranked *top = &d->rank[0];
	const struct rm_length_result *len = &d->length;
	if (len->per_sequence_sum) {
		snprintf(per_seq, sizeof(per_seq),
		         "the loss grows in proportion to length (slope %.2f on log length): it is a per-sequence"
		         " sum; log the per-token loss (divide by the batch's tokens) and the length effect goes",
		         len->slope);
		ADD(per_seq);
	}
	if (d->join.none && top->severity < RM_SEV_WARN)
		ADD("record each batch under the step its loss is logged at (the recorder's rec.record(step, ...) with"
		    " the trainer's global step), or import the batches into the run whose losses they are; then"
		    " diagnose again");
	else if (top->severity < RM_SEV_WARN) {
		if (d->resets_by_length && len->coupled)
			ADD("nothing to fix in the order; plot the length-adjusted loss (the length_adjusted_loss view)"
			    " rather than the raw loss");
		else if (!d->has_buckets && !len->batches && d->tokens_only)
			ADD("record each batch's sequence count next to its tokens (n, nsentences, bsz, or a cumulative"
			    " elapsed_examples / consumed_samples; --count-key names another key), or its lengths");
		else if (rm_diagnosis_too_short(d))
			ADD("diagnose again when the run has logged more (or log the loss more often)");
		else if (!d->has_buckets && d->nderived)
			ADD("nothing to fix: batches of one length cannot be ordered by length");
		else if (!d->has_buckets && len->batches)
			ADD("nothing to fix: batches of one bucket cannot be ordered by bucket");
		else if (!d->has_buckets)
			ADD("record each batch's bucket and lengths (a sidecar file or batch/* keys; see "
			    "docs/formats.md)"
			    " so runmon can test for homogeneous batching");
		else
			ADD("nothing to fix; plot the bucket-adjusted loss rather than the raw loss");
		return n;
	}
	for (int i = 0; i < RM_H_COUNT && d->rank[i].severity >= RM_SEV_WARN; i++)
		cause_fixes(d, d->rank[i].h, lines, &n, max);
	return n;
}

#undef ADD
