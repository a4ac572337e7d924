/*
 * test_alert.c - alerts from a diagnosis: which findings raise one at a
 * minimum severity, their Prometheus fingerprints (the same incident
 * keeps its fingerprint as its severity rises; a reset cluster in another
 * bucket is another incident), and the payloads' shapes.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/alert.h"
#include "testutil.h"

/* A diagnosis whose verdict is hypothesis h at sev, with loss resets
 * clustered in the bucket labelled label (id 4 of 6) when label != NULL. */
static void sick(struct rm_diagnosis *d, enum rm_hypothesis h, enum rm_severity sev, const char *label, int id)
{
	memset(d, 0, sizeof(*d));
	d->severity = sev;
	d->rank[0].h = h;
	d->rank[0].severity = sev;
	d->points = 1000;
	d->first_step = 0;
	d->last_step = 999;
	if (!label)
		return;
	struct rm_resets_result *r = &d->resets;
	r->ok = 1;
	r->cluster_by_bucket = 1;
	r->k = 6;
	r->spikes = 12;
	for (int b = 0; b < 6; b++)
		r->bucket[b] = b;
	r->bucket_spikes[id] = 10;
	r->bucket_spikes[0] = 2;
	r->enrichment[id] = 5;
	r->enrichment[0] = 0.4;
	r->list[0] = (struct rm_spike){500, id, 3, 1, 3, 5};
	d->nlabels = 6;
	for (int b = 0; b < 6; b++) {
		d->label_id[b] = b;
		snprintf(d->label[b], sizeof(d->label[b]), "%s", b == id ? label : "other");
	}
}

static const struct rm_run_info wandb_run = {.entity = "acme", .project = "llm", .name = "ab12cd34", .source = "wandb"};

static void verdict_alert_at_min_severity(void **state)
{
	struct rm_diagnosis d;
	struct rm_alert a[4];
	sick(&d, RM_H_HOMOGENEOUS, RM_SEV_WARN, NULL, 0);
	int n = rm_alerts_from(&d, &wandb_run, "https://wandb.ai/acme/llm/runs/ab12cd34", RM_SEV_WARN, 0, a, 4);
	assert_int_equal(n, 1);
	assert_string_equal(a[0].alertname, "RunmonHomogeneousBatching");
	assert_string_equal(a[0].run, "acme/llm/ab12cd34");
	assert_string_equal(a[0].detector, "verdict");
	assert_int_equal(a[0].severity, RM_SEV_WARN);
	assert_int_equal(strlen(a[0].fingerprint), 16);
	/* below the minimum: nothing */
	assert_int_equal(rm_alerts_from(&d, &wandb_run, NULL, RM_SEV_CRITICAL, 0, a, 4), 0);
	/* a healthy run raises nothing at warn */
	sick(&d, RM_H_HOMOGENEOUS, RM_SEV_NONE, NULL, 0);
	assert_int_equal(rm_alerts_from(&d, &wandb_run, NULL, RM_SEV_WARN, 0, a, 4), 0);
}

/* Dedup is by fingerprint and severity: a rising severity must keep the
 * fingerprint (the same incident, sent again only because it is worse). */
static void fingerprint_leaves_severity_out(void **state)
{
	struct rm_diagnosis d;
	struct rm_alert warn[2], crit[2];
	sick(&d, RM_H_CHECKPOINT, RM_SEV_WARN, NULL, 0);
	assert_int_equal(rm_alerts_from(&d, &wandb_run, NULL, RM_SEV_INFO, 0, warn, 2), 1);
	sick(&d, RM_H_CHECKPOINT, RM_SEV_CRITICAL, NULL, 0);
	assert_int_equal(rm_alerts_from(&d, &wandb_run, NULL, RM_SEV_INFO, 0, crit, 2), 1);
	assert_string_equal(warn[0].alertname, "RunmonCheckpointResets");
	assert_string_equal(warn[0].fingerprint, crit[0].fingerprint);
	/* another hypothesis is another incident */
	sick(&d, RM_H_INSTABILITY, RM_SEV_WARN, NULL, 0);
	assert_int_equal(rm_alerts_from(&d, &wandb_run, NULL, RM_SEV_INFO, 0, crit, 2), 1);
	assert_string_not_equal(warn[0].fingerprint, crit[0].fingerprint);
}

/* Resets that cluster in bucket "long" and resets that cluster in bucket
 * "short" are two incidents: each must reach a channel. */
static void reset_clusters_in_two_buckets_are_two_alerts(void **state)
{
	struct rm_diagnosis d;
	struct rm_alert four[2], five[2];
	sick(&d, RM_H_HOMOGENEOUS, RM_SEV_WARN, "long", 4);
	assert_int_equal(rm_alerts_from(&d, &wandb_run, NULL, RM_SEV_WARN, 0, four, 2), 2);
	sick(&d, RM_H_HOMOGENEOUS, RM_SEV_WARN, "longest", 5);
	assert_int_equal(rm_alerts_from(&d, &wandb_run, NULL, RM_SEV_WARN, 0, five, 2), 2);
	assert_string_equal(four[1].alertname, "RunmonResetsByBucket");
	assert_string_equal(four[1].bucket_label, "long");
	assert_string_equal(five[1].bucket_label, "longest");
	assert_string_not_equal(four[1].fingerprint, five[1].fingerprint);
	/* the verdicts are one incident */
	assert_string_equal(four[0].fingerprint, five[0].fingerprint);
	/* the fingerprint is Prometheus' over the labels */
	char want[17];
	const char *names[] = {"alertname", "run", "detector", "bucket"};
	const char *values[] = {"RunmonResetsByBucket", "acme/llm/ab12cd34", "resets_by_bucket", "long"};
	rm_alert_fingerprint(names, values, 4, want);
	assert_string_equal(four[1].fingerprint, want);
}

