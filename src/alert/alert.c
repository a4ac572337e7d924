/*
 * alert.c - see runmon/alert.h.
 */
#include "runmon/alert.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runmon/render.h"
#include "runmon/common.h"

void rm_alert_fingerprint(const char *const *names, const char *const *values, int n, char out[17])
{
	int order[16];
	for (int i = 0; i < n && i < 16; i++)
		order[i] = i;
	for (int i = 0; i < n; i++) /* insertion sort by name: a handful of labels */
		for (int j = i; j > 0 && strcmp(names[order[j]], names[order[j - 1]]) < 0; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	uint64_t h = 14695981039346656037ull; /* FNV-1a 64 offset basis */
	for (int i = 0; i < n; i++) {
		const char *parts[2] = {names[order[i]], values[order[i]]};
		for (int p = 0; p < 2; p++) {
			for (const unsigned char *c = (const unsigned char *)parts[p]; *c; c++)
				h = (h ^ *c) * 1099511628211ull;
			h = (h ^ 0xFF) * 1099511628211ull;
		}
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static void labels_fingerprint(struct rm_alert *a)
{
	/* Severity is left out: a rising severity is the same incident. The
	 * bucket by its label: dense ids differ between windows of a run. */
	const char *names[] = {"alertname", "run", "detector", "bucket"};
	const char *values[] = {a->alertname, a->run, a->detector, a->bucket_derived ? "" : a->bucket_label};
	rm_alert_fingerprint(names, values, 4, a->fingerprint);
}

static void fill_common(struct rm_alert *a, const struct rm_run_info *run, const char *url, double now)
{
	if (run->entity && *run->entity)
		snprintf(a->run, sizeof(a->run), "%s/%s/%s", run->entity, run->project, run->name);
	else
		snprintf(a->run, sizeof(a->run), "%s", run->name);
	snprintf(a->url, sizeof(a->url), "%s", url ? url : "");
	snprintf(a->entity, sizeof(a->entity), "%s", run->entity ? run->entity : "");
	snprintf(a->project, sizeof(a->project), "%s", run->project ? run->project : "");
	snprintf(a->run_id, sizeof(a->run_id), "%s", run->name);
	a->starts_at = now;
}

int rm_alerts_from(const struct rm_diagnosis *d, const struct rm_run_info *run, const char *url, enum rm_severity min,
                   double now, struct rm_alert *out, int max)
{
	int n = 0;
	const char *fix[8];
	int nf = rm_explain_fix(d, fix, 8);
	if (d->severity >= min && d->severity >= RM_SEV_INFO && n < max) {
		struct rm_alert *a = &out[n++];
		memset(a, 0, sizeof(*a));
		fill_common(a, run, url, now);
		/* Suspected from the loss alone is an alert of its own: its
		 * confirmation, once batches are recorded, is news. */
		int suspected = d->suspected && d->rank[0].h == RM_H_HOMOGENEOUS;
		snprintf(a->alertname, sizeof(a->alertname), "%s",
		         suspected ? "RunmonSuspectedHomogeneousBatching" : rm_hypothesis_alertname(d->rank[0].h));
		snprintf(a->detector, sizeof(a->detector), "verdict");
		a->severity = d->severity;
		a->bucket = -1;
		rm_explain_verdict(d, a->summary, sizeof(a->summary));
		if (d->rank[0].h == RM_H_DIVERGENCE)
			snprintf(a->description, sizeof(a->description),
			         "first bad step %lld; %zu points to the end (%zu NaN, %zu Inf, %zu exploded); steps "
			         "%lld..%lld",
			         (long long)d->divergence.first_step, d->divergence.points, d->divergence.nan,
			         d->divergence.inf, d->divergence.exploded, (long long)d->first_step,
			         (long long)d->last_step);
		else if (suspected)
			snprintf(a->description, sizeof(a->description),
			         "the loss alone: %d levels, %zu runs of one level (%.0f in random order, z = %.1f); "
			         "no batch"
			         " composition recorded; steps %lld..%lld",
			         d->split.levels, d->split.level_runs, d->split.level_runs_expected,
			         d->split.level_runs_z, (long long)d->first_step, (long long)d->last_step);
		else
			snprintf(
			    a->description, sizeof(a->description),
			    "runs z = %.1f (%.0f runs, %.0f expected); eta^2 = %.2f; %zu ladders (shuffled %.1f, p = "
			    "%.3f); %zu resets; steps %lld..%lld",
			    d->runs.z, d->runs.runs, d->runs.expected, d->split.eta2, d->ladder.count,
			    d->ladder.perm_mean, d->ladder.p, d->resets.spikes, (long long)d->first_step,
			    (long long)d->last_step);
		snprintf(a->fix, sizeof(a->fix), "%s", nf ? fix[0] : "");
		labels_fingerprint(a);
	}
	/* The alert the mission asks for: resets that cluster by bucket. */
	const struct rm_resets_result *r = &d->resets;
	if (r->cluster_by_bucket && RM_SEV_WARN >= min && n < max) {
		int top = -1;
		for (int b = 0; b < r->k; b++)
			if (r->bucket_spikes[b] && (top < 0 || r->enrichment[b] > r->enrichment[top]))
				top = b;
		struct rm_alert *a = &out[n++];
		memset(a, 0, sizeof(*a));
		fill_common(a, run, url, now);
		snprintf(a->alertname, sizeof(a->alertname), "RunmonResetsByBucket");
		snprintf(a->detector, sizeof(a->detector), "resets_by_bucket");
		a->severity = d->severity > RM_SEV_WARN ? d->severity : RM_SEV_WARN;
		a->bucket = top >= 0 ? r->bucket[top] : -1;
		snprintf(a->bucket_label, sizeof(a->bucket_label), "%s", top >= 0 ? rm_bucket_label(d, a->bucket) : "");
		a->bucket_derived = d->nderived > 0; /* boundaries refitted each time: one incident */
		int64_t first = r->spikes ? r->list[0].step : -1, last = first;
		for (size_t i = 0; i < r->spikes && i < RM_MAX_LIST; i++) {
			first = r->list[i].step < first ? r->list[i].step : first;
			last = r->list[i].step > last ? r->list[i].step : last;
		}
		snprintf(a->summary, sizeof(a->summary),
		         "loss resets cluster in bucket %s: %zu of %zu spikes, %.1fx its share of steps",
		         top >= 0 ? rm_bucket_label_short(d, a->bucket) : "", top >= 0 ? r->bucket_spikes[top] : 0,
		         r->spikes, top >= 0 ? r->enrichment[top] : 0);
		snprintf(
		    a->description, sizeof(a->description),
		    "enrichment %.2fx (binomial q = %.2g); spikes x bucket chi2 = %.1f, q = %.2g, Cramer's V = %.2f;"
		    " largest spikes at steps %lld..%lld",
		    top >= 0 ? r->enrichment[top] : 0, top >= 0 ? r->enrich_q[top] : 1, r->chi2, r->chi2_q,
		    r->cramers_v, (long long)first, (long long)last);
		snprintf(a->fix, sizeof(a->fix), "%s", nf ? fix[0] : "");
		labels_fingerprint(a);
	}
	return n;
}

static void rfc3339(double t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *rm_alert_webhook_body(const struct rm_alert *a, int n, const char *receiver)
{
	/* Alertmanager's webhook shape, version 4, so existing receivers
	 * take it (integrations.md section 4). */
	json_t *alerts = json_array();
	for (int i = 0; i < n; i++) {
		char start[32];
		rfc3339(a[i].starts_at, start, sizeof(start));
		json_t *labels = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "alertname", a[i].alertname, "run",
		                           a[i].run, "project", a[i].project, "detector", a[i].detector, "bucket",
		                           a[i].bucket_label, "severity", rm_severity_name(a[i].severity));
		json_array_append_new(alerts,
		                      json_pack("{s:s, s:o, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:s}", "status",
		                                "firing", "labels", labels, "annotations", "summary", a[i].summary,
		                                "description", a[i].description, "evidence", a[i].description, "fix",
		                                a[i].fix, "startsAt", start, "endsAt", "0001-01-01T00:00:00Z",
		                                "generatorURL", a[i].url, "fingerprint", a[i].fingerprint));
	}
	json_t *doc =
	    json_pack("{s:s, s:s, s:i, s:s, s:s, s:{}, s:{}, s:{}, s:s, s:o}", "version", "4", "groupKey",
	              n ? a[0].run : "", "truncatedAlerts", 0, "status", "firing", "receiver", receiver, "groupLabels",
	              "commonLabels", "commonAnnotations", "externalURL", "", "alerts", alerts);
	char *s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}

/* Slack's mrkdwn: only &, < and > are control characters. */
static void slack_escape(const char *in, char *out, size_t n)
{
	size_t o = 0;
	for (; *in && o + 6 < n; in++) {
		const char *rep = *in == '&' ? "&amp;" : *in == '<' ? "&lt;" : *in == '>' ? "&gt;" : NULL;
		if (rep) {
			memcpy(out + o, rep, strlen(rep));
			o += strlen(rep);
		} else {
			out[o++] = *in;
		}
	}
	out[o] = '\0';
}

char *rm_alert_slack_body(const struct rm_alert *a, int n)
{
	json_t *blocks = json_array();
	char fallback[256] = "";
	for (int i = 0; i < n && i < 40; i++) {
		char run[600], sum[1300], desc[700], fix[700], url[600];
		slack_escape(a[i].run, run, sizeof(run));
		slack_escape(a[i].url, url, sizeof(url)); /* a '>' would close the link */
		slack_escape(a[i].summary, sum, sizeof(sum));
		slack_escape(a[i].description, desc, sizeof(desc));
		slack_escape(a[i].fix, fix, sizeof(fix));
		/* Escape first, then add our own link markup (integrations.md 3).
		 * json_sprintf sizes the text itself, so nothing is cut. */
		json_t *text;
		if (a[i].url[0])
			text = json_sprintf("*%s* in <%s|%s>\n%s\n_%s_\nFix: %s", rm_severity_name(a[i].severity), url,
			                    run, sum, desc, fix);
		else
			text = json_sprintf("*%s* in `%s`\n%s\n_%s_\nFix: %s", rm_severity_name(a[i].severity), run,
			                    sum, desc, fix);
		json_array_append_new(blocks, json_pack("{s:s, s:{s:s, s:o}}", "type", "section", "text", "type",
		                                        "mrkdwn", "text", text));
		if (!i) /* the notification's text is mrkdwn too */
			snprintf(fallback, sizeof(fallback), "runmon: %s in %.180s", a[i].alertname, run);
	}
	json_t *doc = json_pack("{s:s, s:o}", "text", fallback, "blocks", blocks);
	char *s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}

/* wandb-api.md section 5: the mutation text as the SDK sends it. */
static const char wandb_mutation[] = "mutation NotifyScriptableRunAlert(\n"
                                     "    $entityName: String!,\n"
                                     "    $projectName: String!,\n"
                                     "    $runName: String!,\n"
                                     "    $title: String!,\n"
                                     "    $text: String!,\n"
                                     "    $severity: AlertSeverity = INFO,\n"
                                     "    $waitDuration: Duration\n"
                                     ") {\n"
                                     "    notifyScriptableRunAlert(input: {\n"
                                     "        entityName: $entityName,\n"
                                     "        projectName: $projectName,\n"
                                     "        runName: $runName,\n"
                                     "        title: $title,\n"
                                     "        text: $text,\n"
                                     "        severity: $severity,\n"
                                     "        waitDuration: $waitDuration\n"
                                     "    }) {\n"
                                     "        success\n"
                                     "    }\n"
                                     "}";

char *rm_alert_wandb_body(const struct rm_alert *a)
{
	char title[64], text[2200];
	snprintf(title, sizeof(title), "runmon: %.50s", a->alertname); /* "less than 64 characters" */
	snprintf(text, sizeof(text), "%s\n%s\nFix: %s", a->summary, a->description, a->fix);
	const char *sev = a->severity >= RM_SEV_CRITICAL ? "ERROR" : a->severity >= RM_SEV_WARN ? "WARN" : "INFO";
	json_t *doc = json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:I}}", "query", wandb_mutation, "variables",
	                        "entityName", a->entity, "projectName", a->project, "runName", a->run_id, "title",
	                        title, "text", text, "severity", sev, "waitDuration", (json_int_t)300000);
	char *s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}

void rm_alert_line(const struct rm_alert *a, char *buf, size_t n)
{
	/* the time first, as a log line: a cron mail or a journal shows when */
	char when[32] = "-";
	time_t t = (time_t)a->starts_at;
	struct tm tm;
	if (a->starts_at > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(buf, n, "%s ALERT %s %s %s: %s", when, rm_severity_name(a->severity), rm_tx(a->run), a->alertname,
	         rm_tx(a->summary));
}
