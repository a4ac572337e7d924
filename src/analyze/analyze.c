/*
 * analyze.c - see runmon/analyze.h.
 */
#include "runmon/analyze.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "runmon/cost.h"
#include "runmon/render.h"

static const char *const checkpoint_keys[] = {"save_steps",         "save_every",          "save_interval",
                                              "checkpoint_every",   "checkpoint_interval", "ckpt_every",
                                              "save_every_n_steps", "checkpoint_steps",    NULL};
static const char *const epoch_keys[] = {"steps_per_epoch", "num_update_steps_per_epoch", NULL};

void rm_analyze_opts_default(struct rm_analyze_opts *o)
{
	memset(o, 0, sizeof(*o));
	rm_detect_opts_default(&o->detect);
	o->store_findings = 1;
}

static int int_value(json_t *v, int64_t *out)
{
	if (json_is_object(v)) /* W&B config: {"value": V, "desc": ...} */
		v = json_object_get(v, "value");
	/* a step count: below 2^53 as every step is (1e300 would overflow the
	 * cast, and INT64_MAX the detectors' sums) */
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < (json_int_t)1 << 53) {
		*out = json_integer_value(v);
		return 1;
	}
	if (json_is_real(v) && json_real_value(v) >= 1 && json_real_value(v) < 9007199254740992.0 &&
	    json_real_value(v) == floor(json_real_value(v))) {
		*out = (int64_t)json_real_value(v);
		return 1;
	}
	return 0;
}

int rm_config_int(const char *config_json, const char *const *keys, int64_t *out)
{
	if (!config_json)
		return 0;
	json_t *root = json_loads(config_json, 0, NULL), *v;
	const char *k;
	int found = 0;
	if (!json_is_object(root))
		goto out;
	for (int i = 0; keys[i] && !found; i++)
		found = int_value(json_object_get(root, keys[i]), out);
	json_object_foreach (root, k, v) {
		if (found)
			break;
		if (json_is_object(v) && json_object_get(v, "value"))
			v = json_object_get(v, "value");
		for (int i = 0; keys[i] && !found && json_is_object(v); i++)
			found = int_value(json_object_get(v, keys[i]), out);
	}
out:
	json_decref(root);
	return found;
}

/* How many of n ascending steps come before until. */
static size_t before(const int64_t *step, size_t n, int64_t until)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (step[mid] < until)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Cuts the series to the steps before until: every array is in step order,
 * so each is cut to a prefix (mixed rows too: theirs ascend). */
static void series_until(struct rm_series *s, struct rm_mix *mix, int64_t until)
{
	s->n = before(s->step, s->n, until);
	s->nb = before(s->bstep, s->nb, until);
	s->nrl = s->rl_step ? before(s->rl_step, s->nrl, until) : 0;
	if (s->mix) {
		*mix = *s->mix;
		while (mix->n && mix->row[mix->n - 1] >= s->nb)
			mix->n--;
		s->mix = mix->n ? mix : NULL;
	}
}

/* Keeps the sampled batches before until, in place. */
static void cost_until(struct rm_store_cost *c, int64_t until)
{
	size_t k = 0;
	for (size_t i = 0; i < c->nb; i++) {
		if (c->step[i] >= until)
			continue;
		c->step[k] = c->step[i];
		c->bucket[k] = c->bucket[i];
		c->n[k] = c->n[i];
		c->min_len[k] = c->min_len[i];
		c->max_len[k] = c->max_len[i];
		c->tokens[k] = c->tokens[i];
		c->padded[k] = c->padded[i];
		c->dt[k] = c->dt[i];
		c->step_dt[k] = c->step_dt[i];
		k++;
	}
	c->nb = k;
}

