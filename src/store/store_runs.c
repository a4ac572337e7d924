/*
 * store_runs.c - runs: finding and creating them, what they hold, their
 * config, metadata and state, and clearing them.
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

int rm_store_run_ensure(struct rm_store *st, const struct rm_run_key *key, int64_t *run_id, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_stmt(st, ST_RUN_FIND, err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_text(s, 1, key->entity, -1);
	rm_dbq_text(s, 2, key->project, -1);
	rm_dbq_text(s, 3, key->name, -1);
	int rc = rm_st_run_int(st, s, run_id, err, "cannot look up run");
	if (rc || *run_id)
		return rc;
	if (!(s = rm_st_stmt(st, ST_RUN_INSERT, err)))
		return RM_E_STORE;
	rm_dbq_text(s, 1, key->source, -1);
	rm_dbq_text(s, 2, key->entity, -1);
	rm_dbq_text(s, 3, key->project, -1);
	rm_dbq_text(s, 4, key->name, -1);
	if ((rc = rm_st_run_int(st, s, run_id, err, "cannot create run")) || *run_id)
		return rc;
	if (!(s = rm_st_stmt(st, ST_RUN_FIND, err)))
		return RM_E_STORE;
	rm_dbq_text(s, 1, key->entity, -1);
	rm_dbq_text(s, 2, key->project, -1);
	rm_dbq_text(s, 3, key->name, -1);
	if ((rc = rm_st_run_int(st, s, run_id, err, "cannot look up run")) || *run_id)
		return rc;
	return rm_err_set(err, RM_E_STORE, "run '%s' was created and is gone in database '%s'", key->name, st->path);
}

int rm_store_run_touch(struct rm_store *st, int64_t run_id, const char *loss_key, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st,
	                                 "UPDATE runs SET last_step = (SELECT MAX(step) FROM steps WHERE run_id = ?1),"
	                                 " loss_key = COALESCE(?2, loss_key), synced_at = ?3 WHERE id = ?1",
	                                 err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	if (loss_key)
		rm_dbq_text(s, 2, loss_key, -1);
	rm_dbq_double(s, 3, (double)time(NULL));
	return rm_st_run_once(st, s, err, "cannot update run");
}

/* The keys the run's latest import with batch composition read it from;
 * else (simulate, sync: no import row says) the columns its first batch
 * row holds. */
#define RUN_COMPOSITION                                                                                                \
	"COALESCE((SELECT composition FROM imports WHERE run_id = r.id AND composition IS NOT NULL"                    \
	" ORDER BY id DESC LIMIT 1), (SELECT NULLIF(SUBSTR(CASE WHEN bucket IS NOT NULL THEN ', bucket' ELSE '' END"   \
	" || CASE WHEN n IS NOT NULL THEN ', n' ELSE '' END || CASE WHEN lens IS NOT NULL THEN ', lens' ELSE '' END"   \
	" || CASE WHEN lens IS NULL AND max_len IS NOT NULL THEN ', max_len' ELSE '' END"                              \
	" || CASE WHEN lens IS NULL AND max_len IS NULL AND tokens IS NOT NULL THEN ', tokens' ELSE '' END, 3), '')"   \
	" FROM batches WHERE run_id = r.id ORDER BY step LIMIT 1))"
/* The last full diagnosis's verdict (severity, evidence). */
#define RUN_VERDICT(col)                                                                                               \
	"(SELECT " col " FROM findings WHERE run_id = r.id AND detector = 'verdict' ORDER BY id DESC LIMIT 1)"

/* The loss steps whose interval (the previous loss step, this one] holds a
 * batch row: each logged loss averages the steps since the last one, so a
 * run logged every 10 steps with a batch row at every step is covered in
 * full, and the share is at most 1 whatever the logging interval. The
 * bounds are plain comparisons so that each probe is one range of the
 * (run_id, step) key: an OR here made it quadratic. */
#define RUN_BATCH_STEPS                                                                                                \
	"(SELECT COUNT(*) FROM (SELECT step, LAG(step) OVER (ORDER BY step) AS prev FROM steps WHERE run_id = r.id) w" \
	" WHERE EXISTS (SELECT 1 FROM batches b WHERE b.run_id = r.id AND b.step <= w.step"                            \
	" AND b.step > COALESCE(w.prev, -9223372036854775807)))"

