/*
 * cmd_watch.c - `runmon watch`: keep runs diagnosed and alert on new
 * findings: the homogeneous-batching verdict and loss resets that cluster
 * by bucket.
 */
#include <getopt.h>
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
                                 "  --once               one tick, then exit (for cron); exit 3 when an alert\n"
                                 "                       delivery failed (it is retried on the next run)\n"
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

struct watch_opts {
	struct rm_watch wt;
	struct rm_http_opts ho;
	const char *hooks[16];
	int nhooks;
	const char *slack, *buckets, *wandb_dir, *metrics, *metrics_path;
	int wandb_alert, max_per_hour;
};

/* Reads the options into o; returns -1 when they are fine, else the exit
 * code. */
static int parse_options(int argc, char **argv, struct rm_ctx *ctx, struct watch_opts *o)
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
	int c;
	int64_t v;
	double secs;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case '1': o->wt.once = 1; break;
		case 'e':
			if (rm_parse_duration(optarg, &o->wt.every) || o->wt.every < 0.1 || o->wt.every > 86400 * 365)
				return rm_cmd_usage_error(
				    &cmd_watch, "--every wants a duration from 100ms to 365d, not '%s'", optarg);
			break;
		case 'w':
			if (o->nhooks == 16)
				return rm_cmd_usage_error(&cmd_watch, "at most 16 --webhook");
			o->hooks[o->nhooks++] = optarg;
			break;
		case 'b': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !eq[1])
				return rm_cmd_usage_error(&cmd_watch, "--batches wants RUN=FILE");
			if (o->wt.nside == 16)
				return rm_cmd_usage_error(&cmd_watch, "at most 16 --batches");
			*eq = '\0';
			o->wt.side[o->wt.nside++] = (struct rm_watch_sidecar){optarg, eq + 1, NULL};
			break;
		}
		case 'B': o->buckets = optarg; break;
		case 'W': o->wandb_dir = optarg; break;
		case 'd':
			if (rm_parse_duration(optarg, &o->wt.diagnose_every))
				return rm_cmd_usage_error(
				    &cmd_watch, "--diagnose-every wants a duration (30m, 1800), not '%s'", optarg);
			break;
		case 'S': o->wt.stats = 1; break;
		case 'P': o->metrics = optarg; break;
		case 'p':
			if (optarg[0] != '/' || !optarg[1] || !strncmp(optarg, "/-/", 3) || strlen(optarg) > 200 ||
			    strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/") !=
			        strlen(optarg))
				return rm_cmd_usage_error(&cmd_watch,
				                          "--metrics-path wants a path like /metrics (not /, not "
				                          "/-/..., of letters, digits and "
				                          "-._~/), not '%s'",
				                          optarg);
			o->metrics_path = optarg;
			break;
		case 'n':
			if (rm_parse_int(optarg, 0, &o->wt.window) || (o->wt.window && o->wt.window < 1000))
				return rm_cmd_usage_error(&cmd_watch, "--window wants 0 or a step count >= 1000");
			break;
		case 'M':
			if (rm_parse_int(optarg, 1, &v) || v > RM_ALERT_RATE_MAX)
				return rm_cmd_usage_error(&cmd_watch, "--max-per-hour wants 1..%d", RM_ALERT_RATE_MAX);
			o->max_per_hour = (int)v;
			break;
		case 's': o->slack = optarg; break;
		case 'a': o->wandb_alert = 1; break;
		case 'm':
			if (rm_severity_parse(optarg, &o->wt.min))
				return rm_cmd_usage_error(&cmd_watch, "--min-severity wants info, warn or critical");
			break;
		case 'o': o->wt.offline = 1; break;
		case 'r':
			if (rm_parse_int(optarg, 0, &v) || v > 100)
				return rm_cmd_usage_error(&cmd_watch, "--retry-max wants 0..100");
			o->ho.retry_max = (int)v;
			break;
		case 'R':
			if (rm_parse_duration(optarg, &secs) || !(secs > 0 && secs <= 60))
				return rm_cmd_usage_error(
				    &cmd_watch, "--retry-wait wants a duration in (0, 60s], not '%s'", optarg);
			o->ho.backoff_min = secs;
			break;
		case 'D': ctx->db_path = optarg; break;
		case 'h': return rm_cmd_help(&cmd_watch);
		default: return rm_cmd_usage_error(&cmd_watch, "bad option");
		}
	}
	if (optind >= argc && !o->wandb_dir)
		return rm_cmd_usage_error(&cmd_watch, "no run to watch (give RUN..., or --wandb-dir DIR)");
	if (o->metrics && o->wt.once)
		return rm_cmd_usage_error(&cmd_watch, "--metrics serves while watch runs: it has no use with --once");
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
		for (int i = optind; i < argc; i++) {
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
	if (code >= 0)
		return code;
	if (o.buckets && rm_parse_bounds(o.buckets, &bounds, &wt->imp.nbounds))
		return rm_cmd_usage_error(&cmd_watch,
		                          "--buckets wants 2 to 33 increasing lengths, like 0,770,1216,8192 (got '%s')",
		                          o.buckets);
	wt->imp.bounds = bounds;
	wt->log_imp = wt->imp;
	wt->log_imp.format = RM_FMT_WANDB_LOG;
	if (o.wandb_dir)
		wt->wandb_dir = wandb_dir = rm_path_absolute(o.wandb_dir);
	code = open_watch(&o, argc, argv, ctx);
	if (code < 0) {
		rm_watch_run(wt, argv + optind, argc - optind);
		code = RM_EXIT_OK;
	}
	free(wandb_dir);
	free(bounds);
	for (int i = 0; i < wt->nside; i++)
		free(wt->side[i].path);
	rm_alerter_release(&wt->alerts); /* delivers what is queued first */
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

const struct rm_cmd cmd_watch = {"watch", "keep runs diagnosed and alert on new findings", usage_text, run_watch};
