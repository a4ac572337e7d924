/*
 * sim_write.c - writes a simulated run into the store or to files, step by
 * step as the simulator makes it (memory flat in the steps), with the
 * truth it was made with.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runmon/common.h"
#include "runmon/sim.h"
#include "runmon/store.h"

static const int64_t default_bounds[] = {0, 770, 1216, 1728, 2432, 3296, 8192};

/* A fixed start time, 2025-11-29T08:00:00Z, keeps simulated runs reproducible. */
#define SIM_T0 1764403200.0

/* A loss row as a trainer reports it: the mean over its logging interval,
 * with the tokens and sequences seen so far (elapsed_tokens and
 * elapsed_examples in the OpenAI fine-tuning metrics). */
struct reported {
	int64_t step;
	double loss, lr, epoch, runtime;
	int64_t tokens_seen, seqs_seen;
};

/* Adds step x (S batches) to the interval under way; returns 1 and fills
 * *out when the interval of k steps ends with it. */
static int report_step(const struct rm_sim_step *x, int S, int k, double *acc, struct reported *out)
{
	*acc += x->loss;
	for (int j = 0; j < S; j++) {
		out->tokens_seen += x[j].tokens;
		out->seqs_seen += x[j].n;
	}
	if ((x->step + 1) % k)
		return 0;
	out->step = x->step;
	out->loss = *acc / k;
	out->lr = x->lr;
	out->epoch = x->epoch;
	out->runtime = x->runtime;
	*acc = 0;
	return 1;
}

/* What an importer makes of the counters of rows a then b: per-batch
 * means over the interval (see cumulative() in sink/map.c). */
static struct rm_batch interval_batch(const struct reported *a, const struct reported *b)
{
	double steps = (double)(b->step - a->step);
	double dt = (double)(b->tokens_seen - a->tokens_seen);
	double dn = (double)(b->seqs_seen - a->seqs_seen);
	return (struct rm_batch){
	    .step = b->step,
	    .v = {[RM_B_N] = fmax(1, round(dn / steps)), [RM_B_MEAN_LEN] = dt / dn, [RM_B_TOKENS] = round(dt / steps)},
	    .have = 1u << RM_B_N | 1u << RM_B_MEAN_LEN | 1u << RM_B_TOKENS};
}

/* The truth as JSON: what the run was made with and what a diagnosis should
 * find (rm_sim_causes), every reset's onset and bucket, the divergence. */
static char *truth_json(const struct rm_sim_opts *o, const struct rm_sim_truth *t)
{
	enum rm_hypothesis h[RM_H_COUNT];
	int nh = rm_sim_causes(o, h, NULL);
	size_t cap = 256 + 48 * t->nresets + 40 * (size_t)nh, w = 0;
	char *s = rm_xmalloc(cap);
	w += (size_t)snprintf(s + w, cap - w, "{\"causes\": [");
	for (int i = 0; i < nh; i++)
		w += (size_t)snprintf(s + w, cap - w, "%s\"%s\"", i ? ", " : "", rm_hypothesis_id(h[i]));
	w += (size_t)snprintf(s + w, cap - w, "], \"reset_bucket\": %d, \"diverge_step\": %lld, \"resets\": [",
	                      t->reset_bucket, (long long)t->diverge_step);
	for (size_t i = 0; i < t->nresets; i++)
		w += (size_t)snprintf(s + w, cap - w, "%s{\"step\": %lld, \"bucket\": %d}", i ? ", " : "",
		                      (long long)t->reset[i].step, t->reset[i].bucket);
	snprintf(s + w, cap - w, "]}");
	return s;
}

static char *config_json(const struct rm_sim_opts *o, const struct rm_sim_truth *t)
{
	int64_t spe = o->steps_per_epoch > 0 ? o->steps_per_epoch : (o->steps / 3 > 0 ? o->steps / 3 : 1);
	char ranks[128] = "";
	if (rm_sim_slots(o) > 1)
		snprintf(ranks, sizeof(ranks), ", \"ranks\": %d, \"micro\": %d, \"rank_mode\": \"%s\"",
		         o->ranks > 1 ? o->ranks : 1, o->micro > 1 ? o->micro : 1, rm_sim_rank_mode_name(o->rank_mode));
	char *truth = truth_json(o, t);
	char *s = rm_xasprintf("{\"save_steps\": %lld, \"steps_per_epoch\": %lld, \"logging_steps\": %d,"
	                       " \"simulated\": {\"strategy\": \"%s\", \"seed\": %llu, \"spikes\": \"%s\"%s,"
	                       " \"truth\": %s}}",
	                       (long long)o->save_every, (long long)spe, o->log_every < 1 ? 1 : o->log_every,
	                       rm_sim_strategy_name(o->strategy), (unsigned long long)o->seed,
	                       rm_sim_spikes_name(o->spikes), ranks, truth);
	free(truth);
	return s;
}

