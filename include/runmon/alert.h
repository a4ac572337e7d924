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
	char summary[512];
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

struct rm_channel {
	char name[64]; /* in the alert log: kind and a hash of the URL, never the URL */
	enum rm_channel_kind kind;
	struct rm_http *http;
	int own_http;
	double sent_at[RM_ALERT_RATE_MAX]; /* monotonic times of the last messages, a ring */
	int nsent, held;                   /* held: a flood warning is out */
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
};

void rm_alerter_init(struct rm_alerter *a, struct rm_store *st, int max_per_hour, const struct rm_voice *voice);
/* Adds a channel: stdout; a webhook or Slack at url (a client of its own,
 * made with ho); or W&B alerts through borrowed, W&B's client. */
void rm_alerter_add(struct rm_alerter *a, enum rm_channel_kind kind, const char *url, const struct rm_http_opts *ho,
                    struct rm_http *borrowed);
/* Sends each channel the alerts it has not had yet at their severity; a
 * failed or held delivery is tried again at the next call. */
void rm_alerter_send(struct rm_alerter *a, const struct rm_alert *al, int n);
void rm_alerter_release(struct rm_alerter *a);

#endif
