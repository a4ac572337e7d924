/*
 * map.c - decides which key of a row is the step, the loss, a batch
 * statistic or an eval metric, and converts the row into a record.
 *
 * Each target has candidate keys in priority order; the first key a run
 * uses for a target is kept for the rest of the file, so a row carrying
 * both "loss" and "train/loss" cannot switch series halfway. Lookups go
 * through a small cache: a file has a few dozen distinct keys and millions
 * of rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map_internal.h"
#include "runmon/sink.h"
#include "runmon/model.h"

static const char *const cand_step_wandb[] = {"_step", NULL};
static const char *const cand_step[] = {
    "step",        "global_step",           "_step", "Step", "current_steps", "iteration", "iter", "train/global_step",
    "num_updates", "global_step/max_steps", NULL}; /* num_updates: fairseq; the last ms-swift's "S/M" */
static const char *const cand_loss[] = {"loss",
                                        "train/loss",
                                        "train_loss",
                                        "train.loss",
                                        "training_loss",
                                        "train/loss_step",
                                        "train_loss_step",
                                        "train/CrossEntropyLoss",
                                        NULL};
static const char *const cand_lr[] = {"lr",       "learning_rate",       "train/lr", "train/learning_rate",
                                      "train.lr", "train.learning_rate", "train_lr", NULL};
static const char *const cand_epoch[] = {"epoch", "train/epoch", "train.epoch", NULL};
static const char *const cand_grad[] = {"grad_norm",     "train/grad_norm",     "train.grad_norm",
                                        "gradient_norm", "train/gradient_norm", NULL};
static const char *const cand_runtime[] = {"_runtime", "runtime", NULL};
static const char *const cand_ts[] = {"_timestamp", "timestamp", "wall_time", "Wall time", "time", NULL};
static const char *const eval_prefixes[] = {"eval_",  "eval/",       "eval.",       "val/",   "val_",
                                            "valid_", "validation/", "validation_", "valid/", NULL};

/* Hugging Face log_history uses exactly these names; its final row's
 * train_loss is an average over training, not a step's loss. */
static const char *const hf_step[] = {"step", NULL};
static const char *const hf_loss[] = {"loss", NULL};
static const char *const hf_lr[] = {"learning_rate", NULL};
static const char *const hf_epoch[] = {"epoch", NULL};
static const char *const hf_grad[] = {"grad_norm", NULL};
static const char *const tb_step[] = {"Step", NULL};
static const char *const tb_loss[] = {"Value", NULL};
static const char *const tb_ts[] = {"Wall time", NULL};
static const char *const none[] = {NULL};

/* Console logs, keys as import_log.c writes them (lower case, words joined
 * by "_"): fairseq's num_updates before its fractional-epoch update,
 * Megatron's iteration, Marian's Up., nanoGPT's iter; losses as Megatron
 * (lm loss), Marian (Cost), OpenNMT-py (xent: the cross-entropy, its ppl
 * being exp(xent)) and OLMo (train/CrossEntropyLoss) name them. Interval
 * durations ("time" in nanoGPT and Marian) are no timestamps. A batch's
 * loss comes before a loss beside it (AllenNLP's bar "batch_loss: 0.61,
 * loss: 0.70": the batch's, and the epoch's running mean). A line's
 * global_step comes before its step (Coqui's "STEP: 5/20 -- GLOBAL_STEP:
 * 25": the step within the epoch, and the run's). */
static const char *const log_step[] = {
    "global_step", "step",  "num_updates", "valid_num_updates", "iteration", "iter", "up", "total_update",
    "update",      "steps", "batch",       "batches",           NULL};
static const char *const log_loss[] = {"batch_loss",
                                       "loss",
                                       "train_loss",
                                       "lm_loss",
                                       "cost",
                                       "train/loss",
                                       "training_loss",
                                       "xent",
                                       "train/crossentropyloss",
                                       NULL};
static const char *const log_lr[] = {"lr", "learning_rate", "l.r", "train/lr", NULL};
static const char *const log_epoch[] = {"epoch", "ep", "train/epoch", "train_epoch", "training_epoch", NULL};
static const char *const log_grad[] = {"grad_norm", "gnorm", "train/grad_norm", NULL};
static const char *const log_runtime[] = {"_runtime", "runtime", "wall", NULL};
static const char *const log_ts[] = {"_timestamp", "timestamp", NULL};

/* What trainers call a batch's token and sequence counts, taken bare in any
 * format (the names are distinctive): fairseq's ntokens / nsentences and
 * its per-interval means wpb / bsz, seq2seq loops' n_tokens / bsz; and the
 * cumulative counters of HF (num_input_tokens_seen), Megatron
 * (consumed_samples, consumed_tokens) and the OpenAI fine-tuning metrics
 * (elapsed_tokens, elapsed_examples). */
