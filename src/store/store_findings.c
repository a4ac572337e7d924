/*
 * store_findings.c - what a diagnosis keeps: findings, the fitted bucket
 * levels and length effect, and what each report saw.
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

int rm_store_replace_findings(struct rm_store *st, int64_t run_id, const struct rm_finding_row *rows, size_t n,
                              struct rm_err *err)
{
	int rc;
	if ((rc = rm_store_begin(st, err)))
		return rc;
	struct rm_dbq *s = rm_st_prepare(st, "DELETE FROM findings WHERE run_id = ?1", err);
	if (!s)
		goto fail;
	rm_dbq_int(s, 1, run_id);
	if ((rc = rm_st_run_once(st, s, err, "cannot replace findings")))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct rm_finding_row *f = &rows[i];
		s = rm_st_prepare(st,
		                  "INSERT INTO findings(run_id, detector, severity, first_step, last_step, statistic,"
		                  " p_value, evidence_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
		                  err);
		if (!s)
			goto fail;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_text(s, 2, f->detector, -1);
		rm_dbq_text(s, 3, f->severity, -1);
		if (f->first_step >= 0)
			rm_dbq_int(s, 4, f->first_step);
		if (f->last_step >= 0)
			rm_dbq_int(s, 5, f->last_step);
		rm_st_bind_opt(s, 6, 1, f->statistic);
		rm_st_bind_opt(s, 7, 1, f->p_value);
		if (f->evidence_json)
			rm_dbq_text(s, 8, f->evidence_json, -1);
		rm_dbq_double(s, 9, (double)time(NULL));
		if ((rc = rm_st_run_once(st, s, err, "cannot write finding")))
			goto fail;
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

int rm_store_replace_levels(struct rm_store *st, int64_t run_id, const struct rm_bucket_map *map, const int *bucket,
                            const double *shift, const double *level, int k, int log_scale, struct rm_err *err)
{
	int rc = rm_store_begin(st, err);
	if (rc)
		return rc;
	struct rm_dbq *s = rm_st_prepare(st, "DELETE FROM bucket_levels WHERE run_id = ?1", err);
	if (!s)
		goto fail;
	rm_dbq_int(s, 1, run_id);
	if (rm_st_run_once(st, s, err, "cannot replace bucket levels"))
		goto fail;
	/* One row per stored id: a grouped bucket's level goes to each of its labels. */
	for (size_t r = 0; r < map->nraw; r++) {
		int i = 0;
		while (i < k && bucket[i] != map->dense[r])
			i++;
		if (i == k)
			continue;
		s = rm_st_prepare(
		    st, "INSERT INTO bucket_levels(run_id, bucket, scale, shift, level) VALUES (?1, ?2, ?3, ?4, ?5)",
		    err);
		if (!s)
			goto fail;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_int(s, 2, map->raw[r]);
		rm_dbq_text(s, 3, log_scale ? "log" : "linear", -1);
		rm_dbq_double(s, 4, shift[i]);
		rm_dbq_double(s, 5, level[i]);
		if (rm_st_run_once(st, s, err, "cannot write bucket level"))
			goto fail;
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

int rm_store_replace_length(struct rm_store *st, int64_t run_id, const struct rm_length_fit *f, struct rm_err *err)
{
	int rc = rm_store_begin(st, err);
	if (rc)
		return rc;
	static const char *const clear[] = {"DELETE FROM length_levels WHERE run_id = ?1",
	                                    "DELETE FROM length_factors WHERE run_id = ?1"};
	struct rm_dbq *s;
	for (size_t i = 0; i < 2; i++) {
		if (!(s = rm_st_prepare(st, clear[i], err)))
			goto fail;
		rm_dbq_int(s, 1, run_id);
		if (rm_st_run_once(st, s, err, "cannot replace the length effect"))
			goto fail;
	}
	if (!f->ok || !(f->min_len > 0 && f->max_len >= f->min_len && isfinite(f->max_len) && f->ref_len > 0))
		return rm_store_commit(st, err);
	if (!(s = rm_st_prepare(
	          st, "INSERT INTO length_levels(run_id, scale, slope, ref_len, r2) VALUES (?1, ?2, ?3, ?4, ?5)", err)))
		goto fail;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, f->log_scale ? "log" : "linear", -1);
	rm_dbq_double(s, 3, f->slope);
	rm_dbq_double(s, 4, f->ref_len);
	rm_dbq_double(s, 5, f->r2);
	if (rm_st_run_once(st, s, err, "cannot write the length effect"))
		goto fail;
	/* Bins 1% wide from just below the shortest length past the longest;
	 * wider when the range is absurd (a corrupt length of 1e300 would
	 * otherwise write 70,000 rows), so there are never more than 2000. */
	double ratio = exp(fmax(log(1.01), (log(f->max_len) - log(f->min_len)) / 2000));
	for (double lo = f->min_len / ratio; lo < f->max_len; lo *= ratio) {
		double hi = lo * ratio, mid = log(sqrt(lo) * sqrt(hi) / f->ref_len);
		if (!(s = rm_st_upsert(st, UP_FACTOR, err)))
			goto fail;
		rm_dbq_int(s, 1, run_id);
		rm_dbq_double(s, 2, lo);
		rm_dbq_double(s, 3, hi);
		rm_dbq_double(s, 4, f->log_scale ? exp(f->slope * mid) : f->slope * mid);
		if (rm_st_run(st, s, err, "cannot write the length effect"))
			goto fail;
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

/* ---- What reports saw (changes since the last report) -------------------- */

int rm_store_put_report(struct rm_store *st, double generated, const struct rm_seen *seen, struct rm_err *err)
{
	int rc;
	if ((rc = rm_store_begin(st, err)))
		return rc;
	struct rm_dbq *s = rm_st_prepare(st, "INSERT INTO reports(generated_at) VALUES (?1) RETURNING id", err);
	int64_t id;
	if (!s)
		goto fail;
	rm_dbq_double(s, 1, generated);
	rc = rm_st_run_int(st, s, &id, err, "cannot keep the report");
	rm_dbq_finalize(s);
	if (rc)
		goto fail;
	for (size_t i = 0; i < seen->n; i++) {
		const struct rm_seen_run *r = &seen->runs[i];
		if (!(s = rm_st_prepare(
		          st,
		          "INSERT INTO report_runs(report_id, run, severity, verdict, last_step)"
		          " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(run, report_id) DO UPDATE SET"
		          " severity = excluded.severity, verdict = excluded.verdict, last_step = excluded.last_step",
		          err)))
			goto fail;
		rm_dbq_int(s, 1, id);
		rm_dbq_text(s, 2, r->run, -1);
		rm_dbq_text(s, 3, rm_severity_name(r->severity), -1);
		rm_dbq_text(s, 4, r->verdict, -1);
		if (r->last_step >= 0)
			rm_dbq_int(s, 5, r->last_step);
		if (rm_st_run_once(st, s, err, "cannot keep the report's runs"))
			goto fail;
		for (size_t j = 0; j < r->nf; j++) {
			if (!(s = rm_st_prepare(
			          st,
			          "INSERT INTO report_findings(report_id, run, detector, severity, first_step)"
			          " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(run, report_id, detector) DO UPDATE SET"
			          " severity = excluded.severity, first_step = excluded.first_step",
			          err)))
				goto fail;
			rm_dbq_int(s, 1, id);
			rm_dbq_text(s, 2, r->run, -1);
			rm_dbq_text(s, 3, r->f[j].detector, -1);
			rm_dbq_text(s, 4, rm_severity_name(r->f[j].severity), -1);
			if (r->f[j].first_step >= 0)
				rm_dbq_int(s, 5, r->f[j].first_step);
			if (rm_st_run_once(st, s, err, "cannot keep the report's findings"))
				goto fail;
		}
	}
	return rm_store_commit(st, err);
fail:
	rm_store_rollback(st);
	return RM_E_STORE;
}

static enum rm_severity col_severity(struct rm_dbq *s, int i)
{
	const char *t = rm_dbq_col_text(s, i);
	enum rm_severity sev = RM_SEV_NONE;
	if (t)
		rm_severity_parse(t, &sev); /* "none" and anything unknown: none */
	return sev;
}

int rm_store_get_seen(struct rm_store *st, const char *const *runs, size_t n, double cutoff, struct rm_seen *out,
                      double *latest, struct rm_err *err)
{
	struct rm_dbq *r = rm_st_prepare(st,
	                                 "SELECT rr.report_id, p.generated_at, rr.severity, rr.verdict, rr.last_step"
	                                 " FROM report_runs rr JOIN reports p ON p.id = rr.report_id"
	                                 " WHERE rr.run = ?1 AND p.generated_at <= ?2"
	                                 " ORDER BY p.generated_at DESC, p.id DESC LIMIT 1",
	                                 err),
	              *f = rm_st_prepare(st,
	                                 "SELECT detector, severity, first_step FROM report_findings"
	                                 " WHERE run = ?1 AND report_id = ?2 ORDER BY detector",
	                                 err),
	              *t = rm_st_prepare(st, "SELECT MAX(generated_at) FROM reports WHERE generated_at <= ?1", err);
	int rc = r && f && t ? RM_OK : RM_E_STORE;
	for (size_t i = 0; !rc && i < n; i++) {
		rm_dbq_text(r, 1, runs[i], -1);
		rm_dbq_double(r, 2, cutoff);
		int step = rm_dbq_step(r, err);
		if (step == RM_DB_ROW) {
			const char *verdict = rm_dbq_col_text(r, 3);
			struct rm_seen_run *sr =
			    rm_seen_push(out, runs[i], col_severity(r, 2), verdict ? verdict : "",
			                 rm_dbq_isnull(r, 4) ? -1 : rm_dbq_col_int(r, 4), rm_dbq_col_double(r, 1));
			rm_dbq_text(f, 1, runs[i], -1);
			rm_dbq_int(f, 2, rm_dbq_col_int(r, 0));
			while ((step = rm_dbq_step(f, err)) == RM_DB_ROW)
				rm_seen_push_finding(sr, rm_dbq_col_text(f, 0), col_severity(f, 1),
				                     rm_dbq_isnull(f, 2) ? -1 : rm_dbq_col_int(f, 2));
			rm_dbq_reset(f);
		}
		if (step != RM_DB_DONE)
			rc = rm_st_fail(st, err, "cannot read earlier reports");
		rm_dbq_reset(r);
	}
	if (!rc) {
		rm_dbq_double(t, 1, cutoff);
		if (rm_dbq_step(t, err) != RM_DB_ROW)
			rc = rm_st_fail(st, err, "cannot read earlier reports");
		else
			*latest = rm_dbq_col_double(t, 0); /* NULL: 0 */
	}
	rm_dbq_finalize(r);
	rm_dbq_finalize(f);
	rm_dbq_finalize(t);
	return rc;
}
