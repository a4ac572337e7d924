/*
 * sim_series.c - a simulated run as the detectors read it after an import:
 * the loss as the trainer reports it (the mean of each logging interval),
 * the batches it records (bucket ids, lengths only or nothing), and the
 * truth it was made with.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/cost.h"
#include "runmon/model.h"
#include "runmon/sim.h"

static const int64_t default_bounds[] = {0, 770, 1216, 1728, 2432, 3296, 8192};

void rm_sim_series_make(const struct rm_sim_opts *o, struct rm_sim_series *out)
{
	struct rm_sim *g = rm_sim_open(o);
	size_t T = (size_t)o->steps, S = (size_t)rm_sim_slots(o), N = o->loss_only ? 0 : T * S;
	size_t K = (size_t)(o->log_every > 1 ? o->log_every : 1), m = 0;
	memset(out, 0, sizeof(*out));
	out->step = rm_xmalloc((T / K + 1) * sizeof(int64_t));
	out->loss = rm_xmalloc((T / K + 1) * sizeof(double));
	out->lr = rm_xmalloc((T / K + 1) * sizeof(float));
	out->epoch = rm_xmalloc((T / K + 1) * sizeof(float));
	out->bstep = rm_xmalloc((N ? N : 1) * sizeof(int64_t));
	out->max_len = rm_xmalloc((N ? N : 1) * sizeof(double));
	double *min_len = rm_xmalloc((N ? N : 1) * sizeof(double));
	out->bucket = rm_xmalloc((N ? N : 1) * sizeof(int));
	out->brank = rm_xmalloc((N ? N : 1) * sizeof(int));
	struct rm_length_cuts cuts = {.n = 0};
	if (o->lens) { /* bucket i holds (b[i], b[i + 1]], the last longer lengths too, as the simulator */
		const int64_t *b = o->bounds && o->nbounds >= 2 ? o->bounds : default_bounds;
		int nb = o->bounds && o->nbounds >= 2 ? o->nbounds : 7;
		cuts.n = nb - 1 < RM_MAX_BUCKETS ? nb - 1 : RM_MAX_BUCKETS;
		for (int i = 0; i < cuts.n; i++) {
			cuts.hi[i] = b[i + 1];
			cuts.dense[i] = i;
		}
	}
	const struct rm_sim_step *x;
	double acc = 0;
	for (size_t t = 0, i = 0; (x = rm_sim_next(g)); t++) {
		for (size_t j = 0; j < S && N; j++, i++) {
			uint8_t bucket[RM_MAX_BUCKETS];
			float share[RM_MAX_BUCKETS];
			int parts = x[j].lens ? rm_lens_shares(x[j].lens, x[j].lens_bytes, &cuts, bucket, share) : 0;
			if (parts >= 2 && !o->no_bucket)
				rm_mix_add(&out->mix, i, bucket, share, parts);
			out->bstep[i] = x[j].step;
			out->bucket[i] = x[j].bucket;
			out->brank[i] = x[j].rank;
			out->max_len[i] = x[j].max_len;
			min_len[i] = x[j].min_len;
		}
		acc += x->loss;
		if ((t + 1) % K)
			continue;
		out->step[m] = x->step;
		out->loss[m] = acc / (double)K;
		out->lr[m] = rm_float_of(x->lr);
		out->epoch[m] = rm_epoch_float(x->epoch);
		m++;
		acc = 0;
	}
	out->truth = *rm_sim_truth(g);
	memset((struct rm_sim_truth *)rm_sim_truth(g), 0, sizeof(out->truth)); /* taken over */
	rm_sim_close(g);
	out->s = (struct rm_series){.n = m,
	                            .step = out->step,
	                            .loss = out->loss,
	                            .lr = out->lr,
	                            .epoch = out->epoch,
	                            .nb = N,
	                            .bstep = out->bstep,
	                            .brank = out->brank,
	                            .nranks = o->ranks > 1 ? o->ranks : 1,
	                            .bucket = out->bucket,
	                            .max_len = out->max_len,
	                            .mix = out->mix.n ? &out->mix : NULL,
	                            .checkpoint_every = o->save_every,
	                            .steps_per_epoch = out->truth.steps_per_epoch};
	if (o->no_bucket && N)
		rm_sim_series_derive(out, min_len);
	free(min_len);
}

void rm_sim_series_derive(struct rm_sim_series *out, const double *min_len)
{
	size_t n = out->s.nb;
	struct rm_bucket_map *map = rm_xcalloc(1, sizeof(*map));
	if (rm_bucket_map_derive(map, NULL, 0, min_len, out->max_len, n, out->bucket)) {
		out->s.labels = map->label;
		out->s.nlabels = map->k;
		out->s.derived_bounds = map->bound;
		out->s.nderived_bounds = map->nbound;
		out->s.derived_cut_points = map->cut_points;
	} else {
		for (size_t i = 0; i < n; i++)
			out->bucket[i] = -1;
	}
	out->derived = map;
}

void rm_sim_series_release(struct rm_sim_series *ss)
{
	free(ss->step);
	free(ss->loss);
	free(ss->lr);
	free(ss->epoch);
	free(ss->bstep);
	free(ss->max_len);
	free(ss->bucket);
	free(ss->brank);
	rm_mix_release(&ss->mix);
	rm_sim_truth_release(&ss->truth);
	if (ss->derived) {
		rm_bucket_map_release(ss->derived);
		free(ss->derived);
	}
	memset(ss, 0, sizeof(*ss));
}
