/*
 * report.c - a report's content: each run diagnosed, ordered as the
 * overview shows them, compared with what the baseline saw, rendered into
 * one file, and kept in the store as the next report's baseline.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/analyze.h"
#include "runmon/render.h"

/* The charts' zoom grid (struct rm_plot): the finest for up to 128 runs,
 * then about a million columns in all, so a report of many runs stays a
 * file a browser opens. */
static int zoom_cols(size_t n)
{
	size_t c = n ? ((size_t)1 << 20) / n : RM_PLOT_FINE;
	return c > RM_PLOT_FINE ? RM_PLOT_FINE : c < 2 * RM_PLOT_COLS ? 2 * RM_PLOT_COLS : (int)c;
}

/* The runs being diagnosed: each worker takes the next, with a store
 * connection of its own, and leaves its diagnosis at the run's index, so
 * the report is the same file whatever the number of workers. */
struct workers {
	pthread_mutex_t lock;
	const int64_t *ids;
	size_t n, next, done;
	const struct rm_analyze_opts *o;
	struct rm_diagnosis *ds;
	struct rm_run_info *infos;
	const char *db;
	size_t failed_at; /* the first run that failed, n: none */
	struct rm_err err;
};

static int diagnose_one(struct rm_store *st, struct workers *w, size_t i, struct rm_err *err)
{
	if (rm_analyze_run(st, w->ids[i], w->o, &w->ds[i], &w->infos[i], err))
		return err->code;
	/* Charts need the plot data only: drop the per-point arrays, so that a
	 * report of many runs holds the workers' runs' at a time. */
	struct rm_diagnosis *d = &w->ds[i];
	free(d->split.trend);
	free(d->split.adjusted);
	free(d->length.adjusted);
	d->split.trend = d->split.adjusted = d->length.adjusted = NULL;
	return RM_OK;
}

/* One worker: st, or a connection of its own to w->db (NULL st). */
static void work(struct workers *w, struct rm_store *st)
{
	struct rm_err err = {0};
	struct rm_store *own = NULL;
	int rc = st ? RM_OK : rm_store_open_flags(&own, w->db, RM_STORE_MUST_EXIST, &err);
	for (;;) {
		pthread_mutex_lock(&w->lock);
		size_t i = w->next++;
		int stop = i >= w->n || w->failed_at < w->n;
		pthread_mutex_unlock(&w->lock);
		if (stop)
			break;
		if (!rc)
			rc = diagnose_one(st ? st : own, w, i, &err);
		pthread_mutex_lock(&w->lock);
		if (rc && i < w->failed_at) {
			w->failed_at = i;
			w->err = err;
		}
		rm_progress_at((double)++w->done);
		pthread_mutex_unlock(&w->lock);
		if (rc)
			break;
	}
	rm_store_close(own);
}

static void *work_thread(void *arg)
{
	work(arg, NULL);
	return NULL;
}

/* Diagnoses ids[0..n) into ds and infos: spec->jobs at once (this thread
 * on st, the others each on a connection of its own), one after another
 * without spec->db. On an error, the first failed run's. */
static int diagnose_all(struct rm_store *st, const int64_t *ids, size_t n, const struct rm_analyze_opts *o,
                        const struct rm_report_spec *spec, struct rm_diagnosis *ds, struct rm_run_info *infos,
                        struct rm_err *err)
{
	struct workers w = {.ids = ids, .n = n, .o = o, .ds = ds, .infos = infos, .db = spec->db, .failed_at = n};
	pthread_mutex_init(&w.lock, NULL);
	size_t extra = spec->db && spec->jobs > 1 ? (size_t)spec->jobs - 1 : 0;
	if (extra > n - (n > 0))
		extra = n - (n > 0);
	pthread_t *th = rm_xcalloc(extra ? extra : 1, sizeof(*th));
	size_t started = 0;
	rm_progress_start("report: diagnosing", "runs", (double)n);
	for (; started < extra; started++)
		if (pthread_create(&th[started], NULL, work_thread, &w))
			break; /* fewer workers: the rest is done by those there are */
	work(&w, st);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	rm_progress_end();
	free(th);
	pthread_mutex_destroy(&w.lock);
	if (w.failed_at < n) {
		*err = w.err;
		return err->code;
	}
	return RM_OK;
}

