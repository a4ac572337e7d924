/*
 * cmd_watch.c - `runmon watch`: keep runs diagnosed and alert on new
 * findings: the homogeneous-batching verdict and loss resets that cluster
 * by bucket.
 */
#include <dirent.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "runmon/alert.h"
#include "runmon/analyze.h"
#include "runmon/http.h"
#include "runmon/import.h"
#include "runmon/metrics.h"
#include "runmon/sync.h"
#include "runmon/wandb.h"

static const char usage_text[] = "usage: runmon watch [options] RUN...\n"
                                 "       runmon watch [options] --wandb-dir DIR [RUN...]\n"
                                 "\n"
                                 "Each tick: syncs each W&B run (ENTITY/PROJECT/ID; local runs are read as\n"
                                 "stored), reads what its batch sidecar gained, diagnoses it, and alerts on\n"
                                 "findings at --min-severity or above: the verdict (homogeneous batching,\n"
                                 "checkpoint resets, ...) and loss resets that cluster by bucket. Each alert\n"
                                 "carries its evidence, the W&B run page and the fix, and is sent once per\n"
                                 "channel across restarts (again only if its severity rises). A failed\n"
                                 "delivery is retried with backoff and, if it still fails, recorded and tried\n"
                                 "again next tick. A W&B outage is reported once and the watch goes on. A run\n"
                                 "that finishes gets a final diagnosis and is dropped; watch exits when none\n"
                                 "is left (with --metrics, it serves their last values until stopped).\n"
                                 "SIGINT/SIGTERM: the current write completes, and watch exits 0.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --once               one tick, then exit (for cron)\n"
                                 "  --every DURATION     time between ticks (default 60s)\n"
                                 "  --batches RUN=FILE   tail RUN's growing batch sidecar, JSON lines, CSV (FILE\n"
                                 "                       ending .csv) or a console log (.log, .txt, .out)\n"
                                 "                       (repeatable);\n"
                                 "                       a half-written last line waits, truncation and\n"
                                 "                       rotation (old file at FILE.1) are followed\n"
                                 "  --buckets LIST       boundaries (0,770,...) for sidecar rows without a bucket\n"
                                 "  --wandb-dir DIR      follow the runs the W&B SDK writes under DIR (its wandb/\n"
                                 "                       directory, offline or online) from their run-ID.wandb\n"
                                 "                       files, new runs included; watch then runs until stopped\n"
                                 "  --window STEPS       between full diagnoses, a tick with new rows runs the\n"
                                 "                       detectors on the last STEPS steps (default 5000;\n"
                                 "                       0: a full diagnosis every time)\n"
                                 "  --diagnose-every D   diagnose a run with new rows in full (and store the\n"
                                 "                       findings) at least this often (default 30m; sooner\n"
                                 "                       when it grew by 10%, 200 rows at least, or finished)\n"
                                 "  --stats              at exit, print the CPU time per tick on stderr\n"
                                 "  --metrics ADDR:PORT  serve Prometheus metrics of the watched runs while\n"
                                 "                       watching (PORT alone: on 127.0.0.1); watch then runs\n"
                                 "                       until stopped; /-/healthy and /-/ready as well\n"
                                 "  --metrics-path PATH  where the metrics are served (default /metrics)\n"
                                 "  --webhook URL        POST alerts in Alertmanager's webhook shape (repeatable)\n"
                                 "  --slack-webhook URL  post alerts to a Slack incoming webhook\n"
                                 "  --wandb-alert        raise W&B alerts on the run (notifyScriptableRunAlert)\n"
                                 "  --min-severity LVL   info, warn (default) or critical\n"
                                 "  --max-per-hour N     messages per channel per hour (default 30); beyond\n"
                                 "                       that, alerts wait and a warning says so\n"
                                 "  --offline            do not sync W&B runs\n"
                                 "  --retry-max N        retries of a failed delivery or request (default 8)\n"
                                 "  --retry-wait D       first backoff (default 2s)\n"
                                 "  --db PATH            database file\n"
                                 "\n"
                                 "Alerts are also printed on stdout, one line each. A duration is a number of\n"
                                 "seconds with an optional unit: 500ms, 2s, 5m, 24h, 7d.\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

