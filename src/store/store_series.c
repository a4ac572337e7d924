/*
 * store_series.c - what the detectors read: a run's loss points and batch
 * composition (one entry per step, rank and micro-batch), read on two
 * connections at once, and the sample the cost analysis reads.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "runmon/model.h"
#include "runmon/store.h"
#include "store_internal.h"

/* Steps a reader takes: below 2^53, as import writes them; another writer
 * may have stored INT64_MAX, whose range sums would overflow. */
#define STEP_BOUND " AND step < 9007199254740992"

/* Rows of table from step `since` that also meet `and` (SQL, "" for
 * none): what a load will read, so arrays are sized once. */
static size_t count_rows(struct rm_db *db, const char *table, const char *and, int64_t run_id, int64_t since)
{
	char sql[256];
	struct rm_err err;
	struct rm_dbq *s;
	size_t n = 0;
	snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s WHERE run_id = ?1 AND step >= ?2" STEP_BOUND "%s", table,
	         and);
	if (!(s = rm_dbq_prepare(db, sql, 0, &err)))
		return 0;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, since);
	if (rm_dbq_step(s, &err) == RM_DB_ROW)
		n = (size_t)rm_dbq_col_int(s, 0);
	rm_dbq_finalize(s);
	return n;
}

/* About how many rows of table (steps or batches) the run has from step
 * `since`: the rows of its first step, times the steps of its range at the
 * spacing of its first two (a run logged every K steps has rows every K
 * steps). Indexed lookups, where COUNT(*) (and MIN with MAX in one query)
 * scan every row: 8M rows for a run of 1M steps on 8 ranks. The step range
 * comes back in lo, hi (hi < lo when there is none). */
static size_t estimate_rows(struct rm_db *db, const char *table, int64_t run_id, int64_t since, int64_t *lo,
                            int64_t *hi)
{
	static const char *const sql[4][2] = {
	    {"SELECT step FROM ", " WHERE run_id = ?1 AND step >= ?2" STEP_BOUND " ORDER BY step LIMIT 1"},
	    {"SELECT step FROM ", " WHERE run_id = ?1 AND step >= ?2" STEP_BOUND " ORDER BY step DESC LIMIT 1"},
	    {"SELECT COUNT(*) FROM ", " WHERE run_id = ?1 AND step = ?2"},
	    {"SELECT step FROM ", " WHERE run_id = ?1 AND step > ?2 ORDER BY step LIMIT 1"}};
	int64_t v[4] = {0, -1, 0, 0};
	*lo = since;
	*hi = -1;
	for (int i = 0; i < 4; i++) {
		struct rm_err err;
		char q[160];
		snprintf(q, sizeof(q), "%s%s%s", sql[i][0], table, sql[i][1]);
		struct rm_dbq *s = rm_dbq_prepare(db, q, 0, &err);
		if (!s)
			return 0;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, i >= 2 ? v[0] : since);
		v[i] = i == 3 ? v[1] : v[i]; /* no second step: the first is the last */
		if (rm_dbq_step(s, &err) == RM_DB_ROW)
			v[i] = rm_dbq_col_int(s, 0);
		rm_dbq_finalize(s);
		if (i == 1 && v[1] < v[0])
			return 0;
	}
	*lo = v[0];
	*hi = v[1];
	double gap = v[3] > v[0] ? (double)v[3] - (double)v[0] : 1;
	double est = (((double)v[1] - (double)v[0]) / gap + 1) * (double)(v[2] > 0 ? v[2] : 1);
	return est < 16777216 ? (size_t)est : 16777216; /* a starting size, not a bound */
}

