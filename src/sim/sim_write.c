/*
 * sim_write.c - writes a simulated run into the store or to files.
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

/* st holds S batches per step; the step's fields are on its first. */
static size_t report_rows(const struct rm_sim_step *st, int64_t n, int S, int k, struct reported *out)
{
	size_t m = 0;
	double acc = 0;
	int64_t tokens = 0, seqs = 0;
	for (int64_t t = 0; t < n; t++) {
		const struct rm_sim_step *x = &st[t * S];
		acc += x->loss;
		for (int j = 0; j < S; j++) {
			tokens += x[j].tokens;
			seqs += x[j].n;
		}
		if ((t + 1) % k)
			continue;
		out[m++] = (struct reported){x->step, acc / k, x->lr, x->epoch, x->runtime, tokens, seqs};
		acc = 0;
	}
	return m;
}

/* What an importer makes of the counters of rows i-1 and i: per-batch
 * means over the interval (see cumulative() in sink/map.c). */
static struct rm_batch interval_batch(const struct reported *rows, size_t i)
{
	double steps = (double)(rows[i].step - rows[i - 1].step);
	double dt = (double)(rows[i].tokens_seen - rows[i - 1].tokens_seen);
	double dn = (double)(rows[i].seqs_seen - rows[i - 1].seqs_seen);
	return (struct rm_batch){
	    .step = rows[i].step,
	    .v = {[RM_B_N] = fmax(1, round(dn / steps)), [RM_B_MEAN_LEN] = dt / dn, [RM_B_TOKENS] = round(dt / steps)},
	    .have = 1u << RM_B_N | 1u << RM_B_MEAN_LEN | 1u << RM_B_TOKENS};
}

static char *config_json(const struct rm_sim_opts *o)
{
	int64_t spe = o->steps_per_epoch > 0 ? o->steps_per_epoch : (o->steps / 3 > 0 ? o->steps / 3 : 1);
	static const char *const spikes[] = {"none", "bucket", "checkpoint"};
	char ranks[128] = "";
	if (rm_sim_slots(o) > 1)
		snprintf(ranks, sizeof(ranks), ", \"ranks\": %d, \"micro\": %d, \"rank_mode\": \"%s\"",
		         o->ranks > 1 ? o->ranks : 1, o->micro > 1 ? o->micro : 1, rm_sim_rank_mode_name(o->rank_mode));
	return rm_xasprintf("{\"save_steps\": %lld, \"steps_per_epoch\": %lld, \"logging_steps\": %d,"
	                    " \"simulated\": {\"strategy\": \"%s\", \"seed\": %llu, \"spikes\": \"%s\"%s}}",
	                    (long long)o->save_every, (long long)spe, o->log_every < 1 ? 1 : o->log_every,
	                    rm_sim_strategy_name(o->strategy), (unsigned long long)o->seed, spikes[o->spikes], ranks);
}

int rm_sim_store(struct rm_store *st, const char *name, const struct rm_sim_opts *o, struct rm_err *err)
{
	struct rm_sim_step *steps;
	struct rm_run_key key = {"sim", "", "", name};
	int64_t run;
	int k = o->log_every < 1 ? 1 : o->log_every, rc, S = rm_sim_slots(o);
	rm_simulate(o, &steps);
	struct reported *rows = rm_xmalloc((size_t)(o->steps / k + 1) * sizeof(*rows));
	size_t m = report_rows(steps, o->steps, S, k, rows);
	char *config = config_json(o);
	if ((rc = rm_store_begin(st, err)))
		goto out;
	if ((rc = rm_store_run_ensure(st, &key, &run, err)) || (rc = rm_store_lock_run(st, run, err)) ||
	    (rc = rm_store_clear_run(st, run, err)))
		goto fail;
	if (!o->no_bucket && (rc = rm_store_put_buckets(st, run, o->bounds ? o->bounds : default_bounds,
	                                                o->bounds ? o->nbounds : 7, err)))
		goto fail;
	for (size_t i = 0; i < m; i++) {
		struct rm_step s = {.step = rows[i].step,
		                    .v = {[RM_S_LOSS] = rows[i].loss,
		                          [RM_S_LR] = rows[i].lr,
		                          [RM_S_EPOCH] = rows[i].epoch,
		                          [RM_S_RUNTIME] = rows[i].runtime,
		                          [RM_S_TS] = SIM_T0 + rows[i].runtime},
		                    .have = 1u << RM_S_LOSS | 1u << RM_S_LR | 1u << RM_S_EPOCH | 1u << RM_S_RUNTIME |
		                            1u << RM_S_TS};
		if ((rc = rm_store_put_step(st, run, &s, err)))
			goto fail;
	}
	for (size_t i = 1; o->cumulative && i < m; i++) {
		struct rm_batch b = interval_batch(rows, i);
		if ((rc = rm_store_put_batch(st, run, &b, err)))
			goto fail;
	}
	for (int64_t t = 0; t < o->steps * S && !o->cumulative; t++) {
		const struct rm_sim_step *x = &steps[t];
		struct rm_batch b = {
		    .step = x->step,
		    .rank = x->rank,
		    .micro = x->micro,
		    .v = {x->bucket, x->n, x->min_len, x->max_len, x->mean_len, (double)x->tokens, (double)x->padded},
		    .have = o->no_bucket ? 0x7e : 0x7f,
		    .lens = x->lens,
		    .lens_bytes = x->lens_bytes};
		if ((rc = rm_store_put_batch(st, run, &b, err)))
			goto fail;
	}
	if ((rc = rm_store_set_config(st, run, config, err)) || (rc = rm_store_run_touch(st, run, "train/loss", err)))
		goto fail;
	rc = rm_store_commit(st, err);
	goto out;
fail:
	rm_store_rollback(st);
out:
	free(config);
	free(rows);
	rm_sim_steps_free(steps, (size_t)(o->steps * S));
	return rc;
}

