/*
 * detect.h - the detectors of homogeneous length-bucketed batching.
 *
 * Pure functions over arrays: no database, network, clock or JSON (the
 * layer check holds them to it). The analyze layer loads a struct
 * rm_series, calls rm_detect_all, and the render layer turns the struct
 * rm_diagnosis into words. Formulas are cited in each detector's file.
 */
#ifndef RUNMON_DETECT_H
#define RUNMON_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/cost.h"
#include "runmon/model.h"

#define RM_MAX_LIST  8   /* worst runs, ladders, spikes listed individually */
#define RM_PLOT_COLS 420 /* columns of a chart's step axis, two pixels each */

/* The column of step on a step axis from first to last (both drawn). */
static inline int rm_plot_col(int64_t step, int64_t first, int64_t last)
{
	if (last <= first || step <= first)
		return 0;
	double c = (double)(step - first) / ((double)(last - first) + 1) * RM_PLOT_COLS;
	return c >= RM_PLOT_COLS - 1 ? RM_PLOT_COLS - 1 : (int)c;
}
/* From the loss alone, levels whose sequence alternates more than this
 * (runs-test z) look interleaved: no suspicion. */
#define RM_LEVELS_INTERLEAVED_Z 3.0
#define RM_BRAID_MIN_POINTS     300 /* points before a braid of levels from the loss alone is suspected */

/* What the detectors read. Loss points are the steps that have a loss row
 * (every step, or one per logging interval); batch composition is per
 * step and may be denser. */
struct rm_series {
	size_t n;
	const int64_t *step;
	const double *loss; /* NaN when not finite */
	/* Why a loss is NaN: 1 NaN, 2 +/-Inf, 3 not logged (the row has other
	 * keys); NULL: every NaN was logged as one. */
	const uint8_t *nonfinite;
	/* As floats (rm_float_of, rm_epoch_float): 8 bytes a step less. */
	const float *lr;    /* NaN when not logged; may be NULL */
	const float *epoch; /* NaN when not logged; may be NULL */
	size_t nb;          /* batches: one per step, or one per rank and micro-batch of each step */
	const int64_t *bstep;
	const int *brank;         /* rank of each batch (0..nranks-1); NULL: one rank */
	int nranks;               /* 1 + the highest rank */
	const int *bucket;        /* -1 unknown */
	const double *max_len;    /* NaN unknown; may be NULL */
	int64_t checkpoint_every; /* steps between checkpoint saves, 0 unknown */
	int64_t steps_per_epoch;  /* 0 unknown */
	/* Labels of bucket ids 0..nlabels-1 as the trainer wrote them (NULL:
	 * the id in decimal), and how many distinct labels were grouped into
	 * those ids (0: none grouped). */
	const char (*labels)[RM_BUCKET_LABEL_LEN];
	int nlabels;
	size_t labels_seen;
	size_t tokens_only; /* batches with a token count but no length or bucket (see rm_store_series) */
	/* Batches whose lengths span buckets (NULL: none): such a batch counts
	 * in each bucket by its token share there, not only in bucket[]. */
	const struct rm_mix *mix;
	/* Buckets derived from max_len (no id recorded): their boundaries. */
	const int64_t *derived_bounds;
	int nderived_bounds;
	int derived_cut_points; /* they are the cuts no batch straddles (a sampler's), not a least-padding fit */
	/* Losses of named data-parallel ranks (NULL: none), by step then rank:
	 * each is fitted against its own rank's batches (detect_ranks.c). */
	size_t nrl;
	const int64_t *rl_step;
	const int *rl_rank;
	const double *rl_loss; /* NaN when not finite */
	/* What a logged point is (rm_detect_all decides where RM_READ_AUTO):
	 * the mean of the steps since the previous point, or one step's loss,
	 * stamped stamp_shift steps off its batch (-1: a 1-based print over a
	 * 0-based sidecar). */
	int reading;
	int stamp_shift;
	int reading_hint; /* the loss key's convention (rm_loss_key_reading): RM_READ_AUTO when none */
};

/* What a logged loss point is (issue 64.2). */
enum rm_reading { RM_READ_AUTO, RM_READ_MEAN, RM_READ_STEP };

