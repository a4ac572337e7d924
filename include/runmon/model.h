/*
 * model.h - the model layer: the nouns every layer shares. Severities, a
 * step's and a batch's values and their limits, runs, findings as stored,
 * what a report saw, the lens codec and the bucket map.
 */
#ifndef RUNMON_MODEL_H
#define RUNMON_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"

/* ==== nouns ================================================================ */
/* The vocabulary (vocab.c): how much a finding matters, and its words. */
enum rm_severity { RM_SEV_NONE, RM_SEV_INFO, RM_SEV_WARN, RM_SEV_CRITICAL };
const char *rm_severity_name(enum rm_severity s);
/* The verdict's word wherever people read it (text, report, demo): the
 * severity's name, "ok" when nothing was found; JSON and metrics carry the
 * same severity, so the four agree. */
const char *rm_verdict_word(enum rm_severity s);
/* Parses info|warn|critical; returns 0 on success. */
int rm_severity_parse(const char *name, enum rm_severity *out);

/* The hypotheses a verdict ranks, and their words. */
enum rm_hypothesis {
	RM_H_HOMOGENEOUS,
	RM_H_BUCKET_RESETS, /* resets in some buckets while the order is healthy */
	RM_H_CHECKPOINT,
	RM_H_EPOCH,
	RM_H_LR,
	RM_H_INSTABILITY,
	RM_H_PERIODIC,    /* resets every N steps, N inferred: a save, an eval, a shard boundary */
	RM_H_FIXED_ORDER, /* the same batches in the same order every epoch */
	RM_H_DIVERGENCE,  /* the loss turns NaN or Inf, or explodes by orders of magnitude, and stays */
	RM_H_COUNT
};
const char *rm_hypothesis_name(enum rm_hypothesis h);
/* The same as an identifier (homogeneous_batching, ...), for metric labels. */
const char *rm_hypothesis_id(enum rm_hypothesis h);
/* The same as a Prometheus alert name (RunmonHomogeneousBatching, ...). */
const char *rm_hypothesis_alertname(enum rm_hypothesis h);

/* The shapes of a data-parallel run's bucket mixture (detect_mixture.c). */
enum rm_mix_shape {
	RM_MIX_NONE,         /* one batch per step, or too few steps */
	RM_MIX_RANDOM,       /* the mixture stays at the run's proportions */
	RM_MIX_LOCKSTEP,     /* the ranks of a step draw one bucket together */
	RM_MIX_RANK_STREAKS, /* each rank streaks through buckets on its own; the step mixes them */
	RM_MIX_DRIFT         /* no rank streaks, yet the mixture drifts */
};
const char *rm_mix_shape_name(enum rm_mix_shape s);

/* Per-step values; a bit in `have` says the value was logged (it may still
 * be NaN or infinite). */
enum rm_step_field { RM_S_LOSS, RM_S_LR, RM_S_EPOCH, RM_S_GRAD_NORM, RM_S_RUNTIME, RM_S_TS, RM_S_COUNT };

struct rm_step {
	int64_t step;
	double v[RM_S_COUNT];
	uint32_t have; /* 1 << enum rm_step_field */
};

enum rm_batch_field {
	RM_B_BUCKET,
	RM_B_N,
	RM_B_MIN_LEN,
	RM_B_MAX_LEN,
	RM_B_MEAN_LEN,
	RM_B_TOKENS,
	RM_B_PADDED, /* padding tokens */
	RM_B_COUNT
};

struct rm_batch {
	int64_t step;
	int64_t rank;         /* data-parallel rank */
	int64_t micro;        /* micro-batch within the step (gradient accumulation) */
	double v[RM_B_COUNT]; /* counts and lengths in tokens */
	uint32_t have;        /* 1 << enum rm_batch_field */
	const uint8_t *lens;  /* the batch's lengths, encoded (lens.h); NULL when not recorded */
	uint32_t lens_bytes;
};

struct rm_run_key {
	const char *source;  /* "file" or "wandb" */
	const char *entity;  /* "" for local runs */
	const char *project; /* "" for local runs */
	const char *name;    /* W&B run id or local name */
};

struct rm_run_info {
	int64_t id;
	char *source, *entity, *project, *name, *display_name, *state, *loss_key;
	int64_t steps; /* step rows */
	int64_t first_step, last_step;
	int64_t batch_steps; /* loss steps whose interval holds batch composition */
	double synced_at;    /* unix seconds, 0 if never */
	char *composition;   /* the keys the latest import read batch composition from (else the batch
	                      * columns stored, for simulated and synced runs), or NULL */
	/* The stored verdict of the last full diagnosis: its severity and its
	 * evidence JSON ({"hypothesis", "summary"}); NULL when never diagnosed. */
	char *verdict_severity, *verdict_evidence;
};

/* The loss steps (step[0..n), ascending) whose interval (the previous loss
 * step, this one] holds a batch step (bstep[0..nb), ascending, repeats
 * allowed): a loss logged every k steps averages those k batches. */
