/*
 * replay.h - the truth matrix's second generator (issue 65.1): runs made
 * from real samples rather than runmon's own loss model. A real PyTorch
 * training (examples/torch/train.py --per-sample, random batches) kept
 * every sample's loss and length at every step (tests/data/replay/); a
 * run in any batching order is made by re-batching those samples, each
 * batch drawn from the samples trained within a few steps of the point of
 * training it stands for, its loss their token-weighted mean (the
 * trainer's own reduction). Noise, the length-loss relation and the trend
 * are the training's, not a model the detectors were built on.
 */
#ifndef RUNMON_TESTS_REPLAY_H
#define RUNMON_TESTS_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/sim.h"

enum replay_order {
	RP_MIXED,           /* batches of every length, labelled by their longest sample's bucket */
	RP_BUCKETED_RANDOM, /* one bucket a batch, buckets in random order */
	RP_STRIDE,          /* one bucket a batch, interleaved in proportion */
	RP_SORTED,          /* each epoch one bucket after another, shortest first */
	RP_CHUNKED,         /* chunks of 64 batches of one bucket */
	RP_MEGABATCH,       /* Hugging Face's group_by_length: 50 batches drawn, sorted by length */
	RP_COUNT
};
const char *replay_order_name(enum replay_order o);
/* Homogeneous batching: the order streaks buckets. */
int replay_sick(enum replay_order o);

struct replay_opts {
	enum replay_order order;
	uint64_t seed;
	int64_t steps;
	int log_every; /* the logged loss is the mean of this many steps */
	int no_bucket; /* lengths only: buckets derived as the store derives them */
	int loss_only; /* no batches */
};

/* Makes the run as the detectors read it after an import, into out
 * (release with rm_sim_series_release; out->truth holds no event). 0, or
 * -1 when the samples' file cannot be read (its path in why). */
int replay_series_make(const struct replay_opts *o, struct rm_sim_series *out, char *why, size_t whylen);

#endif
