/*
 * store_rows.c - the rows an import or a sync writes: steps, batches,
 * evals, bucket boundaries and text bucket labels.
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

int rm_store_put_step(struct rm_store *st, int64_t run_id, const struct rm_step *r, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_upsert(st, UP_STEP, err);
	if (!s)
		return RM_E_STORE;
	int nan_mask = 0;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, r->step);
	for (int f = 0; f < RM_S_COUNT; f++) {
		int have = (r->have >> f) & 1;
		rm_st_bind_opt(s, 3 + f, have, r->v[f]);
		if (have && isnan(r->v[f]) && f <= RM_S_GRAD_NORM)
			nan_mask |= 1 << f;
	}
	rm_dbq_int(s, 9, nan_mask);
	return rm_st_run(st, s, err, "cannot write step");
}

int rm_store_put_batch(struct rm_store *st, int64_t run_id, const struct rm_batch *b, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_upsert(st, UP_BATCH, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, b->step);
	rm_dbq_int(s, 3, b->rank);
	rm_dbq_int(s, 4, b->micro);
	for (int f = 0; f < RM_B_COUNT; f++) {
		int have = (b->have >> f) & 1;
		if (have && f != RM_B_MEAN_LEN && isfinite(b->v[f]))
			rm_dbq_int(s, 5 + f, (int64_t)llround(b->v[f]));
		else
			rm_st_bind_opt(s, 5 + f, have, b->v[f]);
	}
	if (b->lens && b->lens_bytes)
		rm_dbq_blob(s, 12, b->lens, b->lens_bytes);
	else
		rm_dbq_null(s, 12);
	return rm_st_run(st, s, err, "cannot write batch");
}

int rm_store_put_rank_loss(struct rm_store *st, int64_t run_id, int64_t step, int64_t rank, double loss,
                           struct rm_err *err)
{
	struct rm_dbq *s = rm_st_upsert(st, UP_RANK_LOSS, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, step);
	rm_dbq_int(s, 3, rank);
	rm_st_bind_opt(s, 4, 1, loss);
	return rm_st_run(st, s, err, "cannot write a rank's loss");
}

int rm_store_put_other_loss(struct rm_store *st, int64_t run_id, int64_t step, const char *key, double loss,
                            struct rm_err *err)
{
	struct rm_dbq *s = rm_st_upsert(st, UP_OTHER_LOSS, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, key, -1);
	rm_dbq_int(s, 3, step);
	rm_st_bind_opt(s, 4, 1, loss);
	return rm_st_run(st, s, err, "cannot write another loss");
}

/* A step's loss is the mean of its ranks', as DDP's all-reduce gives it;
 * a rank whose loss was not finite makes the step's NaN (nan_mask bit 0). */
int rm_store_mean_rank_losses(struct rm_store *st, int64_t run_id, int64_t lo, int64_t hi, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st,
	    "UPDATE steps SET loss = r.m,"
	    " nan_mask = CASE WHEN r.m IS NULL THEN nan_mask | 1 ELSE nan_mask & ~1 END"
	    " FROM (SELECT step, CASE WHEN COUNT(loss) = COUNT(*) THEN AVG(loss) END AS m FROM rank_losses"
	    " WHERE run_id = ?1 AND step BETWEEN ?2 AND ?3 GROUP BY step) AS r"
	    " WHERE steps.run_id = ?1 AND steps.step = r.step",
	    err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, lo);
	rm_dbq_int(s, 3, hi);
	return rm_st_run_once(st, s, err, "cannot average the ranks' losses");
}

static void bind_key_range(struct rm_dbq *s, int64_t run_id, const char *key, int64_t lo, int64_t hi)
{
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, key, -1);
	rm_dbq_int(s, 3, lo);
	rm_dbq_int(s, 4, hi);
}

int rm_store_drop_evals(struct rm_store *st, int64_t run_id, const char *key, int64_t lo, int64_t hi,
                        struct rm_err *err)
{
	struct rm_dbq *s =
	    rm_st_prepare(st, "DELETE FROM evals WHERE run_id = ?1 AND key = ?2 AND step BETWEEN ?3 AND ?4", err);
	if (!s)
		return RM_E_STORE;
	bind_key_range(s, run_id, key, lo, hi);
	return rm_st_run_once(st, s, err, "cannot drop eval rows");
}