int64_t rm_batch_steps_covered(const int64_t *step, size_t n, const int64_t *bstep, size_t nb);
/* The share of the run's loss steps with batch composition, in [0, 1]. */
double rm_run_batch_share(const struct rm_run_info *r);

#define RM_WANDB_DEFAULT_URL "https://api.wandb.ai"
/* The run's page in the W&B UI at base_url (api.wandb.ai -> wandb.ai,
 * api.X -> app.X, other hosts unchanged; WANDB_APP_URL wins). Caller frees. */
char *rm_run_page_url(const char *base_url, const char *entity, const char *project, const char *run);
/* url without a user and password (scheme://user:secret@host/... ->
 * scheme://host/...), for messages and links; owned by the caller. Cut at
 * the last '@', so a password holding an unescaped '/', '?' or '#' is
 * never shown in part. */
char *rm_url_without_userinfo(const char *url);
/* The page of a W&B run (at WANDB_BASE_URL, else RM_WANDB_DEFAULT_URL), or
 * NULL for a local run. Caller frees. */
char *rm_run_page(const struct rm_run_info *info);

struct rm_finding_row {
	const char *detector, *severity;
	int64_t first_step, last_step; /* -1 when not applicable */
	double statistic, p_value;     /* NaN when not applicable */
	const char *evidence_json;
};

/* What a report saw of each run (render's changes compare two of these;
 * the store keeps them). */
struct rm_seen_finding {
	char detector[32];
	enum rm_severity severity;
	int64_t first_step;
};

struct rm_seen_run {
	char *run;                 /* entity/project/name, or the local name */
	enum rm_severity severity; /* the run's */
	char *verdict;             /* the top hypothesis when an alarm, else "healthy" */
	int64_t last_step;         /* -1: none */
	double at;                 /* when the report that saw it was generated */
	struct rm_seen_finding *f;
	size_t nf;
};

/* What one report saw; or, read back from the store, what the latest
 * earlier report saw of each run. */
struct rm_seen {
	struct rm_seen_run *runs;
	size_t n;
};

/* Appends a run read from elsewhere (the store, a file); strings are copied. */
struct rm_seen_run *rm_seen_push(struct rm_seen *s, const char *run, enum rm_severity sev, const char *verdict,
                                 int64_t last_step, double at);
void rm_seen_push_finding(struct rm_seen_run *r, const char *detector, enum rm_severity sev, int64_t first_step);
void rm_seen_release(struct rm_seen *s);

/* ==== lens ================================================================== */
/*
 * a batch's sequence lengths as the store keeps them, and the
 * token shares of the buckets they fall in.
 *
 * batches.lens holds the lengths sorted ascending, each as its difference
 * from the one before in an unsigned LEB128 varint: one or two bytes a
 * sequence for lengths up to 16k tokens, whatever the order recorded.
 */
#define RM_LENS_MAX_SEQS 65536 /* sequences in one batch's list; more are refused */

/* Encodes n lengths (whole, 0..2^31; sorted in place) into out, which holds
 * at least 5 * n bytes; returns the bytes written. */
size_t rm_lens_encode(int64_t *len, size_t n, uint8_t *out);
/* Decodes into out (cap entries); returns the count, or -1 when the bytes
 * are not a whole list or hold more than cap. */
long rm_lens_decode(const uint8_t *in, size_t nbytes, int64_t *out, size_t cap);

/* Lengths to dense buckets: a length goes to the first cut whose hi it
 * does not pass (the last cut takes longer ones too), and that cut to
 * dense[i] (-1: a bucket the detectors do not count). */
struct rm_length_cuts {
	int n;
	int64_t hi[RM_MAX_BUCKETS];
	int dense[RM_MAX_BUCKETS];
};

/* The token share of each dense bucket among a batch's lengths (encoded
 * as above): writes up to RM_MAX_BUCKETS (bucket, share) pairs, buckets
 * ascending, shares summing to 1; returns how many, 0 when no token falls
 * in a counted bucket, -1 when the bytes are not a list. */
int rm_lens_shares(const uint8_t *in, size_t nbytes, const struct rm_length_cuts *cuts, uint8_t *bucket, float *share);

/* Mixed batches: the rows (ascending) whose lengths span buckets, each
 * with the token share of every dense bucket it holds: row[i] has parts
 * from[i] .. from[i + 1] - 1. */
struct rm_mix {
	size_t n;
	size_t *row;
	uint32_t *from; /* n + 1 entries when n > 0 */
	uint8_t *bucket;
	float *share;
	size_t cap, pcap;
};
/* Appends row (above the last one added) with its parts. */
void rm_mix_add(struct rm_mix *m, size_t row, const uint8_t *bucket, const float *share, int parts);
void rm_mix_release(struct rm_mix *m);

/* ==== bucketmap ============================================================= */
/*
 * bucket labels as trainers write them, mapped to the dense
 * buckets 0..k-1 the detectors count with.
 *
 * A label is any integer (0..6, an upper bound such as 770 or 8192, -1) or
 * a text ("long", "1216-1728", stored under an id from RM_BUCKET_TEXT_ID).
 * Dense buckets are ordered by the mean max_len of their batches, so that
 * "longer" means longer whatever the labels; labels without lengths come
 * after, in id order. Beyond RM_MAX_BUCKETS labels, neighbours in that
 * order are grouped, and the map says so (labels_seen > k).
 */