struct rm_detect_opts {
	uint64_t seed;       /* permutation tests */
	int ladder_interval; /* points per reported interval; 0 = automatic */
	double hampel_k;     /* spike threshold in robust sigmas (default 5) */
	double runs_z;       /* runs-test z at or below which runs are flagged (default -4) */
	double alpha;        /* false discovery rate (default 0.01) */
	int reading;         /* enum rm_reading: RM_READ_AUTO fits the readings (diagnose --loss-is) */
	int plot_fine;       /* the zoom's columns at most (struct rm_plot's fine grid); 0: none */
};
#define RM_PLOT_FINE 8192 /* a single run's zoom grid: exact per step up to this many steps */
void rm_detect_opts_default(struct rm_detect_opts *o);

/* 1. Same-bucket runs. */
struct rm_bucket_runs {
	int bucket;
	size_t steps;
	double share;                       /* of steps with a bucket */
	double mean_run, expected_mean_run; /* geometric 1/(1-p) */
	size_t longest;
	double p_longest; /* P(longest run >= observed) in random order */
};

struct rm_run_span {
	int bucket;
	int64_t first_step, last_step;
	size_t length; /* batches (of one rank and micro-batch slot: steps) */
	int rank;      /* the rank whose run it is; -1 with one batch per step */
};

struct rm_runs_result {
	int ok;                           /* enough batches with buckets to test */
	int sequences;                    /* slots (rank x micro-batch) tested, 1 with one batch per step */
	size_t n;                         /* batches with a bucket */
	int k;                            /* buckets seen */
	double runs, expected, var, z, p; /* p: one-sided, fewer runs */
	struct rm_bucket_runs per[RM_MAX_BUCKETS];
	struct rm_run_span worst[RM_MAX_LIST];
	int nworst;
	int flagged;
};

/* Exact runs-test moments for k categories with counts c[0..k): E[R],
 * Var[R] (Wald-Wolfowitz generalised; DESIGN.md section 5). */
void rm_runs_moments(const size_t *c, int k, double *mean, double *var);

/* 2. Loss split by bucket. */
struct rm_split_result {
	int ok;
	int log_scale; /* offsets fitted on log(loss) */
	int k;
	int bucket[RM_MAX_BUCKETS];    /* bucket id of each column below */
	double offset[RM_MAX_BUCKETS]; /* additive, or log-ratio when log_scale */
	double level[RM_MAX_BUCKETS];  /* loss level relative to the trend: offset, or ratio exp(offset) */
	double level_lo[RM_MAX_BUCKETS], level_hi[RM_MAX_BUCKETS]; /* its 95% interval (batch means), NaN unknown */
	double weight[RM_MAX_BUCKETS];                             /* loss points attributed to the bucket */
	double eta2, f, df1, df2, p; /* eta2: the R^2 of the fit on shares when steps mix buckets */
	int mixed;            /* some step holds several batches (ranks, micro-batches) or a batch several buckets */
	size_t mixed_batches; /* batches whose lengths span buckets, counted by token share */
	int modes;            /* Gaussian-mixture modes of the detrended loss (BIC) */
	double mode_mean[4], mode_weight[4], bic[4];
	int mode_of_bucket[RM_MAX_BUCKETS];
	double bucket_purity[RM_MAX_BUCKETS]; /* share of the bucket's points in its mode */
	int aligned;                          /* >= 2 modes, each bucket's points mostly in one mode */
	int trimodal;                         /* aligned, with exactly 3 modes */
	double mode_cut[4 + 1];               /* mode i holds detrended losses in [cut[i], cut[i+1]) */
	double mode_depth[4];                 /* density at the valley after mode i over the lower peak's */
	/* Without batch composition: the levels the detrended loss switches
	 * between (modes with deep valleys between them, each holding 5% of
	 * the points and visited in at least 5 separate runs), on log scale
	 * when every loss is positive. */
	int levels;                 /* 0: none (one level, or not tested) */
	double level_at[4];         /* each level's centre, detrended (log ratio, or loss units) */
	double level_cut[4 + 1];    /* level i holds [cut[i], cut[i+1]) */
	double level_share[4];      /* of the points */
	double level_ratio[4];      /* the level against the lowest: exp(at - at[0]), or at - at[0] */
	size_t level_runs;          /* runs of one level in the points' sequence */
	double level_runs_expected; /* in a random order of the same points */
	double level_runs_z;        /* the runs test: << 0 blocks, ~0 a braid, >> 0 alternating (interleaved) */
	int level_log;              /* levels on log scale */
	double *trend;              /* per loss point (owned) */
	double *adjusted;           /* bucket-adjusted loss per loss point (owned) */
	int flagged;
};

