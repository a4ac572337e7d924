/*
 * test_metrics.c - the metrics registry and its exposition: escapes, values
 * left out, counters that never fall, the tick histogram.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/watch.h"
#include "testutil.h"

static char *render(const struct rm_metrics *m)
{
	size_t len;
	char *text = rm_metrics_render(m, &len);
	assert_int_equal(strlen(text), len);
	assert_true(len > 0 && text[len - 1] == '\n');
	return text;
}

static void has(const char *text, const char *line)
{
	if (!strstr(text, line))
		fail_msg("no '%s' in:\n%s", line, text);
}

static void lacks(const char *text, const char *what)
{
	if (strstr(text, what))
		fail_msg("'%s' should not be in:\n%s", what, text);
}

/* A diagnosis with the fields the registry reads. */
static void diagnosis(struct rm_diagnosis *d, size_t spikes, size_t in_b5, double loss)
{
	memset(d, 0, sizeof(*d));
	d->severity = RM_SEV_CRITICAL;
	for (int i = 0; i < RM_H_COUNT; i++)
		d->rank[i] =
		    (struct rm_ranked){.h = (enum rm_hypothesis)i, .severity = i ? RM_SEV_NONE : RM_SEV_CRITICAL};
	d->runs.ok = 1;
	d->runs.z = -12.5;
	d->split.ok = 1;
	d->split.eta2 = 0.25;
	d->split.modes = 3;
	d->ladder.ok = 1;
	d->ladder.count = 2;
	d->resets.ok = 1;
	d->resets.spikes = spikes;
	d->resets.k = 2;
	d->resets.bucket[0] = 0;
	d->resets.bucket[1] = 5;
	d->resets.bucket_spikes[0] = spikes - in_b5;
	d->resets.bucket_spikes[1] = in_b5;
	d->resets.cluster_by_bucket = 1;
	d->resets.chi2_q = 1e-9;
	d->nlabels = 2;
	d->label_id[0] = 0;
	d->label_id[1] = 5;
	strcpy(d->label[0], "short");
	strcpy(d->label[1], "long\"er");
	d->finite = 10;
	d->last_step = 1234;
	d->last_loss = loss;
	d->last_adjusted = 0.1;
	d->last_length_adjusted = NAN;
}

static void labels_are_escaped(void **state)
{
	struct rm_metrics *m = rm_metrics_new();
	rm_metrics_run(m, "ent\\ity", "pro\"ject", "a\nb\xff");
	char *text = render(m);
	has(text, "runmon_run_info{entity=\"ent\\\\ity\",project=\"pro\\\"ject\",run=\"a\\nb\xef\xbf\xbd\","
	          "display_name=\"\"} 1\n");
	free(text);
	rm_metrics_free(m);
}

static void unmeasured_values_are_left_out(void **state)
{
	struct rm_metrics *m = rm_metrics_new();
	struct rm_run_metrics *r = rm_metrics_run(m, "e", "p", "r");
	char *text = render(m);
	has(text, "runmon_run_finished{entity=\"e\",project=\"p\",run=\"r\"} 0\n");
	has(text, "runmon_sync_errors_total{entity=\"e\",project=\"p\",run=\"r\"} 0\n");
	lacks(text, "runmon_runs_test_z");
	lacks(text, "runmon_loss_resets_total");
	lacks(text, "NaN");
	free(text);
	struct rm_diagnosis d;
	struct rm_run_info info = {.steps = 4, .batch_steps = 3};
	diagnosis(&d, 10, 8, 2.5);
	d.runs.ok = 0; /* no buckets: no runs test */
	rm_metrics_diagnosed(r, &d, &info, 1, 100);
	text = render(m);
	lacks(text, "runmon_runs_test_z");
	lacks(text, "runmon_loss_length_adjusted{");
	lacks(text, "runmon_padding_efficiency_ratio{"); /* no cost measured */
	has(text, "runmon_loss_bucket_eta_squared{entity=\"e\",project=\"p\",run=\"r\"} 0.25\n");
	has(text, "runmon_batch_composition_ratio{entity=\"e\",project=\"p\",run=\"r\"} 0.75\n");
	has(text,
	    "runmon_hypothesis_severity{entity=\"e\",project=\"p\",run=\"r\",hypothesis=\"homogeneous_batching\"} 3\n");
	has(text, "runmon_bucket_loss_resets_total{entity=\"e\",project=\"p\",run=\"r\",bucket=\"long\\\"er\"} 8\n");
	free(text);
	d.cost.ok = 1;
	d.cost.efficiency = 0.875;
	rm_metrics_diagnosed(r, &d, &info, 1, 101);
	text = render(m);
	has(text, "runmon_padding_efficiency_ratio{entity=\"e\",project=\"p\",run=\"r\"} 0.875\n");
	free(text);
	rm_metrics_free(m);
}

/* Two labels sharing their first 100 bytes: two series, each label whole
 * (issue 35.2: they were cut to 39 bytes and their counters merged). */
