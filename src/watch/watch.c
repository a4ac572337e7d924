/*
 * watch.c - the watch loop: each tick syncs each W&B run, reads what its
 * sidecars and .wandb log gained, diagnoses it (in full, or its last
 * window of steps) and hands the alerts to the alerter; the metrics
 * registry is published after each run. SIGINT and SIGTERM end it after
 * the current write.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "runmon/alert.h"
#include "runmon/analyze.h"
#include "runmon/import.h"
#include "runmon/wandb.h"
#include "runmon/watch.h"

/* What the watch knows of one run between ticks. */
struct rm_watched {
	const char *spec;        /* argv's, or the .wandb path */
	char *log;               /* a run-ID.wandb log the run is read from, or NULL */
	int64_t run_id;          /* 0 until known */
	struct rm_run_path path; /* set when spec is a W&B run path */
	int is_wandb;
	int done;
	int unknown;             /* not in the store at the last tick (a typo, or a run still to come) */
	int diagnosed;           /* at least once in this process */
	int64_t diag_steps;      /* points in the last full diagnosis */
	int64_t pending;         /* rows arrived since the last pass (steps synced, sidecar lines) */
	int64_t grown;           /* rows arrived since the last full diagnosis */
	double diag_at;          /* monotonic seconds, of the last full diagnosis */
	struct rm_alert last[8]; /* the last diagnosis' alerts, resent until delivered */
	int nlast;
	struct rm_run_metrics *metrics; /* with --metrics, once the run's labels are known */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int finished(const char *state)
{
	return state && (!strcasecmp(state, "finished") || !strcasecmp(state, "crashed") ||
	                 !strcasecmp(state, "failed") || !strcasecmp(state, "killed"));
}

/* The run's metrics record (NULL without --metrics, or while the run's
 * labels are unknown: a .wandb log that has not named its run yet). */
static struct rm_run_metrics *run_metrics(struct rm_watch *wt, struct rm_watched *r, const struct rm_run_info *info)
{
	if (!wt->metrics || r->metrics)
		return r->metrics;
	struct rm_run_info brief = {0};
	struct rm_err err;
	if (!info && r->run_id && !rm_store_get_run_brief(wt->st, r->run_id, &brief, &err))
		info = &brief;
	if (info)
		r->metrics = rm_metrics_run(wt->metrics, info->entity, info->project, info->name);
	else if (r->is_wandb)
		r->metrics = rm_metrics_run(wt->metrics, r->path.entity, r->path.project, r->path.id);
	if (info == &brief)
		rm_run_info_release(&brief);
	return r->metrics;
}

static void note_sync(struct rm_watch *wt, struct rm_watched *r, int ok)
{
	struct rm_run_metrics *m = run_metrics(wt, r, NULL);
	if (m)
		rm_metrics_synced(m, ok, (double)time(NULL));
}

/* The registry's rendering goes to the endpoint: scrapes see each run's
 * tick as soon as it is done. */
static void publish(struct rm_watch *wt)
{
	if (!wt->server)
		return;
	size_t len;
	char *text = rm_metrics_render(wt->metrics, &len);
	rm_metrics_server_publish(wt->server, text, len);
}

/* Imports what the run's sidecars gained since the last tick; returns the
 * lines read. */
static int64_t tail_sidecars(struct rm_watch *wt, const char *spec)
{
	int64_t lines = 0;
	for (int i = 0; i < wt->nside; i++) {
		if (strcmp(wt->side[i].run, spec))
			continue;
		struct rm_import_report rep;
		struct rm_tail_pos pos;
		struct rm_err err;
		wt->imp.run_name = spec;
		wt->imp.format = RM_FMT_AUTO; /* from the name: .csv, .log, else JSON lines */
		wt->imp.attach = 1;           /* --batches RUN=FILE: the user says whose they are */
		if (rm_import_tail(wt->st, &wt->imp, wt->side[i].path, &rep, &pos, &err)) {
			rm_say(&wt->voice, RM_SAY_WARNING, "%s (will retry next tick)", err.msg);
			continue;
		}
		for (size_t j = 0; j < rep.n; j++)
			lines += (int64_t)rep.r[j].lines;
		rm_import_report_release(&rep);
	}
	return lines;
}

enum pass { PASS_NONE, PASS_WINDOW, PASS_FULL };

static void arrived(struct rm_watched *r, int64_t rows)
{
	r->pending += rows;
	r->grown += rows;
}

/* A full diagnosis reads the whole run (~0.8 s at 1M steps) and stores its
 * findings; it runs first, when the run finished, when another process (an
 * import, a sync) wrote to the database, when the run grew by 10% (at least
 * 200 rows), or when --diagnose-every seconds passed with new rows. Other
 * ticks with new rows run the detectors on the last --window steps: what
 * they cost grows with the window, not with the run, and new trouble shows
 * there first, undiluted by the healthy past. */
static enum pass due(const struct rm_watched *r, const struct rm_watch *wt, int finished_now)
{
	if (!r->diagnosed || finished_now || wt->external)
		return PASS_FULL;
	if (!r->pending)
		return PASS_NONE;
	int64_t grow = r->diag_steps / 10 > 200 ? r->diag_steps / 10 : 200;
	if (r->grown >= grow || rm_monotonic() - r->diag_at >= wt->diagnose_every)
		return PASS_FULL;
	return wt->window && r->diag_steps > wt->window ? PASS_WINDOW : PASS_FULL;
}

/* Reads what a run's .wandb log gained. Returns 1 when there is nothing
 * to diagnose: the log has not named its run yet, reading failed, or
 * (first sight after a restart) the run finished and nothing is new. */
static int read_log(struct rm_watch *wt, struct rm_watched *r)
{
	struct rm_import_report rep;
	struct rm_tail_pos pos;
	struct rm_err err;
	if (rm_import_tail(wt->st, &wt->log_imp, r->log, &rep, &pos, &err)) {
		rm_say(&wt->voice, RM_SAY_WARNING, "%s (will retry next tick)", err.msg);
		note_sync(wt, r, 0);
		return 1;
	}
	int64_t rows = 0;
	for (size_t j = 0; j < rep.n; j++) {
		const struct rm_import_result *res = &rep.r[j]; /* a step and its batch are one row */
		rows += (int64_t)(res->steps > res->batches ? res->steps : res->batches);
		if (rep.r[j].corrupt)
			rm_say(&wt->voice, RM_SAY_WARNING, "%s: skipped %llu damaged chunk(s), the first at byte %llu",
			       r->log, (unsigned long long)rep.r[j].corrupt,
			       (unsigned long long)rep.r[j].first_corrupt);
	}
	rm_import_report_release(&rep);
	arrived(r, rows);
	if (!pos.run_id)
		return 1;
	int first = !r->run_id;
	r->run_id = pos.run_id;
	note_sync(wt, r, 1);
	if (first && !rows) {
		struct rm_run_info info;
		if (!rm_store_get_run(wt->st, r->run_id, &info, &err)) {
			r->done = finished(info.state); /* diagnosed when it ended */
			rm_run_info_release(&info);
		}
	}
	return r->done;
}

/* The run-ID.wandb logs under a W&B directory that the watch does not
 * follow yet become watched runs. */
static void find_logs(const char *dir, struct rm_watched **runs, int *nruns)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "run-", 4) && strncmp(e->d_name, "offline-run-", 12))
			continue;
		char *sub = rm_xasprintf("%s/%s", dir, e->d_name);
		char *log = rm_wandb_dir_log(sub);
		free(sub);
		int known = !log;
		for (int i = 0; i < *nruns && !known; i++)
			known = (*runs)[i].log && !strcmp((*runs)[i].log, log);
		if (known) {
			free(log);
			continue;
		}
		*runs = rm_xrealloc(*runs, (size_t)(*nruns + 1) * sizeof(**runs));
		struct rm_watched *r = &(*runs)[(*nruns)++];
		memset(r, 0, sizeof(*r));
		r->spec = r->log = log;
	}
	if (d)
		closedir(d);
}