static const struct {
	const char *name;
	enum rm_target t;
} batch_aliases[] = {
    {"ntokens", T_TOKENS},
    {"wpb", T_TOKENS},
    {"n_tokens", T_TOKENS},
    {"num_tokens", T_TOKENS},
    {"nsentences", T_N},
    {"bsz", T_N},
    {"n_sequences", T_N},
    {"tokens_per_sample", T_MEAN_LEN},
    {"elapsed_tokens", T_CUM_TOKENS},
    {"num_input_tokens_seen", T_CUM_TOKENS},
    {"train/num_input_tokens_seen", T_CUM_TOKENS},
    {"consumed_tokens", T_CUM_TOKENS},
    {"elapsed_examples", T_CUM_N},
    {"consumed_samples", T_CUM_N},
    {"tokens_this_step", T_TOKENS},            /* ms-swift: the step's unpadded tokens */
    {"throughput/total_tokens", T_CUM_TOKENS}, /* OLMo */
};

/* In console logs only (the names are too plain elsewhere): Marian's Sen.
 * (sentences so far in the epoch) and "after" (target labels so far),
 * Megatron's actual seqlen. */
static const struct {
	const char *name;
	enum rm_target t;
} log_batch[] = {
    {"sen", T_CUM_N},
    {"after", T_CUM_TOKENS},
    {"actual_seqlen", T_MEAN_LEN},
    /* icefall: "over 20766.00 frames", "utt_duration=1599 frames" (mean
     * frames an utterance), "over 52.00 utterances" */
    {"frames", T_TOKENS},
    {"utt_duration", T_MEAN_LEN},
    {"utterances", T_N},
    /* Marian 1.7's "Time 45.20s : 12000 words/s" (no "* N"), OpenNMT-py's
     * "298/315 tok/s;    184 sec": tokens of the interval from the rate */
    {"words/s", T_TOK_RATE},
    {"tok/s", T_TOK_RATE},
    {"bsz_tgt_tokens", T_TOKENS}, /* OpenNMT-py 3.x's bsz: src/tgt/sents, read apart */
    {"time", T_INTERVAL_S},
    {"sec", T_ELAPSED_S},
};

static int is_sidecar(enum rm_format f)
{
	return f == RM_FMT_SIDECAR_JSONL || f == RM_FMT_SIDECAR_CSV;
}

static const char *const *candidates(const struct rm_mapper *m, enum rm_target t)
{
	int hf = m->fmt == RM_FMT_HF_STATE, tb = m->fmt == RM_FMT_TB_CSV;
	if (m->fmt == RM_FMT_LOG)
		switch (t) {
		case T_STEP: return log_step;
		case T_LOSS: return log_loss;
		case T_LR: return log_lr;
		case T_EPOCH: return log_epoch;
		case T_GRAD_NORM: return log_grad;
		case T_RUNTIME: return log_runtime;
		case T_TS: return log_ts;
		default: return none;
		}
	switch (t) {
	case T_STEP:
		return hf                                                            ? hf_step
		       : tb                                                          ? tb_step
		       : m->fmt == RM_FMT_WANDB_HISTORY || m->fmt == RM_FMT_TFEVENTS ? cand_step_wandb
		                                                                     : cand_step;
	case T_LOSS: return is_sidecar(m->fmt) ? none : hf ? hf_loss : tb ? tb_loss : cand_loss;
	case T_LR: return hf ? hf_lr : tb ? none : cand_lr;
	case T_EPOCH: return hf ? hf_epoch : tb ? none : cand_epoch;
	case T_GRAD_NORM: return hf ? hf_grad : tb ? none : cand_grad;
	case T_RUNTIME: return hf || tb ? none : cand_runtime;
	case T_TS: return hf ? none : tb ? tb_ts : cand_ts;
	default: return none;
	}
}

void rm_mapper_each_eval(struct rm_mapper *m, const struct rm_row *row,
                         void (*add)(void *arg, const char *key, size_t klen, double value), void *arg)
{
	for (size_t i = 0; i < row->n; i++) {
		const struct rm_field *f = &row->f[i];
		int prio;
		double v;
		if (rm_mapper_target(m, f->key, f->klen, &prio) == T_EVAL && rm_field_num(f, &v) == 1)
			add(arg, f->key, f->klen, v);
	}
}

const char *rm_mapper_step_name(const struct rm_mapper *m)
{
	if (m->opts->step_key)
		return m->opts->step_key;
	return candidates(m, T_STEP)[0];
}

