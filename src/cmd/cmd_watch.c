/*
 * cmd_watch.c - `runmon watch`: keep runs diagnosed and alert on new
 * findings: the homogeneous-batching verdict and loss resets that cluster
 * by bucket.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/alert.h"
#include "runmon/analyze.h"
#include "runmon/net.h"
#include "runmon/import.h"
#include "runmon/watch.h"
#include "runmon/wandb.h"

static const char about[] = "Each tick: syncs each W&B run (ENTITY/PROJECT/ID; local runs are read as\n"
                            "stored), reads what its batch sidecar gained, diagnoses it, and alerts on\n"
                            "findings at --min-severity or above: the verdict (homogeneous batching,\n"
                            "checkpoint resets, ...) and loss resets that cluster by bucket. Each alert\n"
                            "carries its evidence, the W&B run page and the fix, and is sent once per\n"
                            "channel across restarts (again only if its severity rises). A failed\n"
                            "delivery is retried with backoff and, if it still fails, recorded and tried\n"
                            "again next tick. A W&B outage is reported once and the watch goes on. A run\n"
                            "that finishes gets a final diagnosis and is dropped; watch exits when none\n"
                            "is left (with --metrics, it serves their last values until stopped).\n"
                            "SIGINT/SIGTERM: the current write completes, and watch exits 0.";

static const char notes[] = "Alerts are also printed on stdout, one line each. A duration is a number of\n"
                            "seconds with an optional unit: 500ms, 2s, 5m, 24h, 7d.";

static const struct rm_opt options[] = {
    {"once", '1', NULL, RM_ARG_NONE,
     "one tick, then exit (for cron); exit 3 when an alert delivery failed (it is retried on the next run)", NULL, NULL,
     0},
    {"every", 'e', "DURATION", RM_ARG_DURATION, "time between ticks", "60s", NULL, 0},
    {"batches", 'b', "RUN=FILE", RM_ARG_TEXT,
     "tail RUN's growing batch sidecar, JSON lines, CSV (FILE ending .csv) or a console log (.log, .txt, .out) "
     "(repeatable); a half-written last line waits, truncation and rotation (old file at FILE.1) are followed",
     NULL, NULL, 0},
    {"diagnose-every", 'd', "D", RM_ARG_DURATION,
     "diagnose a run with new rows in full (and store the findings) at least this often",
     "30m; sooner when it grew by 10%, 200 rows at least, or finished", NULL, 0},
    {"window", 'n', "STEPS", RM_ARG_STEP,
     "between full diagnoses, a tick with new rows runs the detectors on the last STEPS steps",
     "5000; 0: a full diagnosis every time", NULL, 0},
    {"stats", 'S', NULL, RM_ARG_NONE, "at exit, print the CPU time per tick on stderr", NULL, NULL, 0},
    {"metrics", 'P', "ADDR:PORT", RM_ARG_URI,
     "serve Prometheus metrics of the watched runs while watching (PORT alone: on 127.0.0.1); watch then runs until "
     "stopped; /-/healthy and /-/ready as well",
     NULL, NULL, 0},
    {"metrics-path", 'p', "PATH", RM_ARG_PATH, "where the metrics are served", "/metrics", NULL, 0},
    {"max-per-hour", 'M', "N", RM_ARG_COUNT,
     "messages per channel per hour (default 30); beyond that, alerts wait and a warning says so", NULL, NULL, 0},
    {"buckets", 'B', "LIST", RM_ARG_TEXT, "boundaries (0,770,...) for sidecar rows without a bucket", NULL, NULL, 0},
    {"wandb-dir", 'W', "DIR", RM_ARG_PATH,
     "follow the runs the W&B SDK writes under DIR (its wandb/ directory, offline or online) from their run-ID.wandb "
     "files, new runs included; watch then runs until stopped",
     NULL, NULL, 0},
    {"webhook", 'w', "URL", RM_ARG_URI, "POST alerts in Alertmanager's webhook shape (repeatable)", NULL, NULL, 0},
    {"slack-webhook", 's', "URL", RM_ARG_URI,
     "post alerts to a Slack incoming webhook (the URL is a secret: on the command line every local user sees it; "
     "prefer --slack-webhook-file or RUNMON_SLACK_WEBHOOK)",
     NULL, NULL, 0},
    {"slack-webhook-file", 'F', "FILE", RM_ARG_PATH,
     "read the Slack webhook's URL from FILE (its first line); env RUNMON_SLACK_WEBHOOK holds it too", NULL, NULL, 0},
    {"wandb-alert", 'a', NULL, RM_ARG_NONE, "raise W&B alerts on the run (notifyScriptableRunAlert)", NULL, NULL, 0},
    {"min-severity", 'm', "LVL", RM_ARG_CHOICE, "info, warn (default) or critical", NULL, "info warn critical", 0},
    {"offline", 'o', NULL, RM_ARG_NONE, "do not sync W&B runs", NULL, NULL, 0},
    {"skip-bad", 'k', NULL, RM_ARG_NONE,
     "skip a W&B row that does not parse or map, keep the rest, and say so (else its window waits)", NULL, NULL, 0},
    {"retry-max", 'r', "N", RM_ARG_COUNT, "retries of a failed delivery or request", "8", NULL, 0},
    {"retry-wait", 'R', "D", RM_ARG_DURATION, "first backoff", "2s", NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon watch --once --webhook http://am:9093/api/v2/alerts acme/llm/ab12cd34",
    "runmon watch --every 5m --metrics 9464 acme/llm/ab12cd34",
    "runmon watch --wandb-dir wandb/ --slack-webhook https://hooks.slack.com/T/B/X",
    "runmon watch --offline --batches my-run=batches.jsonl my-run",
    NULL,
};

struct watch_opts;
static int slack_url(struct watch_opts *o);

struct watch_opts {
	struct rm_watch wt;
	struct rm_http_opts ho;
	const char *hooks[16];
	int nhooks;
	const char *slack, *slack_file, *buckets, *wandb_dir, *metrics, *metrics_path;
	char *slack_read; /* the URL read from slack_file */
	int wandb_alert, max_per_hour;
	int first_run; /* argv[first_run..]: the runs named */
};

