/*
 * sink.c - what every format writes through: the import report and its
 * bad-line rule, and the sink that writes one run's records while noting
 * restarts (the step counter going backwards) and replacements (a step
 * logged again).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runmon/sink.h"

/* The eval key holding, until the import's end, the epoch of a line read
 * as an eval with a training loss: no reader makes a key with spaces and
 * parentheses, and the rows are gone when the import finishes. */
#define TRAIN_EVAL_EPOCH "(epoch of a training loss read as an eval)"

/* ---- report ------------------------------------------------------------ */

struct rm_import_result *rm_import_result_add(struct rm_import_report *rep, const char *path, const char *run_name,
                                              enum rm_format fmt)
{
	if (rep->n == rep->cap) /* doubling: an export adds one result per run */
		rep->r = rm_xrealloc(rep->r, (rep->cap = rep->cap ? rep->cap * 2 : 4) * sizeof(*rep->r));
	struct rm_import_result *res = &rep->r[rep->n++];
	memset(res, 0, sizeof(*res));
	res->path = rm_xstrdup(path);
	res->run_name = rm_xstrdup(run_name);
	res->format = fmt;
	res->first_step = -1;
	res->last_step = -1;
	res->continues = -1;
	return res;
}

void rm_import_result_release(struct rm_import_result *r)
{
	free(r->path);
	free(r->run_name);
	free(r->loss_key);
	free(r->composition);
	free(r->unmapped);
	free(r->inferred);
	free(r->other_keys);
	free(r->from_file);
}

void rm_import_report_release(struct rm_import_report *rep)
{
	for (size_t i = 0; i < rep->n; i++)
		rm_import_result_release(&rep->r[i]);
	free(rep->r);
	rep->r = NULL;
	rep->n = rep->cap = 0;
}

int rm_bad_line(struct rm_import_result *res, const struct rm_import_opts *opts, uint64_t line, const char *why,
                struct rm_err *err)
{
	if (!opts->skip_bad) {
		rm_err_set(err, RM_E_INPUT,
		           res->format == RM_FMT_WANDB_LOG || res->format == RM_FMT_TFEVENTS ? "%s: record %llu: %s"
		                                                                             : "%s:%llu: %s",
		           res->path, (unsigned long long)line, why);
		err->bad_line = line ? line : 1;
		return RM_E_INPUT;
	}
	if (res->skipped < RM_IMPORT_NOTED)
		res->bad_line[res->skipped] = line;
	if (res->skipped == 0)
		snprintf(res->bad_msg, sizeof(res->bad_msg), "%s", why);
	res->skipped++;
	return RM_OK;
}

/* ---- sink ------------------------------------------------------------ */

#define SEEN_MAX_STEP (1ll << 27) /* steps tracked exactly (16 MiB of bits) */

/* The tests' kill point (RUNMON_TEST_PAUSE_ROWS=N): after the Nth step row,
 * inside the import's transaction, say so by creating the file
 * RUNMON_TEST_PAUSE_FILE names, and wait to be killed. A kill -9 then lands
 * inside the transaction whatever the machine's speed. */
static void test_pause(void)
{
	const char *file = getenv("RUNMON_TEST_PAUSE_FILE");
	FILE *fp = file ? fopen(file, "w") : NULL;
	if (fp)
		fclose(fp);
	for (;;)
		pause();
}

static void add_foreign(void *arg, int64_t step)
{
	struct rm_sink *k = arg;
	if (k->nforeign == k->cap_foreign)
		k->foreign = rm_xrealloc(k->foreign, (k->cap_foreign = k->cap_foreign ? k->cap_foreign * 2 : 1024) *
		                                         sizeof(*k->foreign));
	k->foreign[k->nforeign++] = step;
}

static int is_foreign(const struct rm_sink *k, int64_t step)
{
	size_t lo = 0, hi = k->nforeign;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k->foreign[mid] < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->nforeign && k->foreign[lo] == step;
}

/* A step the run holds from another file: replaced with --replace, kept
 * with --append (1: skip this row), else refused, naming both files. */