/* Names of the batch targets in composition summaries. */
static const char *target_field(enum rm_target t)
{
	if (t == T_CUM_TOKENS)
		return "cumulative tokens, differenced";
	if (t == T_CUM_N)
		return "cumulative sequences, differenced";
	if (t == T_TOK_RATE)
		return "tokens per second x the interval's seconds";
	return rm_map_batch_names[t - T_BUCKET];
}

char *rm_mapper_composition(const struct rm_mapper *m)
{
	char buf[1024];
	size_t len = 0;
	buf[0] = 0;
	for (int t = T_BUCKET; t <= T_TOK_RATE; t++) {
		if (t == T_RANK || t == T_MICRO || !m->locked[t] ||
		    (t == T_TOK_RATE && (m->locked[T_CUM_TOKENS] || m->locked[T_TOKENS])))
			continue; /* a rate is not used beside a token count */
		const char *field = target_field((enum rm_target)t);
		int same = !strcmp(m->locked[t], field) ||
		           (strlen(m->locked[t]) > strlen(field) &&
		            !strcmp(m->locked[t] + strlen(m->locked[t]) - strlen(field), field) &&
		            m->locked[t][strlen(m->locked[t]) - strlen(field) - 1] == '/'); /* batch/max_len */
		int w = snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? ", " : "", m->locked[t]);
		if (w > 0 && (size_t)w < sizeof(buf) - len)
			len += (size_t)w;
		if (!same) {
			w = snprintf(buf + len, sizeof(buf) - len, " (%s)", field);
			if (w > 0 && (size_t)w < sizeof(buf) - len)
				len += (size_t)w;
		}
	}
	return len ? rm_xstrdup(buf) : NULL;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *rm_mapper_role(struct rm_mapper *m, const char *key, size_t klen)
{
	static const char *const roles[T_COUNT + 1] = {
	    [T_STEP] = "the step",
	    [T_LOSS] = "the loss",
	    [T_LR] = "the learning rate",
	    [T_EPOCH] = "the epoch",
	    [T_GRAD_NORM] = "the gradient norm",
	    [T_RUNTIME] = "the runtime",
	    [T_TS] = "the time stamp",
	    [T_BUCKET] = "composition: the bucket",
	    [T_N] = "composition: sequences (n)",
	    [T_MIN_LEN] = "composition: min_len",
	    [T_MAX_LEN] = "composition: max_len",
	    [T_MEAN_LEN] = "composition: mean_len",
	    [T_TOKENS] = "composition: tokens",
	    [T_PADDED] = "composition: padded_tokens",
	    [T_RANK] = "the data-parallel rank",
	    [T_MICRO] = "the micro-batch",
	    [T_LENS] = "composition: the lengths",
	    [T_CUM_TOKENS] = "composition: tokens so far (differenced)",
	    [T_CUM_N] = "composition: sequences so far (differenced)",
	    [T_TOK_RATE] = "composition: tokens per second (x the interval's seconds)",
	    [T_INTERVAL_S] = "the interval's seconds (for a token rate)",
	    [T_ELAPSED_S] = "seconds so far (differenced, for a token rate)",
	    [T_EVAL] = "an eval metric",
	    [T_SUMMARY] = "marks a run summary (no step)",
	    [T_NONE] = "ignored (not a key runmon knows)",
	};
	static const char other_loss[] = "another loss (kept apart, in other_losses)";
	int prio;
	enum rm_target t = rm_mapper_target(m, key, klen, &prio);
	const char *locked = t < T_COUNT ? m->locked[t] : NULL;
	if (locked && (strlen(locked) != klen || memcmp(locked, key, klen)) && t != T_EVAL)
		return t == T_LOSS ? other_loss : "ignored (another key of the same kind was read first)";
	const struct rm_guess *g = m->opts->guess;
	for (size_t i = 0; t == T_NONE && g && i < g->nalso; i++)
		if (strlen(g->also[i]) == klen && !memcmp(g->also[i], key, klen))
			return other_loss;
	return roles[t];
}

char *rm_mapper_unmapped(const struct rm_mapper *m)
{
	enum { SHOWN = 12 };
	const char **keys = rm_xmalloc((m->cache_n ? m->cache_n : 1) * sizeof(*keys));
	size_t n = 0;
	for (uint32_t i = 0; i < m->cache_cap; i++)
		if (m->cache[i].key && m->cache[i].target == T_NONE)
			keys[n++] = m->cache[i].key;
	qsort(keys, n, sizeof(*keys), by_name);
	char buf[1024];
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && i < SHOWN; i++) {
		int w = snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "", keys[i]);
		if (w > 0 && (size_t)w < sizeof(buf) - len)
			len += (size_t)w;
	}
	if (n > SHOWN)
		snprintf(buf + len, sizeof(buf) - len, " and %zu more", n - SHOWN);
	free(keys);
	return n ? rm_xstrdup(buf) : NULL;
}

