/*
 * render_json.c - the diagnosis as JSON (schema runmon.diagnosis/4,
 * documented in docs/decisions.md) and as finding rows for the store. Every
 * number the text report shows is here; non-finite numbers become null.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/render.h"
#include "report_internal.h"

static json_t *series(const double *v, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, rm_json_num(v[i]));
	return a;
}

static json_t *runs_json(const struct rm_runs_result *r)
{
	json_t *o = json_pack("{s:b, s:I, s:i, s:b}", "ok", r->ok, "batches", (json_int_t)r->n, "buckets", r->k,
	                      "flagged", r->flagged);
	if (!r->ok)
		return o;
	json_object_set_new(o, "sequences", json_integer(r->sequences));
	json_object_set_new(o, "runs", rm_json_num(r->runs));
	json_object_set_new(o, "expected", rm_json_num(r->expected));
	json_object_set_new(o, "variance", rm_json_num(r->var));
	json_object_set_new(o, "z", rm_json_num(r->z));
	json_object_set_new(o, "p", rm_json_num(r->p));
	json_t *per = json_array(), *worst = json_array();
	for (int i = 0; i < r->k; i++) {
		const struct rm_bucket_runs *b = &r->per[i];
		json_array_append_new(per, json_pack("{s:i, s:I, s:o, s:o, s:o, s:I, s:o}", "bucket", b->bucket,
		                                     "batches", (json_int_t)b->steps, "share", rm_json_num(b->share),
		                                     "mean_run", rm_json_num(b->mean_run), "expected_mean_run",
		                                     rm_json_num(b->expected_mean_run), "longest",
		                                     (json_int_t)b->longest, "p_longest", rm_json_num(b->p_longest)));
	}
	for (int i = 0; i < r->nworst; i++) {
		json_t *w = json_pack("{s:i, s:I, s:I, s:I}", "bucket", r->worst[i].bucket, "first_step",
		                      (json_int_t)r->worst[i].first_step, "last_step",
		                      (json_int_t)r->worst[i].last_step, "length", (json_int_t)r->worst[i].length);
		if (r->worst[i].rank >= 0)
			json_object_set_new(w, "rank", json_integer(r->worst[i].rank));
		json_array_append_new(worst, w);
	}
	json_object_set_new(o, "per_bucket", per);
	json_object_set_new(o, "longest_runs", worst);
	return o;
}

static json_t *mixture_json(const struct rm_mixture_result *m)
{
	json_t *o = json_pack("{s:b, s:s}", "ok", m->ok, "shape", rm_mix_shape_name(m->shape));
	if (!m->ok)
		return o;
	json_object_set_new(o, "severity", json_string(rm_severity_name(m->severity)));
	json_object_set_new(o, "ranks", json_integer(m->ranks));
	json_object_set_new(o, "steps", json_integer((json_int_t)m->steps));
	json_object_set_new(o, "batches_per_step", rm_json_num(m->per_step));
	json_object_set_new(o, "multi_rank_share", rm_json_num(m->multi_rank));
	json_object_set_new(o, "concordance",
	                    m->ranks > 1 && m->concordance_expected > 0
	                        ? json_pack("{s:o, s:o, s:o}", "observed", rm_json_num(m->concordance), "expected",
	                                    rm_json_num(m->concordance_expected), "z", rm_json_num(m->concordance_z))
	                        : json_null());
	json_object_set_new(o, "ranks_tested", json_integer(m->ranks_tested));
	json_object_set_new(o, "ranks_streaking", json_integer(m->ranks_flagged));
	json_object_set_new(o, "rank_z",
	                    m->ranks_tested
	                        ? json_pack("{s:o, s:o, s:o}", "min", rm_json_num(m->rank_z_min), "median",
	                                    rm_json_num(m->rank_z_median), "max", rm_json_num(m->rank_z_max))
	                        : json_null());
	json_t *w = json_array();
	for (int i = 0; i < m->windows; i++)
		json_array_append_new(w, json_pack("{s:I, s:o, s:o, s:o, s:o}", "steps", (json_int_t)m->window[i],
		                                   "chi2_ratio", rm_json_num(m->ratio[i]), "z",
		                                   rm_json_num(m->ratio_z[i]), "tv", rm_json_num(m->tv[i]), "tv_random",
		                                   rm_json_num(m->tv_random[i])));
	json_object_set_new(o, "windows", w);
	json_object_set_new(o, "worst_window", m->worst >= 0 ? json_integer(m->window[m->worst]) : json_null());
	json_object_set_new(o, "drifts", json_boolean(m->drifts));
	json_object_set_new(o, "persistence_steps", rm_json_num(m->persistence));
	return o;
}

static json_t *split_json(const struct rm_split_result *s, const struct rm_curves *cv)
{
	json_t *o = json_pack("{s:b, s:b}", "ok", s->ok, "flagged", s->flagged);
	if (s->ok) {
		json_object_set_new(o, "scale", json_string(s->log_scale ? "log" : "linear"));
		json_object_set_new(o, "eta2", rm_json_num(s->eta2));
		json_object_set_new(o, "mixed", json_boolean(s->mixed));
		json_object_set_new(o, "mixed_batches", json_integer((json_int_t)s->mixed_batches));
		json_object_set_new(o, "f", rm_json_num(s->f));
		json_object_set_new(o, "df1", rm_json_num(s->df1));
		json_object_set_new(o, "df2", rm_json_num(s->df2));
		json_object_set_new(o, "p", rm_json_num(s->p));
	}
	json_t *modes = json_pack("{s:i, s:b, s:b, s:o, s:o, s:o}", "count", s->modes, "aligned", s->aligned,
	                          "trimodal", s->trimodal, "means", series(s->mode_mean, s->modes), "weights",
	                          series(s->mode_weight, s->modes), "bic", series(s->bic, 4));
	json_object_set_new(o, "modes", modes);
	if (s->levels >= 2) { /* the loss alone */
		json_t *lv = json_array();
		for (int c = 0; c < s->levels; c++)
			json_array_append_new(lv, json_pack("{s:o, s:o, s:o}", "at", rm_json_num(s->level_at[c]),
			                                    "ratio", rm_json_num(s->level_ratio[c]), "share",
			                                    rm_json_num(s->level_share[c])));
		json_object_set_new(o, "levels",
		                    json_pack("{s:s, s:o, s:I, s:o, s:o}", "scale", s->level_log ? "log" : "linear",
		                              "levels", lv, "runs", (json_int_t)s->level_runs, "runs_expected",
		                              rm_json_num(s->level_runs_expected), "runs_z",
		                              rm_json_num(s->level_runs_z)));
	} else {
		json_object_set_new(o, "levels", json_null());
	}
	json_t *b = json_array();
	for (int i = 0; i < cv->k; i++) {
		json_t *e =
		    json_pack("{s:i, s:o, s:o}", "bucket", cv->bucket[i], "mean_loss", rm_json_num(cv->bucket_mean[i]),
		              "mean_adjusted", rm_json_num(cv->bucket_adjusted_mean[i]));
		if (s->ok) {
			json_object_set_new(e, "offset", rm_json_num(s->offset[i]));
			json_object_set_new(e, "level", rm_json_num(s->level[i]));
			json_object_set_new(
			    e, "level_ci",
			    json_pack("[o, o]", rm_json_num(s->level_lo[i]), rm_json_num(s->level_hi[i])));
			json_object_set_new(e, "points", rm_json_num(s->weight[i]));
			json_object_set_new(e, "mode", json_integer(s->mode_of_bucket[i] + 1));
			json_object_set_new(e, "purity", rm_json_num(s->bucket_purity[i]));
		}
		json_object_set_new(e, "loss_curve", series(cv->bucket_loss[i], cv->bins));
		json_object_set_new(e, "adjusted_curve", series(cv->bucket_adjusted[i], cv->bins));
		json_array_append_new(b, e);
	}
	json_object_set_new(o, "buckets", b);
	return o;
}