static int foreign_step(struct rm_sink *k, int64_t step, uint64_t line, int *skip, struct rm_err *err)
{
	struct rm_import_result *res = k->res;
	*skip = 0;
	if (!is_foreign(k, step))
		return RM_OK;
	if (k->opts->replace) {
		res->took_over++;
		return RM_OK;
	}
	if (k->opts->append) {
		res->kept_stored++;
		*skip = 1;
		return RM_OK;
	}
	return rm_err_set(err, RM_E_INPUT,
	                  "%s:%llu: step %lld is already in run '%s', which holds steps %lld..%lld from %s; give"
	                  " --replace (this file's rows win), --append (only the steps not stored are added), or"
	                  " another --run",
	                  rm_tx(res->path), (unsigned long long)line, (long long)step, rm_tx(res->run_name),
	                  (long long)k->foreign[0], (long long)k->foreign[k->nforeign - 1], rm_tx(res->from_file));
}

int rm_sink_open_key(struct rm_sink *k, struct rm_store *st, const struct rm_import_opts *opts,
                     struct rm_import_result *res, const struct rm_run_key *key, struct rm_err *err)
{
	memset(k, 0, sizeof(*k));
	k->res = res;
	k->st = st;
	k->opts = opts;
	rm_mapper_init(&k->map, res->format, opts);
	const char *pause = getenv("RUNMON_TEST_PAUSE_ROWS");
	k->pause_at = pause ? strtoull(pause, NULL, 10) : 0;
	int rc = rm_store_run_ensure(st, key, &k->run_id, err);
	if (!rc)
		rc = rm_store_lock_run(st, k->run_id, err);
	if (!rc && !opts->attach)
		rc = rm_store_claim_run(st, k->run_id, key->source, opts->replace, err);
	if (!rc && !opts->attach && !strcmp(key->source, "file"))
		rc = rm_store_foreign_steps(st, k->run_id, res->path, &res->from_file, add_foreign, k, err);
	if (!rc && opts->nbounds >= 2)
		rc = rm_store_put_buckets(st, k->run_id, opts->bounds, opts->nbounds, err);
	res->run_id = k->run_id;
	return rc;
}

