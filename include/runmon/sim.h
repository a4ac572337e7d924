/*
 * sim.h - simulated training runs with known ground truth.
 *
 * Generates per-step batch composition under a batching strategy and a
 * loss with realistic per-length levels (short ~0.55, medium ~1.1, long
 * 1.6-2.2), a decaying trend that falls further at each new epoch, and
 * multiplicative noise. Pure: arrays out, no I/O.
 */
#ifndef RUNMON_SIM_H
#define RUNMON_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/detect.h"

struct rm_lengths;

enum rm_sim_strategy {
	RM_SIM_SORTED,          /* each epoch ordered short to long */
	RM_SIM_CHUNKED,         /* streaks of 50-200 batches of one bucket */
	RM_SIM_BUCKETED_RANDOM, /* one bucket per batch, buckets in random order */
	RM_SIM_INTERLEAVED,     /* stride-based proportional interleaving */
	RM_SIM_MIXED,           /* batches drawn from every length */
	RM_SIM_HF_MEGABATCH,    /* Hugging Face group_by_length megabatches */
	RM_SIM_STRIDE,          /* the stride sampler (runmon_sampler.py) over a drawn dataset */
	RM_SIM_COUNT
};
const char *rm_sim_strategy_name(enum rm_sim_strategy s);
int rm_sim_strategy_parse(const char *name, enum rm_sim_strategy *out);

enum rm_sim_spikes { RM_SIM_SPIKES_NONE, RM_SIM_SPIKES_BUCKET, RM_SIM_SPIKES_CHECKPOINT };

/* How data-parallel ranks draw their batches. */
enum rm_sim_rank_mode {
	RM_SIM_LOCKSTEP,    /* every rank (and micro-batch) of a step draws the step's bucket */
	RM_SIM_SHARDED,     /* one global order, dealt to the ranks in turn */
	RM_SIM_INDEPENDENT, /* each rank its own order (a per-rank sampler), at its own phase */
	RM_SIM_RANK_MODES
};
const char *rm_sim_rank_mode_name(enum rm_sim_rank_mode m);
int rm_sim_rank_mode_parse(const char *name, enum rm_sim_rank_mode *out);

struct rm_sim_opts {
	enum rm_sim_strategy strategy;
	int64_t steps;
	uint64_t seed;
	const int64_t *bounds; /* bucket boundaries; NULL: 0,770,1216,1728,2432,3296,8192 */
	int nbounds;
	int log_every; /* report the mean loss every K steps (1: every step) */
	enum rm_sim_spikes spikes;
	int64_t save_every;               /* checkpoint interval, steps (default 500) */
	int64_t steps_per_epoch;          /* default steps / 3 */
	int64_t tokens_per_batch;         /* token budget of a bucketed batch (default 65536) */
	int no_bucket;                    /* record lengths only: no bucket id, no boundaries */
	int cumulative;                   /* record only cumulative token and sequence counters on the loss rows */
	const struct rm_lengths *lengths; /* draw lengths from this distribution (a dataset's), not the
	                                   * log-normal; NULL: the log-normal */
	int ranks, micro;                 /* data-parallel ranks and micro-batches per rank (default 1) */
	int lens;                         /* record each batch's own lengths (a sidecar's "lens") */
	enum rm_sim_rank_mode rank_mode;
};
/* Batches per step: ranks x micro. */
int rm_sim_slots(const struct rm_sim_opts *o);
void rm_sim_opts_default(struct rm_sim_opts *o);

struct rm_sim_step {
	int64_t step;
	int rank, micro;
	int bucket;
	int n;                /* sequences */
	int min_len, max_len; /* tokens */
	double mean_len;
	int64_t tokens, padded; /* real and padding tokens */
	double loss;            /* this step's loss (the mean over its batches) */
	double lr, epoch;
	double runtime; /* seconds since start */
	uint8_t *lens;  /* with o->lens: the batch's lengths, encoded (lens.h) */
	uint32_t lens_bytes;
};

/* Simulates o->steps steps into *out (release with rm_sim_steps_free):
 * one entry per batch, rm_sim_slots(o) per step in (step, rank, micro)
 * order. */
void rm_simulate(const struct rm_sim_opts *o, struct rm_sim_step **out);
void rm_sim_steps_free(struct rm_sim_step *st, size_t n);

/* A simulated run as the detectors read it: the loss of each step and a
 * batch row per rank and micro-batch. rm_sim_series_release frees it. */
struct rm_sim_series {
	struct rm_series s;
	int64_t *step, *bstep;
	double *loss, *max_len;
	int *bucket, *brank;
	struct rm_mix mix; /* with o->lens: the batches whose lengths span buckets */
};
void rm_sim_series_make(const struct rm_sim_opts *o, struct rm_sim_series *out);
void rm_sim_series_release(struct rm_sim_series *ss);

struct rm_store;
struct rm_err;

/* Simulates into the database as run `name` (replacing its rows): loss
 * rows every log_every steps (the interval mean, as trainers report it),
 * batch composition every step, the bucket boundaries, and a config with
 * save_steps and steps_per_epoch. */
int rm_sim_store(struct rm_store *st, const char *name, const struct rm_sim_opts *o, struct rm_err *err);

/* Writes dir/history.jsonl (W&B history rows) and dir/batches.jsonl (the
 * batch sidecar) for the same run. */
int rm_sim_write_files(const char *dir, const struct rm_sim_opts *o, struct rm_err *err);

/* The stride sampler (contrib/python/runmon_sampler.py, whose docstring is
 * the specification): length buckets, one bucket per batch, buckets
 * interleaved in proportion by stride scheduling, sharded over ranks
 * without lockstep. The same lengths, options, seed and epoch give the
 * same batches as the Python. */
enum { RM_STRIDE_MAX_BUCKETS = 64 };
struct rm_stride_opts {
	const int64_t *bounds; /* B[0..k], ascending */
	int nbounds;
	int64_t batch_size; /* samples per batch, or */
	int64_t max_tokens; /* padded tokens per batch (exactly one of the two > 0) */
	uint64_t seed;
	uint32_t epoch;
	int rank, world_size, drop_last;
};
struct rm_stride_epoch {
	size_t nbatches;
	size_t *idx;   /* the samples of batch j: idx[start[j] .. start[j + 1]) */
	size_t *start; /* nbatches + 1 */
	int *bucket;   /* each batch's bucket */
};
/* o->rank's batches of epoch o->epoch into *ep (rm_stride_epoch_free);
 * the number of batches, or -1 for options the Python refuses (or 2^31
 * samples and more). */
int64_t rm_stride_epoch(const int64_t *len, size_t n, const struct rm_stride_opts *o, struct rm_stride_epoch *ep);
void rm_stride_epoch_free(struct rm_stride_epoch *ep);

#endif
