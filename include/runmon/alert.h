/*
 * alert.h - alerts from a diagnosis, their payloads for each channel, and
 * delivery with retries. Payload shapes follow shared/integrations.md
 * (Alertmanager's webhook v4, Slack incoming webhooks) and wandb-api.md
 * section 5 (notifyScriptableRunAlert).
 */
#ifndef RUNMON_ALERT_H
#define RUNMON_ALERT_H

#include <stddef.h>

#include "runmon/detect.h"
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

#endif