#define RATE_MAX 1000 /* the highest --max-per-hour */

struct channel {
	char name[64]; /* in the alert log: kind and a hash of the URL, never the URL */
	int kind;      /* 0 stdout, 1 webhook, 2 slack, 3 wandb */
	struct rm_http *http;
	double sent_at[RATE_MAX]; /* monotonic times of the last messages, a ring */
	int nsent, held;          /* held: a flood warning is out */
};

static void url_hash(const char *kind, const char *url, char *out, size_t n)
{
	const char *names[] = {"url"}, *values[] = {url};
	char fp[17];
	rm_alert_fingerprint(names, values, 1, fp);
	snprintf(out, n, "%s:%s", kind, fp);
}

/* POSTs body and waits; 0 on a 2xx (and, for W&B, success: true). */
static int deliver(struct rm_http *h, const char *body, int wandb, char *why, size_t n)
{
	struct rm_http_req req = {.body = body, .body_len = strlen(body)};
	rm_http_start(h, &req);
	struct rm_http_req *r = rm_http_wait(h);
	int rc = 0;
	if (!r || !r->ok) {
		snprintf(why, n, "%s", req.err[0] ? req.err : "request failed");
		rc = -1;
	} else if (wandb) {
		json_t *doc = json_loadb(req.resp, req.resp_len, 0, NULL);
		json_t *ok = json_object_get(json_object_get(json_object_get(doc, "data"), "notifyScriptableRunAlert"),
		                             "success");
		if (!json_is_true(ok)) {
			snprintf(why, n, "W&B did not accept the alert: %.200s", req.resp ? req.resp : "");
			rc = -1;
		}
		json_decref(doc);
	}
	rm_http_req_release(&req);
	return rc;
}

static int finished(const char *state)
{
	return state && (!strcasecmp(state, "finished") || !strcasecmp(state, "crashed") ||
	                 !strcasecmp(state, "failed") || !strcasecmp(state, "killed"));
}

struct sidecar {
	const char *run, *given; /* borrowed from argv */
	char *path;              /* absolute: the key of its position in tails */
};

/* What the watch knows of one run between ticks. */
struct watched {
	const char *spec;        /* argv's, or the .wandb path */
	char *log;               /* a run-ID.wandb log the run is read from, or NULL */
	int64_t run_id;          /* 0 until known */
	struct rm_run_path path; /* set when spec is a W&B run path */
	int is_wandb;
	int done;
	int diagnosed;           /* at least once in this process */
	int64_t diag_steps;      /* points in the last full diagnosis */
	int64_t pending;         /* rows arrived since the last pass (steps synced, sidecar lines) */
	int64_t grown;           /* rows arrived since the last full diagnosis */
	double diag_at;          /* monotonic seconds, of the last full diagnosis */
	struct rm_alert last[8]; /* the last diagnosis' alerts, resent until delivered */
	int nlast;
	struct rm_run_metrics *metrics; /* with --metrics, once the run's labels are known */
};

struct watch {
	struct rm_store *st;
	double diagnose_every; /* seconds: the latest a run with new rows waits for a full diagnosis */
	int64_t window;        /* steps the detectors read between full diagnoses; 0: always full */
	struct sidecar side[16];
	int nside;
	struct rm_import_opts imp;
	struct rm_wandb *w; /* NULL when offline or without a key */
	struct channel ch[20];
	int nch;
	enum rm_severity min;
	struct rm_import_opts log_imp; /* for .wandb logs */
	int offline, outage;
	int external; /* another process wrote to the database since the last tick */
	int max_per_hour;
	struct rm_metrics *metrics; /* --metrics: the registry and its endpoint */
	struct rm_metrics_server *server;
};