/* One tick for one run; sets r->done when the run has finished. */
static void tick_run(struct rm_watch *wt, struct rm_watched *r)
{
	const char *spec = r->spec;
	struct rm_err err;
	int finished_now = 0;
	if (r->log && read_log(wt, r))
		return;
	arrived(r, tail_sidecars(wt, spec));
	if (r->is_wandb && !wt->offline && wt->w) {
		struct rm_sync_opts so;
		struct rm_sync_result res;
		rm_sync_opts_default(&so);
		so.cancel = &stop;
		so.skip_bad = wt->skip_bad;
		if (rm_sync_run(wt->st, wt->w, r->path.entity, r->path.project, r->path.id, &so, &res, &err)) {
			if (!wt->outage) /* say it once per outage */
				rm_say(&wt->voice, RM_SAY_WARNING,
				       "W&B sync failed, watching what is stored and retrying: %s", err.msg);
			wt->outage = 1;
			note_sync(wt, r, 0);
		} else {
			wt->outage = 0;
			note_sync(wt, r, 1);
			arrived(r, res.rows);
			finished_now = finished(res.state);
			if (res.skipped)
				rm_say(&wt->voice, RM_SAY_WARNING, "%s: skipped %lld bad W&B row%s; the first: %s",
				       spec, (long long)res.skipped, res.skipped > 1 ? "s" : "", res.first_bad);
		}
	}
	if (stop)
		return; /* SIGINT/SIGTERM: what is written stays; no diagnosis */
	enum pass pass = due(r, wt, finished_now);
	if (pass == PASS_NONE) {
		rm_alerter_send(&wt->alerts, r->last, r->nlast); /* what failed or was held before */
		return;
	}
	int64_t run_id;
	struct rm_analyze_opts o;
	struct rm_diagnosis d;
	struct rm_run_info info;
	rm_analyze_opts_default(&o);
	if (pass == PASS_WINDOW) { /* alerts only: the stored findings stay the full run's */
		o.window = wt->window;
		o.store_findings = 0;
	}
	run_id = r->run_id;
	int found = run_id || !rm_store_find_run(wt->st, spec, &run_id, &err);
	r->unknown = !found && err.code == RM_E_NOTFOUND;
	if (!found || rm_analyze_run(wt->st, run_id, &o, &d, &info, &err)) {
		rm_say(&wt->voice, RM_SAY_WARNING, "%s", err.msg);
		return;
	}
	r->pending = 0;
	if (pass == PASS_FULL) {
		r->diagnosed = 1;
		r->diag_steps = (int64_t)d.points;
		r->grown = 0;
		r->diag_at = rm_monotonic();
		r->done = finished(info.state);
	}
	struct rm_run_metrics *m = run_metrics(wt, r, &info);
	if (m) {
		rm_metrics_diagnosed(m, &d, &info, pass == PASS_FULL, (double)time(NULL));
		if (r->done)
			rm_metrics_finished(m);
	}
	char *url = rm_run_page(&info);
	int n = rm_alerts_from(&d, &info, url, wt->min, (double)time(NULL), r->last, 8);
	r->nlast = n;
	rm_alerter_send(&wt->alerts, r->last, n);
	free(url);
	rm_diagnosis_release(&d);
	rm_run_info_release(&info);
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* --stats: CPU per tick, the first (full sync and diagnosis) apart. */
static void print_stats(const struct rm_watch *wt, double *cpu, int n)
{
	if (n < 1)
		return;
	char line[256];
	int k = snprintf(line, sizeof(line), "watch: %d ticks; first %.1f ms CPU", n, cpu[0] * 1e3);
	if (n > 1) {
		qsort(cpu + 1, (size_t)n - 1, sizeof(*cpu), cmp_double);
		snprintf(line + k, sizeof(line) - (size_t)k, "; later ticks median %.1f ms, max %.1f ms",
		         cpu[1 + (n - 1) / 2] * 1e3, cpu[n - 1] * 1e3);
	}
	rm_say(&wt->voice, RM_SAY_INFO, "%s", line);
}

/* A long-running watch says at its start what it watches and where its
 * alerts go: a restart with nothing new is otherwise silent. */
static void say_watching(const struct rm_watch *wt, char *const *specs, int nspecs)
{
	char line[1024];
	size_t k = (size_t)snprintf(line, sizeof(line), "watch: every %gs,", wt->every);
	for (int i = 0; i < nspecs && i < 3 && k < sizeof(line); i++)
		k += (size_t)snprintf(line + k, sizeof(line) - k, "%s %s", i ? "," : "", specs[i]);
	if (nspecs > 3 && k < sizeof(line))
		k += (size_t)snprintf(line + k, sizeof(line) - k, " and %d more", nspecs - 3);
	if (wt->wandb_dir && k < sizeof(line))
		k += (size_t)snprintf(line + k, sizeof(line) - k, "%s runs appearing under %s", nspecs ? " and" : "",
		                      wt->wandb_dir);
	if (k < sizeof(line))
		k += (size_t)snprintf(line + k, sizeof(line) - k, "; alerts at %s or above to",
		                      rm_severity_name(wt->min));
	for (int c = 0; c < wt->alerts.nch && k < sizeof(line); c++)
		k += (size_t)snprintf(line + k, sizeof(line) - k, "%s %s", c ? "," : "", wt->alerts.ch[c].shown);
	rm_say(&wt->voice, RM_SAY_INFO, "%s", line);
}

int rm_watch_run(struct rm_watch *wt, char *const *specs, int nspecs)
{
	struct rm_err err;
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rm_alerter_set_cancel(&wt->alerts, &stop); /* a delivery in flight ends with the watch */
	if (!wt->once)
		say_watching(wt, specs, nspecs);
	int nruns = nspecs, nticks = 0, cap = 64;
	struct rm_watched *runs = rm_xcalloc((size_t)nruns, sizeof(*runs));
	double *cpu = rm_xmalloc((size_t)cap * sizeof(*cpu));
	for (int i = 0; i < nruns; i++) {
		runs[i].spec = specs[i];
		runs[i].is_wandb = rm_run_path_parse(runs[i].spec, &runs[i].path);
	}
	int64_t version = 0, seen = 0;
	double published = rm_monotonic();
	/* With --wandb-dir a new run may start at any time: no end but a signal. */
	/* With --metrics, finished runs stay scraped until a signal. */
	for (int left = nruns; (left > 0 || wt->wandb_dir || wt->server) && !stop;) {
		double t0 = cpu_seconds(), wall0 = rm_monotonic();
		if (wt->wandb_dir) {
			int before = nruns;
			find_logs(wt->wandb_dir, &runs, &nruns);
			left += nruns - before;
		}
		/* The version this tick reads from: a commit by another process
		 * while the tick runs shows at the next one. (Read after the tick,
		 * it hid an import that landed mid-tick for good. This process
		 * writes through one connection, whose own commits never change
		 * data_version.) */
		if (!rm_store_data_version(wt->st, &version, &err)) {
			wt->external = nticks > 0 && version != seen;
			seen = version;
		}
		for (int i = 0; i < nruns && !stop; i++) {
			if (runs[i].done)
				continue;
			tick_run(wt, &runs[i]);
			left -= runs[i].done;
			/* A long tick (a first sync of many runs) shows its progress,
			 * at most once a second: a rendering costs O(runs). */
			if (wt->server && rm_monotonic() - published > 1) {
				publish(wt);
				published = rm_monotonic();
			}
		}
		if (wt->metrics) {
			rm_metrics_tick(wt->metrics, rm_monotonic() - wall0);
			publish(wt);
			rm_metrics_server_ready(wt->server);
		}
		if (wt->stats) { /* kept only when asked: a watch may run for months */
			if (nticks == cap)
				cpu = rm_xrealloc(cpu, (size_t)(cap *= 2) * sizeof(*cpu));
			cpu[nticks] = cpu_seconds() - t0;
		}
		nticks++;
		if (wt->once)
			break;
		for (double ms = 0; ms < wt->every * 1000 && !stop && (left > 0 || wt->wandb_dir || wt->server);
		     ms += 100) {
			struct timespec ts = {0, 100000000L};
			nanosleep(&ts, NULL);
		}
	}
	if (wt->stats)
		print_stats(wt, cpu, nticks);
	free(cpu);
	/* --once is one look: a run it could not find is a usage error (a typo
	 * in a cron line), where a long watch waits for the run to appear. */
	int unknown = 0;
	for (int i = 0; i < nruns; i++) {
		unknown |= wt->once && runs[i].unknown;
		rm_run_path_release(&runs[i].path);
		free(runs[i].log);
	}
	free(runs);
	return unknown ? RM_E_NOTFOUND : RM_OK;
}
