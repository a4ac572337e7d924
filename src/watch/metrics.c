/*
 * metrics.c - the registry of watch's metrics and its text exposition.
 *
 * Format: Prometheus text exposition 0.0.4 (prometheus.io/docs/instrumenting/
 * exposition_formats): a family's samples follow its # HELP and # TYPE
 * lines together; label values escape \, " and newline; a histogram has
 * cumulative _bucket{le=...} samples ending at +Inf, then _sum and _count.
 * A value the diagnosis could not measure is left out, not written as NaN:
 * a rule then sees no series rather than a number that compares false.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runmon/watch.h"
#include "runmon/common.h"

/* Seconds; Prometheus' client defaults stretched to the minutes a first
 * sync of a long run can take. */
static const double tick_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
#define NLE (sizeof(tick_le) / sizeof(tick_le[0]))

struct rm_run_metrics {
	char *entity, *project, *name, *display;
	/* From the latest full diagnosis; NaN: not measured. */
	double severity, hyp_severity[RM_H_COUNT];
	double runs_z, eta2, modes, ladders, cluster, cluster_q, composition, padding;
	uint64_t resets; /* counters: the most any diagnosis found */
	int nbuckets;
	char *bucket[RM_MAX_BUCKETS]; /* labels whole: a label value is never cut */
	uint64_t bucket_resets[RM_MAX_BUCKETS];
	/* From every pass. */
	double last_step, loss, adjusted, length_adjusted;
	double diagnosed_at, synced_at; /* unix seconds, NaN never */
	uint64_t sync_errors;
	int finished;
};

struct rm_metrics {
	struct rm_run_metrics **runs;
	int nruns;
	uint64_t tick_count, tick_bucket[NLE];
	double tick_sum, started;
};

static void run_clear_findings(struct rm_run_metrics *r)
{
	r->severity = r->runs_z = r->eta2 = r->modes = r->ladders = r->cluster = r->cluster_q = r->composition =
	    r->padding = NAN;
	for (int h = 0; h < RM_H_COUNT; h++)
		r->hyp_severity[h] = NAN;
}

struct rm_metrics *rm_metrics_new(void)
{
	struct rm_metrics *m = rm_xcalloc(1, sizeof(*m));
	m->started = (double)time(NULL);
	return m;
}

void rm_metrics_free(struct rm_metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nruns; i++) {
		struct rm_run_metrics *r = m->runs[i];
		free(r->entity);
		free(r->project);
		free(r->name);
		free(r->display);
		for (int b = 0; b < r->nbuckets; b++)
			free(r->bucket[b]);
		free(r);
	}
	free(m->runs);
	free(m);
}

struct rm_run_metrics *rm_metrics_run(struct rm_metrics *m, const char *entity, const char *project, const char *name)
{
	entity = entity ? entity : "";
	project = project ? project : "";
	for (int i = 0; i < m->nruns; i++) {
		struct rm_run_metrics *r = m->runs[i];
		if (!strcmp(r->name, name) && !strcmp(r->entity, entity) && !strcmp(r->project, project))
			return r;
	}
	struct rm_run_metrics *r = rm_xcalloc(1, sizeof(*r));
	r->entity = rm_xstrdup(entity);
	r->project = rm_xstrdup(project);
	r->name = rm_xstrdup(name);
	run_clear_findings(r);
	r->last_step = r->loss = r->adjusted = r->length_adjusted = r->diagnosed_at = r->synced_at = NAN;
	m->runs = rm_xrealloc(m->runs, (size_t)(m->nruns + 1) * sizeof(*m->runs));
	m->runs[m->nruns++] = r;
	return r;
}

static uint64_t raise_to(uint64_t counter, size_t seen)
{
	return (uint64_t)seen > counter ? (uint64_t)seen : counter;
}

