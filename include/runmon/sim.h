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

/* Loss resets: where they begin. Each jumps to --reset-height times the
 * loss and decays over --reset-steps steps (see rm_sim_opts). */
enum rm_sim_spikes {
	RM_SIM_SPIKES_NONE,
	RM_SIM_SPIKES_BUCKET,     /* at random steps of one bucket (the longest by default) */
	RM_SIM_SPIKES_CHECKPOINT, /* right after each checkpoint save */
	RM_SIM_SPIKES_EPOCH,      /* at the first step of each epoch */
	RM_SIM_SPIKES_RANDOM,     /* at random steps, whatever the bucket: genuine instability */
	RM_SIM_SPIKES_COUNT
};
const char *rm_sim_spikes_name(enum rm_sim_spikes s);
int rm_sim_spikes_parse(const char *name, enum rm_sim_spikes *out);

/* How the loss ends, from diverge_at on. */
enum rm_sim_diverge {
	RM_SIM_DIVERGE_NONE,
	RM_SIM_DIVERGE_NAN,     /* the loss is NaN */
	RM_SIM_DIVERGE_INF,     /* +Inf */
	RM_SIM_DIVERGE_EXPLODE, /* it grows tenfold every 20 steps, finite */
	RM_SIM_DIVERGE_COUNT
};
const char *rm_sim_diverge_name(enum rm_sim_diverge d);
int rm_sim_diverge_parse(const char *name, enum rm_sim_diverge *out);

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
	int reset_steps;                  /* steps a reset takes to decay; 0: each draws 5..30 */
	double reset_height;              /* the loss at a reset's onset, times the usual; 0: each draws 2..3 */
	int reset_bucket;                 /* with RM_SIM_SPIKES_BUCKET; -1: the longest bucket */
	int64_t reset_every;              /* bucket and random resets: one in this many steps that may hold one,
	                                   * about; 0: 100 for a bucket's, 400 at random */
	int64_t lr_restarts;              /* SGDR warm restarts every N steps (the loss jumps at each), 0 none */
	enum rm_sim_diverge diverge;      /* how the loss ends */
	int64_t diverge_at;               /* from this step; 0: the last 5% of the steps */
	int64_t save_every;               /* checkpoint interval, steps (default 500) */
	int64_t steps_per_epoch;          /* default steps / 3 */
	int64_t tokens_per_batch;         /* token budget of a bucketed batch (default 65536) */
	int no_bucket;                    /* record lengths only: no bucket id, no boundaries */
	int loss_only;                    /* record the loss alone: no batch composition at all */
	int cumulative;                   /* record only cumulative token and sequence counters on the loss rows */
	const struct rm_lengths *lengths; /* draw lengths from this distribution (a dataset's), not the
	                                   * log-normal; NULL: the log-normal */
	int ranks, micro;                 /* data-parallel ranks and micro-batches per rank (default 1) */
	int lens;                         /* record each batch's own lengths (a sidecar's "lens") */
	enum rm_sim_rank_mode rank_mode;
	int replace; /* rm_sim_store: a run of real data under the name may be replaced */
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

/* What a simulated run was made with: the ground truth a diagnosis is
 * held to. */
struct rm_sim_onset {
	int64_t step;
	int bucket; /* the step's dominant bucket (most of its batches) */
	enum rm_sim_spikes cause;
};
struct rm_sim_truth {
	size_t nresets;
	struct rm_sim_onset *reset; /* onsets in step order (lr restarts: cause NONE) */
	int reset_bucket;           /* the bucket of RM_SIM_SPIKES_BUCKET, -1 none */
	int64_t diverge_step;       /* the first step whose loss diverges, -1 none */
	int64_t steps_per_epoch;
};

/* What a diagnosis of a run made with o must name: the hypotheses into
 * required (their count returned), each at warn or above (epoch boundaries
 * and learning-rate changes, which runmon names as information, at info;
 * homogeneous batching from the loss alone is "suspected", at warn), and
 * in *allowed (may be NULL) a bit (1 << h) for each it may also name
 * without being wrong: a shape a detector may read either way. */
int rm_sim_causes(const struct rm_sim_opts *o, enum rm_hypothesis *required, unsigned *allowed);

/* Does a logged point where a reset begins hold mostly the reset's
 * bucket (streaks of it, or one batch a point)? Only then can a diagnosis
 * tell which bucket resets begin in. */
int rm_sim_onset_composition(const struct rm_sim_opts *o);
/* Can every reset be seen in the loss alone: does each logged point hold
 * a mixture of buckets that hardly changes (many batches of an interleaved
 * order, or mixed batches)? Where the loss switches between levels, a
 * reset of a low one looks like a batch of a higher one. */
int rm_sim_loss_alone_shows_resets(const struct rm_sim_opts *o);

/* A simulation step by step, in memory flat in o->steps: rm_sim_next gives
 * the next step's rm_sim_slots(o) batches, in (rank, micro) order, valid
 * until the next call (lens included), or NULL after the last step. */
struct rm_sim;
struct rm_sim *rm_sim_open(const struct rm_sim_opts *o);
const struct rm_sim_step *rm_sim_next(struct rm_sim *g);
/* The truth so far (the onsets of the steps given). */
const struct rm_sim_truth *rm_sim_truth(const struct rm_sim *g);
void rm_sim_close(struct rm_sim *g);

/* Simulates o->steps steps into *out (release with rm_sim_steps_free):
 * one entry per batch, rm_sim_slots(o) per step in (step, rank, micro)
 * order; the truth into *truth when not NULL (rm_sim_truth_release). */
void rm_simulate(const struct rm_sim_opts *o, struct rm_sim_step **out);
void rm_simulate_truth(const struct rm_sim_opts *o, struct rm_sim_step **out, struct rm_sim_truth *truth);
void rm_sim_steps_free(struct rm_sim_step *st, size_t n);
void rm_sim_truth_release(struct rm_sim_truth *t);

/* A simulated run as the detectors read it: the reported loss (the mean of
 * every log_every steps, at the interval's last step), lr and epoch, and a
 * batch row per rank and micro-batch (none with loss_only; no bucket id,
 * buckets derived from max_len, with no_bucket), and the truth.
 * rm_sim_series_release frees it. */
struct rm_sim_series {
	struct rm_series s;
	int64_t *step, *bstep;
	double *loss, *max_len;
	float *lr, *epoch; /* as the store holds them */
	int *bucket, *brank;
	struct rm_mix mix; /* with o->lens: the batches whose lengths span buckets */
	struct rm_sim_truth truth;
	void *derived; /* with no_bucket: the bucket map the buckets were derived by */
};
void rm_sim_series_make(const struct rm_sim_opts *o, struct rm_sim_series *out);
void rm_sim_series_release(struct rm_sim_series *ss);
/* Lengths only: the series' buckets derived from each batch's min_len and
 * max_len as the store derives them (the bucket ids are replaced). */
void rm_sim_series_derive(struct rm_sim_series *ss, const double *min_len);

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
