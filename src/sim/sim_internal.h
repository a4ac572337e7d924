/*
 * sim_internal.h - what the simulator's files share: the length
 * generator and the bucket orders.
 */
#ifndef RUNMON_SIM_INTERNAL_H
#define RUNMON_SIM_INTERNAL_H

#include "runmon/cost.h"
#include "runmon/sim.h"
#include "runmon/stats.h"

#define SIM_MAX_K 64 /* buckets */

/* Sequence lengths: log-normal (median 1100, sigma 0.75) or an empirical
 * distribution, cut into buckets by boundaries b[0..nb). */
struct gen {
	struct rm_rng rng;
	const int64_t *b;
	int nb; /* boundaries */
	int k;  /* buckets */
	double maxlen;
	const struct rm_lengths *d; /* an empirical distribution, or NULL */
	int64_t *cum;               /* d's cumulative counts */
	/* The log-normal's inverse CDF over each bucket's range (k tables), then
	 * over all lengths: SIM_QN + 1 lengths each at evenly spaced
	 * probabilities, interpolated (made once: drawing is the simulator's
	 * hot loop). */
	double *qtab;
};
#define SIM_QN 4096
void rm_sim_gen_init(struct gen *g);
void rm_sim_gen_release(struct gen *g);

double rm_sim_draw_len(struct gen *g);
double rm_sim_draw_len_in(struct gen *g, int bucket);
int rm_sim_bucket_of(const struct gen *g, double len);

/* One bucket order (sorted, chunked, bucketed-random or interleaved) with
 * its own random stream: order_next gives the bucket of its next batch. */
struct order {
	enum rm_sim_strategy strategy;
	struct rm_rng rng;
	const double *q; /* each bucket's share of batches */
	int k;
	int64_t pos, epoch; /* batches drawn, and an epoch's batches (sorted) */
	int cur, left;      /* chunked: the streak's bucket and what is left of it */
	double credit[SIM_MAX_K];
};
void rm_sim_order_init(struct order *o, enum rm_sim_strategy s, uint64_t seed, const double *q, int k, int64_t epoch,
                       int phased);
int rm_sim_order_next(struct order *o);

/* The buckets of one step's slots (ranks x micro) under the rank mode:
 * lockstep, every slot the step's bucket; sharded, one global order dealt
 * out in turn; independent, each rank its own order of its micro-batches. */
struct slot_orders {
	enum rm_sim_rank_mode mode;
	int R, M;
	struct order *ord; /* 1, or R when independent */
};
void rm_sim_slots_init(struct slot_orders *so, const struct rm_sim_opts *o, const double *q, int k, uint64_t seed);
void rm_sim_slots_next(struct slot_orders *so, int *bucket);
void rm_sim_slots_release(struct slot_orders *so);

#endif