int rm_report_write(struct rm_store *st, const int64_t *ids, size_t n, const struct rm_report_spec *spec,
                    const struct rm_voice *v, struct rm_report_outcome *out, struct rm_err *err)
{
	int code;
	memset(out, 0, sizeof(*out));
	struct rm_diagnosis *ds = rm_xcalloc(n ? n : 1, sizeof(*ds));
	struct rm_run_info *infos = rm_xcalloc(n ? n : 1, sizeof(*infos));
	struct rm_report_run *runs = rm_xcalloc(n ? n : 1, sizeof(*runs));
	char **urls = rm_xcalloc(n ? n : 1, sizeof(char *));
	struct rm_analyze_opts o;
	rm_analyze_opts_default(&o);
	if (!strcmp(spec->format, "html"))
		o.detect.plot_fine = zoom_cols(n);
	enum rm_severity worst = RM_SEV_NONE;
	size_t done = n;
	if ((code = diagnose_all(st, ids, n, &o, spec, ds, infos, err)))
		goto out;
	for (done = 0; done < n; done++) {
		urls[done] = rm_run_page(&infos[done]);
		runs[done] = (struct rm_report_run){&ds[done], &infos[done], urls[done], NULL};
		if (ds[done].severity > worst)
			worst = ds[done].severity;
		out->at_fail_on += ds[done].severity >= spec->fail_on;
	}
	/* Before and after, as named: the comparison is made before the runs
	 * are ordered for the overview. */
	struct rm_comparison cmp;
	char side_name[2][512];
	struct rm_compare_side sides[2];
	if (spec->compare && n == 2) {
		rm_compare(&ds[0], &ds[1], NULL, &cmp);
		for (int i = 0; i < 2; i++) {
			rm_report_run_name(&infos[i], side_name[i], sizeof(side_name[i]));
			sides[i] = (struct rm_compare_side){side_name[i], &ds[i]};
		}
	}
	char overlay_name[RM_OVERLAY_MAX][512];
	struct rm_compare_side overlay[RM_OVERLAY_MAX];
	for (size_t i = 0; spec->overlay && i < n && i < RM_OVERLAY_MAX; i++) {
		rm_report_run_name(&infos[i], overlay_name[i], sizeof(overlay_name[i]));
		overlay[i] = (struct rm_compare_side){overlay_name[i], &ds[i]};
	}
	/* What this report sees, and what the baseline saw of the same runs. */
	rm_report_order(runs, n);
	struct rm_seen seen = {0}, was = {0};
	struct rm_changes changes = {0};
	char **names = rm_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		char name[512];
		rm_report_run_name(runs[i].info, name, sizeof(name));
		names[i] = rm_xstrdup(name);
		rm_seen_add(&seen, name, runs[i].d);
	}
	double latest = 0;
	if (spec->baseline ? rm_seen_read_report(spec->baseline, &was, &latest, err)
	                   : rm_store_get_seen(st, (const char *const *)names, n, spec->cutoff, &was, &latest, err)) {
		code = err->code;
		goto out_seen;
	}
	rm_changes_compute(&seen, &was, &changes);
	changes.file = spec->baseline;
	changes.baseline = spec->baseline || latest > 0;
	changes.baseline_at = latest;
	if (!spec->baseline && was.n) { /* the newest report that saw these runs */
		changes.baseline_at = 0;
		for (size_t i = 0; i < was.n; i++)
			if (was.runs[i].at > changes.baseline_at)
				changes.baseline_at = was.runs[i].at;
	}
	for (size_t i = 0; i < n; i++)
		runs[i].change = &changes.runs[i];
	struct rm_report report = {.runs = runs,
	                           .n = n,
	                           .generated = spec->now,
	                           .changes = &changes,
	                           .compare = spec->compare && n == 2 ? &cmp : NULL,
	                           .compare_side = sides,
	                           .overlay = overlay,
	                           .noverlay = spec->overlay && !spec->compare ? (int)n : 0};
	struct rm_outfile of;
	if (rm_outfile_open(&of, spec->output ? spec->output : "-", err)) {
		code = err->code;
		goto out_seen;
	}
	FILE *fp = of.fp;
	if (!strcmp(spec->format, "html")) {
		rm_render_report_html(fp, &report);
	} else if (!strcmp(spec->format, "md")) {
		rm_render_report_md(fp, &report);
	} else {
		json_t *doc = rm_render_report_json(&report);
		json_dumpf(doc, fp, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		fputc('\n', fp);
		json_decref(doc);
	}
	if (rm_outfile_commit(&of, err)) {
		code = err->code;
		goto out_seen;
	}
	if (spec->keep && rm_store_readonly(st))
		rm_say(v, RM_SAY_WARNING, "read-only database: this report is not kept as the next one's baseline");
	else if (spec->keep && rm_store_put_report(st, spec->now, &seen, err)) {
		code = err->code;
		goto out_seen;
	}
	out->worst = worst;
	out->new_hit = spec->fail_new && rm_changes_new_at(&changes, spec->fail_on_new);
	out->failed = (spec->fail_worst && worst >= spec->fail_on) || out->new_hit;
out_seen:
	rm_changes_release(&changes);
	rm_seen_release(&seen);
	rm_seen_release(&was);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
out:
	for (size_t i = 0; i < done; i++) { /* a failed diagnosis leaves its entries released or zero */
		rm_diagnosis_release(&ds[i]);
		rm_run_info_release(&infos[i]);
		free(urls[i]);
	}
	free(ds);
	free(infos);
	free(runs);
	free(urls);
	return code;
}