/* Reads the options into o; returns -1 when they are fine, else the exit
 * code. */
static int parse_options(int argc, char **argv, struct rm_ctx *ctx, struct watch_opts *o)
{
	int c;
	int64_t v;
	double secs;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_watch, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case '1': o->wt.once = 1; break;
		case 'e':
			if (rm_parse_duration(op.arg, &o->wt.every) || o->wt.every < 0.1 || o->wt.every > 86400 * 365)
				return rm_cmd_usage_error(
				    &cmd_watch, "--every wants a duration from 100ms to 365d, not '%s'", op.arg);
			break;
		case 'w':
			if (o->nhooks == 16)
				return rm_cmd_usage_error(&cmd_watch, "at most 16 --webhook");
			o->hooks[o->nhooks++] = op.arg;
			break;
		case 'b': {
			char *eq = strchr(op.arg, '=');
			if (!eq || eq == op.arg || !eq[1])
				return rm_cmd_usage_error(&cmd_watch, "--batches wants RUN=FILE");
			if (o->wt.nside == 16)
				return rm_cmd_usage_error(&cmd_watch, "at most 16 --batches");
			*eq = '\0';
			o->wt.side[o->wt.nside++] = (struct rm_watch_sidecar){op.arg, eq + 1, NULL};
			break;
		}
		case 'B': o->buckets = op.arg; break;
		case 'W': o->wandb_dir = op.arg; break;
		case 'd':
			if (rm_parse_duration(op.arg, &o->wt.diagnose_every))
				return rm_cmd_usage_error(
				    &cmd_watch, "--diagnose-every wants a duration (30m, 1800), not '%s'", op.arg);
			break;
		case 'S': o->wt.stats = 1; break;
		case 'P': o->metrics = op.arg; break;
		case 'p':
			if (op.arg[0] != '/' || !op.arg[1] || !strncmp(op.arg, "/-/", 3) || strlen(op.arg) > 200 ||
			    strspn(op.arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/") !=
			        strlen(op.arg))
				return rm_cmd_usage_error(&cmd_watch,
				                          "--metrics-path wants a path like /metrics (not /, not "
				                          "/-/..., of letters, digits and "
				                          "-._~/), not '%s'",
				                          op.arg);
			o->metrics_path = op.arg;
			break;
		case 'n':
			if (rm_parse_int(op.arg, 0, &o->wt.window) || (o->wt.window && o->wt.window < 1000))
				return rm_cmd_usage_error(&cmd_watch, "--window wants 0 or a step count >= 1000");
			break;
		case 'M':
			if (rm_parse_int(op.arg, 1, &v) || v > RM_ALERT_RATE_MAX)
				return rm_cmd_usage_error(&cmd_watch, "--max-per-hour wants 1..%d", RM_ALERT_RATE_MAX);
			o->max_per_hour = (int)v;
			break;
		case 's': o->slack = op.arg; break;
		case 'F': o->slack_file = op.arg; break;
		case 'a': o->wandb_alert = 1; break;
		case 'm':
			if (rm_severity_parse(op.arg, &o->wt.min))
				return rm_cmd_usage_error(&cmd_watch, "--min-severity wants info, warn or critical");
			break;
		case 'o': o->wt.offline = 1; break;
		case 'k': o->wt.skip_bad = 1; break;
		case 'r':
			if (rm_parse_int(op.arg, 0, &v) || v > 100)
				return rm_cmd_usage_error(&cmd_watch, "--retry-max wants 0..100");
			o->ho.retry_max = (int)v;
			break;
		case 'R':
			if (rm_parse_duration(op.arg, &secs) || !(secs > 0 && secs <= 60))
				return rm_cmd_usage_error(
				    &cmd_watch, "--retry-wait wants a duration in (0, 60s], not '%s'", op.arg);
			o->ho.backoff_min = secs;
			break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_watch);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	o->first_run = op.ind;
	if (op.ind >= argc && !o->wandb_dir)
		return rm_cmd_usage_error(&cmd_watch, "no run to watch (give RUN..., or --wandb-dir DIR)");
	if (o->metrics && o->wt.once)
		return rm_cmd_usage_error(&cmd_watch, "--metrics serves while watch runs: it has no use with --once");
	if (o->slack && o->slack_file)
		return rm_cmd_usage_error(&cmd_watch, "--slack-webhook and --slack-webhook-file: give one");
	return slack_url(o);
}

