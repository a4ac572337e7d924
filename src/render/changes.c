/*
 * changes.c - what changed since the last report. A report keeps, per run,
 * its severity, verdict and findings (rm_seen); the next report compares
 * what it sees with that, run by run, at the levels a reader sees.
 */
#include "runmon/render.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const change_names[RM_CH_COUNT] = {"new", "risen", "fallen", "resolved", "changed", "unchanged"};

const char *rm_change_name(enum rm_change c)
{
	return change_names[c];
}

/* The level a reader sees: ok below warn. */
static enum rm_severity level(enum rm_severity s)
{
	return s >= RM_SEV_WARN ? s : RM_SEV_NONE;
}

void rm_seen_add(struct rm_seen *s, const char *run, const struct rm_diagnosis *d)
{
	struct rm_seen_run *r = rm_seen_push(s, run, d->severity, rm_verdict_name(d), d->points ? d->last_step : -1, 0);
	struct rm_finding_row *rows;
	size_t n = rm_render_findings(d, &rows);
	for (size_t i = 0; i < n; i++) {
		enum rm_severity sev = RM_SEV_NONE;
		if (strcmp(rows[i].detector, "verdict") && !rm_severity_parse(rows[i].severity, &sev))
			rm_seen_push_finding(r, rows[i].detector, sev, rows[i].first_step);
	}
	rm_findings_free(rows, n);
}

/* "none" is a severity here (a healthy run), unlike on the command line. */
static int parse_severity(const char *name, enum rm_severity *out)
{
	if (name && !strcmp(name, "none")) {
		*out = RM_SEV_NONE;
		return 0;
	}
	return name ? rm_severity_parse(name, out) : -1;
}

/* One entry of a report's "overview" into s; -1 when malformed. */
static int read_run(json_t *o, double at, struct rm_seen *s)
{
	const char *run = json_string_value(json_object_get(o, "run"));
	const char *verdict = json_string_value(json_object_get(o, "verdict"));
	json_t *last = json_object_get(o, "last_step"), *fs = json_object_get(o, "findings");
	enum rm_severity sev;
	if (!run || !verdict || parse_severity(json_string_value(json_object_get(o, "severity")), &sev) ||
	    !json_is_array(fs))
		return -1;
	struct rm_seen_run *r =
	    rm_seen_push(s, run, sev, verdict, json_is_integer(last) ? json_integer_value(last) : -1, at);
	size_t i;
	json_t *f;
	json_array_foreach (fs, i, f) {
		const char *det = json_string_value(json_object_get(f, "detector"));
		json_t *first = json_object_get(f, "first_step");
		if (!det || parse_severity(json_string_value(json_object_get(f, "severity")), &sev))
			return -1;
		rm_seen_push_finding(r, det, sev, json_is_integer(first) ? json_integer_value(first) : -1);
	}
	return 0;
}

int rm_seen_read_report(const char *path, struct rm_seen *out, double *generated, struct rm_err *err)
{
	json_error_t je;
	memset(out, 0, sizeof(*out));
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		return rm_err_set(err, errno == ENOENT && je.line < 1 ? RM_E_NOTFOUND : RM_E_INPUT,
		                  "baseline '%s' line %d: %s; --baseline reads a report written with --format json",
		                  path, je.line, je.text);
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	const char *when = json_string_value(json_object_get(doc, "generated"));
	json_t *runs = json_object_get(doc, "overview");
	int rc = RM_OK;
	if (!schema || strcmp(schema, RM_REPORT_SCHEMA) || !json_is_array(runs) || !when ||
	    rm_parse_utc(when, generated)) {
		rc = rm_err_set(err, RM_E_INPUT,
		                "baseline '%s' is not a JSON report of runmon (schema %s with an overview): write one "
		                "with `runmon report --format json`",
		                path, RM_REPORT_SCHEMA);
		goto out;
	}
	size_t i;
	json_t *o;
	json_array_foreach (runs, i, o) {
		if (read_run(o, *generated, out)) {
			rc = rm_err_set(err, RM_E_INPUT,
			                "baseline '%s': overview entry %zu lacks run, severity, verdict or findings",
			                path, i + 1);
			rm_seen_release(out);
			goto out;
		}
	}
out:
	json_decref(doc);
	return rc;
}

static const struct rm_seen_run *find_run(const struct rm_seen *s, const char *run)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->runs[i].run, run))
			return &s->runs[i];
	return NULL;
}

static const struct rm_seen_finding *find_finding(const struct rm_seen_run *r, const char *detector)
{
	for (size_t i = 0; r && i < r->nf; i++)
		if (!strcmp(r->f[i].detector, detector))
			return &r->f[i];
	return NULL;
}

static void compare(const struct rm_seen_run *now, const struct rm_seen_run *was, struct rm_run_change *c)
{
	*c = (struct rm_run_change){.now = now, .was = was};
	c->appeared = rm_xcalloc(now->nf + 1, sizeof(size_t));
	c->gone = rm_xcalloc((was ? was->nf : 0) + 1, sizeof(size_t));
	for (size_t i = 0; i < now->nf; i++) {
		const struct rm_seen_finding *b = find_finding(was, now->f[i].detector);
		if (!b || now->f[i].severity > b->severity)
			c->appeared[c->nappeared++] = i;
	}
	for (size_t i = 0; was && i < was->nf; i++)
		if (!find_finding(now, was->f[i].detector))
			c->gone[c->ngone++] = i;
	enum rm_severity a = was ? level(was->severity) : RM_SEV_NONE, b = level(now->severity);
	if (!was)
		c->kind = RM_CH_NEW;
	else if (b > a)
		c->kind = RM_CH_RISEN;
	else if (b < a)
		c->kind = b >= RM_SEV_WARN ? RM_CH_FALLEN : RM_CH_RESOLVED;
	else if (c->nappeared || c->ngone || strcmp(now->verdict, was->verdict))
		c->kind = RM_CH_CHANGED;
	else
		c->kind = RM_CH_UNCHANGED;
}

void rm_changes_compute(const struct rm_seen *now, const struct rm_seen *was, struct rm_changes *out)
{
	out->n = now->n;
	out->runs = rm_xcalloc(now->n + 1, sizeof(*out->runs));
	memset(out->count, 0, sizeof(out->count));
	for (size_t i = 0; i < now->n; i++) {
		compare(&now->runs[i], find_run(was, now->runs[i].run), &out->runs[i]);
		out->count[out->runs[i].kind]++;
	}
}

int rm_changes_new_at(const struct rm_changes *c, enum rm_severity lvl)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct rm_run_change *r = &c->runs[i];
		if ((r->kind == RM_CH_NEW || r->kind == RM_CH_RISEN) && r->now->severity >= lvl)
			return 1;
		for (size_t j = 0; j < r->nappeared; j++)
			if (r->now->f[r->appeared[j]].severity >= lvl)
				return 1;
	}
	return 0;
}

void rm_changes_release(struct rm_changes *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->runs[i].appeared);
		free(c->runs[i].gone);
	}
	free(c->runs);
	c->runs = NULL;
	c->n = 0;
}