void rm_mapper_init(struct rm_mapper *m, enum rm_format fmt, const struct rm_import_opts *opts)
{
	memset(m, 0, sizeof(*m));
	m->fmt = fmt;
	m->opts = opts;
	m->batch_prefix = opts->batch_prefix ? opts->batch_prefix : "batch/";
}

void rm_mapper_release(struct rm_mapper *m)
{
	for (int t = 0; t < T_COUNT; t++)
		free(m->locked[t]);
	for (uint32_t i = 0; i < m->cache_cap; i++)
		free(m->cache[i].key);
	free(m->cache);
	for (uint32_t i = 0; i < m->ntexts; i++)
		free(m->texts[i]);
	free(m->texts);
	free(m->lens);
	free(m->lens_code);
	memset(m, 0, sizeof(*m));
}

static int key_is(const char *key, size_t klen, const char *name)
{
	return strlen(name) == klen && !memcmp(key, name, klen);
}

static int has_prefix(const char *key, size_t klen, const char *pfx)
{
	size_t n = strlen(pfx);
	return klen > n && !memcmp(key, pfx, n);
}

/* Many loops count batches within the epoch ("Epoch 3, batch 150",
 * "epoch 2, step 30750"): when the counter falls back while an integral
 * epoch rises, the new epoch continues the axis where the last one ended,
 * one logging interval on (the spacing of its last two rows), or where
 * the counter shows its total ("[10/500]"), the epochs before times that
 * total; every later row of the epoch keeps that offset. A counter that falls back in
 * the same epoch (a resumed run) is left to the restart rules; a global
 * counter never falls back, so nothing changes for it. The epoch stays in
 * the epoch column, so (epoch, counter) is step - offset. */
static void compose_epoch(struct rm_mapper *m, struct rm_record *rec, int eval_only, int64_t per_epoch)
{
	int has = (rec->s.have >> RM_S_EPOCH) & 1;
	double e = has ? rec->s.v[RM_S_EPOCH] : NAN;
	int64_t raw = rec->step;
	/* An evaluation whose counter falls back within the epoch counts its
	 * own batches ("Validation | Steps: 31" after "Training | Steps:
	 * 3533"): it takes the epoch's offset and moves nothing. Nor does one
	 * at the last record's step in a later epoch (the HF Trainer's eval
	 * dict at epoch 4.0 carries the step of the dict before it, a record
	 * every 1.5 epochs): no counter of its own fell back. */
	if (has && eval_only && m->ep_seen &&
	    ((e == (double)m->ep_last && raw < m->ep_raw_last) || (e > (double)m->ep_last && raw == m->ep_raw_last)))
		has = 0;
	if (has && e == floor(e) && e >= 0 && e < 1e12) {
		int64_t ep = (int64_t)e;
		if (m->ep_seen && ep < m->ep_last) /* epochs start over: a new training, its own axis */
			m->ep_seen = 0, m->ep_offset = 0;
		if (!m->ep_seen)
			m->ep_first = ep;
		if (m->ep_seen && ep > m->ep_last && raw <= m->ep_raw_last && per_epoch > 0) {
			/* the counter says its epoch's length: "[1/37]" of epoch 1 is 37 + 1 */
			m->ep_offset = (ep - m->ep_first) * per_epoch;
			m->ep_restarts++;
		} else if (m->ep_seen && ep > m->ep_last && raw <= m->ep_raw_last) {
			/* A counter from 0 goes on one interval after the last row;
			 * one that counts batches done (from 1: DeepSpeech's "Steps:
			 * 4", frames at uneven counts) goes on by its own count. */
			int64_t gap = m->ep_raw_last - m->ep_raw_prev;
			gap = raw >= 1 ? raw : gap >= 1 ? gap : 1;
			m->ep_offset = m->ep_composed_last + gap - raw;
			m->ep_restarts++;
		}
		if (!m->ep_seen || raw != m->ep_raw_last) {
			m->ep_raw_prev = m->ep_seen && ep == m->ep_last ? m->ep_raw_last : raw;
			m->ep_raw_last = raw;
		}
		m->ep_last = ep;
		m->ep_seen = 1;
	}
	int64_t step = raw + m->ep_offset;
	if (step < 0 || step >= (int64_t)1 << 53)
		return;
	rec->step = rec->s.step = rec->b.step = step;
	if (has)
		m->ep_composed_last = step;
}

/* A step written as text "N/M" (step N of M: ms-swift's
 * "global_step/max_steps", progress counters): 1 and N (and M in *total
 * unless NULL), else -1. */