int rm_analyze_common_bounds(struct rm_store *st, const int64_t *run, const int64_t *since, const int64_t *until,
                             int nruns, int64_t *bounds, int *nbounds, struct rm_err *err)
{
	double *lo = NULL, *hi = NULL;
	size_t n = 0;
	*nbounds = 0;
	for (int i = 0; i < nruns; i++) {
		double *a, *b;
		size_t m;
		int rc = rm_store_unbucketed_lengths(st, run[i], since[i], until[i], &a, &b, &m, err);
		if (rc) {
			free(lo);
			free(hi);
			return rc;
		}
		lo = rm_xrealloc(lo, (n + m + 1) * sizeof(double));
		hi = rm_xrealloc(hi, (n + m + 1) * sizeof(double));
		if (m) { /* memcpy from NULL is undefined even for 0 bytes */
			memcpy(lo + n, a, m * sizeof(double));
			memcpy(hi + n, b, m * sizeof(double));
		}
		n += m;
		free(a);
		free(b);
	}
	struct rm_bucket_map m;
	if (n && rm_bucket_map_derive(&m, NULL, 0, lo, hi, n, NULL)) {
		*nbounds = m.nbound;
		memcpy(bounds, m.bound, (size_t)m.nbound * sizeof(int64_t));
		rm_bucket_map_release(&m);
	}
	free(lo);
	free(hi);
	return RM_OK;
}

/* The detectors' view of a loaded series (its arrays are borrowed). */
static struct rm_series series_of(const struct rm_store_series *ss, const struct rm_analyze_opts *o,
                                  const struct rm_run_info *info)
{
	struct rm_series s = {
	    .n = ss->n,
	    .step = ss->step,
	    .loss = ss->loss,
	    .nonfinite = ss->nonfinite,
	    .lr = ss->lr,
	    .epoch = ss->epoch,
	    .nb = ss->nb,
	    .bstep = ss->bstep,
	    .brank = ss->brank,
	    .nranks = ss->nranks,
	    .bucket = ss->bucket,
	    .max_len = ss->max_len,
	    .checkpoint_every = o->checkpoint_every,
	    .steps_per_epoch = o->steps_per_epoch,
	    .labels = ss->map.label,
	    .nlabels = ss->map.k,
	    .labels_seen = ss->map.labels,
	    .tokens_only = ss->tokens_only,
	    .mix = ss->mix.n ? &ss->mix : NULL,
	    .derived_bounds = ss->map.derived ? ss->map.bound : NULL,
	    .nderived_bounds = ss->map.derived ? ss->map.nbound : 0,
	    .derived_cut_points = ss->map.derived && ss->map.cut_points,
	    .nrl = ss->nrl,
	    .rl_step = ss->rl_step,
	    .rl_rank = ss->rl_rank,
	    .rl_loss = ss->rl_loss,
	    .reading_hint = rm_loss_key_reading(info->loss_key),
	};
	return s;
}

struct detect_job {
	const struct rm_series *s;
	const struct rm_detect_opts *o;
	struct rm_diagnosis *d;
};

static void *detect_thread(void *arg)
{
	struct detect_job *j = arg;
	rm_detect_all(j->s, j->o, j->d);
	return NULL;
}

int rm_analyze_join(struct rm_store *st, int64_t run_id, const struct rm_analyze_opts *o, struct rm_join *j,
                    struct rm_reading_fit *rf, struct rm_err *err)
{
	struct rm_run_info info;
	struct rm_store_series ss;
	int rc = rm_store_get_run_brief(st, run_id, &info, err);
	if (rc)
		return rc;
	struct rm_derive derive = {rm_bucket_map_derive, o->derive_bounds, o->nderive_bounds};
	if (!(rc = rm_store_load_series(st, run_id, o->since, &derive, &ss, err))) {
		struct rm_series s = series_of(&ss, o, &info);
		rm_detect_join(&s, &o->detect, j, rf);
		rm_store_series_release(&ss);
	}
	rm_run_info_release(&info);
	return rc;
}