/* The run's metrics record (NULL without --metrics, or while the run's
 * labels are unknown: a .wandb log that has not named its run yet). */
static struct rm_run_metrics *run_metrics(struct watch *wt, struct watched *r, const struct rm_run_info *info)
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

static void note_sync(struct watch *wt, struct watched *r, int ok)
{
	struct rm_run_metrics *m = run_metrics(wt, r, NULL);
	if (m)
		rm_metrics_synced(m, ok, (double)time(NULL));
}

/* The registry's rendering goes to the endpoint: scrapes see each run's
 * tick as soon as it is done. */
static void publish(struct watch *wt)
{
	if (!wt->server)
		return;
	size_t len;
	char *text = rm_metrics_render(wt->metrics, &len);
	rm_metrics_server_publish(wt->server, text, len);
}

/* A flood guard: has the channel had max messages in the last hour? */
static int flooded(const struct channel *ch, int max)
{
	if (ch->nsent < max)
		return 0;
	return rm_monotonic() - ch->sent_at[(ch->nsent - max) % RATE_MAX] < 3600;
}

/* Sends the alerts that a channel has not had yet (at this severity). */
static void alert_run(struct watch *wt, struct rm_alert *al, int n)
{
	for (int c = 0; c < wt->nch; c++) {
		struct channel *ch = &wt->ch[c];
		struct rm_alert fresh[8];
		int nf = 0;
		struct rm_err err;
		for (int i = 0; i < n; i++) {
			int sent;
			if (rm_store_alert_sent(wt->st, al[i].fingerprint, ch->name, &sent, &err)) {
				rm_warning("%s", err.msg);
				continue;
			}
			if ((int)al[i].severity > sent)
				fresh[nf++] = al[i];
		}
		if (!nf)
			continue;
		if (ch->kind && flooded(ch, wt->max_per_hour)) {
			/* Not logged as sent: they go out when the hour allows. */
			if (!ch->held)
				rm_warning("more than %d alert messages in an hour to %s; holding the rest",
				           wt->max_per_hour, ch->name);
			ch->held = 1;
			continue;
		}
		ch->held = 0;
		ch->sent_at[ch->nsent++ % RATE_MAX] = rm_monotonic();
		int ok = 1;
		char why[512] = "";
		if (ch->kind == 0) {
			for (int i = 0; i < nf; i++) {
				char line[1200];
				rm_alert_line(&fresh[i], line, sizeof(line));
				printf("%s\n", line);
			}
			fflush(stdout);
		} else if (ch->kind == 3) {
			for (int i = 0; i < nf && ok; i++) {
				if (!fresh[i].entity[0])
					continue; /* a local run has no W&B page to alert on */
				char *body = rm_alert_wandb_body(&fresh[i]);
				ok = deliver(ch->http, body, 1, why, sizeof(why)) == 0;
				free(body);
			}
		} else {
			char *body =
			    ch->kind == 1 ? rm_alert_webhook_body(fresh, nf, "runmon") : rm_alert_slack_body(fresh, nf);
			ok = deliver(ch->http, body, 0, why, sizeof(why)) == 0;
			free(body);
		}
		if (!ok)
			rm_warning("alert delivery to %s failed, will retry next tick: %s", ch->name, why);
		for (int i = 0; i < nf; i++)
			if (rm_store_log_alert(wt->st, fresh[i].fingerprint, ch->name,
			                       rm_severity_name(fresh[i].severity), ok ? "sent" : "failed", &err))
				rm_warning("%s", err.msg);
	}
}

/* Imports what the run's sidecars gained since the last tick; returns the
 * lines read. */
static int64_t tail_sidecars(struct watch *wt, const char *spec)
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
		if (rm_import_tail(wt->st, &wt->imp, wt->side[i].path, &rep, &pos, &err)) {
			rm_warning("%s (will retry next tick)", err.msg);
			continue;
		}
		for (size_t j = 0; j < rep.n; j++)
			lines += (int64_t)rep.r[j].lines;
		rm_import_report_release(&rep);
	}
	return lines;
}