static void full_findings(struct rm_run_metrics *r, const struct rm_diagnosis *d, const struct rm_run_info *info)
{
	run_clear_findings(r);
	r->severity = d->severity;
	for (int i = 0; i < RM_H_COUNT; i++)
		r->hyp_severity[d->rank[i].h] = d->rank[i].severity;
	if (d->runs.ok)
		r->runs_z = d->runs.z;
	if (d->split.ok) {
		r->eta2 = d->split.eta2;
		r->modes = d->split.modes;
	}
	if (d->ladder.ok)
		r->ladders = (double)d->ladder.count;
	if (info->steps > 0)
		r->composition = rm_run_batch_share(info);
	if (d->cost.ok)
		r->padding = d->cost.efficiency;
	const struct rm_resets_result *re = &d->resets;
	if (!re->ok)
		return;
	r->cluster = re->cluster_by_bucket;
	r->cluster_q = re->chi2_q;
	r->resets = raise_to(r->resets, re->spikes);
	for (int b = 0; b < re->k; b++) {
		const char *label = rm_bucket_label(d, re->bucket[b]);
		int j = 0;
		while (j < r->nbuckets && strcmp(r->bucket[j], label))
			j++;
		if (j == r->nbuckets) {
			if (j == RM_MAX_BUCKETS)
				continue;
			r->bucket[r->nbuckets++] = rm_xstrdup(label);
		}
		r->bucket_resets[j] = raise_to(r->bucket_resets[j], re->bucket_spikes[b]);
	}
}

void rm_metrics_diagnosed(struct rm_run_metrics *r, const struct rm_diagnosis *d, const struct rm_run_info *info,
                          int full, double now)
{
	if (info->display_name && (!r->display || strcmp(r->display, info->display_name))) {
		free(r->display);
		r->display = rm_xstrdup(info->display_name);
	}
	if (full) {
		full_findings(r, d, info);
		r->diagnosed_at = now;
	}
	if (d->finite) {
		r->last_step = (double)d->last_step;
		r->loss = d->last_loss;
		r->adjusted = d->last_adjusted;
		r->length_adjusted = d->last_length_adjusted;
	}
}

void rm_metrics_synced(struct rm_run_metrics *r, int ok, double now)
{
	if (ok)
		r->synced_at = now;
	else
		r->sync_errors++;
}

void rm_metrics_finished(struct rm_run_metrics *r)
{
	r->finished = 1;
}

void rm_metrics_tick(struct rm_metrics *m, double seconds)
{
	m->tick_count++;
	m->tick_sum += seconds;
	for (size_t i = 0; i < NLE; i++)
		if (seconds <= tick_le[i])
			m->tick_bucket[i]++;
}

void rm_metrics_label_value(FILE *out, const char *value)
{
	char *fixed = rm_utf8_fix(value ? value : "");
	for (const char *p = fixed; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", out);
		else if (*p == '"')
			fputs("\\\"", out);
		else if (*p == '\n')
			fputs("\\n", out);
		else
			fputc(*p, out);
	}
	free(fixed);
}

/* Go's strconv.ParseFloat reads these; integers stay exact. */
static void value(FILE *out, double v)
{
	if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", out);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(out, "%.0f", v);
	else { /* the shortest of 15..17 digits that reads back as v */
		char buf[32];
		for (int digits = 15; digits <= 17; digits++) {
			snprintf(buf, sizeof(buf), "%.*g", digits, v);
			if (strtod(buf, NULL) == v)
				break;
		}
		fputs(buf, out);
	}
}

/* A family's # HELP and # TYPE, once, before its first sample. */
struct family {
	const char *name, *type, *help;
	int started;
};

static void sample_start(FILE *out, struct family *f, const char *suffix)
{
	if (!f->started)
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
	f->started = 1;
	fprintf(out, "%s%s", f->name, suffix ? suffix : "");
}

static void run_labels(FILE *out, const struct rm_run_metrics *r)
{
	fputs("{entity=\"", out);
	rm_metrics_label_value(out, r->entity);
	fputs("\",project=\"", out);
	rm_metrics_label_value(out, r->project);
	fputs("\",run=\"", out);
	rm_metrics_label_value(out, r->name);
	fputc('"', out);
}

/* One sample per run of a per-run family: the value at offset in the run's
 * record (a double), left out where NaN. */