static json_t *ladder_json(const struct rm_ladder_result *l)
{
	json_t *o = json_pack("{s:b, s:b}", "ok", l->ok, "flagged", l->flagged);
	if (l->ok) {
		json_t *list = json_array();
		for (size_t i = 0; i < l->count && i < RM_MAX_LIST; i++) {
			const struct rm_ladder *x = &l->list[i];
			json_array_append_new(list, json_pack("{s:I, s:I, s:i, s:o, s:o, s:o, s:o}", "first_step",
			                                      (json_int_t)x->first_step, "last_step",
			                                      (json_int_t)x->last_step, "rises", x->rises, "height",
			                                      rm_json_num(x->height), "long_share",
			                                      rm_json_num(x->long_share), "mk_s", rm_json_num(x->mk_s),
			                                      "mk_z", rm_json_num(x->mk_z)));
		}
		json_object_set_new(o, "interval", json_integer(l->interval));
		json_object_set_new(o, "count", json_integer((json_int_t)l->count));
		json_object_set_new(o, "shuffled_mean", rm_json_num(l->perm_mean));
		json_object_set_new(o, "p", rm_json_num(l->p));
		json_object_set_new(o, "permutations", json_integer(l->perms));
		json_object_set_new(o, "tested", json_boolean(l->perms > 0)); /* against bucket order */
		json_object_set_new(o, "long_share_overall", rm_json_num(l->long_share_overall));
		json_object_set_new(o, "ladders", list);
	}
	json_object_set_new(o, "length_ramp",
	                    json_pack("{s:b, s:i, s:o, s:o, s:o}", "detected", l->ramp, "period", l->ramp_period,
	                              "descending_share", rm_json_num(l->ramp_desc_share), "acf_max_len",
	                              rm_json_num(l->ramp_acf_len), "acf_loss", rm_json_num(l->ramp_acf_loss)));
	return o;
}