static int step_of_total(const struct rm_field *f, double *out, int64_t *total)
{
	const char *s = f->raw, *end = f->raw + f->rlen;
	while (s < end && (*s == ' ' || *s == '['))
		s++;
	const char *d = s;
	while (s < end && *s >= '0' && *s <= '9')
		s++;
	if (s == d || s - d > 15)
		return -1;
	const char *slash = s;
	while (s < end && (*s == ' ' || *s == ']')) /* "[0019]/[0149]" (GluonCV) */
		s++;
	if (s == end || *s != '/')
		return -1;
	s++;
	while (s < end && (*s == ' ' || *s == '['))
		s++;
	const char *t = s;
	while (s < end && *s >= '0' && *s <= '9')
		s++;
	while (s < end && (*s == ' ' || *s == ']'))
		s++;
	if (s == t || s != end)
		return -1;
	double v = 0;
	for (const char *c = d; c < slash; c++)
		v = v * 10 + (*c - '0');
	*out = v;
	if (total) {
		*total = 0;
		for (const char *c = t; c < s && *c >= '0' && *c <= '9' && *total < ((int64_t)1 << 50); c++)
			*total = *total * 10 + (*c - '0');
	}
	return 1;
}

/* An evaluation's setting, not its result: eval_interval, eval_iters,
 * val_tokens, eval_batch_size, val_check_interval (a config line printed
 * as "eval_interval = 250"). */
static int eval_setting(const char *key, size_t klen)
{
	static const char *const tails[] = {"_interval", "_iters", "_steps", "_tokens", "_batch_size",
	                                    "_every",    "_freq",  "_only",  "_size",   NULL};
	for (int i = 0; tails[i]; i++) {
		size_t n = strlen(tails[i]);
		if (klen > n && !memcmp(key + klen - n, tails[i], n))
			return 1;
	}
	return 0;
}

/* Target of a key, without the cache. */
static enum rm_target classify(const struct rm_mapper *m, const char *key, size_t klen, int *prio)
{
	const struct rm_import_opts *o = m->opts;
	*prio = 0;
	if (o->step_key ? key_is(key, klen, o->step_key) : 0)
		return T_STEP;
	if (o->loss_key && !is_sidecar(m->fmt) ? key_is(key, klen, o->loss_key) : 0)
		return T_LOSS;
	if (o->length_key && key_is(key, klen, o->length_key))
		return T_MEAN_LEN;
	if (o->count_key && key_is(key, klen, o->count_key))
		return T_N;
	const struct rm_guess *g = o->guess; /* only where no known name said */
	if (g && g->step && !o->step_key && key_is(key, klen, g->step))
		return T_STEP;
	if (g && g->loss && !o->loss_key && key_is(key, klen, g->loss))
		return T_LOSS;
	if (g && g->rank && key_is(key, klen, g->rank))
		return T_RANK;
	if (g && g->epoch && key_is(key, klen, g->epoch))
		return T_EPOCH;
	for (int t = T_STEP; t <= T_TS; t++) {
		if ((t == T_STEP && o->step_key) || (t == T_LOSS && o->loss_key))
			continue;
		const char *const *c = candidates(m, (enum rm_target)t);
		for (int i = 0; c[i]; i++)
			if (key_is(key, klen, c[i])) {
				*prio = i;
				return (enum rm_target)t;
			}
	}
	/* Batch statistics: "batch/bucket" in history rows; a sidecar also
	 * takes the bare names. */
	size_t plen = strlen(m->batch_prefix);
	const char *k = key;
	size_t kl = klen;
	if (klen > plen && !memcmp(key, m->batch_prefix, plen)) {
		k += plen;
		kl -= plen;
	} else if (!is_sidecar(m->fmt) && m->fmt != RM_FMT_LOG) {
		k = NULL; /* a console log's "tokens=16384" is a batch's too */
	}
	if (k)
		for (int i = 0; i <= T_LENS - T_BUCKET; i++)
			if (key_is(k, kl, rm_map_batch_names[i]))
				return (enum rm_target)(T_BUCKET + i);
	for (size_t i = 0; i < sizeof(batch_aliases) / sizeof(batch_aliases[0]); i++)
		if (key_is(key, klen, batch_aliases[i].name))
			return batch_aliases[i].t;
	/* The Trainer's closing averages (HF, and ms-swift's logging.jsonl) */
	if ((m->fmt == RM_FMT_HF_STATE || m->fmt == RM_FMT_LOG || m->fmt == RM_FMT_JSONL) &&
	    key_is(key, klen, "train_runtime"))
		return T_SUMMARY;
	if (m->fmt == RM_FMT_LOG)
		for (size_t i = 0; i < sizeof(log_batch) / sizeof(log_batch[0]); i++)
			if (key_is(key, klen, log_batch[i].name))
				return log_batch[i].t;
	for (int i = 0; eval_prefixes[i]; i++)
		if (has_prefix(key, klen, eval_prefixes[i]) && !eval_setting(key, klen))
			return T_EVAL;
	return T_NONE;
}