#define RM_BUCKET_TEXT_ID ((int64_t)1 << 50) /* text labels' ids; integer labels stay below in magnitude */
#define RM_BUCKET_NONE    INT64_MIN          /* a batch without a bucket */

struct rm_bucket_map {
	int k;         /* dense buckets */
	size_t labels; /* distinct labels seen; more than k when grouped */
	char label[RM_MAX_BUCKETS][RM_BUCKET_LABEL_LEN];
	double top[RM_MAX_BUCKETS]; /* the longest batch of each (-inf: none known) */
	size_t nraw;                /* distinct ids, sorted, and the dense bucket of each */
	int64_t *raw;
	int *dense;
	/* No bucket id recorded: buckets derived from max_len, bucket i holding
	 * (bound[i], bound[i + 1]] (the last one longer lengths too). */
	int derived;
	int cut_points; /* derived: the cuts no batch straddles (else a least-padding fit) */
	int nbound;
	int64_t bound[RM_MAX_BUCKETS + 1];
};

/* Text labels of a run's text ids, sorted by id (from the store). */
struct rm_bucket_texts {
	size_t n;
	const int64_t *id;
	char *const *label;
};

/* Distinct bucket ids as a scan meets them, each with a small index (in
 * the order first met) and the count and max_len sum the map orders by. */
struct rm_bucket_ids {
	struct rm_bucket_slot *slot; /* open addressing: a hostile file may hold millions of ids */
	size_t cap, n;
	int64_t *id;       /* per index */
	double *sum, *top; /* of known max_len */
	size_t *known, *seen;
	int last;
};
/* Counts a batch of bucket id (RM_BUCKET_NONE: none) and max_len (NaN
 * unknown); returns the id's index, -1 for none. */
int rm_bucket_ids_add(struct rm_bucket_ids *t, int64_t id, double max_len);
/* Adds id, when not met, as the bucket of no batch (one mixed batches
 * hold a share of), placed in the length order at len. */
void rm_bucket_ids_reserve(struct rm_bucket_ids *t, int64_t id, double len);
/* Adds from's ids and counts to into; remap[i] is into's index of from's i. */
void rm_bucket_ids_merge(struct rm_bucket_ids *into, const struct rm_bucket_ids *from, int *remap);
void rm_bucket_ids_release(struct rm_bucket_ids *t);
/* Builds the map from the ids met; dense_of[i] (t->n of them) becomes the
 * dense bucket of index i. */
void rm_bucket_map_from_ids(struct rm_bucket_map *m, const struct rm_bucket_ids *t, const struct rm_bucket_texts *texts,
                            int *dense_of);
/* Builds the map from n batches' ids (RM_BUCKET_NONE for none) and max_len
 * (NaN unknown), then rewrites dense_out[i] (may be NULL) with each batch's
 * dense bucket, -1 for none. */
void rm_bucket_map_build(struct rm_bucket_map *m, const int64_t *ids, const double *max_len, size_t n,
                         const struct rm_bucket_texts *texts, int *dense_out);
/* The derived bucket of a length (-1 for NaN). */
int rm_bucket_map_of_length(const struct rm_bucket_map *m, double max_len);

/* Where lengths fall among the map's buckets: the derived boundaries; the
 * run's recorded ones (bounds, nbounds of them; bucket i holding
 * (bounds[i], bounds[i + 1]]) when its ids are those indexes; else each
 * bucket up to its longest batch, when those rise with the length order.
 * Returns 1, or 0 when none gives lengths a bucket. */
int rm_bucket_map_cuts(const struct rm_bucket_map *m, const int64_t *bounds, int nbounds, struct rm_length_cuts *c);

/* Derives buckets from n batches' lengths (min_len may be NULL) for a run
 * without bucket ids, into m and dense_out; with bounds (nbounds of them,
 * not NULL), those boundaries rather than ones fitted to the run (two runs
 * compared by one bucketing). Returns 1 when it did (cost.h's
 * rm_bucket_map_derive). */
typedef int rm_bucket_derive_fn(struct rm_bucket_map *m, const int64_t *bounds, int nbounds, const double *min_len,
                                const double *max_len, size_t n, int *dense_out);
struct rm_derive {
	rm_bucket_derive_fn *fn;
	const int64_t *bounds; /* NULL: derived from the run's own lengths */
	int nbounds;
};

/* The dense bucket of a stored id, -1 when the map has not seen it. */
int rm_bucket_map_dense(const struct rm_bucket_map *m, int64_t raw);
void rm_bucket_map_release(struct rm_bucket_map *m);

/* Bucket of a batch whose longest sequence is max_len: i with
 * bounds[i] < max_len <= bounds[i+1]; lengths past the last boundary go to
 * the last bucket and set *over. */
int rm_bucket_of(const int64_t *bounds, int nbounds, double max_len, int *over);

#endif