static json_t *divergence_json(const struct rm_divergence *v)
{
	if (!v->found)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "first_step", (json_int_t)v->first_step, "points",
	                 (json_int_t)v->points, "nan", (json_int_t)v->nan, "inf", (json_int_t)v->inf, "exploded",
	                 (json_int_t)v->exploded, "baseline", rm_json_num(v->baseline), "peak", rm_json_num(v->peak));
}

static json_t *resets_json(const struct rm_resets_result *r)
{
	json_t *o = json_pack("{s:b, s:b}", "ok", r->ok, "flagged", r->flagged);
	if (!r->ok)
		return o;
	json_object_set_new(o, "interval", rm_json_num(r->interval));
	json_object_set_new(o, "spikes", json_integer((json_int_t)r->spikes));
	json_object_set_new(o, "bucket_tested", json_integer((json_int_t)r->bucket_tested));
	json_object_set_new(o, "spikes_2x", json_integer((json_int_t)r->spikes_2x));
	json_object_set_new(o, "spikes_global", json_integer((json_int_t)r->spikes_global));
	json_object_set_new(o, "spikes_adjusted", json_integer((json_int_t)r->spikes_adjusted));
	json_object_set_new(o, "vanish_share", rm_json_num(r->vanish_share));
	json_object_set_new(o, "cluster_by_bucket", json_boolean(r->cluster_by_bucket));
	json_object_set_new(o, "checkpoint_cause", json_boolean(r->checkpoint_cause));
	json_object_set_new(o, "periodic_cause", json_boolean(r->periodic_cause));
	json_t *list = json_array(), *buckets = json_array();
	for (size_t i = 0; i < r->spikes && i < RM_MAX_LIST; i++)
		json_array_append_new(list,
		                      json_pack("{s:I, s:i, s:o, s:o, s:o, s:I}", "step", (json_int_t)r->list[i].step,
		                                "bucket", r->list[i].bucket, "loss", rm_json_num(r->list[i].loss),
		                                "baseline", rm_json_num(r->list[i].baseline), "peak",
		                                rm_json_num(r->list[i].peak), "points", (json_int_t)r->list[i].points));
	json_object_set_new(o, "largest", list);
	for (int b = 0; b < r->k; b++)
		json_array_append_new(
		    buckets, json_pack("{s:i, s:I, s:o, s:o, s:o}", "bucket", r->bucket[b], "spikes",
		                       (json_int_t)r->bucket_spikes[b], "enrichment", rm_json_num(r->enrichment[b]),
		                       "p", rm_json_num(r->enrich_p[b]), "q", rm_json_num(r->enrich_q[b])));
	json_object_set_new(o, "by_bucket",
	                    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "chi2", rm_json_num(r->chi2), "df",
	                              rm_json_num(r->chi2_df), "p", rm_json_num(r->chi2_p), "q", rm_json_num(r->chi2_q),
	                              "cramers_v", rm_json_num(r->cramers_v), "buckets", buckets));
	json_object_set_new(o, "checkpoint",
	                    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "every",
	                              r->checkpoint_every > 1 ? json_integer(r->checkpoint_every) : json_null(),
	                              "rayleigh_r", rm_json_num(r->ckpt_r), "near", rm_json_num(r->ckpt_near),
	                              "expected", rm_json_num(r->ckpt_expected), "p", rm_json_num(r->ckpt_p), "q",
	                              rm_json_num(r->ckpt_q)));
	json_object_set_new(o, "epoch",
	                    json_pack("{s:o, s:o, s:o, s:o, s:o}", "steps_per_epoch",
	                              r->steps_per_epoch > 0 ? json_integer(r->steps_per_epoch) : json_null(), "near",
	                              rm_json_num(r->epoch_near), "expected", rm_json_num(r->epoch_expected), "p",
	                              rm_json_num(r->epoch_p), "q", rm_json_num(r->epoch_q)));
	json_object_set_new(o, "period",
	                    json_pack("{s:b, s:I, s:o, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b}",
	                              "tested", r->period_tested, "events", (json_int_t)r->period_events, "every",
	                              r->period ? json_integer(r->period) : json_null(), "phase",
	                              (json_int_t)r->period_phase, "width", (json_int_t)r->period_width, "hits",
	                              (json_int_t)r->period_hits, "periods", rm_json_num(r->period_cycles), "p",
	                              rm_json_num(r->period_p), "q", rm_json_num(r->period_q), "beyond_bucket_p",
	                              rm_json_num(r->period_beyond_bucket_p), "bucket_beyond_p",
	                              rm_json_num(r->bucket_beyond_period_p), "periodic_cause", r->periodic_cause,
	                              "bucket_alias", r->bucket_alias, "period_alias", r->period_alias));
	json_object_set_new(o, "lr",
	                    json_pack("{s:I, s:o, s:o, s:o, s:o}", "changes", (json_int_t)r->lr_changes, "near",
	                              rm_json_num(r->lr_near), "expected", rm_json_num(r->lr_expected), "p",
	                              rm_json_num(r->lr_p), "q", rm_json_num(r->lr_q)));
	return o;
}