/* Loss rows of the run. */
static int load_steps(struct rm_db *db, int64_t run_id, int64_t since, struct rm_store_series *out, struct rm_err *err)
{
	int64_t lo, hi;
	size_t cap = estimate_rows(db, "steps", run_id, since, &lo, &hi); /* the arrays grow when it is short */
	struct rm_dbq *s = rm_dbq_prepare(db,
	                                  "SELECT step, loss, nan_mask, lr, epoch FROM steps"
	                                  " WHERE run_id = ?1 AND step >= ?2" STEP_BOUND " ORDER BY step",
	                                  RM_DBQ_STREAM, err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, since);
	GROW(out->step, cap + 1);
	GROW(out->loss, cap + 1);
	GROW(out->nonfinite, cap + 1);
	GROW(out->lr, cap + 1);
	GROW(out->epoch, cap + 1);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (out->n == cap) { /* rows added since the count */
			cap = cap ? cap * 2 : 4096;
			GROW(out->step, cap);
			GROW(out->loss, cap);
			GROW(out->nonfinite, cap);
			GROW(out->lr, cap);
			GROW(out->epoch, cap);
		}
		size_t i = out->n++;
		out->step[i] = rm_dbq_col_int(s, 0);
		double v = rm_st_col_opt(s, 1);
		int nan = (int)rm_dbq_col_int(s, 2) & 1;
		out->nonfinite[i] = nan ? 1 : isnan(v) ? 3 : isinf(v) ? 2 : 0;
		out->loss[i] = out->nonfinite[i] ? NAN : v;
		out->lr[i] = rm_float_of(rm_st_col_opt(s, 3));
		out->epoch[i] = rm_epoch_float(rm_st_col_opt(s, 4));
	}
	rm_dbq_finalize(s);
	return rc < 0 ? -rc : RM_OK;
}

/* The losses of named ranks, when the log had them (most runs have none:
 * one indexed probe). */
static int load_rank_losses(struct rm_db *db, int64_t run_id, int64_t since, struct rm_store_series *out,
                            struct rm_err *err)
{
	struct rm_dbq *s = rm_dbq_prepare(db,
	                                  "SELECT step, rank, loss FROM rank_losses"
	                                  " WHERE run_id = ?1 AND step >= ?2" STEP_BOUND " ORDER BY step, rank",
	                                  RM_DBQ_STREAM, err);
	size_t cap = 0;
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, since);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (out->nrl == cap) {
			cap = cap ? cap * 2 : 1024;
			GROW(out->rl_step, cap);
			GROW(out->rl_rank, cap);
			GROW(out->rl_loss, cap);
		}
		size_t i = out->nrl++;
		int64_t rank = rm_dbq_col_int(s, 1);
		double v = rm_st_col_opt(s, 2);
		out->rl_step[i] = rm_dbq_col_int(s, 0);
		out->rl_rank[i] = rank < 0 ? 0 : rank < RM_MAX_RANKS ? (int)rank : RM_MAX_RANKS - 1;
		out->rl_loss[i] = isfinite(v) ? v : NAN;
	}
	rm_dbq_finalize(s);
	return rc < 0 ? -rc : RM_OK;
}

/* Dense buckets for the loaded batches, with the run's text labels:
 * out->bucket holds each row's index into ids and becomes its dense
 * bucket. */