/* The Slack webhook's URL, a secret, from --slack-webhook-file or the
 * environment where the command line gives none: kept out of the process
 * list. Errors name the file, never the URL. Returns -1, or an exit code. */
static int slack_url(struct watch_opts *o)
{
	const char *env = getenv("RUNMON_SLACK_WEBHOOK");
	if (!o->slack_file) {
		if (!o->slack && env && *env)
			o->slack = env;
	} else {
		FILE *fp = fopen(o->slack_file, "r");
		char buf[2048];
		size_t n = fp ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;
		if (fp)
			fclose(fp);
		if (!fp) {
			rm_error("--slack-webhook-file: cannot read '%s': %s", rm_tx(o->slack_file), strerror(errno));
			return RM_EXIT_USAGE;
		}
		buf[n] = 0;
		buf[strcspn(buf, "\r\n")] = 0;
		char *url = buf + strspn(buf, " \t");
		size_t len = strlen(url);
		while (len && (url[len - 1] == ' ' || url[len - 1] == '\t'))
			url[--len] = 0;
		o->slack = o->slack_read = rm_xstrdup(url);
	}
	if (o->slack && strncmp(o->slack, "https://", 8) && strncmp(o->slack, "http://", 7)) {
		rm_error("the Slack webhook (%s) is no http(s) URL", o->slack_file     ? o->slack_file
		                                                     : o->slack == env ? "RUNMON_SLACK_WEBHOOK"
		                                                                       : "--slack-webhook");
		return RM_EXIT_USAGE;
	}
	return -1;
}

/* Opens what the watch writes to and alerts through; returns -1, or the
 * exit code of what failed (the caller releases what was opened). */