static json_t *order_json(const struct rm_order_result *r)
{
	json_t *o =
	    json_pack("{s:b, s:b, s:s, s:i, s:I}", "ok", r->ok, "flagged", r->flagged, "epochs_from",
	              r->by_epoch ? "epoch" : "steps_per_epoch", "epochs", r->epochs, "pairs", (json_int_t)r->pairs);
	if (!r->ok)
		return o;
	json_t *spikes = json_array();
	for (int i = 0; i < r->nspikes; i++)
		json_array_append_new(spikes, json_pack("{s:I, s:I, s:i}", "in_epoch_step", (json_int_t)r->spike_pos[i],
		                                        "first_step", (json_int_t)r->spike_first[i], "epochs",
		                                        r->spike_epochs[i]));
	json_object_set_new(o, "r", rm_json_num(r->r));
	json_object_set_new(o, "shifted",
	                    json_pack("{s:o, s:o, s:i}", "mean", rm_json_num(r->null_mean), "sd",
	                              rm_json_num(r->null_sd), "shifts", r->shifts));
	json_object_set_new(o, "z", rm_json_num(r->z));
	json_object_set_new(o, "repeated_spikes", spikes);
	return o;
}

static json_t *length_json(const struct rm_length_result *l, int resets_by_length)
{
	json_t *acf = json_array();
	for (int i = 0; i < RM_LEN_LAGS; i++)
		json_array_append_new(acf, rm_json_num(l->acf[i]));
	json_t *o = json_pack("{s:b, s:I, s:I, s:o, s:b, s:b, s:b, s:b, s:b}", "ok", l->ok, "batches",
	                      (json_int_t)l->batches, "points", (json_int_t)l->points, "length_acf", acf, "ordered",
	                      l->ordered, "coupled", l->coupled, "per_sequence_sum", l->per_sequence_sum,
	                      "resets_on_length_adjusted", resets_by_length, "tested", l->batches > 0);
	if (!l->ok)
		return o;
	json_object_set_new(o, "scale", json_string(l->log_scale ? "log" : "linear"));
	json_object_set_new(o, "slope", rm_json_num(l->slope));
	json_object_set_new(o, "slope_ci", json_pack("[o, o]", rm_json_num(l->slope_lo), rm_json_num(l->slope_hi)));
	json_object_set_new(o, "r", rm_json_num(l->r));
	json_object_set_new(o, "r2", rm_json_num(l->r2));
	json_object_set_new(o, "r2_ci", json_pack("[o, o]", rm_json_num(l->r2_lo), rm_json_num(l->r2_hi)));
	json_object_set_new(o, "n_eff", rm_json_num(l->n_eff));
	json_object_set_new(o, "p", rm_json_num(l->p));
	json_object_set_new(o, "ref_len", rm_json_num(l->ref_len));
	json_object_set_new(o, "confounded", json_boolean(l->confounded));
	return o;
}