static int map_buckets(struct rm_db *db, int64_t run_id, const struct rm_bucket_ids *ids, const float *min_len,
                       const struct rm_derive *derive, struct rm_store_series *out, struct rm_err *err)
{
	struct rm_dbq *s =
	    rm_dbq_prepare(db, "SELECT bucket, label FROM bucket_labels WHERE run_id = ?1 ORDER BY bucket", 0, err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	size_t n = 0, cap = 0;
	int64_t *id = NULL;
	char **label = NULL;
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			GROW(id, cap);
			GROW(label, cap);
		}
		id[n] = rm_dbq_col_int(s, 0);
		label[n++] = rm_st_col_text(s, 1);
	}
	rm_dbq_finalize(s);
	if (rc == RM_DB_DONE) {
		struct rm_bucket_texts texts = {n, id, label};
		int *dense_of = rm_xmalloc((ids->n ? ids->n : 1) * sizeof(int));
		rm_bucket_map_from_ids(&out->map, ids, &texts, dense_of);
		for (size_t i = 0; i < out->nb; i++)
			out->bucket[i] = out->bucket[i] < 0 ? -1 : dense_of[out->bucket[i]];
		free(dense_of);
		if (out->map.labels == 0 && derive) { /* no bucket ids: the lengths are the composition */
			rm_bucket_map_release(&out->map);
			double *lo = rm_xmalloc((out->nb ? out->nb : 1) * sizeof(double));
			for (size_t i = 0; i < out->nb; i++)
				lo[i] = min_len[i];
			if (!derive->fn(&out->map, derive->bounds, derive->nbounds, lo, out->max_len, out->nb,
			                out->bucket))
				memset(&out->map, 0, sizeof(out->map));
			free(lo);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(label[i]);
	free(label);
	free(id);
	return rc < 0 ? -rc : RM_OK;
}

size_t rm_store_split_rows = 2000000;

/* The batch rows of steps [from, to), as load_batches needs them. */
struct batch_part {
	int64_t run_id, from, to;
	size_t nb, cap;
	int64_t *bstep;
	int *bucket; /* index into ids, -1 none */
	double *max_len;
	float *min_len; /* NaN unknown: where the batches' spans cut, when no id is recorded */
	int *brank;
	struct rm_bucket_ids ids;
	/* Recorded lengths: row i's are at lens + lens_at[i] - 1 (lens_at[i]
	 * 0: none), lens_at made at the first row that has them. */
	uint8_t *lens;
	size_t lens_len, lens_cap;
	uint32_t *lens_at;
	size_t unknown; /* rows with neither a length nor a bucket */
	int multi;
	int64_t top_rank;
	struct rm_db *db;
	int rc;
	struct rm_err err;
};

/* Keeps row i's encoded lengths for the composition of mixed batches. */
static void keep_lens(struct batch_part *p, size_t i, const void *blob, size_t n)
{
	if (!blob || !n || p->lens_len + n >= UINT32_MAX) /* offsets are 32-bit: beyond, lengths go unread */
		return;
	if (!p->lens_at)
		p->lens_at = rm_xcalloc(p->cap + 1, sizeof(*p->lens_at));
	if (p->lens_len + n > p->lens_cap) {
		p->lens_cap = (p->lens_len + n) * 2;
		p->lens = rm_xrealloc(p->lens, p->lens_cap);
	}
	memcpy(p->lens + p->lens_len, blob, n);
	p->lens_at[i] = (uint32_t)p->lens_len + 1;
	p->lens_len += n;
}

static void *scan_batches(void *arg)
{
	struct batch_part *p = arg;
	struct rm_dbq *s =
	    rm_dbq_prepare(p->db,
	                   "SELECT step, bucket, COALESCE(max_len, mean_len), rank, lens, min_len FROM batches"
	                   " WHERE run_id = ?1 AND step >= ?2 AND step < ?3 ORDER BY step, rank, micro",
	                   RM_DBQ_STREAM, &p->err);
	int rc;
	if (!s) {
		p->rc = RM_E_STORE;
		return NULL;
	}
	rm_dbq_int(s, 1, p->run_id);
	rm_dbq_int(s, 2, p->from);
	rm_dbq_int(s, 3, p->to);
	GROW(p->bstep, p->cap + 1);
	GROW(p->bucket, p->cap + 1);
	GROW(p->max_len, p->cap + 1);
	GROW(p->min_len, p->cap + 1);
	GROW(p->brank, p->cap + 1);
	while ((rc = rm_dbq_step(s, &p->err)) == RM_DB_ROW) {
		int64_t step = rm_dbq_col_int(s, 0);
		int64_t bucket = !rm_dbq_isnull(s, 1) ? rm_dbq_col_int(s, 1) : RM_BUCKET_NONE;
		double ml = rm_st_col_opt(s, 2);
		int64_t rank = rm_dbq_col_int(s, 3);
		p->unknown += isnan(ml) && bucket == RM_BUCKET_NONE;
		size_t i = p->nb;
		if (p->nb == p->cap) {
			p->cap = p->cap ? p->cap * 2 : 4096;
			GROW(p->bstep, p->cap);
			GROW(p->bucket, p->cap);
			GROW(p->max_len, p->cap);
			GROW(p->min_len, p->cap);
			GROW(p->brank, p->cap);
			if (p->lens_at) {
				GROW(p->lens_at, p->cap + 1);
				memset(p->lens_at + i, 0, (p->cap + 1 - i) * sizeof(*p->lens_at));
			}
		}
		size_t nlens;
		const void *lens = rm_dbq_col_blob(s, 4, &nlens);
		if (lens)
			keep_lens(p, i, lens, nlens);
		p->multi |= i > 0 && p->bstep[i - 1] == step; /* another rank or micro-batch of the step */
		p->nb++;
		p->bstep[i] = step;
		p->bucket[i] = rm_bucket_ids_add(&p->ids, bucket, ml);
		p->max_len[i] = ml;
		p->min_len[i] = (float)rm_st_col_opt(s, 5);
		p->brank[i] = rank >= 0 && rank < RM_MAX_RANKS ? (int)rank : RM_MAX_RANKS - 1;
		if (rank > p->top_rank)
			p->top_rank = rank;
	}
	rm_dbq_finalize(s);
	p->rc = rc < 0 ? -rc : RM_OK;
	return NULL;
}

/* b's rows copied after a's, whose arrays were made for both halves
 * (grown only when the estimate fell short), and freed. */
#define JOIN(x, y)                                                                                                     \
	do {                                                                                                           \
		if (n + 1 > a->cap)                                                                                    \
			(x) = rm_xrealloc((x), (n + 1) * sizeof(*(x)));                                                \
		memcpy((x) + a->nb, (y), b->nb * sizeof(*(x)));                                                        \
		free(y);                                                                                               \
	} while (0)

/* Appends b's rows to a's. */
static void join_parts(struct batch_part *a, struct batch_part *b)
{
	size_t n = a->nb + b->nb;
	int *remap = rm_xmalloc((b->ids.n ? b->ids.n : 1) * sizeof(int));
	rm_bucket_ids_merge(&a->ids, &b->ids, remap);
	for (size_t i = 0; i < b->nb; i++)
		b->bucket[i] = b->bucket[i] < 0 ? -1 : remap[b->bucket[i]];
	free(remap);
	JOIN(a->bstep, b->bstep);
	JOIN(a->bucket, b->bucket);
	JOIN(a->max_len, b->max_len);
	JOIN(a->min_len, b->min_len);
	JOIN(a->brank, b->brank);
	if (b->lens_at && a->lens_len + b->lens_len < UINT32_MAX) { /* beyond: b's lengths go unread */
		if (!a->lens_at)
			a->lens_at = rm_xcalloc(a->cap > n ? a->cap + 1 : n + 1, sizeof(*a->lens_at));
		else if (n + 1 > a->cap)
			GROW(a->lens_at, n + 1);
		for (size_t i = 0; i < b->nb; i++)
			a->lens_at[a->nb + i] = b->lens_at[i] ? b->lens_at[i] + (uint32_t)a->lens_len : 0;
		a->lens = rm_xrealloc(a->lens, a->lens_len + b->lens_len + 1);
		memcpy(a->lens + a->lens_len, b->lens, b->lens_len);
		a->lens_len += b->lens_len;
	} else if (a->lens_at) {
		if (n + 1 > a->cap)
			GROW(a->lens_at, n + 1);
		memset(a->lens_at + a->nb, 0, b->nb * sizeof(*a->lens_at));
	}
	free(b->lens);
	free(b->lens_at);
	a->nb = n;
	a->cap = n + 1 > a->cap ? n + 1 : a->cap;
	a->unknown += b->unknown;
	a->multi |= b->multi;
	a->top_rank = b->top_rank > a->top_rank ? b->top_rank : a->top_rank;
}
#undef JOIN

/* The run's recorded bucket boundaries, if any. */
static int load_bounds(struct rm_db *db, int64_t run_id, struct rm_store_series *out, struct rm_err *err)
{
	struct rm_dbq *s = rm_dbq_prepare(db, "SELECT lo, hi FROM buckets WHERE run_id = ?1 ORDER BY bucket", 0, err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		out->bounds = rm_xrealloc(out->bounds, (size_t)(out->nbounds + 2) * sizeof(*out->bounds));
		if (out->nbounds == 0)
			out->bounds[out->nbounds++] = rm_dbq_col_int(s, 0);
		out->bounds[out->nbounds++] = rm_dbq_col_int(s, 1);
	}
	rm_dbq_finalize(s);
	return rc < 0 ? -rc : RM_OK;
}

/* With recorded lengths and boundaries, and ids that are the boundaries'
 * indexes (an import with --buckets): every bucket of the boundaries gets
 * a dense bucket, for the shares of mixed batches, even one that is no
 * batch's longest. */
static void reserve_buckets(struct rm_bucket_ids *ids, const struct rm_store_series *out)
{
	if (out->nbounds - 1 > RM_MAX_BUCKETS)
		return;
	for (size_t i = 0; i < ids->n; i++)
		if (ids->id[i] < 0 || ids->id[i] > out->nbounds - 2)
			return;
	for (int b = 0; b + 1 < out->nbounds && ids->n; b++)
		rm_bucket_ids_reserve(ids, b, ((double)out->bounds[b] + (double)out->bounds[b + 1]) / 2);
}

/* The rows whose recorded lengths fall in more than one bucket, with the
 * token share of each (a batch's loss is a mean over its tokens). */
static void mixed_batches(const struct batch_part *a, struct rm_store_series *out)
{
	struct rm_length_cuts cuts;
	if (!rm_bucket_map_cuts(&out->map, out->bounds, out->nbounds, &cuts))
		return;
	uint8_t bucket[RM_MAX_BUCKETS];
	float share[RM_MAX_BUCKETS];
	/* Rows' lengths lie end to end in row order: a row's end where the
	 * next row with lengths starts. */
	size_t row = SIZE_MAX, from = 0;
	for (size_t i = 0; i <= out->nb; i++) {
		if (i < out->nb && !a->lens_at[i])
			continue;
		size_t at = i < out->nb ? a->lens_at[i] - 1 : a->lens_len;
		if (row != SIZE_MAX) {
			int parts = rm_lens_shares(a->lens + from, at - from, &cuts, bucket, share);
			if (parts >= 2)
				rm_mix_add(&out->mix, row, bucket, share, parts);
		}
		row = i;
		from = at;
	}
}

/* Batch composition: one entry per stored row, in (step, rank, micro)
 * order, so that a data-parallel step keeps what each rank and micro-batch
 * drew (the detectors read the mixture; see detect_mixture.c). A run of
 * many rows (8M for 1M steps on 8 ranks) is read in two halves at once,
 * the second on a connection of its own. */
static int load_batches(struct rm_db *db, int64_t run_id, int64_t since, const struct rm_derive *derive,
                        struct rm_store_series *out, struct rm_err *err)
{
	int64_t lo, hi;
	size_t rows = estimate_rows(db, "batches", run_id, since, &lo, &hi); /* parts grow when it is short */
	struct batch_part a = {.run_id = run_id, .from = since, .to = INT64_MAX, .cap = rows, .db = db};
	struct batch_part b = {.run_id = run_id, .to = INT64_MAX};
	pthread_t th;
	int split = rows >= rm_store_split_rows && hi > lo && !rm_db_open_again(db, &b.db, &b.err);
	if (split) {
		b.from = a.to = lo + (hi - lo + 1) / 2;
		b.cap = rows / 2 + 1; /* a's arrays take b's rows after its own */
		split = pthread_create(&th, NULL, scan_batches, &b) == 0;
		if (!split) {
			a.to = INT64_MAX;
			a.cap = rows;
		}
	}
	scan_batches(&a);
	if (split) {
		pthread_join(th, NULL);
		if (!a.rc && b.rc) {
			a.rc = b.rc;
			a.err = b.err;
		}
		join_parts(&a, &b);
	}
	rm_bucket_ids_release(&b.ids);
	rm_db_close(b.db);
	out->bstep = a.bstep;
	out->bucket = a.bucket;
	out->max_len = a.max_len;
	out->brank = a.brank;
	out->nb = a.nb;
	out->multi = a.multi;
	out->nranks = a.top_rank < RM_MAX_RANKS ? (int)a.top_rank + 1 : RM_MAX_RANKS;
	int rc = a.rc;
	if (rc)
		*err = a.err;
	if (!rc && a.unknown)
		out->tokens_only = count_rows(db, "batches", /* a token count and nothing to place it by */
		                              " AND bucket IS NULL AND max_len IS NULL AND mean_len IS NULL"
		                              " AND tokens IS NOT NULL",
		                              run_id, since);
	if (!rc)
		rc = load_bounds(db, run_id, out, err);
	if (!rc && a.lens_at)
		reserve_buckets(&a.ids, out);
	if (!rc)
		rc = map_buckets(db, run_id, &a.ids, a.min_len, derive, out, err);
	if (!rc && a.lens_at)
		mixed_batches(&a, out);
	rm_bucket_ids_release(&a.ids);
	free(a.lens);
	free(a.lens_at);
	free(a.min_len);
	return rc;
}

struct batch_job {
	struct rm_db *db;
	int64_t run_id, since;
	const struct rm_derive *derive;
	struct rm_store_series *out;
	int rc;
	struct rm_err err;
};

static void *batch_thread(void *arg)
{
	struct batch_job *j = arg;
	j->rc = load_batches(j->db, j->run_id, j->since, j->derive, j->out, &j->err);
	return NULL;
}

/* What a long run need not hold twice: the batches' steps when each
 * batch is the loss row's step (one batch a logged step), the ranks when
 * there is one, the reasons for non-finite losses when there are none. */
static void compact_series(struct rm_store_series *out)
{
	if (out->nb == out->n && out->bstep != out->step &&
	    (out->n == 0 || memcmp(out->bstep, out->step, out->n * sizeof(*out->step)) == 0)) {
		free(out->bstep);
		out->bstep = out->step;
	}
	if (out->nranks <= 1) {
		free(out->brank);
		out->brank = NULL;
	}
	size_t nonfinite = 0;
	for (size_t i = 0; i < out->n && !nonfinite; i++)
		nonfinite = out->nonfinite[i];
	if (!nonfinite) {
		free(out->nonfinite);
		out->nonfinite = NULL;
	}
}

int rm_store_load_series(struct rm_store *st, int64_t run_id, int64_t since, const struct rm_derive *derive,
                         struct rm_store_series *out, struct rm_err *err)
{
	memset(out, 0, sizeof(*out));
	/* Steps and batches are read at once, on two connections: each is a
	 * long scan, and the second core is otherwise idle. (Both engines let
	 * them read while a writer commits; they may see a step more or less.) */
	struct batch_job job = {.run_id = run_id, .since = since, .derive = derive, .out = out};
	pthread_t th;
	int threaded =
	    !rm_db_open_again(st->db, &job.db, &job.err) && pthread_create(&th, NULL, batch_thread, &job) == 0;
	int rc = load_steps(st->db, run_id, since, out, err);
	if (!rc)
		rc = load_rank_losses(st->db, run_id, since, out, err);
	if (threaded)
		pthread_join(th, NULL);
	else
		job.rc = load_batches(st->db, run_id, since, derive, out, &job.err);
	rm_db_close(job.db);
	if (!rc && job.rc) {
		*err = job.err;
		rc = job.rc;
	}
	if (!rc)
		compact_series(out);
	struct rm_dbq *s = rc ? NULL : rm_st_prepare(st, "SELECT config_json FROM runs WHERE id = ?1", err);
	if (s) {
		rm_dbq_int(s, 1, run_id);
		if (rm_dbq_step(s, err) == RM_DB_ROW)
			out->config_json = rm_st_col_text(s, 0);
		rm_dbq_finalize(s);
		return RM_OK;
	}
	rm_store_series_release(out);
	return RM_E_STORE;
}

void rm_store_series_release(struct rm_store_series *s)
{
	if (s->bstep != s->step) /* one array when each batch is its loss row's step */
		free(s->bstep);
	free(s->step);
	free(s->loss);
	free(s->nonfinite);
	free(s->lr);
	free(s->epoch);

	free(s->bucket);
	free(s->max_len);
	free(s->brank);
	rm_bucket_map_release(&s->map);
	rm_mix_release(&s->mix);

	free(s->rl_step);
	free(s->rl_rank);
	free(s->rl_loss);

	free(s->bounds);
	free(s->config_json);
	memset(s, 0, sizeof(*s));
}

/* Recorded lengths loaded for the cost side at most: what it re-packs
 * (RM_PAD_MAX_SEQS, cost.h, a layer store does not use). */
#define COST_LENS_MAX ((size_t)1 << 22)

int rm_store_load_cost(struct rm_store *st, int64_t run_id, int64_t since, size_t max_batches,
                       const struct rm_bucket_map *map, struct rm_store_cost *out, struct rm_err *err)
{
	enum { BLOCKS = 10 };
	memset(out, 0, sizeof(*out));
	int64_t lo, hi;
	size_t total = estimate_rows(st->db, "batches", run_id, since, &lo, &hi), cap = 0;
	out->stride = total > max_batches && max_batches ? (int64_t)((total + max_batches - 1) / max_batches) : 1;
	/* Ten evenly spaced blocks of consecutive steps: range scans on the
	 * primary key read only the sample. */
	struct rm_dbq *s;
	if (hi < lo)
		return RM_OK;
	s = rm_st_prepare(
	    st,
	    "SELECT b.step, b.bucket, b.n, b.min_len, b.max_len, b.tokens, b.padded_tokens, b.lens, b.rank,"
	    /* the logged rows either side: a step's time is their time apart over their steps apart */
	    " (SELECT step FROM steps WHERE run_id = ?1 AND step >= b.step ORDER BY step LIMIT 1),"
	    " (SELECT COALESCE(runtime, ts) FROM steps WHERE run_id = ?1 AND step >= b.step ORDER BY step LIMIT 1),"
	    " (SELECT step FROM steps WHERE run_id = ?1 AND step < b.step ORDER BY step DESC LIMIT 1),"
	    " (SELECT COALESCE(runtime, ts) FROM steps WHERE run_id = ?1 AND step < b.step ORDER BY step DESC LIMIT 1)"
	    " FROM batches b WHERE b.run_id = ?1 AND b.step >= ?2 AND b.step < ?3 ORDER BY b.step, b.rank, b.micro",
	    err);
	if (!s)
		return RM_E_STORE;
	int64_t span = hi - lo + 1, width = out->stride > 1 ? span / out->stride / BLOCKS + 1 : span;
	int64_t *rank = NULL;
	size_t lens_cap = 0;
	int rc = RM_DB_DONE;
	for (int blk = 0; blk < (out->stride > 1 ? BLOCKS : 1) && rc == RM_DB_DONE; blk++) {
		int64_t a = lo + (int64_t)((double)span / BLOCKS * blk); /* span may be near 2^62 (fuzz_diagnose) */
		rm_dbq_reset(s);
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, out->stride > 1 ? a : lo);
		rm_dbq_int(s, 3, out->stride > 1 ? a + width : hi + 1);
		while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
			int64_t step = rm_dbq_col_int(s, 0);
			double v[6];
			for (int i = 0; i < 5; i++)
				v[i] = rm_st_col_opt(s, 2 + i);
			double next_t = rm_st_col_opt(s, 10), prev_t = rm_st_col_opt(s, 12);
			double steps = rm_st_col_opt(s, 9) - rm_st_col_opt(s, 11);
			v[5] = steps >= 1 ? (next_t - prev_t) / steps : NAN;
			int bucket = map->derived           ? rm_bucket_map_of_length(map, v[2]) /* v[2]: max_len */
			             : !rm_dbq_isnull(s, 1) ? rm_bucket_map_dense(map, rm_dbq_col_int(s, 1))
			                                    : -1;
			if (out->nb == cap) {
				cap = cap ? cap * 2 : 4096;
				GROW(out->step, cap);
				GROW(out->bucket, cap);
				GROW(out->n, cap);
				GROW(out->min_len, cap);
				GROW(out->max_len, cap);
				GROW(out->tokens, cap);
				GROW(out->padded, cap);
				GROW(out->dt, cap);
				GROW(out->step_dt, cap);
				GROW(out->lens_at, cap);
				GROW(out->lens_n, cap);
				GROW(rank, cap);
			}
			size_t i = out->nb++;
			int first = i == 0 || out->step[i - 1] != step;
			out->step[i] = step;
			out->bucket[i] = bucket;
			out->n[i] = v[0];
			out->min_len[i] = v[1];
			out->max_len[i] = v[2];
			out->tokens[i] = v[3];
			out->padded[i] = v[4];
			out->step_dt[i] = first ? v[5] : NAN;
			out->dt[i] = v[5];
			rank[i] = rm_dbq_col_int(s, 8);
			/* The lengths the trainer recorded, when they are the batch's n:
			 * the re-packing takes them as they are. */
			size_t nbytes, want = v[0] >= 1 && v[0] <= RM_BATCH_MAX_N ? (size_t)v[0] : 0;
			const uint8_t *blob = rm_dbq_col_blob(s, 7, &nbytes);
			out->lens_at[i] = out->nlens;
			out->lens_n[i] = 0;
			if (blob && nbytes && want && out->nlens + want <= COST_LENS_MAX) {
				if (out->nlens + want > lens_cap) {
					lens_cap = (out->nlens + want) * 2;
					out->lens = rm_xrealloc(out->lens, lens_cap * sizeof(int64_t));
				}
				if (rm_lens_decode(blob, nbytes, out->lens + out->nlens, want) == (long)want) {
					out->lens_n[i] = (uint32_t)want;
					out->nlens += want;
				}
			}
		}
	}
	/* A batch's time: its step's, over the micro-batches its rank ran then. */
	for (size_t a = 0, b; a < out->nb; a = b) {
		size_t ranks = 1;
		for (b = a + 1; b < out->nb && out->step[b] == out->step[a]; b++)
			ranks += rank[b] != rank[b - 1];
		for (size_t i = a; i < b; i++)
			out->dt[i] = out->dt[a] * (double)ranks / (double)(b - a);
	}
	free(rank);
	rm_dbq_finalize(s);
	if (rc != RM_DB_DONE) {
		rm_store_cost_release(out);
		return rm_st_fail(st, err, "cannot load batch statistics");
	}
	return RM_OK;
}