int rm_sink_open(struct rm_sink *k, struct rm_store *st, const struct rm_import_opts *opts,
                 struct rm_import_result *res, struct rm_err *err)
{
	/* "entity/project/id" attaches the file to that W&B run's record. */
	char *name = rm_xstrdup(res->run_name), *s1 = strchr(name, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	struct rm_run_key key = {.source = "file", .entity = "", .project = "", .name = name};
	if (s1 && s2 && !strchr(s2 + 1, '/')) {
		*s1 = *s2 = '\0';
		key.entity = name;
		key.project = s1 + 1;
		key.name = s2 + 1;
	}
	int rc = rm_sink_open_key(k, st, opts, res, &key, err);
	free(name);
	return rc;
}

static struct rm_track *track_for(struct rm_sink *k, int64_t rank, int64_t micro)
{
	for (size_t i = 0; i < k->ntracks; i++)
		if (k->tracks[i].rank == rank && k->tracks[i].micro == micro)
			return &k->tracks[i];
	k->tracks = rm_xrealloc(k->tracks, (k->ntracks + 1) * sizeof(*k->tracks));
	struct rm_track *t = &k->tracks[k->ntracks++];
	memset(t, 0, sizeof(*t));
	t->rank = rank;
	t->micro = micro;
	t->max_step = -1;
	return t;
}

/* Marks step seen; returns 1 if it was seen before in this file. */
static int track_seen(struct rm_track *t, int64_t step)
{
	if (step >= SEEN_MAX_STEP)
		return step <= t->max_step;
	size_t w = (size_t)(step >> 6);
	if (w >= t->words) {
		size_t nw = t->words ? t->words : 4; /* small: an export has a sink per run */
		while (nw <= w)
			nw *= 2;
		t->seen = rm_xrealloc(t->seen, nw * sizeof(uint64_t));
		memset(t->seen + t->words, 0, (nw - t->words) * sizeof(uint64_t));
		t->words = nw;
	}
	uint64_t bit = 1ull << (step & 63);
	int was = (t->seen[w] & bit) != 0;
	t->seen[w] |= bit;
	return was;
}

static void note_step(struct rm_sink *k, int64_t rank, int64_t micro, int64_t step, uint64_t line)
{
	struct rm_import_result *res = k->res;
	struct rm_track *t = track_for(k, rank, micro);
	res->step_rows++;
	if (t->has_prev && step < t->prev) {
		if (res->restarts < RM_IMPORT_NOTED)
			res->restart[res->restarts] = (struct rm_restart){line, step, t->prev};
		res->restarts++;
		res->back_steps += (uint64_t)(t->prev - step);
	}
	if (track_seen(t, step))
		res->replaced++;
	t->prev = step;
	t->has_prev = 1;
	if (step > t->max_step)
		t->max_step = step;
	if (res->first_step < 0 || step < res->first_step)
		res->first_step = step;
	if (step > res->last_step)
		res->last_step = step;
}

static int resolve_text_label(struct rm_sink *k, uint32_t i, struct rm_batch *b, struct rm_err *err)
{
	if (!k->text_id)
		k->text_id = rm_xcalloc(MAX_TEXT_LABELS, sizeof(int64_t));
	int rc;
	if (!k->text_id[i] && (rc = rm_store_bucket_text_id(k->st, k->run_id, k->map.texts[i], &k->text_id[i], err)))
		return rc;
	b->v[RM_B_BUCKET] = (double)k->text_id[i];
	b->have |= 1u << RM_B_BUCKET;
	return RM_OK;
}

static void range_add(struct rm_step_range *r, int64_t step)
{
	if (!r->has || step < r->lo)
		r->lo = step;
	if (!r->has || step > r->hi)
		r->hi = step;
	r->has = 1;
}

#define RANK_MEAN_EVERY 65536 /* rank losses written between two averagings */

static int put_rank_loss(struct rm_sink *k, const struct rm_record *rec, struct rm_err *err)
{
	struct rm_import_result *res = k->res;
	range_add(&k->rl, rec->step);
	res->rank_losses++;
	if (rec->b.rank >= res->ranks)
		res->ranks = rec->b.rank < INT_MAX ? (int)rec->b.rank + 1 : INT_MAX;
	int rc = rm_store_put_rank_loss(k->st, k->run_id, rec->step, rec->b.rank, rec->s.v[RM_S_LOSS], err);
	/* The steps touched so far get their mean now and then, not all at the
	 * end: the averaging query's memory grows with the steps it covers. */
	if (!rc && ++k->rl_pending >= RANK_MEAN_EVERY) {
		rc = rm_store_mean_rank_losses(k->st, k->run_id, k->rl.lo, k->rl.hi, err);
		k->rl.has = 0;
		k->rl_pending = 0;
	}
	return rc;
}

/* The other loss-named series of a training record, by key; the report
 * names the first RM_OTHER_LOSSES keys. */
static int put_other_losses(struct rm_sink *k, int64_t step, const struct rm_eval_kv *other, size_t n,
                            struct rm_err *err)
{
	struct rm_import_result *res = k->res;
	for (size_t i = 0; i < n; i++) {
		int rc = rm_store_put_other_loss(k->st, k->run_id, step, other[i].key, other[i].value, err);
		if (rc)
			return rc;
		res->other_losses++;
		int j = 0;
		while (j < k->nother_keys && strcmp(k->other_keys[j], other[i].key))
			j++;
		if (j < k->nother_keys || j == RM_OTHER_LOSSES)
			continue;
		k->other_keys[k->nother_keys++] = rm_xstrdup(other[i].key);
		size_t have = res->other_keys ? strlen(res->other_keys) : 0, len = strlen(other[i].key) + 3;
		res->other_keys = rm_xrealloc(res->other_keys, have + len);
		snprintf(res->other_keys + have, len, "%s%s", have ? ", " : "", other[i].key);
	}
	return RM_OK;
}

static void running_mean_add(struct rm_running_mean *r, const struct rm_step *s)
{
	if (!((s->have >> RM_S_EPOCH) & 1) || !isfinite(s->v[RM_S_LOSS]))
		return;
	double loss = s->v[RM_S_LOSS];
	if (!r->open || s->v[RM_S_EPOCH] != r->epoch || s->step <= r->epoch_first) {
		*r = (struct rm_running_mean){s->v[RM_S_EPOCH], loss,  s->step, 1,      r->n,
		                              r->epochs + 1,    r->sx, r->sy,   r->sxx, r->sxy};
		return;
	}
	double change = fabs(loss - r->last_loss);
	r->last_loss = loss;
	if (change == 0) /* below the printed digits */
		return;
	double x = log((double)(s->step - r->epoch_first) + 1), y = log(change);
	r->n++;
	r->sx += x;
	r->sy += y;
	r->sxx += x * x;
	r->sxy += x * y;
}

/* The slope of log|change| in log n when it says "a running mean" (about
 * -1; per-batch losses of real logs give -0.3 to 0), else 0. Needs two
 * epochs and 30 changes. */
static double running_mean_slope(const struct rm_running_mean *r)
{
	if (r->epochs < 2 || r->n < 30)
		return 0;
	double n = (double)r->n, vx = r->sxx - r->sx * r->sx / n, cov = r->sxy - r->sx * r->sy / n;
	double slope = vx > 0 ? cov / vx : 0;
	return slope < -0.6 ? slope : 0;
}

int rm_sink_put(struct rm_sink *k, struct rm_record *rec, const struct rm_eval_kv *ev, size_t nev,
                const struct rm_eval_kv *other, size_t nother, uint64_t line, struct rm_err *err)
{
	struct rm_import_result *res = k->res;
	int rc;
	if (rec->is_summary || (!rec->has_step_row && !rec->has_batch && !rec->is_eval)) {
		res->ignored++;
		return RM_OK;
	}
	int skip = 0;
	if (rec->has_step_row && k->nforeign && (rc = foreign_step(k, rec->step, line, &skip, err)))
		return rc;
	if (rec->has_step_row && !skip) {
		if (!k->has_low || rec->step < k->low) { /* once, and again after a restart below it */
			int64_t n;
			if ((rc = rm_store_count_steps(k->st, k->run_id, rec->step, k->has_low ? k->low : INT64_MAX, &n,
			                               err)))
				return rc;
			k->steps_before += n;
			k->low = rec->step;
			k->has_low = 1;
		}
		/* A rank's line is one of the step's: its repeats are the rank's,
		 * and the step counts once (track -2 holds the steps seen). */
		int again = rec->has_rank && track_seen(track_for(k, -2, 0), rec->step);
		note_step(k, rec->has_rank ? rec->b.rank : -1, 0, rec->step, line);
		if ((rc = rm_store_put_step(k->st, k->run_id, &rec->s, err)) ||
		    (rec->has_rank && (rc = put_rank_loss(k, rec, err))))
			return rc;
		if (nother && (rc = put_other_losses(k, rec->step, other, nother, err)))
			return rc;
		if (!rec->has_rank)
			running_mean_add(&k->rm, &rec->s);
		if (!again && ++res->steps == k->pause_at)
			test_pause();
	}
	if (rec->has_batch) {
		struct rm_batch *b = &rec->b;
		if (rec->bucket_text && (rc = resolve_text_label(k, rec->bucket_text - 1, b, err)))
			return rc;
		if (!((b->have >> RM_B_BUCKET) & 1) && ((b->have >> RM_B_MAX_LEN) & 1) && k->opts->nbounds >= 2) {
			int over;
			b->v[RM_B_BUCKET] = rm_bucket_of(k->opts->bounds, k->opts->nbounds, b->v[RM_B_MAX_LEN], &over);
			b->have |= 1u << RM_B_BUCKET;
			res->over_bounds += (uint64_t)over;
		}
		if (!rec->has_step_row)
			note_step(k, b->rank, b->micro, rec->step, line);
		if ((rc = rm_store_put_batch(k->st, k->run_id, b, err)))
			return rc;
		res->batches++;
	}
	if (rec->is_eval && nev) {
		int train = 0;
		for (size_t i = 0; i < nev; i++) {
			if ((rc = rm_store_put_eval(k->st, k->run_id, rec->step, ev[i].key, ev[i].value, err)))
				return rc;
			if (!strncmp(ev[i].key, "eval_train", 10)) {
				train = 1;
				if (!k->train_eval)
					k->train_eval = rm_xstrdup(ev[i].key);
			}
		}
		/* the epoch a training loss read as an eval goes with it to the
		 * steps if promoted (the fixed-order test needs it) */
		if (train && !rec->has_step_row && ((rec->s.have >> RM_S_EPOCH) & 1) &&
		    (rc = rm_store_put_eval(k->st, k->run_id, rec->step, TRAIN_EVAL_EPOCH, rec->s.v[RM_S_EPOCH], err)))
			return rc;
		range_add(&k->ev, rec->step);
		res->evals++;
	}
	return RM_OK;
}

/* A log line with both a training and a validation loss is read as an
 * evaluation (nanoGPT's "train loss" there is an estimate over eval
 * batches, not a step's). Where the training loss has that very name on
 * the file's training lines, or no training line named a loss at all
 * (a loop that prints both on every line), it is the step's loss: moved
 * from the evals to the steps, without replacing a training line's. */
static int promote_train_eval(struct rm_sink *k, struct rm_err *err)
{
	const char *name = k->train_eval + 5, *locked = k->map.locked[T_LOSS];
	int prio;
	if (locked ? strcmp(locked, name) != 0 : rm_mapper_target(&k->map, name, strlen(name), &prio) != T_LOSS)
		return rm_store_drop_evals(k->st, k->run_id, TRAIN_EVAL_EPOCH, k->ev.lo, k->ev.hi, err);
	int64_t n = 0;
	int rc = rm_store_promote_eval(k->st, k->run_id, k->train_eval, TRAIN_EVAL_EPOCH, k->ev.lo, k->ev.hi, &n, err);
	if (!rc)
		rc = rm_store_drop_evals(k->st, k->run_id, TRAIN_EVAL_EPOCH, k->ev.lo, k->ev.hi, err);
	if (rc)
		return rc;
	k->res->steps += (uint64_t)n;
	if (!locked)
		k->map.locked[T_LOSS] = rm_xstrdup(name);
	if (k->res->first_step < 0 || k->ev.lo < k->res->first_step)
		k->res->first_step = k->ev.lo;
	if (k->ev.hi > k->res->last_step)
		k->res->last_step = k->ev.hi;
	if (!k->has_low || k->ev.lo < k->low) { /* new_steps counts from here */
		int64_t before;
		if ((rc = rm_store_count_steps(k->st, k->run_id, k->ev.lo, k->has_low ? k->low : INT64_MAX, &before,
		                               err)))
			return rc;
		k->steps_before += before - n;
		k->low = k->ev.lo;
		k->has_low = 1;
	}
	return RM_OK;
}

/* Two processes appending to one log write every step twice, a little
 * apart: the counter then "restarts" on most lines, by a few steps each
 * time. A real restart (a resume from a checkpoint) is rare and goes back
 * far. Returns the number of writers when the file looks like that, else 0. */
static int interleaved_writers(const struct rm_import_result *r)
{
	uint64_t distinct = r->step_rows - r->replaced;
	if (r->restarts < 10 || distinct == 0 || r->replaced < distinct * 3 / 4 || r->restarts < distinct / 4)
		return 0;
	double span = (double)(r->last_step - r->first_step) + 1;
	if ((double)r->back_steps / (double)r->restarts > fmax(50, span / 100))
		return 0;
	return (int)lround((double)r->step_rows / (double)distinct);
}

int rm_sink_finish(struct rm_sink *k, struct rm_err *err)
{
	int64_t after = 0;
	int rc = k->train_eval ? promote_train_eval(k, err) : RM_OK;
	const char *loss_key = k->map.locked[T_LOSS];
	if (!rc && k->rl.has)
		rc = rm_store_mean_rank_losses(k->st, k->run_id, k->rl.lo, k->rl.hi, err);
	if (!rc && k->has_low)
		rc = rm_store_count_steps(k->st, k->run_id, k->low, INT64_MAX, &after, err);
	if (rc)
		return rc;
	k->res->new_steps = after - k->steps_before;
	k->res->writers = interleaved_writers(k->res);
	k->res->running_mean = running_mean_slope(&k->rm);
	if (loss_key && !k->res->loss_key)
		k->res->loss_key = rm_xstrdup(loss_key);
	if (!k->res->composition)
		k->res->composition = rm_mapper_composition(&k->map);
	if (!loss_key && !k->res->unmapped)
		k->res->unmapped = rm_mapper_unmapped(&k->map);
	k->res->epoch_restarts += k->map.ep_restarts;
	if (k->nforeign && k->res->steps && k->res->first_step > k->foreign[k->nforeign - 1])
		k->res->continues = k->foreign[k->nforeign - 1]; /* goes on where the other file stopped */
	return rm_store_run_touch(k->st, k->run_id, loss_key, err);
}

void rm_sink_release(struct rm_sink *k)
{
	for (size_t i = 0; i < k->ntracks; i++)
		free(k->tracks[i].seen);
	free(k->tracks);
	free(k->text_id);
	free(k->train_eval);
	free(k->foreign);
	for (int i = 0; i < k->nother_keys; i++)
		free(k->other_keys[i]);
	rm_mapper_release(&k->map);
	memset(k, 0, sizeof(*k));
}