int rm_store_promote_eval(struct rm_store *st, int64_t run_id, const char *key, const char *epoch_key, int64_t lo,
                          int64_t hi, int64_t *moved, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st,
	    "INSERT INTO steps(run_id, step, loss, epoch, nan_mask)"
	    " SELECT run_id, step, value,"
	    " (SELECT x.value FROM evals AS x WHERE x.run_id = e.run_id AND x.step = e.step AND x.key = ?5),"
	    " CASE WHEN value IS NULL THEN 1 ELSE 0 END"
	    " FROM evals AS e WHERE run_id = ?1 AND key = ?2 AND step BETWEEN ?3 AND ?4"
	    " ON CONFLICT(run_id, step) DO NOTHING RETURNING step",
	    err);
	int rc;
	*moved = 0;
	if (!s)
		return RM_E_STORE;
	bind_key_range(s, run_id, key, lo, hi);
	rm_dbq_text(s, 5, epoch_key, -1);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW)
		++*moved;
	rm_dbq_finalize(s);
	if (rc < 0)
		return -rc;
	return rm_store_drop_evals(st, run_id, key, lo, hi, err);
}

int rm_store_put_eval(struct rm_store *st, int64_t run_id, int64_t step, const char *key, double value,
                      struct rm_err *err)
{
	struct rm_dbq *s = rm_st_upsert(st, UP_EVAL, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, step);
	rm_dbq_text(s, 3, key, -1);
	rm_st_bind_opt(s, 4, 1, value);
	return rm_st_run(st, s, err, "cannot write eval row");
}

int rm_store_put_buckets(struct rm_store *st, int64_t run_id, const int64_t *bounds, int nbounds, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st, "DELETE FROM buckets WHERE run_id = ?1", err);
	int rc;
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	if ((rc = rm_st_run_once(st, s, err, "cannot replace buckets")))
		return rc;
	for (int i = 0; i + 1 < nbounds; i++) {
		if (!(s = rm_st_prepare(st, "INSERT INTO buckets(run_id, bucket, lo, hi) VALUES (?1, ?2, ?3, ?4)",
		                        err)))
			return RM_E_STORE;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, i);
		rm_dbq_int(s, 3, bounds[i]);
		rm_dbq_int(s, 4, bounds[i + 1]);
		if ((rc = rm_st_run_once(st, s, err, "cannot write bucket")))
			return rc;
	}
	return RM_OK;
}

int rm_store_count_steps(struct rm_store *st, int64_t run_id, int64_t lo, int64_t hi, int64_t *n, struct rm_err *err)
{
	struct rm_dbq *s =
	    rm_st_prepare(st, "SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND step >= ?2 AND step < ?3", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_int(s, 2, lo);
	rm_dbq_int(s, 3, hi);
	*n = rm_dbq_step(s, err) == RM_DB_ROW ? rm_dbq_col_int(s, 0) : 0;
	return rm_st_run_once(st, s, err, "cannot count steps");
}

int rm_store_bucket_text_id(struct rm_store *st, int64_t run_id, const char *label, int64_t *id, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st, "SELECT bucket FROM bucket_labels WHERE run_id = ?1 AND label = ?2", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, label, -1);
	int rc = rm_dbq_step(s, err);
	if (rc == RM_DB_ROW)
		*id = rm_dbq_col_int(s, 0);
	rm_dbq_finalize(s);
	if (rc == RM_DB_ROW)
		return RM_OK;
	if (rc != RM_DB_DONE)
		return rm_st_fail(st, err, "cannot read bucket labels");
	s = rm_st_prepare(st,
	                  "INSERT INTO bucket_labels(run_id, bucket, label)"
	                  " SELECT CAST(?1 AS BIGINT), COALESCE(MAX(bucket) + 1, CAST(?3 AS BIGINT)), CAST(?2 AS TEXT)"
	                  " FROM bucket_labels WHERE run_id = ?1 RETURNING bucket",
	                  err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, label, -1);
	rm_dbq_int(s, 3, RM_BUCKET_TEXT_ID);
	rc = rm_dbq_step(s, err);
	if (rc == RM_DB_ROW)
		*id = rm_dbq_col_int(s, 0);
	if (rc == RM_DB_ROW)
		rc = rm_dbq_step(s, err);
	rm_dbq_finalize(s);
	return rc == RM_DB_DONE ? RM_OK : rm_st_fail(st, err, "cannot write bucket label");
}