static const char run_info_sql[] =
    "SELECT r.id, r.source, r.entity, r.project, r.name, r.display_name, r.state, r.loss_key,"
    " (SELECT COUNT(*) FROM steps WHERE run_id = r.id),"
    " (SELECT MIN(step) FROM steps WHERE run_id = r.id),"
    " (SELECT MAX(step) FROM steps WHERE run_id = r.id),"
    " " RUN_BATCH_STEPS ", r.synced_at, " RUN_COMPOSITION
    ", " RUN_VERDICT("severity") ", " RUN_VERDICT("evidence_json") " FROM runs r";

static void read_run_info(struct rm_dbq *s, struct rm_run_info *r)
{
	r->id = rm_dbq_col_int(s, 0);
	r->source = rm_st_col_text(s, 1);
	r->entity = rm_st_col_text(s, 2);
	r->project = rm_st_col_text(s, 3);
	r->name = rm_st_col_text(s, 4);
	r->display_name = rm_st_col_text(s, 5);
	r->state = rm_st_col_text(s, 6);
	r->loss_key = rm_st_col_text(s, 7);
	r->steps = rm_dbq_col_int(s, 8);
	r->first_step = rm_dbq_col_int(s, 9);
	r->last_step = rm_dbq_col_int(s, 10);
	r->batch_steps = rm_dbq_col_int(s, 11);
	r->synced_at = rm_dbq_col_double(s, 12);
	r->composition = rm_st_col_text(s, 13);
	r->verdict_severity = rm_st_col_text(s, 14);
	r->verdict_evidence = rm_st_col_text(s, 15);
}

int rm_store_list_runs(struct rm_store *st, struct rm_run_info **out, size_t *n, struct rm_err *err)
{
	char sql[sizeof(run_info_sql) + 32];
	snprintf(sql, sizeof(sql), "%s ORDER BY r.id", run_info_sql);
	struct rm_dbq *s = rm_st_prepare(st, sql, err);
	size_t cap = 0;
	int rc;
	*out = NULL;
	*n = 0;
	if (!s)
		return RM_E_STORE;
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = rm_xrealloc(*out, cap * sizeof(**out));
		}
		read_run_info(s, &(*out)[(*n)++]);
	}
	if (rc != RM_DB_DONE) {
		rm_st_fail(st, err, "cannot list runs");
		rm_dbq_finalize(s);
		rm_run_info_free(*out, *n);
		*out = NULL;
		*n = 0;
		return RM_E_STORE;
	}
	rm_dbq_finalize(s);
	return RM_OK;
}

/* The same columns without the counts, which read the whole run; and the
 * run's last step, which the (run_id, step) key gives in O(log n). */
static const char run_brief_sql[] =
    "SELECT r.id, r.source, r.entity, r.project, r.name, r.display_name, r.state, r.loss_key, 0,"
    " (SELECT MIN(step) FROM steps WHERE run_id = r.id), (SELECT MAX(step) FROM steps WHERE run_id = r.id),"
    " 0, r.synced_at, " RUN_COMPOSITION ", NULL, NULL FROM runs r";

static int get_run(struct rm_store *st, const char *base, int64_t run_id, struct rm_run_info *out, struct rm_err *err)
{
	char sql[sizeof(run_info_sql) + 32];
	snprintf(sql, sizeof(sql), "%s WHERE r.id = ?1", base);
	struct rm_dbq *s = rm_st_prepare(st, sql, err);
	memset(out, 0, sizeof(*out));
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	int rc = rm_dbq_step(s, err);
	if (rc == RM_DB_ROW)
		read_run_info(s, out);
	rm_dbq_finalize(s);
	if (rc == RM_DB_ROW)
		return RM_OK;
	if (rc == RM_DB_DONE)
		return rm_err_set(err, RM_E_NOTFOUND, "no run with id %lld", (long long)run_id);
	return rm_st_fail(st, err, "cannot read run");
}

int rm_store_get_run(struct rm_store *st, int64_t run_id, struct rm_run_info *out, struct rm_err *err)
{
	return get_run(st, run_info_sql, run_id, out, err);
}

