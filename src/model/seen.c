/*
 * seen.c - what a report saw of each run: built by the report, kept by the
 * store, compared by render's changes. See model.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/model.h"

struct rm_seen_run *rm_seen_push(struct rm_seen *s, const char *run, enum rm_severity sev, const char *verdict,
                                 int64_t last_step, double at)
{
	s->runs = rm_xrealloc(s->runs, (s->n + 1) * sizeof(*s->runs));
	struct rm_seen_run *r = &s->runs[s->n++];
	*r = (struct rm_seen_run){rm_xstrdup(run), sev, rm_xstrdup(verdict), last_step, at, NULL, 0};
	return r;
}

void rm_seen_push_finding(struct rm_seen_run *r, const char *detector, enum rm_severity sev, int64_t first_step)
{
	r->f = rm_xrealloc(r->f, (r->nf + 1) * sizeof(*r->f));
	/* Kept in detector order, as the store lists them, whatever order a
	 * report file wrote them in: the same findings compare the same. */
	size_t at = r->nf++;
	while (at > 0 && strcmp(r->f[at - 1].detector, detector) > 0) {
		r->f[at] = r->f[at - 1];
		at--;
	}
	struct rm_seen_finding *f = &r->f[at];
	snprintf(f->detector, sizeof(f->detector), "%s", detector);
	f->severity = sev;
	f->first_step = first_step;
}

void rm_seen_release(struct rm_seen *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->runs[i].run);
		free(s->runs[i].verdict);
		free(s->runs[i].f);
	}
	free(s->runs);
	s->runs = NULL;
	s->n = 0;
}