static int open_watch(struct watch_opts *o, int argc, char **argv, struct rm_ctx *ctx)
{
	struct rm_watch *wt = &o->wt;
	struct rm_err err;
	int code;
	if (o->metrics) { /* before the store: a port in use fails at once */
		char url[512];
		if (rm_metrics_server_start(o->metrics, o->metrics_path, &wt->server, url, sizeof(url), &err)) {
			if (err.code == RM_E_USAGE)
				return rm_cmd_usage_error(&cmd_watch, "%s", err.msg);
			rm_error("%s", err.msg);
			return rm_exit_code(err.code);
		}
		wt->metrics = rm_metrics_new();
		fprintf(stderr, "watch: serving metrics on %s\n", url);
	}
	if ((code = rm_ctx_open_store(ctx, &wt->st)))
		return code;
	struct rm_wandb_opts wo = {.retry_max = o->ho.retry_max, .backoff_min = o->ho.backoff_min};
	if ((!wt->offline || o->wandb_alert) && rm_wandb_open(&wt->w, &wo, &err)) {
		if (o->wandb_alert) {
			rm_error("%s", err.msg);
			return rm_exit_code(err.code);
		}
		wt->w = NULL; /* no key: local runs only, said once */
		for (int i = o->first_run; i < argc; i++) {
			struct rm_run_path rp;
			if (rm_run_path_parse(argv[i], &rp)) {
				rm_run_path_release(&rp);
				rm_warning("not syncing W&B runs: %s", err.msg);
				break;
			}
		}
	}
	rm_alerter_init(&wt->alerts, wt->st, o->max_per_hour, &rm_cli_voice);
	rm_alerter_add(&wt->alerts, RM_CHANNEL_STDOUT, NULL, NULL, NULL);
	for (int i = 0; i < o->nhooks; i++)
		rm_alerter_add(&wt->alerts, RM_CHANNEL_WEBHOOK, o->hooks[i], &o->ho, NULL);
	if (o->slack)
		rm_alerter_add(&wt->alerts, RM_CHANNEL_SLACK, o->slack, &o->ho, NULL);
	if (o->wandb_alert)
		rm_alerter_add(&wt->alerts, RM_CHANNEL_WANDB, NULL, NULL, rm_wandb_http(wt->w));
	for (int i = 0; i < wt->nside; i++)
		wt->side[i].path = rm_path_absolute(wt->side[i].given);
	return -1;
}

static int run_watch(int argc, char **argv, struct rm_ctx *ctx)
{
	struct watch_opts o = {.max_per_hour = 30, .metrics_path = "/metrics"};
	struct rm_watch *wt = &o.wt;
	int64_t *bounds = NULL;
	char *wandb_dir = NULL;
	*wt = (struct rm_watch){.min = RM_SEV_WARN, .diagnose_every = 1800, .window = 5000, .every = 60};
	wt->voice = rm_cli_voice;
	rm_http_opts_default(&o.ho);
	wt->imp.format = RM_FMT_SIDECAR_JSONL;
	int code = parse_options(argc, argv, ctx, &o);
	if (code >= 0) {
		free(o.slack_read);
		return code;
	}
	if (o.buckets && rm_parse_bounds(o.buckets, &bounds, &wt->imp.nbounds))
		return rm_cmd_usage_error(&cmd_watch,
		                          "--buckets wants 2 to 33 increasing lengths, like 0,770,1216,8192 (got '%s')",
		                          o.buckets);
	wt->imp.bounds = bounds;
	wt->imp.skip_bad = wt->skip_bad; /* the followed files' bad lines and damaged records too */
	wt->log_imp = wt->imp;
	wt->log_imp.format = RM_FMT_WANDB_LOG;
	if (o.wandb_dir)
		wt->wandb_dir = wandb_dir = rm_path_absolute(o.wandb_dir);
	code = open_watch(&o, argc, argv, ctx);
	if (code < 0)
		code = rm_exit_code((enum rm_status)rm_watch_run(wt, argv + o.first_run, argc - o.first_run));
	free(wandb_dir);
	free(bounds);
	for (int i = 0; i < wt->nside; i++)
		free(wt->side[i].path);
	rm_alerter_release(&wt->alerts); /* delivers what is queued first */
	free(o.slack_read);
	if (o.wt.once && wt->alerts.failed && code == RM_EXIT_OK) {
		/* cron sees it: the failed messages are logged and go out next run */
		rm_error("an alert delivery failed (it is retried on the next run)");
		code = RM_EXIT_NET;
	}
	rm_wandb_close(wt->w);
	rm_store_close(wt->st);
	rm_metrics_server_stop(wt->server);
	rm_metrics_free(wt->metrics);
	return code;
}

const struct rm_cmd cmd_watch = {
    .name = "watch",
    .summary = "keep runs diagnosed and alert on new findings",
    .synopsis = "[options] RUN...\n[options] --wandb-dir DIR [RUN...]",
    .about = about,
    .opts = options,
    .notes = notes,
    .examples = examples,
    .exit_status = "0 stopped (SIGINT, SIGTERM) or every run finished, 2 usage error or unknown run, 3 with --once: an "
                   "alert delivery failed (it is retried on the next run), 4 database error.",
    .operands = RM_OPERANDS_RUNS,
    .run = run_watch,
};