static void per_run(FILE *out, const struct rm_metrics *m, const char *name, const char *type, const char *help,
                    size_t offset)
{
	struct family f = {name, type, help, 0};
	for (int i = 0; i < m->nruns; i++) {
		const struct rm_run_metrics *r = m->runs[i];
		double v = *(const double *)(const void *)((const char *)r + offset);
		if (isnan(v))
			continue;
		sample_start(out, &f, NULL);
		run_labels(out, r);
		fputs("} ", out);
		value(out, v);
		fputc('\n', out);
	}
}

#define RUN_FIELD(field) offsetof(struct rm_run_metrics, field)

static void process_metrics(FILE *out, const struct rm_metrics *m)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	fprintf(out, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
	             "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ");
	value(out, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	fprintf(out, "\n# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
	             "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds ");
	value(out, m->started);
	fputc('\n', out);
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0;
	if (f && fscanf(f, "%ld %ld", &size, &pages) == 2)
		fprintf(out,
		        "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %lld\n",
		        (long long)pages * sysconf(_SC_PAGESIZE));
	if (f)
		fclose(f);
}

static void tick_histogram(FILE *out, const struct rm_metrics *m)
{
	fprintf(out, "# HELP runmon_tick_duration_seconds Wall time of a watch tick: sync, read, diagnose, alert.\n"
	             "# TYPE runmon_tick_duration_seconds histogram\n");
	for (size_t i = 0; i < NLE; i++)
		fprintf(out, "runmon_tick_duration_seconds_bucket{le=\"%g\"} %llu\n", tick_le[i],
		        (unsigned long long)m->tick_bucket[i]);
	fprintf(out, "runmon_tick_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)m->tick_count);
	fputs("runmon_tick_duration_seconds_sum ", out);
	value(out, m->tick_sum);
	fprintf(out, "\nrunmon_tick_duration_seconds_count %llu\n", (unsigned long long)m->tick_count);
}

static void out_of_memory(void)
{
	fputs("runmon: fatal: out of memory rendering metrics\n", stderr);
	abort();
}

char *rm_metrics_render(const struct rm_metrics *m, size_t *len)
{
	char *text = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&text, &n);
	if (!out)
		out_of_memory();
	fprintf(out,
	        "# HELP runmon_build_info runmon's version.\n# TYPE runmon_build_info gauge\n"
	        "runmon_build_info{version=\"%s\"} 1\n",
	        RM_VERSION);
	fprintf(out,
	        "# HELP runmon_watched_runs Runs this watch follows, finished ones included.\n"
	        "# TYPE runmon_watched_runs gauge\nrunmon_watched_runs %d\n",
	        m->nruns);
	struct family info = {"runmon_run_info", "gauge", "A watched run, its display name as a label.", 0};
	for (int i = 0; i < m->nruns; i++) {
		sample_start(out, &info, NULL);
		run_labels(out, m->runs[i]);
		fputs(",display_name=\"", out);
		rm_metrics_label_value(out, m->runs[i]->display);
		fputs("\"} 1\n", out);
	}
	struct family fin = {"runmon_run_finished", "gauge",
	                     "1 once the run finished (finished, crashed, failed, killed); its values stay.", 0};
	for (int i = 0; i < m->nruns; i++) {
		sample_start(out, &fin, NULL);
		run_labels(out, m->runs[i]);
		fprintf(out, "} %d\n", m->runs[i]->finished);
	}
	per_run(out, m, "runmon_verdict_severity", "gauge",
	        "Severity of the run's worst finding: 0 none, 1 info, 2 warn, 3 critical.", RUN_FIELD(severity));
	struct family hyp = {"runmon_hypothesis_severity", "gauge",
	                     "Severity the verdict gives each cause of loss spikes and splits (0..3).", 0};
	for (int i = 0; i < m->nruns; i++)
		for (int h = 0; h < RM_H_COUNT; h++) {
			if (isnan(m->runs[i]->hyp_severity[h]))
				continue;
			sample_start(out, &hyp, NULL);
			run_labels(out, m->runs[i]);
			fprintf(out, ",hypothesis=\"%s\"} ", rm_hypothesis_id((enum rm_hypothesis)h));
			value(out, m->runs[i]->hyp_severity[h]);
			fputc('\n', out);
		}
	per_run(out, m, "runmon_runs_test_z", "gauge",
	        "Runs-test z of the batches' bucket sequence; at or below -4 batches come in same-bucket streaks.",
	        RUN_FIELD(runs_z));
	per_run(out, m, "runmon_loss_bucket_eta_squared", "gauge",
	        "Share of the detrended loss variance the batch's bucket explains (eta squared).", RUN_FIELD(eta2));
	per_run(out, m, "runmon_loss_modes", "gauge", "Modes of the detrended loss (Gaussian mixture, BIC).",
	        RUN_FIELD(modes));
	per_run(out, m, "runmon_ladders", "gauge", "Ladders: climbs of the reported loss over long-bucket streaks.",
	        RUN_FIELD(ladders));
	per_run(out, m, "runmon_bucket_resets_clustered", "gauge",
	        "1 when loss resets cluster in some buckets (chi-squared, after FDR).", RUN_FIELD(cluster));
	per_run(out, m, "runmon_resets_by_bucket_q", "gauge",
	        "FDR q-value of the resets' clustering by bucket (chi-squared test).", RUN_FIELD(cluster_q));
	struct family resets = {"runmon_loss_resets_total", "counter",
	                        "Loss resets found: spikes above their bucket's baseline.", 0};
	for (int i = 0; i < m->nruns; i++) {
		const struct rm_run_metrics *r = m->runs[i];
		if (isnan(r->cluster)) /* resets never measured */
			continue;
		sample_start(out, &resets, NULL);
		run_labels(out, r);
		fprintf(out, "} %llu\n", (unsigned long long)r->resets);
	}
	struct family by_bucket = {"runmon_bucket_loss_resets_total", "counter", "Loss resets found, by bucket.", 0};
	for (int i = 0; i < m->nruns; i++)
		for (int b = 0; b < m->runs[i]->nbuckets; b++) {
			sample_start(out, &by_bucket, NULL);
			run_labels(out, m->runs[i]);
			fputs(",bucket=\"", out);
			rm_metrics_label_value(out, m->runs[i]->bucket[b]);
			fprintf(out, "\"} %llu\n", (unsigned long long)m->runs[i]->bucket_resets[b]);
		}
	per_run(out, m, "runmon_batch_composition_ratio", "gauge",
	        "Share of the run's steps with a recorded batch composition (bucket or lengths).",
	        RUN_FIELD(composition));
	per_run(out, m, "runmon_padding_efficiency_ratio", "gauge",
	        "Real tokens over padded tokens in the run's recorded batches (what interleaving keeps).",
	        RUN_FIELD(padding));
	per_run(out, m, "runmon_last_step", "gauge", "The last step with a finite loss.", RUN_FIELD(last_step));
	per_run(out, m, "runmon_loss", "gauge", "The loss at the last step.", RUN_FIELD(loss));
	per_run(out, m, "runmon_loss_adjusted", "gauge",
	        "The bucket-adjusted loss at the last step: the loss without its bucket's offset.",
	        RUN_FIELD(adjusted));
	per_run(out, m, "runmon_loss_length_adjusted", "gauge",
	        "The length-adjusted loss at the last step: the loss at the run's typical length.",
	        RUN_FIELD(length_adjusted));
	per_run(out, m, "runmon_last_diagnosis_timestamp_seconds", "gauge", "When the last full diagnosis ran.",
	        RUN_FIELD(diagnosed_at));
	per_run(out, m, "runmon_last_sync_timestamp_seconds", "gauge",
	        "When the run's last sync from W&B (or read of its .wandb log) succeeded.", RUN_FIELD(synced_at));
	struct family errs = {"runmon_sync_errors_total", "counter", "Syncs of the run that failed.", 0};
	for (int i = 0; i < m->nruns; i++) {
		sample_start(out, &errs, NULL);
		run_labels(out, m->runs[i]);
		fprintf(out, "} %llu\n", (unsigned long long)m->runs[i]->sync_errors);
	}
	tick_histogram(out, m);
	process_metrics(out, m);
	if (fclose(out))
		out_of_memory();
	*len = n;
	return text;
}
