/*
 * detect_internal.h - what the detector files share: the prepared view of
 * a series (finite loss points joined with the batches they cover).
 */
#ifndef RUNMON_DETECT_INTERNAL_H
#define RUNMON_DETECT_INTERNAL_H

#include "runmon/common.h"
#include "runmon/detect.h"

struct rm_prepared {
	size_t n;        /* finite loss points */
	const double *y; /* their losses */
	const int64_t *step;
	const float *lr, *epoch; /* NaN when not logged */
	/* Copies prepare made (NULL when the series' arrays are used as is). */
	double *own_y;
	float *own_lr, *own_epoch;
	int64_t *own_step, *own_bstep;
	int k; /* buckets seen, dense 0..k-1 */
	int bucket_id[RM_MAX_BUCKETS];
	float *share;     /* n*k bucket shares among a point's batches; NULL when one_each */
	int one_each;     /* every point covers exactly one batch */
	const int *dom;   /* dominant dense bucket per point, -1 if it covers no batch */
	int *own_dom;     /* dom when prepare made it (bseq serves when point j is batch j) */
	char *onehot;     /* the point's batches are all of bucket dom */
	int with_batches; /* points covering at least one batch */
	size_t nb;        /* batches with a bucket */
	const int *bseq;  /* their dense buckets, in step order */
	int *own_bseq;    /* bseq when prepare made it (the series' buckets serve when already dense) */
	const int *brank; /* their ranks; NULL when one rank */
	int *own_brank;   /* brank when prepare copied it */
	int nranks;
	int multi; /* some step has several batches (ranks, micro-batches) */
	/* Batches whose lengths span buckets, by prepared row and dense bucket:
	 * their share vectors replace the one-hot of bseq. */
	struct rm_mix mix;
	const int64_t *bstep;
	float *blog;                     /* log length of each of those batches, NaN unknown; NULL when none is known */
	size_t len_batches;              /* batches with a known length */
	double len_acf[RM_LEN_LAGS + 1]; /* autocorrelation of their log length, lags 0..RM_LEN_LAGS */
	double len_min, len_max;         /* the lengths seen */
	double len_run;                  /* its correlation time in batches (the lag where it falls below 1/e) */
	/* Point j covers batches [bfrom[j], bto[j]); both NULL when point j is
	 * batch j (one batch a logged step, none left out), which saves 16
	 * bytes a step on a long run: read them with rm_pt_from and rm_pt_to. */
	size_t *bfrom, *bto;
	int long_from; /* dense buckets >= long_from count as long */
};

static inline size_t rm_pt_from(const struct rm_prepared *p, size_t j)
{
	return p->bfrom ? p->bfrom[j] : j;
}

static inline size_t rm_pt_to(const struct rm_prepared *p, size_t j)
{
	return p->bto ? p->bto[j] : j + 1;
}

#define RM_BUCKET_IDS 256 /* bucket ids 0..255 are accepted */

/* Each batch's slot: rank x micro-batch, a sequence of its own across
 * steps (one slot when each step has one batch). rm_slots_init returns the
 * slots; rm_slots_next gives the slot of batch t, called for t = 0, 1, ... in
 * turn. Ranks beyond RM_MAX_SLOTS share the last micro slot. */
#define RM_MAX_SLOTS 65536
struct slots {
	const int64_t *bstep;
	const int *brank;
	int R, M, micro;
};
int rm_slots_init(struct slots *it, const int64_t *bstep, const int *brank, size_t nb, int nranks);
int rm_slots_next(struct slots *it, size_t t);

/* Maps bucket ids to dense indexes 0..k-1 in id order (dense[id] = -1 for
 * ids not seen as a batch's bucket, nor in a mixed batch with with_mix);
 * fills id[dense] and returns k (at most RM_MAX_BUCKETS). */
int rm_dense_buckets(const struct rm_series *s, int with_mix, int dense[RM_BUCKET_IDS], int id[RM_MAX_BUCKETS]);

void rm_prepare(const struct rm_series *s, struct rm_prepared *p);
void rm_prepared_release(struct rm_prepared *p);
/* Fills share[] and dom[] of every point from a batch bucket sequence (the
 * real one, or a shuffled one for permutation tests). */
void rm_prepared_shares(const struct rm_prepared *p, const int *bseq, float *share, int *dom);

void rm_detect_split(const struct rm_prepared *p, struct rm_split_result *r);
/* The split and length fits on each rank's own loss; returns 1 when either
 * could be fitted (the caller frees their arrays), with the ranks that had
 * a finite loss. */
int rm_detect_rank_fits(const struct rm_series *s, struct rm_split_result *split, struct rm_length_result *length,
                        int *ranks);
void rm_detect_ladder(const struct rm_prepared *p, const struct rm_series *s, const struct rm_split_result *split,
                      const struct rm_detect_opts *o, struct rm_ladder_result *r);
/* Reset onsets against the level each point's composition expects: the
 * split's trend and bucket shares, or with len_adj (not NULL) the
 * length-adjusted loss, or without composition the split's levels. */
void rm_detect_resets(const struct rm_prepared *p, const struct rm_split_result *split, const double *len_adj,
                      const struct rm_series *s, const struct rm_detect_opts *o, struct rm_resets_result *r);
/* The share of dense bucket b among point j's batches, and the mix of
 * per-bucket values v over them (sum of share x v). */
double rm_prepared_share(const struct rm_prepared *p, size_t j, int b);
double rm_prepared_mix(const struct rm_prepared *p, size_t j, const double *v);
/* Divergence in the series' own losses (NaN and Inf kept). */
void rm_detect_divergence(const struct rm_series *s, struct rm_divergence *d);
void rm_detect_order(const struct rm_prepared *p, const struct rm_series *s, const struct rm_split_result *sp,
                     struct rm_order_result *r);
void rm_detect_length(const struct rm_prepared *p, const struct rm_split_result *split, struct rm_length_result *r);
/* The runs test of each rank: its slots' runs, expectations and variances
 * added up, and its batches. */
struct rank_total {
	double runs, expected, var;
	size_t n;
};
/* rm_detect_runs, adding each rank's totals into per_rank (s->nranks
 * entries, zeroed) when not NULL. */
void rm_detect_runs_ranked(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_runs_result *r,
                           struct rank_total *per_rank);
/* The mixture's shape and severity from what it measured: lockstep, most
 * tested ranks in streaks, drift, or random. */
void rm_mixture_shape(struct rm_mixture_result *r);
void rm_detect_mixture(const struct rm_prepared *p, const struct rank_total *per_rank, const struct rm_detect_opts *o,
                       struct rm_mixture_result *r);
void rm_detect_verdict(const struct rm_detect_opts *o, struct rm_diagnosis *d);
/* What a logged point is: the reading given, or decided by the evidence
 * (detect_reading.c); out is s read so. */
/* How p's loss points meet its batches. */
void rm_join_measure(const struct rm_prepared *p, struct rm_join *j);
void rm_choose_reading(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_series *out,
                       struct rm_reading_fit *rf);
/* Infers a period of the spikes (spike[j] per point) into r's period_*. */
void rm_detect_period(const struct rm_prepared *p, const char *spike, struct rm_resets_result *r);
/* The period's events fill enough of its cycles for a periodic cause. */
int rm_period_covers(const struct rm_resets_result *r);

#endif