static struct rm_step step_row(const struct reported *r)
{
	return (struct rm_step){.step = r->step,
	                        .v = {[RM_S_LOSS] = r->loss,
	                              [RM_S_LR] = r->lr,
	                              [RM_S_EPOCH] = r->epoch,
	                              [RM_S_RUNTIME] = r->runtime,
	                              [RM_S_TS] = SIM_T0 + r->runtime},
	                        .have = 1u << RM_S_LOSS | 1u << RM_S_LR | 1u << RM_S_EPOCH | 1u << RM_S_RUNTIME |
	                                1u << RM_S_TS};
}

/* Each step's rows into the open transaction: the loss every k steps, the
 * batches (or the counters' interval means). */
static int store_steps(struct rm_store *st, int64_t run, struct rm_sim *g, const struct rm_sim_opts *o,
                       struct rm_err *err)
{
	int k = o->log_every < 1 ? 1 : o->log_every, S = rm_sim_slots(o), rc;
	struct reported cur = {0}, prev = {0};
	size_t rows = 0;
	double acc = 0;
	const struct rm_sim_step *x;
	while ((x = rm_sim_next(g))) {
		for (int j = 0; j < S && !o->cumulative && !o->loss_only; j++) {
			struct rm_batch b = {.step = x[j].step,
			                     .rank = x[j].rank,
			                     .micro = x[j].micro,
			                     .v = {x[j].bucket, x[j].n, x[j].min_len, x[j].max_len, x[j].mean_len,
			                           (double)x[j].tokens, (double)x[j].padded},
			                     .have = o->no_bucket ? 0x7e : 0x7f,
			                     .lens = x[j].lens,
			                     .lens_bytes = x[j].lens_bytes};
			if ((rc = rm_store_put_batch(st, run, &b, err)))
				return rc;
		}
		if (!report_step(x, S, k, &acc, &cur))
			continue;
		struct rm_step s = step_row(&cur);
		if ((rc = rm_store_put_step(st, run, &s, err)))
			return rc;
		if (o->cumulative && rows++ > 0) {
			struct rm_batch b = interval_batch(&prev, &cur);
			if ((rc = rm_store_put_batch(st, run, &b, err)))
				return rc;
		}
		prev = cur;
	}
	return RM_OK;
}

int rm_sim_store(struct rm_store *st, const char *name, const struct rm_sim_opts *o, struct rm_err *err)
{
	struct rm_run_key key = {"sim", "", "", name};
	int64_t run;
	int rc;
	char *config = NULL;
	struct rm_sim *g = rm_sim_open(o);
	if ((rc = rm_store_begin(st, err)))
		goto out;
	if ((rc = rm_store_run_ensure(st, &key, &run, err)) || (rc = rm_store_lock_run(st, run, err)) ||
	    (rc = rm_store_claim_run(st, run, "sim", o->replace, err)) || (rc = rm_store_clear_run(st, run, err)))
		goto fail;
	if (!o->no_bucket && !o->loss_only &&
	    (rc = rm_store_put_buckets(st, run, o->bounds ? o->bounds : default_bounds, o->bounds ? o->nbounds : 7,
	                               err)))
		goto fail;
	if ((rc = store_steps(st, run, g, o, err)))
		goto fail;
	config = config_json(o, rm_sim_truth(g));
	if ((rc = rm_store_set_config(st, run, config, err)) || (rc = rm_store_run_touch(st, run, "train/loss", err)))
		goto fail;
	rc = rm_store_commit(st, err);
	goto out;
fail:
	rm_store_rollback(st);
out:
	free(config);
	rm_sim_close(g);
	return rc;
}