static void fingerprint_is_order_free_fnv1a(void **state)
{
	char a[17], b[17];
	const char *n1[] = {"b", "a"}, *v1[] = {"2", "1"};
	const char *n2[] = {"a", "b"}, *v2[] = {"1", "2"};
	rm_alert_fingerprint(n1, v1, 2, a);
	rm_alert_fingerprint(n2, v2, 2, b);
	assert_string_equal(a, b);
	/* FNV-1a 64 of "a" 0xFF "1" 0xFF "b" 0xFF "2" 0xFF */
	uint64_t h = 14695981039346656037ull;
	const unsigned char bytes[] = {'a', 0xFF, '1', 0xFF, 'b', 0xFF, '2', 0xFF};
	for (size_t i = 0; i < sizeof(bytes); i++)
		h = (h ^ bytes[i]) * 1099511628211ull;
	char want[17];
	snprintf(want, sizeof(want), "%016llx", (unsigned long long)h);
	assert_string_equal(a, want);
}

static void webhook_body_is_alertmanager_v4(void **state)
{
	struct rm_diagnosis d;
	struct rm_alert a[2];
	sick(&d, RM_H_HOMOGENEOUS, RM_SEV_CRITICAL, "long", 4);
	int n = rm_alerts_from(&d, &wandb_run, "https://wandb.ai/acme/llm/runs/ab12cd34", RM_SEV_WARN, 0, a, 2);
	char *body = rm_alert_webhook_body(a, n, "runmon");
	json_t *doc = json_loads(body, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "version")), "4");
	json_t *alerts = json_object_get(doc, "alerts");
	assert_int_equal(json_array_size(alerts), 2);
	json_t *second = json_array_get(alerts, 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(second, "labels"), "bucket")), "long");
	assert_string_equal(json_string_value(json_object_get(json_object_get(second, "labels"), "severity")),
	                    "critical");
	assert_string_equal(json_string_value(json_object_get(second, "fingerprint")), a[1].fingerprint);
	json_decref(doc);
	free(body);
}

/* Slack reads its mrkdwn in the blocks and in the fallback text: a run
 * named to ping the channel with a chosen link (issue 49.8) arrives as
 * plain text in both, and a URL cannot close the link early. */
static void slack_body_escapes_every_text(void **state)
{
	(void)state;
	struct rm_alert a;
	memset(&a, 0, sizeof(a));
	snprintf(a.alertname, sizeof(a.alertname), "RunmonHomogeneousBatching");
	snprintf(a.run, sizeof(a.run), "<!channel> <http://evil|click> & co");
	snprintf(a.summary, sizeof(a.summary), "homogeneous batching");
	snprintf(a.url, sizeof(a.url), "https://wandb.ai/acme/llm/runs/x?a=1&b=<2>");
	char *body = rm_alert_slack_body(&a, 1);
	json_t *doc = json_loads(body, 0, NULL);
	assert_non_null(doc);
	const char *fallback = json_string_value(json_object_get(doc, "text"));
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_array_get(json_object_get(doc, "blocks"), 0), "text"), "text"));
	assert_non_null(fallback);
	assert_non_null(text);
	assert_null(strstr(fallback, "<!channel>"));
	assert_null(strstr(text, "<!channel>"));
	assert_non_null(strstr(fallback, "&lt;!channel&gt; &lt;http://evil|click&gt; &amp; co"));
	assert_non_null(strstr(text, "|&lt;!channel&gt; &lt;http://evil|click&gt; &amp; co>"));
	assert_non_null(strstr(text, "<https://wandb.ai/acme/llm/runs/x?a=1&amp;b=&lt;2&gt;|"));
	json_decref(doc);
	free(body);
}

/* What a delivery message shows of a webhook: scheme, host and port, never
 * the user and password before the host nor the path (issue 49's mutant:
 * the userinfo kept, every test green). */
static void webhook_shown_without_secrets(void **state)
{
	(void)state;
	static const struct {
		const char *url, *shown;
	} cases[] = {
	    {"https://hookuser:hunter2@hooks.example.com:8443/services/T0/B0/XXX",
	     "webhook https://hooks.example.com:8443/\xe2\x80\xa6"},
	    {"http://127.0.0.1:9093", "webhook http://127.0.0.1:9093"},
	    {"http://u:p/w?d#@127.0.0.1:9/hook", "webhook http://\xe2\x80\xa6"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rm_alerter a;
		struct rm_http_opts ho;
		rm_http_opts_default(&ho);
		rm_alerter_init(&a, NULL, 10, NULL);
		rm_alerter_add(&a, RM_CHANNEL_WEBHOOK, cases[i].url, &ho, NULL);
		assert_string_equal(a.ch[0].shown, cases[i].shown);
		assert_null(strstr(a.ch[0].shown, "hunter2"));
		rm_alerter_release(&a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(verdict_alert_at_min_severity),
	    cmocka_unit_test(fingerprint_leaves_severity_out),
	    cmocka_unit_test(reset_clusters_in_two_buckets_are_two_alerts),
	    cmocka_unit_test(fingerprint_is_order_free_fnv1a),
	    cmocka_unit_test(webhook_body_is_alertmanager_v4),
	    cmocka_unit_test(slack_body_escapes_every_text),
	    cmocka_unit_test(webhook_shown_without_secrets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