/* 3. Ladders and length ramps. */
struct rm_ladder {
	int64_t first_step, last_step;
	int rises;
	double height;     /* loss units */
	double long_share; /* share of long-bucket batches in its span */
	double mk_s, mk_z; /* Mann-Kendall over the climb */
};

struct rm_ladder_result {
	int ok;
	int interval; /* loss points per reported interval */
	size_t count;
	struct rm_ladder list[RM_MAX_LIST];
	double long_share_overall;
	double perm_mean; /* ladders in shuffled bucket order, mean */
	double p;         /* permutation p-value */
	int perms;
	int ramp;        /* length ramps found */
	int ramp_period; /* batches */
	double ramp_desc_share, ramp_acf_len, ramp_acf_loss;
	int flagged;
	uint8_t cover[RM_PLOT_COLS]; /* 1 where any of the count ladders lies (rm_plot_col) */
};

/* 4. Loss resets. */
struct rm_spike {
	int64_t step;          /* where the reset begins (the logged step of its first point) */
	int bucket;            /* the dominant bucket there, -1 none */
	double loss, baseline; /* at the onset: the loss, and what its composition expects */
	double peak;           /* the reset's highest loss over the expected */
	size_t points;         /* loss points it lasts */
};

struct rm_resets_result {
	int ok;
	double interval;        /* steps a loss point averages (the logging interval) */
	size_t spikes;          /* reset onsets against the level each point's composition expects */
	size_t spikes_2x;       /* of those, large: their excess adds up to a doubled loss for a step or more */
	size_t spikes_global;   /* onsets against a global baseline on the raw loss */
	size_t spikes_adjusted; /* the same on the adjusted loss */
	double vanish_share;    /* global onsets gone in the adjusted loss */
	struct rm_spike list[RM_MAX_LIST];
	size_t bucket_tested;    /* onsets tested by bucket: those no save, epoch or schedule change clearly explains */
	size_t with_composition; /* onsets at points whose batches were recorded */
	/* The points' compositions could not show a bucket: even onsets all at
	 * the points richest in one bucket would not be enriched there (each
	 * point averages steps holding every bucket in proportion). */
	int bucket_blind;
	double length_z; /* the tested onsets' mean log batch length against all points', in SEs */
	int k;
	int bucket[RM_MAX_BUCKETS];
	size_t bucket_spikes[RM_MAX_BUCKETS];
	double enrichment[RM_MAX_BUCKETS], enrich_p[RM_MAX_BUCKETS], enrich_q[RM_MAX_BUCKETS];
	double chi2, chi2_df, chi2_p, chi2_q, cramers_v;
	int64_t checkpoint_every;
	double ckpt_r;                   /* Rayleigh R of spike phases (description) */
	double ckpt_near, ckpt_expected; /* spikes just after a save, and by chance */
	double ckpt_p, ckpt_q;
	uint16_t cover[RM_PLOT_COLS]; /* onsets in each chart column (rm_plot_col), all of them */
	int64_t steps_per_epoch;
	double epoch_near, epoch_expected, epoch_p, epoch_q;
	size_t lr_changes;
	double lr_near, lr_expected, lr_p, lr_q;
	/* A period inferred from the spike steps, when no save interval is
	 * configured (see detect_period.c). */
	int period_tested;                  /* enough separate events (spikes MERGE apart) to test */
	size_t period_events;               /* those events */
	int64_t period;                     /* steps; 0 none found */
	int64_t period_phase, period_width; /* the window of phases step mod period that holds most events */
	size_t period_hits;                 /* events in it */
	double period_cycles;               /* periods in the step range */
	double period_p, period_q;          /* Bonferroni over the whole search, then FDR */
	double period_beyond_bucket_p;      /* the window, among the top bucket's events */
	double bucket_beyond_period_p;      /* the top bucket, among the window's events */
	int cluster_by_bucket;              /* significant after FDR */
	int checkpoint_cause;
	int periodic_cause; /* resets recur with the inferred period */
	int bucket_alias;   /* the bucket clustering was the period's, landing in one bucket */
	int period_alias;   /* the period was the bucket order's */
	int flagged;
};