int rm_store_get_run_brief(struct rm_store *st, int64_t run_id, struct rm_run_info *out, struct rm_err *err)
{
	return get_run(st, run_brief_sql, run_id, out, err);
}

void rm_run_info_release(struct rm_run_info *r)
{
	free(r->source);
	free(r->entity);
	free(r->project);
	free(r->name);
	free(r->display_name);
	free(r->state);
	free(r->loss_key);
	free(r->composition);
	free(r->verdict_severity);
	free(r->verdict_evidence);
	memset(r, 0, sizeof(*r));
}

int rm_store_claim_run(struct rm_store *st, int64_t run_id, const char *source, int replace, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st,
	    "SELECT source, name, CASE WHEN EXISTS (SELECT 1 FROM steps WHERE run_id = ?1) THEN 1 ELSE 0 END"
	    " FROM runs WHERE id = ?1" /* a number: PostgreSQL's EXISTS is a boolean, "t" */,
	    err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	int rc = rm_dbq_step(s, err);
	if (rc != RM_DB_ROW) {
		rm_dbq_finalize(s);
		return rc == RM_DB_DONE ? RM_OK : rm_st_fail(st, err, "cannot read run");
	}
	char *old = rm_st_col_text(s, 0), *name = rm_st_col_text(s, 1);
	int sim_old = old && !strcmp(old, "sim"), sim_new = !strcmp(source, "sim"), held = rm_dbq_col_int(s, 2) != 0;
	rm_dbq_finalize(s);
	rc = RM_OK;
	if (held && sim_old && !sim_new && !replace)
		rc = rm_err_set(err, RM_E_INPUT,
		                "run '%s' holds a simulated run; this import would mix with it: give another --run, or"
		                " --replace to replace it",
		                name ? name : "?");
	else if (held && !sim_old && sim_new && !replace)
		rc =
		    rm_err_set(err, RM_E_INPUT,
		               "run '%s' holds real data (source %s); simulate would replace it: give another --run, or"
		               " --replace to replace it",
		               name ? name : "?", old ? old : "?");
	else if (held && sim_old != sim_new && !(rc = rm_store_clear_run(st, run_id, err))) {
		struct rm_dbq *u = rm_st_prepare(st, "UPDATE runs SET source = ?2 WHERE id = ?1", err);
		if (!u)
			rc = RM_E_STORE;
		else {
			rm_dbq_int(u, 1, run_id);
			rm_dbq_text(u, 2, source, -1);
			rc = rm_st_run_once(st, u, err, "cannot give the run to its new source");
		}
	}
	free(old);
	free(name);
	return rc;
}

int rm_store_clear_run(struct rm_store *st, int64_t run_id, struct rm_err *err)
{
	static const char *const tables[] = {"steps",          "batches",       "evals",         "buckets",
	                                     "findings",       "bucket_levels", "bucket_labels", "length_levels",
	                                     "length_factors", "rank_losses",   "other_losses"};
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char sql[64];
		snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE run_id = ?1", tables[i]);
		struct rm_dbq *s = rm_st_prepare(st, sql, err);
		if (!s)
			return RM_E_STORE;
		rm_dbq_int(s, 1, run_id);
		int rc = rm_st_run_once(st, s, err, "cannot clear run");
		if (rc)
			return rc;
	}
	return RM_OK;
}

int rm_store_delete_run(struct rm_store *st, int64_t run_id, struct rm_err *err)
{
	/* Every table of a run refers to runs(id) ON DELETE CASCADE (SQLite's
	 * foreign_keys is on); the clear first keeps that true of a store
	 * whose schema predates a table's reference. */
	int rc = rm_store_clear_run(st, run_id, err);
	if (rc)
		return rc;
	static const char *const more[] = {"DELETE FROM imports WHERE run_id = ?1",
	                                   "DELETE FROM tails WHERE run_id = ?1", "DELETE FROM runs WHERE id = ?1"};
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		struct rm_dbq *s = rm_st_prepare(st, more[i], err);
		if (!s)
			return RM_E_STORE;
		rm_dbq_int(s, 1, run_id);
		if ((rc = rm_st_run_once(st, s, err, "cannot delete run")))
			return rc;
	}
	return RM_OK;
}