/* Eight bytes a step, each mixed by a multiply and a shift (a key is
 * hashed several times a line; byte-wise FNV was a tenth of a log's read). */
static uint32_t hash(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15u ^ n, w;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdu;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xff51afd7ed558ccdu;
	return (uint32_t)(h ^ (h >> 29));
}

static struct rm_map_slot *slot_for(struct rm_map_slot *cache, uint32_t cap, const char *key, size_t klen, uint32_t h)
{
	for (uint32_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!cache[i].key || (cache[i].klen == klen && !memcmp(cache[i].key, key, klen)))
			return &cache[i];
}

static void cache_grow(struct rm_mapper *m)
{
	uint32_t cap = m->cache_cap ? m->cache_cap * 2 : 16;
	struct rm_map_slot *c = rm_xcalloc(cap, sizeof(*c));
	for (uint32_t i = 0; i < m->cache_cap; i++) {
		m->cache[i].next = 0; /* the slots move */
		if (m->cache[i].key)
			*slot_for(c, cap, m->cache[i].key, m->cache[i].klen, hash(m->cache[i].key, m->cache[i].klen)) =
			    m->cache[i];
	}
	free(m->cache);
	m->cache = c;
	m->cache_cap = cap;
	m->last_slot = 0;
}

/* Notes slot s as the one looked up after the last (see rm_mapper_target). */
static void follow(struct rm_mapper *m, const struct rm_map_slot *s)
{
	uint32_t at = (uint32_t)(s - m->cache) + 1;
	if (m->last_slot)
		m->cache[m->last_slot - 1].next = at;
	m->last_slot = at;
}

/* A file's rows name their keys in the same order line after line, so the
 * slot that followed the last one is tried before the hash. */
enum rm_target rm_mapper_target(struct rm_mapper *m, const char *key, size_t klen, int *prio)
{
	uint32_t guess = m->last_slot ? m->cache[m->last_slot - 1].next : 0;
	if (guess && m->cache[guess - 1].klen == klen && !memcmp(m->cache[guess - 1].key, key, klen)) {
		m->last_slot = guess;
		*prio = m->cache[guess - 1].prio;
		return (enum rm_target)m->cache[guess - 1].target;
	}
	uint32_t h = hash(key, klen);
	if (m->cache_cap) {
		struct rm_map_slot *s = slot_for(m->cache, m->cache_cap, key, klen, h);
		if (s->key) {
			follow(m, s);
			*prio = s->prio;
			return (enum rm_target)s->target;
		}
	}
	enum rm_target t = classify(m, key, klen, prio);
	if (m->cache_n >= MAP_CACHE)
		return t; /* a file with thousands of keys: classify the rest each time */
	if ((m->cache_n + 1) * 2 > m->cache_cap)
		cache_grow(m);
	struct rm_map_slot *s = slot_for(m->cache, m->cache_cap, key, klen, h);
	s->key = rm_xstrndup(key, klen);
	s->klen = (uint32_t)klen;
	s->target = (uint8_t)t;
	s->prio = (uint8_t)*prio;
	m->cache_n++;
	follow(m, s);
	return t;
}

static const enum rm_step_field step_field_of[] = {
    [T_LOSS] = RM_S_LOSS,           [T_LR] = RM_S_LR,           [T_EPOCH] = RM_S_EPOCH,
    [T_GRAD_NORM] = RM_S_GRAD_NORM, [T_RUNTIME] = RM_S_RUNTIME, [T_TS] = RM_S_TS,
};

/* A log line with a training and a validation loss is read as an eval
 * ("eval_training_loss", "validation_loss"); where the file's training
 * lines name their loss the same, it is the step's loss too, with the
 * line's epoch and rate (the sink's finish drops the eval copy). */
static void train_loss_of_eval_line(struct rm_mapper *m, const struct rm_row *row, struct rm_record *rec)
{
	size_t ll = strlen(m->locked[T_LOSS]);
	double v;
	for (size_t i = 0; i < row->n; i++) {
		const struct rm_field *f = &row->f[i];
		if (f->klen == ll + 5 && !memcmp(f->key, "eval_", 5) && !memcmp(f->key + 5, m->locked[T_LOSS], ll) &&
		    rm_field_num(f, &v) == 1) {
			rec->s.v[RM_S_LOSS] = v;
			rec->s.have |= 1u << RM_S_LOSS;
			return;
		}
	}
}

/* A loss-named field beside the one diagnosed (a GAN's d_loss and g_loss,
 * a CTC and an attention loss): f is a key the file's head found named
 * like a loss that varies (infer.c), or NULL for a known loss name. */