/* 6. Composition as a mixture: several batches per step (data-parallel
 * ranks, micro-batches). See detect_mixture.c. */
#define RM_MIX_WINDOWS 6
struct rm_mixture_result {
	int ok;
	int ranks;         /* ranks seen */
	size_t steps;      /* steps with batches */
	double per_step;   /* batches per step (ranks x micro-batches), mean */
	double multi_rank; /* share of steps with batches from 2+ ranks */
	/* Steps whose batches all hold one bucket, against chance: the sum
	 * over buckets of share^m for a step of m batches drawn independently. */
	double concordance, concordance_expected, concordance_z;
	/* The runs test on each rank's own sequence. */
	int ranks_tested, ranks_flagged;
	double rank_z_min, rank_z_median, rank_z_max;
	/* Windows of w steps: the chi-square of the window's bucket counts
	 * against the run's proportions, as a ratio to its expectation in a
	 * random order of the same steps; the ratio's z over the windows; the
	 * mean total-variation distance of the window's shares from the run's
	 * proportions, and what a random order of the steps gives. */
	int windows;
	int64_t window[RM_MIX_WINDOWS];
	double ratio[RM_MIX_WINDOWS], ratio_z[RM_MIX_WINDOWS], tv[RM_MIX_WINDOWS], tv_random[RM_MIX_WINDOWS];
	int worst;          /* the window with the largest ratio z, -1 none */
	double persistence; /* steps: where the autocorrelation of the step's share vector falls below 1/e */
	int drifts;         /* the mixture departs from the proportions beyond chance (some window) */
	enum rm_mix_shape shape;
	enum rm_severity severity; /* of the rank-streak or drift shape */
};

/* 5. Continuous length coupling (no buckets needed): how much of the
 * detrended log loss the batch's log length explains, and how ordered the
 * lengths are. See detect_length.c. */
#define RM_LEN_LAGS 5
struct rm_length_result {
	int ok;                           /* enough loss points with a recorded length */
	size_t points;                    /* loss points with a length */
	size_t batches;                   /* batches with a length */
	int log_scale;                    /* fitted on log(loss); else on the loss itself */
	double slope, slope_lo, slope_hi; /* loss on log length, 95% CI */
	double r, r2, r2_lo, r2_hi;       /* partial correlation given the trend, and its square with a 95% CI */
	double n_eff;                     /* points, discounted for autocorrelation (Bartlett) */
	double p;                         /* two-sided, slope = 0 */
	double acf[RM_LEN_LAGS];          /* lag 1..RM_LEN_LAGS autocorrelation of batch log length */
	double ref_len;                   /* geometric mean length: the adjusted loss is the loss at this length */
	double min_len, max_len;          /* the lengths seen (tokens) */
	int confounded;                   /* lengths change as slowly as the trend: no effect can be told */
	int coupled;                      /* the length explains at least 10% (CI above 5%), not confounded */
	int ordered;                      /* lag-1 length autocorrelation >= 0.5: batches follow each other by length */
	int per_sequence_sum;             /* coupled, on log scale, slope within 0.2 of 1 */
	double *adjusted;                 /* length-adjusted loss per finite loss point (owned), NULL unless ok */
};