/* Splits "ENTITY/PROJECT/NAME" (W&B) or "NAME" (local) in place. */
static int split_run_path(char *path, const char **entity, const char **project, const char **name)
{
	char *s1 = strchr(path, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	if (!s1) {
		*entity = *project = "";
		*name = path;
		return *path ? 0 : -1;
	}
	if (!s2 || strchr(s2 + 1, '/') || s1 == path || s2 == s1 + 1 || !s2[1])
		return -1;
	*s1 = *s2 = '\0';
	*entity = path;
	*project = s1 + 1;
	*name = s2 + 1;
	return 0;
}

int rm_store_rename_run(struct rm_store *st, int64_t run_id, const char *new_path, struct rm_err *err)
{
	char *path = rm_xstrdup(new_path), *old = NULL;
	const char *entity, *project, *name;
	int rc;
	if (split_run_path(path, &entity, &project, &name)) {
		free(path);
		return rm_err_set(err, RM_E_USAGE, "'%s' is not a run name: NAME, or ENTITY/PROJECT/ID", new_path);
	}
	struct rm_dbq *s =
	    rm_st_prepare(st,
	                  "SELECT CASE WHEN entity = '' THEN name ELSE entity || '/' || project || '/' || name END,"
	                  " (SELECT COUNT(*) FROM runs WHERE entity = ?2 AND project = ?3 AND name = ?4 AND id <> ?1)"
	                  " FROM runs WHERE id = ?1",
	                  err);
	if (!s) {
		free(path);
		return RM_E_STORE;
	}
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, entity, -1);
	rm_dbq_text(s, 3, project, -1);
	rm_dbq_text(s, 4, name, -1);
	if ((rc = rm_dbq_step(s, err)) != RM_DB_ROW) {
		rm_dbq_finalize(s);
		free(path);
		return rc == RM_DB_DONE ? rm_err_set(err, RM_E_NOTFOUND, "no run of id %lld", (long long)run_id)
		                        : rm_st_fail(st, err, "cannot read run");
	}
	old = rm_st_col_text(s, 0);
	int taken = rm_dbq_col_int(s, 1) > 0;
	rm_dbq_finalize(s);
	rc = RM_OK;
	if (taken)
		rc = rm_err_set(err, RM_E_INPUT,
		                "there is a run '%s' already in database '%s': remove it first (runmon rm)", new_path,
		                st->path);
	/* The report history is keyed by the name people read: it follows the
	 * run, so the next nightly report sees the same run, not one gone and
	 * one new. */
	static const char *const sql[] = {
	    "UPDATE runs SET entity = ?2, project = ?3, name = ?4 WHERE id = ?1",
	    "UPDATE report_runs SET run = ?1 WHERE run = ?2",
	    "UPDATE report_findings SET run = ?1 WHERE run = ?2",
	};
	for (size_t i = 0; !rc && i < sizeof(sql) / sizeof(sql[0]); i++) {
		if (!(s = rm_st_prepare(st, sql[i], err))) {
			rc = RM_E_STORE;
			break;
		}
		if (i == 0) {
			rm_dbq_int(s, 1, run_id);
			rm_dbq_text(s, 2, entity, -1);
			rm_dbq_text(s, 3, project, -1);
			rm_dbq_text(s, 4, name, -1);
		} else {
			rm_dbq_text(s, 1, new_path, -1);
			rm_dbq_text(s, 2, old ? old : "", -1);
		}
		rc = rm_st_run_once(st, s, err, "cannot rename run");
	}
	free(old);
	free(path);
	return rc;
}