static json_t *cost_json(const struct rm_padding_result *p)
{
	json_t *o = json_pack("{s:b}", "ok", p->ok);
	if (!p->ok)
		return o;
	json_t *b = json_array(), *st = json_array(), *fit = json_array();
	for (int i = 0; i < p->k; i++)
		json_array_append_new(b, json_pack("{s:i, s:o, s:o}", "bucket", p->bucket[i], "efficiency",
		                                   rm_json_num(p->bucket_eff[i]), "tokens_per_s",
		                                   rm_json_num(p->bucket_tps[i])));
	for (int s = 0; s < RM_PACK_COUNT; s++)
		json_array_append_new(st, json_pack("{s:s, s:o}", "strategy", rm_strategy_name((enum rm_strategy)s),
		                                    "efficiency", rm_json_num(p->strategy_eff[s])));
	for (int i = 0; p->fitted_k && i <= p->fitted_k; i++)
		json_array_append_new(fit, json_integer(p->fitted[i]));
	json_object_set_new(o, "batches_read", json_integer((json_int_t)p->batches));
	json_object_set_new(o, "stride", json_integer(p->stride));
	json_object_set_new(o, "efficiency", rm_json_num(p->efficiency));
	json_object_set_new(o, "tokens_per_s", rm_json_num(p->tokens_per_s));
	json_object_set_new(o, "tokens_per_batch", json_integer(p->budget));
	json_object_set_new(o, "lengths_reconstructed", json_boolean(p->reconstructed));
	json_object_set_new(o, "lengths_recorded_batches", json_integer((json_int_t)p->recorded_batches));
	json_object_set_new(o, "fit_kept_own", json_boolean(p->fit_kept_own));
	json_object_set_new(o, "dataset_lengths", json_integer(p->dataset_lengths));
	json_object_set_new(o, "buckets", b);
	json_object_set_new(o, "strategies", st);
	json_object_set_new(o, "fitted_boundaries", fit);
	return o;
}