/* 7. A data order that repeats every epoch (no shuffle). See detect_order.c. */
#define RM_ORDER_SPIKES 3
struct rm_order_result {
	int ok;       /* two epochs or more, enough in-epoch steps matched */
	int by_epoch; /* in-epoch steps from a whole-number epoch on each row (else steps_per_epoch) */
	int epochs;
	size_t pairs;                 /* points matched with the next epoch's at the same in-epoch step */
	double r;                     /* their correlation, detrended and high-passed */
	double null_mean, null_sd, z; /* the same with the later epoch turned by `shifts` offsets */
	int shifts;
	int flagged;
	int nspikes; /* spikes at one in-epoch step in most epochs: the same batches */
	int64_t spike_pos[RM_ORDER_SPIKES], spike_first[RM_ORDER_SPIKES];
	int spike_epochs[RM_ORDER_SPIKES];
};

/* 6. Verdict. */

struct rm_ranked {
	enum rm_hypothesis h;
	double score; /* evidence, -log10 of the strongest q-value, capped */
	enum rm_severity severity;
};

#define RM_CURVE_BINS 40

/* Loss and bucket-adjusted loss over time, in RM_CURVE_BINS equal step
 * bins, overall and per bucket (NaN where a bin has no point). */
struct rm_curves {
	int bins;
	int64_t first_step, last_step;
	double loss[RM_CURVE_BINS], adjusted[RM_CURVE_BINS];
	double length_adjusted[RM_CURVE_BINS]; /* NaN throughout when no length effect was fitted */
	int k;
	int bucket[RM_MAX_BUCKETS];
	double bucket_loss[RM_MAX_BUCKETS][RM_CURVE_BINS];
	double bucket_adjusted[RM_MAX_BUCKETS][RM_CURVE_BINS];
	double bucket_mean[RM_MAX_BUCKETS], bucket_adjusted_mean[RM_MAX_BUCKETS];
	/* the range of the max_len of each bucket's batches, NaN unknown: a
	 * legend gives a recorded bucket id its lengths */
	double len_lo[RM_MAX_BUCKETS], len_hi[RM_MAX_BUCKETS];
};

#define RM_PLOT_POINTS 1500
#define RM_STRIP_CELLS 600
#define RM_STRIP_RANKS 8   /* ranks drawn one row each */
#define RM_RANK_STEPS  240 /* steps of the ranks' window */

/* What a chart needs: the loss downsampled by largest-triangle-three-
 * buckets (so spikes survive), the bucket-adjusted value and bucket of each
 * kept point, per-bucket loss quantiles, and the bucket sequence. */
struct rm_plot {
	/* M4 (Jugel et al., VLDB 2014) per bucket: the least and greatest loss
	 * of each bucket's points in each column of the step axis, so every
	 * bucket shows at every scale. [RM_PLOT_COLS][bands][2], NaN where a
	 * bucket has no point; band k holds the points of no bucket. */
	float *band;
	int bands; /* k + 1 */
	/* The same M4 at a finer grid, for a zoom to re-aggregate per pixel
	 * column of the range it shows: fine_cols columns over the same steps
	 * (one step each when the run spans no more), stored compactly:
	 * column c holds fine_n[c] cells, in band order, from cell fine_at[c];
	 * cell i is band fine_b[i], least and greatest loss fine_v[2i], [2i+1]. */
	int fine_cols; /* 0: none (detect opts' plot_fine) */
	uint8_t *fine_n, *fine_b;
	uint32_t *fine_at;
	float *fine_v;
	/* Each strip cell's share of each bucket's batches: [strip_n][share_k]. */
	float *share;
	int share_k;
	int n;
	int64_t step[RM_PLOT_POINTS];
	float loss[RM_PLOT_POINTS], adjusted[RM_PLOT_POINTS];
	float length_adjusted[RM_PLOT_POINTS]; /* NaN when no length effect was fitted */
	int8_t bucket[RM_PLOT_POINTS];         /* dense bucket index, -1 none */
	float q[RM_MAX_BUCKETS][5];            /* 5, 25, 50, 75, 95th percentiles of the loss, NaN none */
	int q_dominant;                        /* q from each step's dominant bucket: no step held one alone */
	int strip_n;
	int8_t strip[RM_STRIP_CELLS]; /* each cell's most frequent dense bucket, -1 none */
	int64_t strip_first, strip_last;
	/* With several ranks, each rank's bucket (the first RM_STRIP_RANKS
	 * ranks) at each step of a window: lockstep reads as columns of one
	 * colour, a rank's streaks as stretches along its row. */
	int rank_rows, rank_cells, ranks;
	int64_t rank_first, rank_last;
	int8_t rank_strip[RM_STRIP_RANKS][RM_RANK_STEPS];
};