static void note_other_loss(struct rm_mapper *m, const struct rm_field *f, size_t i)
{
	if (m->nother == RM_OTHER_LOSSES || i > UINT32_MAX)
		return;
	if (f) {
		const struct rm_guess *g = m->opts->guess;
		size_t j = 0;
		while (j < g->nalso && !key_is(f->key, f->klen, g->also[j]))
			j++;
		if (j == g->nalso)
			return;
	}
	m->other[m->nother++] = (uint32_t)i;
}

/* The loss chosen is no other loss. */
static void drop_chosen_loss(struct rm_mapper *m, const struct rm_row *row, const struct rm_field *chosen)
{
	int n = 0;
	for (int j = 0; j < m->nother; j++)
		if (&row->f[m->other[j]] != chosen)
			m->other[n++] = m->other[j];
	m->nother = n;
}

void rm_mapper_each_other_loss(struct rm_mapper *m, const struct rm_row *row,
                               void (*add)(void *arg, const char *key, size_t klen, double value), void *arg)
{
	for (int j = 0; j < m->nother; j++) {
		const struct rm_field *f = &row->f[m->other[j]];
		double v;
		if (rm_field_num(f, &v) == 1)
			add(arg, f->key, f->klen, v);
	}
}

int rm_mapper_map(struct rm_mapper *m, const struct rm_row *row, struct rm_record *rec, char *why, size_t whylen)
{
	const struct rm_field *pick[T_COUNT] = {0};
	int best[T_COUNT];
	int nevals = 0;
	memset(rec, 0, sizeof(*rec));
	m->nother = 0;
	for (size_t i = 0; i < row->n; i++) {
		const struct rm_field *f = &row->f[i];
		int prio;
		enum rm_target t = rm_mapper_target(m, f->key, f->klen, &prio);
		if (t == T_NONE) {
			if (m->opts->guess && m->opts->guess->nalso)
				note_other_loss(m, f, i);
			continue;
		}
		if (t == T_EVAL) {
			nevals++;
			continue;
		}
		if (t == T_LOSS)
			note_other_loss(m, NULL, i); /* all but the one chosen, once chosen */
		if (m->locked[t]) {
			if (key_is(f->key, f->klen, m->locked[t]))
				pick[t] = f;
			continue;
		}
		if (!pick[t] || prio < best[t]) {
			pick[t] = f;
			best[t] = prio;
		}
	}
	for (int t = 0; t < T_COUNT; t++)
		if (pick[t] && !m->locked[t] && t != T_SUMMARY && pick[t]->type != RM_F_NULL)
			m->locked[t] = rm_xstrndup(pick[t]->key, pick[t]->klen);
	drop_chosen_loss(m, row, pick[T_LOSS]);
	if (pick[T_SUMMARY]) {
		rec->is_summary = 1;
		return 0;
	}
	/* A row that names no step and holds nothing to record (a run's
	 * closing dump of its parameters and history) is no record. */
	int holds = 0;
	for (int t = T_LOSS; t < T_SUMMARY; t++)
		holds |= pick[t] != NULL && t != T_RANK && t != T_MICRO;
	if (!pick[T_STEP] && !holds) {
		rec->step = 0;
		return 0;
	}
	double v;
	int num = pick[T_STEP] ? rm_field_num(pick[T_STEP], &v) : 0;
	int64_t per_epoch = 0; /* "[10/500]": the counter counts within 500 */
	double count;
	if (num == -1)
		num = step_of_total(pick[T_STEP], &v, &per_epoch);
	else if (num == 1 && pick[T_STEP]->raw && memchr(pick[T_STEP]->raw, '/', pick[T_STEP]->rlen) &&
	         (step_of_total(pick[T_STEP], &count, &per_epoch) != 1 || count != v))
		per_epoch = 0; /* a console log's reader took the count already; the total is read here */
	if (num != 1) {
		const struct rm_field *f = pick[T_STEP];
		if (!f)
			snprintf(why, whylen, "no step ('%s')", rm_mapper_step_name(m));
		else if (num == 0)
			snprintf(why, whylen, "the step '%.*s' is null", (int)f->klen, f->key);
		else
			snprintf(why, whylen, "the step '%.*s' is not a number: %.*s", (int)f->klen, f->key,
			         (int)(f->rlen > 40 ? 40 : f->rlen), f->raw);
		return -1;
	}
	if (!(v >= 0 && v == floor(v))) {
		snprintf(why, whylen, "step %s is not a non-negative integer", rm_num(v, (char[32]){0}, 32));
		return -1;
	}
	if (!(v < 9007199254740992.0)) {
		snprintf(why, whylen, "step %s is beyond 2^53, the largest step stored exactly",
		         rm_num(v, (char[32]){0}, 32));
		return -1;
	}
	rec->step = (int64_t)v;
	rec->s.step = rec->step;
	rec->b.step = rec->step;
	for (int t = T_LOSS; t <= T_TS; t++) {
		if (!pick[t])
			continue;
		int rc = rm_field_num(pick[t], &v);
		if (rc < 0) {
			snprintf(why, whylen, "'%.*s' is not a number", (int)pick[t]->klen, pick[t]->key);
			return -1;
		}
		if (rc == 0)
			continue;
		if (t == T_LOSS && m->opts->guess && m->opts->guess->loss_log && !m->opts->loss_key)
			v = log(v); /* a perplexity is exp of the loss */
		enum rm_step_field sf = step_field_of[t];
		rec->s.v[sf] = v;
		rec->s.have |= 1u << sf;
	}
	if (!pick[T_LOSS] && nevals && m->locked[T_LOSS] && !strncmp(m->locked[T_LOSS], "train", 5))
		train_loss_of_eval_line(m, row, rec); /* never HF's eval_loss beside its loss */
	compose_epoch(m, rec, nevals && !((rec->s.have >> RM_S_LOSS) & 1), per_epoch);
	rec->has_step_row = (rec->s.have >> RM_S_LOSS) & 1;
	for (int t = T_BUCKET; t <= T_LENS; t++) {
		if (!pick[t])
			continue;
		if (t == T_LENS) {
			if (rm_map_lens_stats(m, row, pick[t], &rec->b) < 0) {
				snprintf(why, whylen, "'%.*s' is not a list of lengths", (int)pick[t]->klen,
				         pick[t]->key);
				return -1;
			}
			continue;
		}
		int rc = rm_field_num(pick[t], &v);
		if (t == T_BUCKET) {
			if (rm_map_bucket_label(m, pick[t], rc, v, rec, why, whylen))
				return -1;
			continue;
		}
		if (rc < 0 || (rc == 1 && !isfinite(v))) {
			snprintf(why, whylen, "'%.*s' is not a finite number", (int)pick[t]->klen, pick[t]->key);
			return -1;
		}
		if (rc == 0)
			continue;
		if (t == T_RANK || t == T_MICRO) { /* fuzz_textimport: a cast of 5e86 is undefined */
			if (!(v >= 0 && v < 9007199254740992.0 && v == floor(v))) {
				snprintf(why, whylen, "%s %s is not a whole number >= 0",
				         rm_map_batch_names[t - T_BUCKET], rm_num(v, (char[32]){0}, 32));
				return -1;
			}
			*(t == T_RANK ? &rec->b.rank : &rec->b.micro) = (int64_t)v;
			rec->has_rank |= t == T_RANK;
			continue;
		}
		if (t == T_N && v != floor(v) && !key_is(pick[t]->key, pick[t]->klen, "n"))
			v = fmax(1, round(v)); /* bsz is a mean over the logging interval */
		rec->b.v[t - T_BUCKET] = v;
		rec->b.have |= 1u << (t - T_BUCKET);
	}
	if ((pick[T_CUM_TOKENS] || pick[T_CUM_N]) && rm_map_cumulative(m, pick, rec, why, whylen))
		return -1;
	if (pick[T_TOK_RATE] && !pick[T_CUM_TOKENS]) /* a token counter, where there is one, says it exactly */
		rm_map_rate_tokens(m, pick, rec);
	if (rec->b.have || rec->bucket_text) {
		if (rm_map_check_batch(&rec->b, why, whylen)) /* as recorded, so the message names what the file says */
			return -1;
		rm_map_complete_batch(&rec->b);
		rec->has_batch = 1;
	}
	rec->is_eval = nevals > 0; /* W&B merges eval and train keys of a step */
	return 0;
}

static int row_has_any(struct rm_mapper *m, const struct rm_row *row, enum rm_target lo, enum rm_target hi)
{
	for (size_t i = 0; i < row->n; i++) {
		int prio;
		enum rm_target t = rm_mapper_target(m, row->f[i].key, row->f[i].klen, &prio);
		if (t >= lo && t <= hi)
			return 1;
	}
	return 0;
}

/* A row is a sidecar row when it has batch statistics under their bare
 * names and no loss. */
int rm_mapper_looks_like_sidecar(const struct rm_import_opts *opts, const struct rm_row *row)
{
	struct rm_mapper plain, side;
	rm_mapper_init(&plain, RM_FMT_JSONL, opts);
	rm_mapper_init(&side, RM_FMT_SIDECAR_JSONL, opts);
	int yes = row_has_any(&side, row, T_BUCKET, T_LENS) && !row_has_any(&plain, row, T_LOSS, T_LOSS) &&
	          !row_has_any(&plain, row, T_BUCKET, T_LENS);
	rm_mapper_release(&plain);
	rm_mapper_release(&side);
	return yes;
}