json_t *rm_render_json(const struct rm_diagnosis *d, const struct rm_render_ctx *c)
{
	const struct rm_run_info *r = c->run;
	char line[RM_VERDICT_LEN];
	const char *fix[8];
	rm_explain_verdict(d, line, sizeof(line));
	int nf = rm_explain_fix(d, fix, 8);
	json_t *fixes = json_array(), *hyps = json_array();
	for (int i = 0; i < nf; i++)
		json_array_append_new(fixes, json_string(fix[i]));
	for (int i = 0; i < RM_H_COUNT; i++)
		json_array_append_new(hyps, json_pack("{s:s, s:s, s:o}", "name", rm_hypothesis_name(d->rank[i].h),
		                                      "severity", rm_severity_name(d->rank[i].severity), "evidence",
		                                      rm_json_num(d->rank[i].score)));
	json_t *run =
	    json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:s?}", "source", r->source ? r->source : "", "entity",
	              r->entity ? r->entity : "", "project", r->project ? r->project : "", "name", r->name,
	              "display_name", r->display_name, "url", c->run_url, "composition", r->composition);
	json_t *curve =
	    json_pack("{s:I, s:I, s:o, s:o, s:o}", "first_step", (json_int_t)d->curves.first_step, "last_step",
	              (json_int_t)d->curves.last_step, "loss", series(d->curves.loss, d->curves.bins), "adjusted",
	              series(d->curves.adjusted, d->curves.bins), "length_adjusted",
	              series(d->curves.length_adjusted, d->curves.bins));
	json_t *o =
	    json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:b, s:s, s:b}", "schema", RM_DIAGNOSIS_SCHEMA, "run", run,
	              "since", (json_int_t)c->since, "points", (json_int_t)d->points, "finite", (json_int_t)d->finite,
	              "nonfinite", (json_int_t)d->nonfinite, "batches", (json_int_t)d->batches, "has_buckets",
	              d->has_buckets, "severity", rm_severity_name(d->severity), "healthy", d->healthy);
	static const char *const stored[] = {"not stored", "stored", "not stored: partial diagnosis",
	                                     "not stored: read-only database"};
	json_object_set_new(o, "findings", json_string(stored[d->stored]));
	const struct rm_reading_fit *rf = &d->reading;
	json_t *r2 = json_object();
	static const char *const names[RM_READINGS] = {"mean", "step", "step_stamped_after", "step_stamped_before"};
	for (int i = 0; i < RM_READINGS; i++)
		json_object_set_new(r2, names[i], rm_json_num(rf->r2[i]));
	json_object_set_new(o, "reading",
	                    json_pack("{s:s, s:i, s:b, s:b, s:f, s:o, s:s, s:s, s:{s:o, s:o, s:o}}", "is",
	                              rf->reading == RM_READ_STEP ? "step" : "mean", "stamp_shift", rf->shift, "given",
	                              rf->given, "sparse", rf->sparse, "steps_per_point", rf->steps_per_point, "r2", r2,
	                              "basis", rm_reading_basis_name(rf->basis), "convention",
	                              rf->convention == RM_READ_STEP   ? "step"
	                              : rf->convention == RM_READ_MEAN ? "mean"
	                                                               : "none",
	                              "test", "challenger",
	                              rf->challenger >= 0 ? json_string(names[rf->challenger]) : json_null(), "p_gain",
	                              rm_json_num(rf->p_gain), "p_back", rm_json_num(rf->p_back)));
	const struct rm_join *jn = &d->join;
	json_object_set_new(o, "join",
	                    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "points", (json_int_t)jn->points,
	                              "with_batches", (json_int_t)jn->with_batches, "batches", (json_int_t)jn->batches,
	                              "batches_with_loss", (json_int_t)jn->covered, "loss_first_step",
	                              (json_int_t)jn->loss_lo, "loss_last_step", (json_int_t)jn->loss_hi,
	                              "batch_first_step", (json_int_t)jn->batch_lo, "batch_last_step",
	                              (json_int_t)jn->batch_hi, "none", jn->none));
	json_t *labels = json_array();
	for (int j = 0; j < d->nlabels; j++)
		json_array_append_new(labels, json_pack("{s:i, s:s}", "bucket", d->label_id[j], "label", d->label[j]));
	json_object_set_new(o, "bucket_labels", labels);
	json_object_set_new(o, "labels_grouped", json_integer((json_int_t)d->labels_grouped));
	json_t *derived = json_array();
	for (int i = 0; i < d->nderived; i++)
		json_array_append_new(derived, json_integer(d->derived_bound[i]));
	json_object_set_new(o, "buckets_derived",
	                    d->nderived
	                        ? json_pack("{s:s, s:o}", "from", "max_len, else mean_len", "boundaries", derived)
	                        : (json_decref(derived), json_null()));
	json_object_set_new(o, "rank_losses",
	                    d->rank_fit_ranks ? json_pack("{s:i, s:I}", "ranks", d->rank_fit_ranks, "losses",
	                                                  (json_int_t)d->rank_points)
	                                      : json_null());
	json_object_set_new(o, "first_step", d->points ? json_integer(d->first_step) : json_null());
	json_object_set_new(o, "last_step", d->points ? json_integer(d->last_step) : json_null());
	static const char *const nonfinite[] = {NULL, "nan", "inf", "not logged"};
	json_object_set_new(o, "latest",
	                    d->points
	                        ? json_pack("{s:I, s:o, s:o, s:o, s:s?}", "step", (json_int_t)d->last_step, "loss",
	                                    rm_json_num(d->last_loss), "adjusted", rm_json_num(d->last_adjusted),
	                                    "length_adjusted", rm_json_num(d->last_length_adjusted), "nonfinite",
	                                    nonfinite[d->last_nonfinite & 3])
	                        : json_null());
	json_object_set_new(o, "suspected", json_boolean(d->suspected));
	json_object_set_new(o, "divergence", divergence_json(&d->divergence));
	json_t *causes = json_array(); /* every hypothesis at warn or above, strongest first */
	for (int i = 0; i < RM_H_COUNT && d->rank[i].severity >= RM_SEV_WARN; i++)
		json_array_append_new(causes, json_string(rm_hypothesis_name(d->rank[i].h)));
	json_object_set_new(o, "verdict",
	                    json_pack("{s:s, s:s, s:o, s:s, s:o}", "hypothesis", rm_hypothesis_name(d->rank[0].h),
	                              "severity", rm_severity_name(d->rank[0].severity), "causes", causes, "summary",
	                              line, "fix", fixes));
	json_object_set_new(o, "hypotheses", hyps);
	json_object_set_new(o, "curve", curve);
	json_object_set_new(o, "runs_test", runs_json(&d->runs));
	json_object_set_new(o, "split", split_json(&d->split, &d->curves));
	json_object_set_new(o, "length", length_json(&d->length, d->resets_by_length));
	json_object_set_new(o, "mixture", mixture_json(&d->mixture));
	json_object_set_new(o, "order", order_json(&d->order));
	json_object_set_new(o, "ladder", ladder_json(&d->ladder));
	json_object_set_new(o, "resets", resets_json(&d->resets));
	json_object_set_new(o, "cost", cost_json(&d->cost));
	return o;
}