/* Only a full diagnosis replaces a run's stored findings: a partial one
 * (--since, a watch window) would make dashboards show a part as the whole. */
enum rm_stored { RM_NOT_STORED, RM_STORED, RM_NOT_STORED_PARTIAL, RM_NOT_STORED_READONLY };

/* The loss turns non-finite or explodes and stays so to the end: at least
 * 3 points, 90% of them bad from the first, bad being NaN or Inf (not a
 * row that logged no loss) or ten times the median loss before them. */
struct rm_divergence {
	int found;
	int64_t first_step; /* the first bad point's step */
	size_t points, nan, inf, exploded;
	double baseline; /* the median loss before it */
	double peak;     /* the largest finite loss of the tail, NaN none */
};

/* The join of the losses with the batches (issue 64.3): the finite loss
 * points and how many cover a batch, the batches and how many a point
 * covers, and both step ranges. none: batches recorded, and no point meets
 * one (a recorder that counted from another origin): the composition
 * cannot be read, and the diagnosis says so instead of "healthy". */
struct rm_join {
	size_t points, with_batches, batches, covered;
	int64_t loss_lo, loss_hi, batch_lo, batch_hi;
	int none;
};

/* The reading the points got: the one given, or the best fit of the loss
 * on the composition among the mean of the interval and one step's loss
 * stamped 0, -1 or +1 steps off (r2[i] for each, NaN not tried; given:
 * the user named it; sparse: points fewer than batches, else the readings
 * are one). */
#define RM_READINGS 4
/* Why the reading is what it is. */
enum rm_reading_basis {
	RM_BASIS_DENSE,      /* a point every step: the readings are one */
	RM_BASIS_GIVEN,      /* --loss-is */
	RM_BASIS_AGREES,     /* the composition fits the starting point best */
	RM_BASIS_FIT,        /* another reading's composition explains what the starting point's cannot */
	RM_BASIS_CONVENTION, /* the fit does not decide: the loss key's convention stays */
	RM_BASIS_ASSUMED,    /* the fit does not decide (or cannot be made): the mean is assumed */
};
struct rm_reading_fit {
	int reading, shift, given, sparse;
	int basis;              /* enum rm_reading_basis */
	int convention;         /* the loss key's reading (RM_READ_AUTO: none known) */
	double steps_per_point; /* batches a point's interval spans, on average */
	double r2[RM_READINGS];
	double p_fit[RM_READINGS]; /* the F-test of each reading's split (NaN: not fitted) */
	int best;                  /* index into r2 of the reading taken */
	int start;                 /* index of the starting point: given, convention or the mean */
	int challenger;            /* index of the better fit tested against it; -1 none */
	/* The encompassing test: p that the challenger's shares add nothing
	 * beyond the starting point's, and that the starting point's add
	 * nothing beyond the challenger's (NaN: not run). Both small: each
	 * holds something (a real loss also follows the batches just trained
	 * on); the challenger still wins on its own fit. */
	double p_gain, p_back;
};
/* The reading a loss key's name implies (Lightning's "<name>_step" is one
 * step's value), RM_READ_AUTO when it implies none. */
int rm_loss_key_reading(const char *key);
/* The reading and the join alone, as rm_detect_all decides them. */
void rm_detect_join(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_join *j,
                    struct rm_reading_fit *rf);