enum pass { PASS_NONE, PASS_WINDOW, PASS_FULL };

static void arrived(struct watched *r, int64_t rows)
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
static enum pass due(const struct watched *r, const struct watch *wt, int finished_now)
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
static int read_log(struct watch *wt, struct watched *r)
{
	struct rm_import_report rep;
	struct rm_tail_pos pos;
	struct rm_err err;
	if (rm_import_tail(wt->st, &wt->log_imp, r->log, &rep, &pos, &err)) {
		rm_warning("%s (will retry next tick)", err.msg);
		note_sync(wt, r, 0);
		return 1;
	}
	int64_t rows = 0;
	for (size_t j = 0; j < rep.n; j++) {
		const struct rm_import_result *res = &rep.r[j]; /* a step and its batch are one row */
		rows += (int64_t)(res->steps > res->batches ? res->steps : res->batches);
		if (rep.r[j].corrupt)
			rm_warning("%s: skipped %llu damaged chunk(s), the first at byte %llu", r->log,
			           (unsigned long long)rep.r[j].corrupt, (unsigned long long)rep.r[j].first_corrupt);
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
static void find_logs(const char *dir, struct watched **runs, int *nruns)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "run-", 4) && strncmp(e->d_name, "offline-run-", 12))
			continue;
		char *sub = rm_xmalloc(strlen(dir) + strlen(e->d_name) + 2);
		sprintf(sub, "%s/%s", dir, e->d_name);
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
		struct watched *r = &(*runs)[(*nruns)++];
		memset(r, 0, sizeof(*r));
		r->spec = r->log = log;
	}
	if (d)
		closedir(d);
}