static void add_row(struct rm_finding_row **rows, size_t *n, const char *det, enum rm_severity sev, int64_t first,
                    int64_t last, double stat, double p, json_t *evidence)
{
	*rows = rm_xrealloc(*rows, (*n + 1) * sizeof(**rows));
	struct rm_finding_row *f = &(*rows)[(*n)++];
	f->detector = det;
	f->severity = rm_severity_name(sev);
	f->first_step = first;
	f->last_step = last;
	f->statistic = stat;
	f->p_value = p;
	f->evidence_json = json_dumps(evidence, JSON_COMPACT);
	json_decref(evidence);
}

size_t rm_render_findings(const struct rm_diagnosis *d, struct rm_finding_row **rows)
{
	size_t n = 0;
	char line[RM_VERDICT_LEN];
	*rows = NULL;
	rm_explain_verdict(d, line, sizeof(line));
	add_row(rows, &n, "verdict", d->severity, d->first_step, d->last_step, d->rank[0].score, NAN,
	        json_pack("{s:s, s:s}", "hypothesis", rm_hypothesis_name(d->rank[0].h), "summary", line));
	if (d->runs.ok && d->runs.flagged) {
		int64_t a = d->runs.nworst ? d->runs.worst[0].first_step : -1,
		        b = d->runs.nworst ? d->runs.worst[0].last_step : -1;
		add_row(rows, &n, "same_bucket_runs", RM_SEV_WARN, a, b, d->runs.z, d->runs.p, runs_json(&d->runs));
	}
	const struct rm_mixture_result *m = &d->mixture;
	if (m->ok && m->shape != RM_MIX_RANDOM) /* lockstep, rank streaks, drift: the shape of the ranks */
		add_row(rows, &n, "batch_mixture",
		        m->shape == RM_MIX_LOCKSTEP ? (d->runs.flagged ? RM_SEV_WARN : RM_SEV_INFO) : m->severity,
		        d->first_step, d->last_step, m->worst >= 0 ? m->ratio_z[m->worst] : NAN, NAN, mixture_json(m));
	if (d->split.ok && d->split.flagged) {
		struct rm_curves cv = d->curves;
		for (int i = 0; i < cv.k; i++)
			for (int b = 0; b < cv.bins; b++)
				cv.bucket_loss[i][b] = cv.bucket_adjusted[i][b] = NAN; /* keep rows small */
		cv.bins = 0;
		add_row(rows, &n, "loss_split", RM_SEV_INFO, d->first_step, d->last_step, d->split.eta2, d->split.p,
		        split_json(&d->split, &cv));
	}
	if (d->order.flagged)
		add_row(rows, &n, "fixed_order", RM_SEV_WARN, d->first_step, d->last_step, d->order.r, NAN,
		        order_json(&d->order));
	if (d->ladder.flagged || d->ladder.ramp) {
		int64_t a = d->ladder.count ? d->ladder.list[0].first_step : -1;
		int64_t b = d->ladder.count ? d->ladder.list[0].last_step : -1;
		add_row(rows, &n, d->ladder.ramp && !d->ladder.flagged ? "length_ramp" : "ladder", RM_SEV_WARN, a, b,
		        (double)d->ladder.count, d->ladder.p, ladder_json(&d->ladder));
	}
	if (d->length.coupled)
		add_row(rows, &n, "length_coupling", d->length.ordered ? RM_SEV_WARN : RM_SEV_INFO, d->first_step,
		        d->last_step, d->length.r2, d->length.p, length_json(&d->length, d->resets_by_length));
	const struct rm_resets_result *r = &d->resets;
	if (r->cluster_by_bucket)
		add_row(rows, &n, "resets_by_bucket", RM_SEV_WARN, r->spikes ? r->list[0].step : -1, -1, r->chi2,
		        r->chi2_q, resets_json(r));
	if (r->checkpoint_cause)
		add_row(rows, &n, "resets_at_checkpoints", RM_SEV_WARN, -1, -1, r->ckpt_r, r->ckpt_q, resets_json(r));
	if (r->periodic_cause)
		add_row(rows, &n, "resets_periodic", RM_SEV_WARN, -1, -1, (double)r->period, r->period_q,
		        resets_json(r));
	if (d->divergence.found)
		add_row(rows, &n, "divergence", RM_SEV_CRITICAL, d->divergence.first_step, d->last_step,
		        (double)d->divergence.points, NAN, divergence_json(&d->divergence));
	if (d->suspected)
		add_row(rows, &n, "loss_levels", RM_SEV_WARN, d->first_step, d->last_step, d->split.level_runs_z, NAN,
		        split_json(&d->split, &d->curves));
	for (int i = 0; i < RM_H_COUNT; i++) {
		const struct rm_ranked *h = &d->rank[i];
		if (h->h == RM_H_INSTABILITY && h->severity >= RM_SEV_INFO)
			add_row(rows, &n, "instability", h->severity, -1, -1, (double)r->spikes_adjusted, NAN,
			        resets_json(r));
	}
	return n;
}

void rm_findings_free(struct rm_finding_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)rows[i].evidence_json);
	free(rows);
}