struct rm_diagnosis {
	size_t points, finite, nonfinite, batches;
	struct rm_join join;
	struct rm_reading_fit reading;
	int64_t first_step, last_step; /* first and last logged */
	uint8_t last_nonfinite;        /* the last logged loss: 0 finite, 1 NaN, 2 Inf, 3 not logged */
	struct rm_divergence divergence;
	/* At last_step: the loss (NaN when last_nonfinite), bucket-adjusted (the
	 * loss itself without buckets) and length-adjusted (NaN when no length
	 * effect was fitted). */
	double last_loss, last_adjusted, last_length_adjusted;
	struct rm_curves curves;
	struct rm_plot plot;
	int has_buckets;
	/* Homogeneous batching suspected from the loss alone (no composition
	 * recorded): the levels of split.levels, not alternating as interleaved
	 * buckets would. */
	int suspected;
	struct rm_runs_result runs;
	struct rm_split_result split;
	struct rm_ladder_result ladder;
	struct rm_resets_result resets;
	struct rm_length_result length;
	struct rm_mixture_result mixture;
	struct rm_order_result order;
	int resets_by_length; /* resets measured on the length-adjusted loss (no bucket ids) */
	/* The split and the length coupling above were fitted on each rank's
	 * own loss against its own batches: that many losses of that many ranks
	 * (0: on the steps' losses). The adjusted curves stay the steps'. */
	size_t rank_points;
	int rank_fit_ranks;
	struct rm_ranked rank[RM_H_COUNT];
	struct rm_padding_result cost; /* filled by rm_analyze_run, not the detectors */
	enum rm_stored stored;         /* likewise: whether the findings went to the store */
	enum rm_severity severity;     /* worst finding */
	int healthy;
	/* The label of each bucket id the diagnosis names (see rm_bucket_label). */
	int nlabels;
	int label_id[RM_MAX_BUCKETS];
	char label[RM_MAX_BUCKETS][RM_BUCKET_LABEL_LEN];
	size_t labels_grouped;  /* distinct labels grouped into the buckets, 0: none */
	int nderived;           /* boundaries of buckets derived from max_len, 0: ids were recorded */
	int derived_cut_points; /* they are the cuts no batch straddles (else a least-padding fit) */
	size_t tokens_only;     /* batches with a token count but no length: the length is unknown */
	int64_t derived_bound[RM_MAX_BUCKETS + 1];
};

/* The label of bucket id b in a diagnosis ("?" for an id it never saw). */
const char *rm_bucket_label(const struct rm_diagnosis *d, int b);
/* The label as tables and sentences show it (rm_label_short, at most
 * RM_LABEL_SHOWN bytes): valid until 8 later calls, main thread only. */
#define RM_LABEL_SHOWN 40
const char *rm_bucket_label_short(const struct rm_diagnosis *d, int b);

/* Runs every detector. Frees nothing in s; rm_diagnosis_release frees d. */
void rm_detect_all(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_diagnosis *d);
void rm_diagnosis_release(struct rm_diagnosis *d);

/* One loss row of a diagnosed series, as `runmon export` writes it. */
struct rm_step_row {
	int64_t step;
	double loss;                             /* NaN when not finite */
	int nonfinite;                           /* 0 finite, 1 NaN, 2 +/-Inf, 3 not logged */
	double bucket_adjusted, length_adjusted; /* NaN when not finite, or no length effect was fitted */
	int batches, ranks;                      /* batches the row covers, and their distinct ranks */
	int dominant;                            /* the bucket (series index) of most of them, -1 none */
	int k;                                   /* buckets: share[0..k-1], labelled by the series' labels */
	const double *share;                     /* each bucket's share of the covered batches, NaN none known */
};
typedef int (*rm_step_row_fn)(void *arg, const struct rm_step_row *r);
/* Calls fn with each row of s in order, d being s's diagnosis (rm_detect_all);
 * stops at fn's first non-zero return and returns it. A row covers the
 * batches since the previous row, as the detectors count them. */
int rm_each_step_row(const struct rm_series *s, const struct rm_diagnosis *d, rm_step_row_fn fn, void *arg);

/* ---- comparing two diagnoses (runmon compare) ---------------------------- */

/* Levels below warn count as nothing found (a healthy verdict is info). */
enum rm_delta {
	RM_DELTA_UNCHANGED, /* the same level */
	RM_DELTA_RESOLVED,  /* found before, not after */
	RM_DELTA_NEW,       /* found after, not before */
	RM_DELTA_BETTER,    /* a lower level, still found */
	RM_DELTA_WORSE,     /* a higher level */
	RM_DELTA_UNTESTED,  /* one side too short to test (never resolved, never new) */
	RM_DELTA_COUNT
};
const char *rm_delta_name(enum rm_delta c);
/* Too few loss points for the detectors (50): its causes are not tested,
 * whatever the verdict says (divergence aside, seen in any length). */