/* One tick for one run; sets r->done when the run has finished. */
static void tick_run(struct watch *wt, struct watched *r)
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
		if (rm_sync_run(wt->st, wt->w, r->path.entity, r->path.project, r->path.id, &so, &res, &err)) {
			if (!wt->outage) /* say it once per outage */
				rm_warning("W&B sync failed, watching what is stored and retrying: %s", err.msg);
			wt->outage = 1;
			note_sync(wt, r, 0);
		} else {
			wt->outage = 0;
			note_sync(wt, r, 1);
			arrived(r, res.rows);
			finished_now = finished(res.state);
		}
	}
	if (stop)
		return; /* SIGINT/SIGTERM: what is written stays; no diagnosis */
	enum pass pass = due(r, wt, finished_now);
	if (pass == PASS_NONE) {
		alert_run(wt, r->last, r->nlast); /* what failed or was held before */
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
	if ((!run_id && rm_store_find_run(wt->st, spec, &run_id, &err)) ||
	    rm_analyze_run(wt->st, run_id, &o, &d, &info, &err)) {
		rm_warning("%s", err.msg);
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
	char *url = NULL;
	if (info.entity && *info.entity) {
		const char *base = getenv("WANDB_BASE_URL");
		url =
		    rm_wandb_run_url(base && *base ? base : RM_WANDB_DEFAULT_URL, info.entity, info.project, info.name);
	}
	int n = rm_alerts_from(&d, &info, url, wt->min, (double)time(NULL), r->last, 8);
	r->nlast = n;
	alert_run(wt, r->last, n);
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
static void print_stats(double *cpu, int n)
{
	if (n < 1)
		return;
	fprintf(stderr, "watch: %d ticks; first %.1f ms CPU", n, cpu[0] * 1e3);
	if (n > 1) {
		qsort(cpu + 1, (size_t)n - 1, sizeof(*cpu), cmp_double);
		fprintf(stderr, "; later ticks median %.1f ms, max %.1f ms", cpu[1 + (n - 1) / 2] * 1e3,
		        cpu[n - 1] * 1e3);
	}
	fprintf(stderr, "\n");
}

static int run_watch(int argc, char **argv, struct rm_ctx *ctx)
{
	static const struct option longopts[] = {
	    {"once", no_argument, NULL, '1'},
	    {"every", required_argument, NULL, 'e'},
	    {"batches", required_argument, NULL, 'b'},
	    {"diagnose-every", required_argument, NULL, 'd'},
	    {"window", required_argument, NULL, 'n'},
	    {"stats", no_argument, NULL, 'S'},
	    {"metrics", required_argument, NULL, 'P'},
	    {"metrics-path", required_argument, NULL, 'p'},
	    {"max-per-hour", required_argument, NULL, 'M'},
	    {"buckets", required_argument, NULL, 'B'},
	    {"wandb-dir", required_argument, NULL, 'W'},
	    {"webhook", required_argument, NULL, 'w'},
	    {"slack-webhook", required_argument, NULL, 's'},
	    {"wandb-alert", no_argument, NULL, 'a'},
	    {"min-severity", required_argument, NULL, 'm'},
	    {"offline", no_argument, NULL, 'o'},
	    {"retry-max", required_argument, NULL, 'r'},
	    {"retry-wait", required_argument, NULL, 'R'},
	    {"db", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct watch wt = {.min = RM_SEV_WARN, .diagnose_every = 1800, .window = 5000, .max_per_hour = 30};
	struct rm_http_opts ho;
	int c, once = 0, wandb_alert = 0, stats = 0, code;
	int64_t v;
	double every = 60, secs;
	const char *hooks[16];
	int nhooks = 0;
	const char *slack = NULL;
	int64_t *bounds = NULL;
	const char *buckets = NULL;
	char *wandb_dir = NULL;
	const char *metrics = NULL, *metrics_path = "/metrics";
	rm_http_opts_default(&ho);
	wt.imp.format = RM_FMT_SIDECAR_JSONL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case '1': once = 1; break;
		case 'e':
			if (rm_parse_duration(optarg, &every) || every < 0.1 || every > 86400 * 365)
				return rm_cmd_usage_error(
				    &cmd_watch, "--every wants a duration from 100ms to 365d, not '%s'", optarg);
			break;
		case 'w':
			if (nhooks == 16)
				return rm_cmd_usage_error(&cmd_watch, "at most 16 --webhook");
			hooks[nhooks++] = optarg;
			break;
		case 'b': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !eq[1])
				return rm_cmd_usage_error(&cmd_watch, "--batches wants RUN=FILE");
			if (wt.nside == 16)
				return rm_cmd_usage_error(&cmd_watch, "at most 16 --batches");
			*eq = '\0';
			wt.side[wt.nside++] = (struct sidecar){optarg, eq + 1, NULL};
			break;
		}
		case 'B': buckets = optarg; break;
		case 'W': wandb_dir = optarg; break;
		case 'd':
			if (rm_parse_duration(optarg, &wt.diagnose_every))
				return rm_cmd_usage_error(
				    &cmd_watch, "--diagnose-every wants a duration (30m, 1800), not '%s'", optarg);
			break;
		case 'S': stats = 1; break;
		case 'P': metrics = optarg; break;
		case 'p':
			if (optarg[0] != '/' || !optarg[1] || !strncmp(optarg, "/-/", 3) || strlen(optarg) > 200 ||
			    strpbrk(optarg, " \t\r\n?#"))
				return rm_cmd_usage_error(
				    &cmd_watch,
				    "--metrics-path wants a path like /metrics (not /, not /-/...), "
				    "not '%s'",
				    optarg);
			metrics_path = optarg;
			break;
		case 'n':
			if (rm_parse_int(optarg, 0, &wt.window) || (wt.window && wt.window < 1000))
				return rm_cmd_usage_error(&cmd_watch, "--window wants 0 or a step count >= 1000");
			break;
		case 'M':
			if (rm_parse_int(optarg, 1, &v) || v > RATE_MAX)
				return rm_cmd_usage_error(&cmd_watch, "--max-per-hour wants 1..%d", RATE_MAX);
			wt.max_per_hour = (int)v;
			break;
		case 's': slack = optarg; break;
		case 'a': wandb_alert = 1; break;
		case 'm':
			if (rm_severity_parse(optarg, &wt.min))
				return rm_cmd_usage_error(&cmd_watch, "--min-severity wants info, warn or critical");
			break;
		case 'o': wt.offline = 1; break;
		case 'r':
			if (rm_parse_int(optarg, 0, &v) || v > 100)
				return rm_cmd_usage_error(&cmd_watch, "--retry-max wants 0..100");
			ho.retry_max = (int)v;
			break;
		case 'R':
			if (rm_parse_duration(optarg, &secs) || !(secs > 0 && secs <= 60))
				return rm_cmd_usage_error(
				    &cmd_watch, "--retry-wait wants a duration in (0, 60s], not '%s'", optarg);
			ho.backoff_min = secs;
			break;
		case 'D': ctx->db_path = optarg; break;
		case 'h': return rm_cmd_help(&cmd_watch);
		default: return rm_cmd_usage_error(&cmd_watch, "bad option");
		}
	}
	if (optind >= argc && !wandb_dir)
		return rm_cmd_usage_error(&cmd_watch, "no run to watch (give RUN..., or --wandb-dir DIR)");
	if (metrics && once)
		return rm_cmd_usage_error(&cmd_watch, "--metrics serves while watch runs: it has no use with --once");
	if (buckets && rm_parse_bounds(buckets, &bounds, &wt.imp.nbounds))
		return rm_cmd_usage_error(
		    &cmd_watch, "--buckets wants 2 to 33 increasing lengths, like 0,770,1216,8192 (got '%s')", buckets);
	wt.imp.bounds = bounds;
	wt.log_imp = wt.imp;
	wt.log_imp.format = RM_FMT_WANDB_LOG;
	if (wandb_dir)
		wandb_dir = rm_path_absolute(wandb_dir);
	struct rm_err err;
	if (metrics) { /* before the store: a port in use fails at once */
		char url[512];
		if (rm_metrics_server_start(metrics, metrics_path, &wt.server, url, sizeof(url), &err)) {
			free(wandb_dir);
			free(bounds);
			if (err.code == RM_E_USAGE)
				return rm_cmd_usage_error(&cmd_watch, "%s", err.msg);
			rm_error("%s", err.msg);
			return rm_exit_code(err.code);
		}
		wt.metrics = rm_metrics_new();
		fprintf(stderr, "watch: serving metrics on %s\n", url);
	}
	if ((code = rm_ctx_open_store(ctx, &wt.st))) {
		rm_metrics_server_stop(wt.server);
		rm_metrics_free(wt.metrics);
		free(wandb_dir);
		free(bounds);
		return code;
	}
	struct rm_wandb_opts wo = {.retry_max = ho.retry_max, .backoff_min = ho.backoff_min};
	if ((!wt.offline || wandb_alert) && rm_wandb_open(&wt.w, &wo, &err)) {
		if (wandb_alert) {
			rm_error("%s", err.msg);
			rm_store_close(wt.st);
			rm_metrics_server_stop(wt.server);
			rm_metrics_free(wt.metrics);
			free(wandb_dir);
			free(bounds);
			return rm_exit_code(err.code);
		}
		wt.w = NULL; /* no key: local runs only, said once */
		for (int i = optind; i < argc; i++) {
			struct rm_run_path rp;
			if (rm_run_path_parse(argv[i], &rp)) {
				rm_run_path_release(&rp);
				rm_warning("not syncing W&B runs: %s", err.msg);
				break;
			}
		}
	}
	wt.ch[wt.nch++] = (struct channel){.name = "stdout", .kind = 0};
	for (int i = 0; i < nhooks; i++) {
		struct channel *ch = &wt.ch[wt.nch++];
		ch->kind = 1;
		url_hash("webhook", hooks[i], ch->name, sizeof(ch->name));
		ho.url = hooks[i];
		ch->http = rm_http_new(&ho);
	}
	if (slack) {
		struct channel *ch = &wt.ch[wt.nch++];
		ch->kind = 2;
		url_hash("slack", slack, ch->name, sizeof(ch->name));
		ho.url = slack;
		ch->http = rm_http_new(&ho);
	}
	if (wandb_alert) {
		struct channel *ch = &wt.ch[wt.nch++];
		ch->kind = 3;
		snprintf(ch->name, sizeof(ch->name), "wandb");
		ch->http = rm_wandb_http(wt.w);
	}
	for (int i = 0; i < wt.nside; i++)
		wt.side[i].path = rm_path_absolute(wt.side[i].given);
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int nruns = argc - optind, nticks = 0, cap = 64;
	struct watched *runs = rm_xcalloc((size_t)nruns, sizeof(*runs));
	double *cpu = rm_xmalloc((size_t)cap * sizeof(*cpu));
	for (int i = 0; i < nruns; i++) {
		runs[i].spec = argv[optind + i];
		runs[i].is_wandb = rm_run_path_parse(runs[i].spec, &runs[i].path);
	}
	int64_t version = 0, seen = 0;
	double published = rm_monotonic();
	/* With --wandb-dir a new run may start at any time: no end but a signal. */
	/* With --metrics, finished runs stay scraped until a signal. */
	for (int left = nruns; (left > 0 || wandb_dir || wt.server) && !stop;) {
		double t0 = cpu_seconds(), wall0 = rm_monotonic();
		if (wandb_dir) {
			int before = nruns;
			find_logs(wandb_dir, &runs, &nruns);
			left += nruns - before;
		}
		/* The version this tick reads from: a commit by another process
		 * while the tick runs shows at the next one. (Read after the tick,
		 * it hid an import that landed mid-tick for good. This process
		 * writes through one connection, whose own commits never change
		 * data_version.) */
		if (!rm_store_data_version(wt.st, &version, &err)) {
			wt.external = nticks > 0 && version != seen;
			seen = version;
		}
		for (int i = 0; i < nruns && !stop; i++) {
			if (runs[i].done)
				continue;
			tick_run(&wt, &runs[i]);
			left -= runs[i].done;
			/* A long tick (a first sync of many runs) shows its progress,
			 * at most once a second: a rendering costs O(runs). */
			if (wt.server && rm_monotonic() - published > 1) {
				publish(&wt);
				published = rm_monotonic();
			}
		}
		if (wt.metrics) {
			rm_metrics_tick(wt.metrics, rm_monotonic() - wall0);
			publish(&wt);
			rm_metrics_server_ready(wt.server);
		}
		if (stats) { /* kept only when asked: a watch may run for months */
			if (nticks == cap)
				cpu = rm_xrealloc(cpu, (size_t)(cap *= 2) * sizeof(*cpu));
			cpu[nticks] = cpu_seconds() - t0;
		}
		nticks++;
		if (once)
			break;
		for (double ms = 0; ms < every * 1000 && !stop && (left > 0 || wandb_dir || wt.server); ms += 100) {
			struct timespec ts = {0, 100000000L};
			nanosleep(&ts, NULL);
		}
	}
	if (stats)
		print_stats(cpu, nticks);
	free(cpu);
	for (int i = 0; i < nruns; i++) {
		rm_run_path_release(&runs[i].path);
		free(runs[i].log);
	}
	free(runs);
	free(wandb_dir);
	free(bounds);
	for (int i = 0; i < wt.nside; i++)
		free(wt.side[i].path);
	for (int i = 0; i < wt.nch; i++)
		if (wt.ch[i].kind == 1 || wt.ch[i].kind == 2)
			rm_http_free(wt.ch[i].http);
	rm_wandb_close(wt.w);
	rm_store_close(wt.st);
	rm_metrics_server_stop(wt.server);
	rm_metrics_free(wt.metrics);
	return RM_EXIT_OK;
}

const struct rm_cmd cmd_watch = {"watch", "keep runs diagnosed and alert on new findings", usage_text, run_watch};