static void write_lens(FILE *fp, const struct rm_sim_step *x)
{
	int64_t len[4096];
	long n = rm_lens_decode(x->lens, x->lens_bytes, len, 4096);
	fputs("\"lens\": [", fp);
	for (long i = 0; i < n; i++)
		fprintf(fp, "%s%lld", i ? ", " : "", (long long)len[i]);
	fputs("]}\n", fp);
}

int rm_sim_write_files(const char *dir, const struct rm_sim_opts *o, struct rm_err *err)
{
	struct rm_sim_step *steps;
	int k = o->log_every < 1 ? 1 : o->log_every, rc = RM_OK, S = rm_sim_slots(o);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return rm_err_set(err, RM_E_IO, "cannot create directory '%s': %s", dir, strerror(errno));
	char *hpath = rm_xasprintf("%s/history.jsonl", dir), *bpath = rm_xasprintf("%s/batches.jsonl", dir);
	struct rm_outfile ho, bo;
	if ((rc = rm_outfile_open(&ho, hpath, err)))
		goto paths;
	if ((rc = rm_outfile_open(&bo, bpath, err))) {
		rm_outfile_abort(&ho);
		goto paths;
	}
	FILE *h = ho.fp, *b = bo.fp;
	rm_simulate(o, &steps);
	struct reported *rows = rm_xmalloc((size_t)(o->steps / k + 1) * sizeof(*rows));
	size_t m = report_rows(steps, o->steps, S, k, rows);
	const double t0 = SIM_T0;
	for (size_t i = 0; i < m; i++) {
		fprintf(h,
		        "{\"_step\": %lld, \"_runtime\": %.3f, \"_timestamp\": %.3f, \"train/loss\": %.6f,"
		        " \"train/lr\": %.8g, \"train/epoch\": %.5f",
		        (long long)rows[i].step, rows[i].runtime, t0 + rows[i].runtime, rows[i].loss, rows[i].lr,
		        rows[i].epoch);
		if (o->cumulative)
			fprintf(h, ", \"elapsed_tokens\": %lld, \"elapsed_examples\": %lld",
			        (long long)rows[i].tokens_seen, (long long)rows[i].seqs_seen);
		fputs("}\n", h);
	}
	for (int64_t t = 0; t < o->steps * S && !o->cumulative; t++) {
		const struct rm_sim_step *x = &steps[t];
		fprintf(b, "{\"step\": %lld, ", (long long)x->step);
		if (S > 1)
			fprintf(b, "\"rank\": %d, \"micro\": %d, ", x->rank, x->micro);
		if (!o->no_bucket)
			fprintf(b, "\"bucket\": %d, ", x->bucket);
		if (x->lens) { /* the lengths, as a recorder writes them; runmon derives the rest */
			write_lens(b, x);
			continue;
		}
		fprintf(b,
		        "\"n\": %d, \"min_len\": %d, \"max_len\": %d, \"mean_len\": %.1f, \"tokens\": %lld,"
		        " \"padded_tokens\": %lld}\n",
		        x->n, x->min_len, x->max_len, x->mean_len, (long long)x->tokens, (long long)x->padded);
	}
	free(rows);
	rm_sim_steps_free(steps, (size_t)(o->steps * S));
	rc = rm_outfile_commit(&ho, err);
	if (rc || o->cumulative) { /* cumulative: no batch file, and none left from an earlier run */
		rm_outfile_abort(&bo);
		if (!rc && unlink(bpath) && errno != ENOENT)
			rc = rm_err_set(err, RM_E_IO, "cannot remove '%s': %s", bpath, strerror(errno));
	} else
		rc = rm_outfile_commit(&bo, err);
paths:
	free(hpath);
	free(bpath);
	return rc;
}