static void write_batch(FILE *fp, const struct rm_sim_step *x, int S, int no_bucket)
{
	fprintf(fp, "{\"step\": %lld, ", (long long)x->step);
	if (S > 1)
		fprintf(fp, "\"rank\": %d, \"micro\": %d, ", x->rank, x->micro);
	if (!no_bucket)
		fprintf(fp, "\"bucket\": %d, ", x->bucket);
	if (x->lens) { /* the lengths, as a recorder writes them; runmon derives the rest */
		int64_t len[4096];
		long n = rm_lens_decode(x->lens, x->lens_bytes, len, 4096);
		fputs("\"lens\": [", fp);
		for (long i = 0; i < n; i++)
			fprintf(fp, "%s%lld", i ? ", " : "", (long long)len[i]);
		fputs("]}\n", fp);
		return;
	}
	fprintf(fp,
	        "\"n\": %d, \"min_len\": %d, \"max_len\": %d, \"mean_len\": %.1f, \"tokens\": %lld,"
	        " \"padded_tokens\": %lld}\n",
	        x->n, x->min_len, x->max_len, x->mean_len, (long long)x->tokens, (long long)x->padded);
}

static void write_row(FILE *h, const struct reported *r, int cumulative)
{
	/* A non-finite loss as W&B writes it: the bare tokens NaN and Infinity. */
	char loss[40];
	if (isnan(r->loss))
		snprintf(loss, sizeof(loss), "NaN");
	else if (isinf(r->loss))
		snprintf(loss, sizeof(loss), "%sInfinity", r->loss < 0 ? "-" : "");
	else
		snprintf(loss, sizeof(loss), "%.6g", r->loss);
	fprintf(h,
	        "{\"_step\": %lld, \"_runtime\": %.3f, \"_timestamp\": %.3f, \"train/loss\": %s,"
	        " \"train/lr\": %.8g, \"train/epoch\": %.5f",
	        (long long)r->step, r->runtime, SIM_T0 + r->runtime, loss, r->lr, r->epoch);
	if (cumulative)
		fprintf(h, ", \"elapsed_tokens\": %lld, \"elapsed_examples\": %lld", (long long)r->tokens_seen,
		        (long long)r->seqs_seen);
	fputs("}\n", h);
}

/* Removes path if it is there (a file an earlier run left, which this run has none of). */
static int remove_stale(const char *path, struct rm_err *err)
{
	if (unlink(path) && errno != ENOENT)
		return rm_err_set(err, RM_E_IO, "cannot remove '%s': %s", path, strerror(errno));
	return RM_OK;
}

int rm_sim_write_files(const char *dir, const struct rm_sim_opts *o, struct rm_err *err)
{
	int k = o->log_every < 1 ? 1 : o->log_every, rc = RM_OK, S = rm_sim_slots(o);
	int batches = !o->cumulative && !o->loss_only;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return rm_err_set(err, RM_E_IO, "cannot create directory '%s': %s", dir, strerror(errno));
	char *hpath = rm_xasprintf("%s/history.jsonl", dir), *bpath = rm_xasprintf("%s/batches.jsonl", dir);
	char *tpath = rm_xasprintf("%s/truth.json", dir);
	struct rm_outfile ho, bo, to;
	int have_b = 0, have_t = 0;
	if ((rc = rm_outfile_open(&ho, hpath, err)))
		goto paths;
	if (batches && (rc = rm_outfile_open(&bo, bpath, err)))
		goto abort;
	have_b = batches;
	if ((rc = rm_outfile_open(&to, tpath, err)))
		goto abort;
	have_t = 1;
	struct rm_sim *g = rm_sim_open(o);
	struct reported cur = {0};
	double acc = 0;
	const struct rm_sim_step *x;
	while ((x = rm_sim_next(g))) {
		for (int j = 0; j < S && batches; j++)
			write_batch(bo.fp, &x[j], S, o->no_bucket);
		if (report_step(x, S, k, &acc, &cur))
			write_row(ho.fp, &cur, o->cumulative);
	}
	char *truth = truth_json(o, rm_sim_truth(g));
	fprintf(to.fp, "%s\n", truth);
	free(truth);
	rm_sim_close(g);
	if ((rc = rm_outfile_commit(&ho, err)))
		goto abort_rest;
	if (have_b && (rc = rm_outfile_commit(&bo, err)))
		goto abort_truth;
	have_b = 0;
	rc = rm_outfile_commit(&to, err);
	have_t = 0;
	if (!rc && !batches) /* no batch file, and none left from an earlier run */
		rc = remove_stale(bpath, err);
	goto paths;
abort:
	rm_outfile_abort(&ho);
abort_rest:
	if (have_b)
		rm_outfile_abort(&bo);
abort_truth:
	if (have_t)
		rm_outfile_abort(&to);
paths:
	free(hpath);
	free(bpath);
	free(tpath);
	return rc;
}