void rm_store_cost_release(struct rm_store_cost *c)
{
	free(c->step);
	free(c->bucket);
	free(c->n);
	free(c->min_len);
	free(c->max_len);
	free(c->tokens);
	free(c->padded);
	free(c->dt);
	free(c->step_dt);
	free(c->lens);
	free(c->lens_at);
	free(c->lens_n);
	memset(c, 0, sizeof(*c));
}

int rm_store_unbucketed_lengths(struct rm_store *st, int64_t run_id, int64_t since, int64_t until, double **lo,
                                double **hi, size_t *n, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st,
	                                 "SELECT min_len, COALESCE(max_len, mean_len) FROM batches"
	                                 " WHERE run_id = ?1 AND step >= ?2 AND step < ?3 AND bucket IS NULL",
	                                 err);
	size_t cap = 0;
	int rc;
	*lo = *hi = NULL;
	*n = 0;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, since);
	rm_dbq_int(s, 3, until > 0 ? until : INT64_MAX);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 4096;
			GROW(*lo, cap);
			GROW(*hi, cap);
		}
		(*lo)[*n] = rm_st_col_opt(s, 0);
		(*hi)[(*n)++] = rm_st_col_opt(s, 1);
	}
	rm_dbq_finalize(s);
	if (rc < 0) {
		free(*lo);
		free(*hi);
		*lo = *hi = NULL;
		*n = 0;
		return rm_st_fail(st, err, "cannot read batch lengths");
	}
	return RM_OK;
}
