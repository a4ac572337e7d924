/*
 * alert.h - the alert layer: alerts from a diagnosis (alert.c), their
 * payloads for each channel, and delivery (deliver.c: channels, dedup
 * against the alert log, a flood guard, the HTTP client's retries). Payload shapes follow shared/integrations.md
 * (Alertmanager's webhook v4, Slack incoming webhooks) and wandb-api.md
 * section 5 (notifyScriptableRunAlert).
 */
#ifndef RUNMON_ALERT_H
#define RUNMON_ALERT_H

#include <stddef.h>

#include "runmon/common.h"
#include "runmon/detect.h"
#include "runmon/model.h"
#include "runmon/net.h"
#include "runmon/store.h"

struct rm_alert {
	char fingerprint[17]; /* FNV-1a 64 of the sorted labels, as Prometheus prints it */
	char alertname[48];   /* RunmonHomogeneousBatching, RunmonResetsByBucket, ... */
	char run[512];        /* entity/project/id, or the local name */
	char detector[40];
	enum rm_severity severity;
	int bucket;                             /* -1 when not about one bucket */
	char bucket_label[RM_BUCKET_LABEL_LEN]; /* its label as the trainer wrote it, "" when none */
	int bucket_derived;                     /* the label is a derived length range, which may move */
	char summary[1024];                     /* the verdict names every cause at warn or above */
	char description[512];
	char fix[512];
	char url[512];    /* W&B run page or "" */
	double starts_at; /* unix seconds */
	/* for W&B alerts */
	char entity[128], project[128], run_id[128];
};

/* The alerts a diagnosis raises at min severity or above: the verdict
 * (homogeneous batching, checkpoints, instability...) and loss resets that
 * cluster by bucket. Returns the count (at most max). */
int rm_alerts_from(const struct rm_diagnosis *d, const struct rm_run_info *run, const char *url, enum rm_severity min,
                   double now, struct rm_alert *out, int max);

/* Prometheus' label-set fingerprint: labels sorted by name, each name and
 * value followed by 0xFF, through 64-bit FNV-1a, printed as %016x. */
void rm_alert_fingerprint(const char *const *names, const char *const *values, int n, char out[17]);

/* Payloads (caller frees). */
char *rm_alert_webhook_body(const struct rm_alert *a, int n, const char *receiver);
char *rm_alert_slack_body(const struct rm_alert *a, int n);
char *rm_alert_wandb_body(const struct rm_alert *a);
/* One line for stdout. */
void rm_alert_line(const struct rm_alert *a, char *buf, size_t n);

/* ---- delivery (deliver.c) ------------------------------------------------ */

#define RM_ALERT_RATE_MAX 1000 /* the highest --max-per-hour */
#define RM_ALERT_CHANNELS 20

enum rm_channel_kind { RM_CHANNEL_STDOUT, RM_CHANNEL_WEBHOOK, RM_CHANNEL_SLACK, RM_CHANNEL_WANDB };

/* ---- the outbox (outbox.c): a channel's deliveries off the tick --------- */

#define RM_OUTBOX_MAX 16 /* messages a channel holds queued or in flight */

struct rm_outbox_msg {
	char *body;
	int n; /* the alerts it carries, to log once it is done */
	char fp[8][17];
	enum rm_severity sev[8];
	int ok;        /* when done: delivered */
	char why[512]; /* when done and not ok */
	struct rm_outbox_msg *next;
};
struct rm_outbox;

/* POSTs body with http and waits: 0 on a 2xx (and, for W&B, success:
 * true), else -1 with why set. */
int rm_alert_post(struct rm_http *http, const char *body, int wandb, char *why, size_t n);

/* A thread that POSTs each message put to http (the channel's own client,
 * whose timeout and retries bound a delivery); NULL if none could start. */
struct rm_outbox *rm_outbox_start(struct rm_http *http);
/* Queues m (the outbox owns it): 0, or -1 when RM_OUTBOX_MAX are held. */
int rm_outbox_put(struct rm_outbox *b, struct rm_outbox_msg *m);
/* Does a message queued, in flight or done but not yet drained carry the
 * alert at this severity or higher? */
int rm_outbox_holds(struct rm_outbox *b, const char *fingerprint, enum rm_severity severity);
/* The messages done since the last call (caller frees, rm_outbox_msg_free). */
struct rm_outbox_msg *rm_outbox_done(struct rm_outbox *b);
/* Delivers what is queued (at once "interrupted" when the client's cancel
 * flag is set), ends the thread, frees the outbox; returns what was done. */
struct rm_outbox_msg *rm_outbox_stop(struct rm_outbox *b);
void rm_outbox_msg_free(struct rm_outbox_msg *m);

struct rm_channel {
	char name[64];   /* in the alert log: kind and a hash of the URL, never the URL */
	char shown[160]; /* in messages: kind and the URL's scheme and host, its path hidden */
	enum rm_channel_kind kind;
	struct rm_http *http;
	int own_http;
	struct rm_outbox *box;             /* webhooks and Slack: delivered off the tick */
	double sent_at[RM_ALERT_RATE_MAX]; /* monotonic times of the last messages, a ring */
	int nsent, held;                   /* held: a flood warning is out */
	int full;                          /* a "queue full" warning is out */
};

/* Where alerts go: the channels, the alert log in st that makes delivery
 * idempotent across restarts, and at most max_per_hour messages per
 * channel. Warnings and stdout's lines go through voice. */
struct rm_alerter {
	struct rm_store *st;
	struct rm_channel ch[RM_ALERT_CHANNELS];
	int nch;
	int max_per_hour;
	struct rm_voice voice;
	volatile sig_atomic_t *cancel; /* a signal handler's flag, or NULL */
	int failed;                    /* a delivery failed: a --once run says so in its exit status */
};

void rm_alerter_init(struct rm_alerter *a, struct rm_store *st, int max_per_hour, const struct rm_voice *voice);
/* Adds a channel: stdout; a webhook or Slack at url (a client of its own,
 * made with ho); or W&B alerts through borrowed, W&B's client. */
void rm_alerter_add(struct rm_alerter *a, enum rm_channel_kind kind, const char *url, const struct rm_http_opts *ho,
                    struct rm_http *borrowed);
/* Sends each channel the alerts it has not had yet at their severity; a
 * failed or held delivery is tried again at the next call. Webhooks and
 * Slack are queued for their outbox; what the outboxes did since is
 * logged first. */
void rm_alerter_send(struct rm_alerter *a, const struct rm_alert *al, int n);
/* Makes every delivery end at once when *flag is set (a signal handler's). */
void rm_alerter_set_cancel(struct rm_alerter *a, volatile sig_atomic_t *flag);
/* Delivers what the outboxes hold (unless the cancel flag is set), logs it,
 * and frees the channels. */
void rm_alerter_release(struct rm_alerter *a);

#endif