int rm_analyze_run(struct rm_store *st, int64_t run_id, const struct rm_analyze_opts *o, struct rm_diagnosis *d,
                   struct rm_run_info *info, struct rm_err *err)
{
	struct rm_store_series ss;
	/* The counts come from the loaded series: in SQL they would read the
	 * whole run once more (8M rows for 1M steps on 8 ranks). */
	int rc = rm_store_get_run_brief(st, run_id, info, err);
	if (rc)
		return rc;
	int64_t since = o->since;
	if (o->window && info->last_step - o->window + 1 > since)
		since = info->last_step - o->window + 1;
	struct rm_derive derive = {rm_bucket_map_derive, o->derive_bounds, o->nderive_bounds};
	if ((rc = rm_store_load_series(st, run_id, since, &derive, &ss, err))) {
		rm_run_info_release(info);
		return rc;
	}
	if (!o->window) {
		info->steps = (int64_t)ss.n;
		info->batch_steps = rm_batch_steps_covered(ss.step, ss.n, ss.bstep, ss.nb);
	}
	struct rm_series s = series_of(&ss, o, info);
	struct rm_mix cut_mix;
	if (o->until > 0)
		series_until(&s, &cut_mix, o->until);
	if (!s.checkpoint_every)
		rm_config_int(ss.config_json, checkpoint_keys, &s.checkpoint_every);
	if (!s.steps_per_epoch)
		rm_config_int(ss.config_json, epoch_keys, &s.steps_per_epoch);
	/* The detectors never touch the store: they run on a thread while this
	 * one reads and re-packs a sample of batches for the cost side. */
	struct detect_job job = {&s, &o->detect, d};
	pthread_t th;
	int threaded = pthread_create(&th, NULL, detect_thread, &job) == 0;
	if (!threaded)
		detect_thread(&job);
	struct rm_store_cost c;
	struct rm_padding_result cost;
	struct rm_err cerr;
	memset(&cost, 0, sizeof(cost));
	if (!o->window && rm_store_load_cost(st, run_id, since, 4000, &ss.map, &c, &cerr) == RM_OK) {
		if (o->until > 0)
			cost_until(&c, o->until);
		int derived = ss.map.derived && !ss.nbounds; /* the derived boundaries stand for the current ones */
		struct rm_padding_input pi = {c.nb,
		                              c.step,
		                              c.bucket,
		                              c.n,
		                              c.min_len,
		                              c.max_len,
		                              c.tokens,
		                              c.padded,
		                              c.dt,
		                              c.step_dt,
		                              derived ? ss.map.bound : ss.bounds,
		                              derived ? ss.map.nbound : ss.nbounds,
		                              o->detect.seed,
		                              o->lengths,
		                              o->nlengths,
		                              c.lens,
		                              c.lens_at,
		                              c.lens_n};
		rm_padding_analyze(&pi, &cost);
		cost.stride = c.stride;
		rm_store_cost_release(&c);
	}
	if (threaded)
		pthread_join(th, NULL);
	d->cost = cost;
	if (o->each_series && (rc = o->each_series(o->each_arg, &s, d, err))) {
		rm_store_series_release(&ss);
		rm_diagnosis_release(d);
		rm_run_info_release(info);
		return rc;
	}
	d->stored = !o->store_findings                          ? RM_NOT_STORED
	            : o->since > 0 || o->window || o->until > 0 ? RM_NOT_STORED_PARTIAL
	            : rm_store_readonly(st)                     ? RM_NOT_STORED_READONLY
	                                                        : RM_STORED;
	if (d->stored == RM_STORED && d->split.ok && !ss.map.derived && /* derived buckets have no stored id */
	    rm_store_replace_levels(st, run_id, &ss.map, d->split.bucket, d->split.offset, d->split.level, d->split.k,
	                            d->split.log_scale, err)) {
		rm_store_series_release(&ss);
		rm_diagnosis_release(d);
		rm_run_info_release(info);
		return err->code;
	}
	rm_store_series_release(&ss);
	const struct rm_length_result *len = &d->length;
	struct rm_length_fit fit = {
	    len->ok && len->coupled, len->log_scale, len->slope, len->ref_len, len->r2, len->min_len, len->max_len};
	if (d->stored == RM_STORED && rm_store_replace_length(st, run_id, &fit, err)) {
		rm_diagnosis_release(d);
		rm_run_info_release(info);
		return err->code;
	}
	if (d->stored == RM_STORED) {
		struct rm_finding_row *rows;
		size_t n = rm_render_findings(d, &rows);
		rc = rm_store_replace_findings(st, run_id, rows, n, err);
		rm_findings_free(rows, n);
		if (rc) {
			rm_diagnosis_release(d);
			rm_run_info_release(info);
		}
	}
	return rc;
}
