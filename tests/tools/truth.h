/*
 * truth.h - the truth matrix: simulated runs shaped as real ones are
 * (orders x ranks x logging interval x composition recorded x events),
 * each diagnosed and held to the truth it was made with. The unit test
 * (tests/unit/test_truth.c) walks every cell over a few seeds; the
 * benchmark (tests/bench/detect_rates truth) gives each cell's miss and
 * false-alarm rates over many.
 */
#ifndef RUNMON_TESTS_TRUTH_H
#define RUNMON_TESTS_TRUTH_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/sim.h"

enum truth_comp { COMP_IDS, COMP_LENGTHS, COMP_LOSS, COMP_COUNT };
enum truth_event { EV_NONE, EV_BUCKET, EV_CHECKPOINT, EV_EPOCH, EV_RANDOM, EV_LR, EV_NAN, EV_EXPLODE, EV_COUNT };
enum truth_ranks { RK_ONE, RK_SHARDED, RK_LOCKSTEP, RK_INDEPENDENT, RK_MICRO, RK_COUNT };

struct truth_cell {
	enum rm_sim_strategy strategy;
	enum truth_ranks ranks;
	int interval;
	enum truth_comp comp;
	enum truth_event event;
	/* 0: made by runmon's simulator; else by replay.c (real samples
	 * re-batched, issue 65.1) in order replay - 1 (enum replay_order), one
	 * rank, no event. */
	int replay;
};

/* The matrix: orders x ranks x interval x composition without events, then
 * every event over the usual shapes, then the second generator's orders x
 * interval x composition. Returns the cell count; *cells is malloc'd. */
size_t truth_cells(struct truth_cell **cells);
/* "chunked/4-sharded/k10/ids/bucket", "replay:chunked/1/k1/ids/none" */
void truth_cell_name(const struct truth_cell *c, char *buf, size_t n);
/* The simulation options of a cell and seed (of the simulator's cells). */
void truth_opts(const struct truth_cell *c, uint64_t seed, struct rm_sim_opts *o);

/* One run of a cell: what was wrong with its diagnosis. */
struct truth_outcome {
	int missed;                           /* a required cause not named at its level */
	int false_alarm;                      /* a cause named at warn or above that the run was not made with */
	int wrong_bucket;                     /* resets attributed to another bucket than they begin in */
	size_t onsets, found, matched;        /* reset onsets made, found, and found near a made one */
	unsigned missed_causes, false_causes; /* bit h: hypothesis h missed, or named falsely */
	char why[256];
};
void truth_run(const struct truth_cell *c, uint64_t seed, struct truth_outcome *out);
/* Why a run's failures are a known gap (its issue), or NULL: the cell is
 * one runmon does not get right yet, and the failures are all of the kinds
 * known there. The unit test prints such runs apart; the benchmark counts
 * them like any other. */
const char *truth_known_gap(const struct truth_cell *c, const struct truth_outcome *out);

#endif