int rm_store_drop_run_if_empty(struct rm_store *st, int64_t run_id, struct rm_err *err)
{
	struct rm_dbq *s =
	    rm_st_prepare(st,
	                  "DELETE FROM runs WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM steps WHERE run_id = ?1)"
	                  " AND NOT EXISTS (SELECT 1 FROM batches WHERE run_id = ?1)"
	                  " AND NOT EXISTS (SELECT 1 FROM evals WHERE run_id = ?1)",
	                  err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	return rm_st_run_once(st, s, err, "cannot drop an empty run");
}

void rm_run_info_free(struct rm_run_info *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rm_run_info_release(&runs[i]);
	free(runs);
}

/* "no run 'demo-homogenous' ...; did you mean 'demo-homogeneous'?": the
 * nearest of the stored names (local names, W&B paths and ids, display
 * names), from at most 10000 runs. */
static int not_found(struct rm_store *st, const char *spec, struct rm_err *err)
{
	struct rm_err qerr;
	struct rm_dbq *s =
	    rm_st_prepare(st,
	                  "SELECT CASE WHEN entity = '' THEN name ELSE entity || '/' || project || '/' || name"
	                  " END, display_name FROM runs ORDER BY id LIMIT 10000",
	                  &qerr);
	char **names = NULL;
	size_t n = 0, cap = 0;
	while (s && rm_dbq_step(s, &qerr) == RM_DB_ROW)
		for (int c = 0; c < 2; c++) {
			const char *v = rm_dbq_col_text(s, c);
			if (!v || !*v)
				continue;
			if (n == cap)
				names = rm_xrealloc(names, (cap = cap ? 2 * cap : 64) * sizeof(char *));
			names[n++] = rm_xstrdup(v);
		}
	if (s)
		rm_dbq_finalize(s);
	const char *near = rm_nearest(spec, (const char *const *)names, n);
	int rc;
	if (near)
		rc = rm_err_set(err, RM_E_NOTFOUND, "no run '%s' in database '%s'; did you mean '%s'?", spec, st->path,
		                near);
	else
		rc = rm_err_set(err, RM_E_NOTFOUND, "no run '%s' in database '%s' (see 'runmon runs')", spec, st->path);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int rm_store_find_run(struct rm_store *st, const char *spec, int64_t *run_id, struct rm_err *err)
{
	const char *s1 = strchr(spec, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	struct rm_dbq *s;
	int found = 0, rank[2] = {0, 0}, rc;
	if (s1 && s2 && !strchr(s2 + 1, '/')) {
		s = rm_st_prepare(st, "SELECT id, 2 FROM runs WHERE entity = ?1 AND project = ?2 AND name = ?3", err);
		if (!s)
			return RM_E_STORE;
		rm_dbq_text(s, 1, spec, (int)(s1 - spec));
		rm_dbq_text(s, 2, s1 + 1, (int)(s2 - s1 - 1));
		rm_dbq_text(s, 3, s2 + 1, -1);
	} else {
		/* Rank 2: a local run of that name; 1: a W&B run id; 0: a display
		 * name. The best rank wins; a tie is ambiguous. */
		s = rm_st_prepare(
		    st,
		    "SELECT id, CASE WHEN entity = '' AND name = ?1 THEN 2 WHEN name = ?1 THEN 1 ELSE 0 END AS r"
		    " FROM runs WHERE name = ?1 OR display_name = ?1 ORDER BY r DESC, id LIMIT 2",
		    err);
		if (!s)
			return RM_E_STORE;
		rm_dbq_text(s, 1, spec, -1);
	}
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW && found < 2) {
		if (found == 0)
			*run_id = rm_dbq_col_int(s, 0);
		rank[found++] = (int)rm_dbq_col_int(s, 1);
	}
	rm_dbq_finalize(s);
	if (rc != RM_DB_DONE && rc != RM_DB_ROW)
		return rm_st_fail(st, err, "cannot look up run");
	if (!found)
		return not_found(st, spec, err);
	if (found == 2 && rank[0] == rank[1] && rank[0] < 2)
		return rm_err_set(err, RM_E_USAGE,
		                  "run '%s' is ambiguous in database '%s': name it as ENTITY/PROJECT/ID", spec,
		                  st->path);
	return RM_OK;
}

int rm_store_set_config(struct rm_store *st, int64_t run_id, const char *config_json, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(st, "UPDATE runs SET config_json = ?2 WHERE id = ?1", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, config_json, -1);
	return rm_st_run_once(st, s, err, "cannot set run config");
}

/* RFC 7396 (JSON Merge Patch): an object merges member by member, a null
 * member removes, anything else replaces. Takes target's reference. */
static json_t *merge_patch(json_t *target, json_t *patch)
{
	const char *k;
	json_t *v;
	if (!json_is_object(patch)) {
		json_decref(target);
		return json_incref(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		target = json_object();
	}
	json_object_foreach (patch, k, v) {
		if (json_is_null(v))
			json_object_del(target, k);
		else
			json_object_set_new(target, k, merge_patch(json_incref(json_object_get(target, k)), v));
	}
	return target;
}

int rm_store_merge_config(struct rm_store *st, int64_t run_id, const char *patch_json, struct rm_err *err)
{
	json_error_t jerr;
	json_t *patch = json_loads(patch_json, JSON_DECODE_ANY, &jerr), *config = NULL;
	if (!patch)
		return rm_err_set(err, RM_E_INPUT, "a run config that is not JSON: %s", jerr.text);
	struct rm_dbq *s = rm_st_prepare(st, "SELECT config_json FROM runs WHERE id = ?1", err);
	int rc = s ? rm_dbq_step(s, err) : -RM_E_STORE;
	if (rc == RM_DB_ROW && rm_dbq_col_text(s, 0))
		config = json_loads(rm_dbq_col_text(s, 0), JSON_DECODE_ANY, NULL);
	rm_dbq_finalize(s);
	char *text = NULL;
	if (rc >= 0) {
		config = merge_patch(config, patch);
		text = json_dumps(config, JSON_COMPACT | JSON_ENCODE_ANY);
		rc = rm_store_set_config(st, run_id, text, err);
	} else {
		rc = rm_st_fail(st, err, "cannot merge run config");
	}
	free(text);
	json_decref(config);
	json_decref(patch);
	return rc;
}

int rm_store_set_run_state(struct rm_store *st, int64_t run_id, const char *display_name, const char *state,
                           struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st, "UPDATE runs SET display_name = COALESCE(?2, display_name), state = COALESCE(?3, state) WHERE id = ?1",
	    err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_text(s, 2, display_name, -1);
	rm_dbq_text(s, 3, state, -1);
	return rm_st_run_once(st, s, err, "cannot update run");
}

int rm_store_set_run_meta(struct rm_store *st, int64_t run_id, const struct rm_run_meta *m, struct rm_err *err)
{
	struct rm_dbq *s =
	    rm_st_prepare(st,
	                  "UPDATE runs SET source = 'wandb', display_name = COALESCE(?2, display_name),"
	                  " state = COALESCE(?3, state), config_json = COALESCE(?4, config_json),"
	                  " created_at = COALESCE(?5, created_at), heartbeat_at = COALESCE(?6, heartbeat_at),"
	                  " remote_last_step = COALESCE(?7, remote_last_step),"
	                  " history_lines = COALESCE(?8, history_lines) WHERE id = ?1",
	                  err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	if (m->display_name)
		rm_dbq_text(s, 2, m->display_name, -1);
	if (m->state)
		rm_dbq_text(s, 3, m->state, -1);
	if (m->config_json)
		rm_dbq_text(s, 4, m->config_json, -1);
	if (m->created_at > 0)
		rm_dbq_double(s, 5, m->created_at);
	if (m->heartbeat_at > 0)
		rm_dbq_double(s, 6, m->heartbeat_at);
	if (m->remote_last_step >= 0)
		rm_dbq_int(s, 7, m->remote_last_step);
	if (m->history_lines >= 0)
		rm_dbq_int(s, 8, m->history_lines);
	return rm_st_run_once(st, s, err, "cannot update run");
}

struct waiting {
	struct rm_store *st;
	int64_t run_id;
};

/* Tells the wait function once per run, by the run's name. */
static void waiting(void *arg, const char *holder)
{
	struct waiting *w = arg;
	struct rm_run_info info;
	struct rm_err err;
	if (!w->st->wait || w->st->told == w->run_id)
		return;
	w->st->told = w->run_id;
	if (rm_store_get_run_brief(w->st, w->run_id, &info, &err)) {
		w->st->wait(w->st->wait_arg, "?", holder);
		return;
	}
	char *name = *info.entity ? rm_xasprintf("%s/%s/%s", info.entity, info.project, info.name) : NULL;
	w->st->wait(w->st->wait_arg, name ? name : info.name, holder);
	free(name);
	rm_run_info_release(&info);
}

int rm_store_lock_run(struct rm_store *st, int64_t run_id, struct rm_err *err)
{
	struct waiting w = {st, run_id};
	return rm_db_lock_run(st->db, run_id, waiting, &w, err);
}

int rm_store_step_at(struct rm_store *st, int64_t run_id, double t, int64_t *step, struct rm_err *err)
{
	struct rm_dbq *s = rm_st_prepare(
	    st, "SELECT MIN(CASE WHEN ts >= ?2 THEN step END), COUNT(ts) FROM steps WHERE run_id = ?1", err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	rm_dbq_double(s, 2, t);
	int rc = rm_dbq_step(s, err);
	if (rc != RM_DB_ROW) {
		rm_dbq_finalize(s);
		return rm_st_fail(st, err, "cannot read the run's step times");
	}
	int none = rm_dbq_isnull(s, 0);
	int64_t first = none ? 0 : rm_dbq_col_int(s, 0), timed = rm_dbq_col_int(s, 1);
	rm_dbq_finalize(s);
	if (!timed)
		return rm_err_set(err, RM_E_INPUT, "the run logs no step times: give --since a step");
	if (none)
		return rm_err_set(err, RM_E_INPUT, "no step was logged at or after that time");
	*step = first;
	return RM_OK;
}

/* Is a the path b names (as given, or the same file)? */
static int same_file(const char *a, const char *b)
{
	if (!strcmp(a, b))
		return 1;
	char *ra = realpath(a, NULL), *rb = ra ? realpath(b, NULL) : NULL;
	int same = ra && rb && !strcmp(ra, rb);
	free(ra);
	free(rb);
	return same;
}

int rm_store_foreign_steps(struct rm_store *st, int64_t run_id, const char *path, char **from,
                           void (*each)(void *arg, int64_t step), void *arg, struct rm_err *err)
{
	*from = NULL;
	/* the other sources' ranges; a NULL range (not known) spans all */
	struct rm_dbq *s =
	    rm_st_prepare(st,
	                  "SELECT path, first_step, last_step FROM imports WHERE run_id = ?1 AND steps > 0"
	                  " UNION ALL SELECT 'W&B', NULL, NULL FROM runs WHERE id = ?1 AND source = 'wandb'"
	                  " AND EXISTS (SELECT 1 FROM steps WHERE run_id = ?1)",
	                  err);
	if (!s)
		return RM_E_STORE;
	rm_dbq_int(s, 1, run_id);
	int rc, whole = 0;
	size_t n = 0, cap = 0;
	int64_t *range = NULL; /* lo, hi pairs */
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		char *p = rm_st_col_text(s, 0);
		if (!p || same_file(p, path)) {
			free(p);
			continue;
		}
		if (!*from)
			*from = p;
		else
			free(p);
		if (rm_dbq_isnull(s, 1) || rm_dbq_isnull(s, 2)) {
			whole = 1;
			continue;
		}
		if (n == cap)
			range = rm_xrealloc(range, (cap = cap ? cap * 2 : 8) * 2 * sizeof(*range));
		range[2 * n] = rm_dbq_col_int(s, 1);
		range[2 * n + 1] = rm_dbq_col_int(s, 2);
		n++;
	}
	rm_dbq_finalize(s);
	if (rc != RM_DB_DONE) {
		free(range);
		return rm_st_fail(st, err, "cannot read the run's imports");
	}
	if (!*from) {
		free(range);
		return RM_OK;
	}
	s = rm_st_prepare(st, "SELECT step FROM steps WHERE run_id = ?1 ORDER BY step", err);
	if (!s) {
		free(range);
		return RM_E_STORE;
	}
	rm_dbq_int(s, 1, run_id);
	while ((rc = rm_dbq_step(s, err)) == RM_DB_ROW) {
		int64_t step = rm_dbq_col_int(s, 0);
		int in = whole;
		for (size_t i = 0; i < n && !in; i++)
			in = step >= range[2 * i] && step <= range[2 * i + 1];
		if (in)
			each(arg, step);
	}
	rm_dbq_finalize(s);
	free(range);
	return rc == RM_DB_DONE ? RM_OK : rm_st_fail(st, err, "cannot read the run's steps");
}