int rm_diagnosis_too_short(const struct rm_diagnosis *d);

struct rm_hypothesis_change {
	enum rm_hypothesis h;
	enum rm_severity before, after;
	enum rm_delta change;
};

/* What a change may cost before compare calls it worse or a price. */
struct rm_compare_tolerance {
	double max_loss; /* the adjusted loss may rise this fraction (default 0.01) */
	double max_cost; /* padding efficiency may fall this many points, tokens per
	                    second this many percent (default 5) */
};
void rm_compare_tolerance_default(struct rm_compare_tolerance *t);

/* The comparison in a word, weighing the loss side and the cost side. */
enum rm_outcome {
	RM_OUTCOME_NO_WORSE,       /* nothing resolved, nothing worse, no price */
	RM_OUTCOME_RESOLVED,       /* a cause resolved or better, at no price beyond the tolerance */
	RM_OUTCOME_PRICE,          /* nothing resolved, and it costs more */
	RM_OUTCOME_RESOLVED_PRICE, /* resolved, but padding or throughput got worse beyond --max-cost */
	RM_OUTCOME_WORSE,          /* a cause new or risen, or the adjusted loss rose beyond --max-loss */
	RM_OUTCOME_COUNT
};
const char *rm_outcome_name(enum rm_outcome o);

struct rm_comparison {
	struct rm_compare_tolerance tol;
	enum rm_outcome outcome;
	int resolved;                                /* the verdict or a cause resolved or better */
	enum rm_severity before, after;              /* the verdicts' levels */
	enum rm_delta severity;                      /* and how the level changed */
	struct rm_hypothesis_change hyp[RM_H_COUNT]; /* by hypothesis */
	int worse; /* the verdict rose, or a cause new or risen reached warn: compare exits 1 */
	/* Sides too short to test (1 before, 2 after), and each side's finite
	 * loss points. */
	int untested;
	size_t finite[2];
	/* The steps both runs cover, and each run's mean bucket-adjusted and
	 * length-adjusted loss over them (from its curves; NaN unknown). */
	int common;
	int64_t common_first, common_last;
	double adjusted[2], length_adjusted[2];
	/* The after run's adjusted loss against the before run's, segment by
	 * segment of the common steps (RM_COMPARE_SEGMENTS, paired so that the
	 * trend both share cancels): the mean relative change, its standard
	 * error over the segments, and whether it rose beyond both 1% and two
	 * standard errors (worse, whatever the causes say). */
	int segments;
	double adjusted_change, adjusted_se;
	int adjusted_judged; /* neither run's buckets come in streaks, which confound the adjustment with the trend */
	int adjusted_worse;
	/* The cost side: each run's padding efficiency (percent) and tokens
	 * per second (NaN unknown), the changes (points; a fraction), and
	 * whether each fell beyond tol.max_cost. */
	double efficiency[2], tokens_per_s[2];
	double efficiency_change, tokens_per_s_change;
	int cost_judged; /* each side holds RM_COMPARE_MIN_BATCHES batches with lengths */
	int efficiency_worse, tokens_per_s_worse, cost_worse;
	int efficiency_better, tokens_per_s_better;
};
#define RM_COMPARE_SEGMENTS    10
#define RM_COMPARE_MIN_BATCHES 50
/* What changed from a (before) to b (after), with tol (NULL: the defaults). */
void rm_compare(const struct rm_diagnosis *a, const struct rm_diagnosis *b, const struct rm_compare_tolerance *tol,
                struct rm_comparison *c);
/* compare's exit status: 1 worse, 5 at a price, else 0. */
int rm_compare_exit(const struct rm_comparison *c);

/* The runs test alone (used by rm_detect_all and the tests). */
void rm_detect_runs(const struct rm_series *s, const struct rm_detect_opts *o, struct rm_runs_result *r);

#endif