static void long_labels_stay_apart(void **state)
{
	struct rm_metrics *m = rm_metrics_new();
	struct rm_run_metrics *r = rm_metrics_run(m, "e", "p", "r");
	struct rm_diagnosis d;
	struct rm_run_info info = {0};
	char a[201], b[201];
	memset(a, 'x', 199);
	a[199] = 'a', a[200] = 0;
	memcpy(b, a, sizeof(b));
	b[199] = 'b';
	diagnosis(&d, 10, 8, 2.5);
	strcpy(d.label[0], a);
	strcpy(d.label[1], b);
	rm_metrics_diagnosed(r, &d, &info, 1, 100);
	char *text = render(m), want[512];
	snprintf(want, sizeof(want),
	         "runmon_bucket_loss_resets_total{entity=\"e\",project=\"p\",run=\"r\",bucket=\"%s\"} 2\n", a);
	has(text, want);
	snprintf(want, sizeof(want),
	         "runmon_bucket_loss_resets_total{entity=\"e\",project=\"p\",run=\"r\",bucket=\"%s\"} 8\n", b);
	has(text, want);
	free(text);
	rm_metrics_free(m);
	(void)state;
}

static void counters_never_fall(void **state)
{
	struct rm_metrics *m = rm_metrics_new();
	struct rm_run_metrics *r = rm_metrics_run(m, "e", "p", "r");
	struct rm_diagnosis d;
	struct rm_run_info info = {0};
	diagnosis(&d, 10, 8, 2.5);
	rm_metrics_diagnosed(r, &d, &info, 1, 100);
	diagnosis(&d, 6, 3, 1.75); /* a later diagnosis counts fewer */
	d.runs.z = -3;
	rm_metrics_diagnosed(r, &d, &info, 1, 200);
	char *text = render(m);
	has(text, "runmon_loss_resets_total{entity=\"e\",project=\"p\",run=\"r\"} 10\n");
	has(text, "runmon_bucket_loss_resets_total{entity=\"e\",project=\"p\",run=\"r\",bucket=\"long\\\"er\"} 8\n");
	has(text, "runmon_bucket_loss_resets_total{entity=\"e\",project=\"p\",run=\"r\",bucket=\"short\"} 3\n");
	has(text, "runmon_runs_test_z{entity=\"e\",project=\"p\",run=\"r\"} -3\n"); /* a gauge follows */
	free(text);
	/* A window pass: the latest loss moves, the run's findings stay. */
	diagnosis(&d, 50, 50, 0.5);
	d.runs.z = -99;
	d.last_step = 2000;
	rm_metrics_diagnosed(r, &d, &info, 0, 300);
	text = render(m);
	has(text, "runmon_runs_test_z{entity=\"e\",project=\"p\",run=\"r\"} -3\n");
	has(text, "runmon_loss_resets_total{entity=\"e\",project=\"p\",run=\"r\"} 10\n");
	has(text, "runmon_last_step{entity=\"e\",project=\"p\",run=\"r\"} 2000\n");
	has(text, "runmon_loss{entity=\"e\",project=\"p\",run=\"r\"} 0.5\n");
	has(text, "runmon_last_diagnosis_timestamp_seconds{entity=\"e\",project=\"p\",run=\"r\"} 200\n");
	free(text);
	rm_metrics_synced(r, 0, 400);
	rm_metrics_synced(r, 0, 410);
	rm_metrics_synced(r, 1, 420);
	rm_metrics_finished(r);
	text = render(m);
	has(text, "runmon_sync_errors_total{entity=\"e\",project=\"p\",run=\"r\"} 2\n");
	has(text, "runmon_last_sync_timestamp_seconds{entity=\"e\",project=\"p\",run=\"r\"} 420\n");
	has(text, "runmon_run_finished{entity=\"e\",project=\"p\",run=\"r\"} 1\n");
	free(text);
	assert_ptr_equal(rm_metrics_run(m, "e", "p", "r"), r); /* one record a run */
	assert_ptr_not_equal(rm_metrics_run(m, "e", "q", "r"), r);
	rm_metrics_free(m);
}

static void tick_histogram_is_cumulative(void **state)
{
	struct rm_metrics *m = rm_metrics_new();
	rm_metrics_tick(m, 0.003);
	rm_metrics_tick(m, 0.07);
	rm_metrics_tick(m, 400);
	char *text = render(m);
	has(text, "# TYPE runmon_tick_duration_seconds histogram\n");
	has(text, "runmon_tick_duration_seconds_bucket{le=\"0.005\"} 1\n");
	has(text, "runmon_tick_duration_seconds_bucket{le=\"0.05\"} 1\n");
	has(text, "runmon_tick_duration_seconds_bucket{le=\"0.1\"} 2\n");
	has(text, "runmon_tick_duration_seconds_bucket{le=\"300\"} 2\n");
	has(text, "runmon_tick_duration_seconds_bucket{le=\"+Inf\"} 3\n");
	has(text, "runmon_tick_duration_seconds_sum 400.073\n");
	has(text, "runmon_tick_duration_seconds_count 3\n");
	free(text);
	rm_metrics_free(m);
}

static void label_value_alone(void **state)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	rm_metrics_label_value(f, "x\\\"\n\x80y");
	rm_metrics_label_value(f, NULL);
	fclose(f);
	assert_string_equal(buf, "x\\\\\\\"\\n\xef\xbf\xbdy");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(labels_are_escaped),  cmocka_unit_test(unmeasured_values_are_left_out),
	    cmocka_unit_test(counters_never_fall), cmocka_unit_test(tick_histogram_is_cumulative),
	    cmocka_unit_test(label_value_alone),   cmocka_unit_test(long_labels_stay_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
