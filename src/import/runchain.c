/*
 * runchain.c - the runs one file holds, one after the other: each gets its
 * own sink and result, so two trainings appended to one log come out as
 * two runs and never as one series the second overwrote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_internal.h"

static int open_run(struct run_chain *c, struct rm_err *err)
{
	struct rm_import_result *res = rm_chain_result(c);
	const struct rm_guess *g = c->opts.guess;
	if (g && g->why[0] && !res->inferred) /* what the file's head implied, said with each run */
		res->inferred = rm_xstrdup(g->why);
	c->opts.run_name = res->run_name;
	rm_run_split_reset(&c->rs);
	int rc = rm_sink_open(&c->k, c->st, &c->opts, rm_chain_result(c), err);
	if (rc) {
		rm_sink_release(&c->k);
		return rc;
	}
	c->p = rm_pipeline_start(NULL, NULL);
	return RM_OK;
}

int rm_chain_open(struct run_chain *c, struct rm_store *st, const struct rm_import_opts *opts,
                  struct rm_import_report *rep, size_t res, int split, struct rm_err *err)
{
	memset(c, 0, sizeof(*c));
	c->st = st;
	c->opts = *opts;
	c->rep = rep;
	c->res = res;
	c->split = split;
	c->base = rm_xstrdup(rep->r[res].run_name);
	return open_run(c, err);
}

static int finish_run(struct run_chain *c, int rc, struct rm_err *err)
{
	if (!c->p)
		return rc;
	int wrc = rm_pipeline_finish(c->p, rc ? NULL : err);
	c->p = NULL;
	if (!rc)
		rc = wrc;
	if (!rc)
		rc = rm_sink_finish(&c->k, err);
	rm_sink_release(&c->k);
	return rc;
}

/* The run that begins at line: named after the file's first, numbered. */
static int next_run(struct run_chain *c, uint64_t line, struct rm_err *err)
{
	struct rm_import_result *prev = rm_chain_result(c);
	int part = prev->file_part ? prev->file_part + 1 : 2;
	int64_t last = prev->last_step;
	prev->file_part = part - 1;
	char name[1024];
	snprintf(name, sizeof(name), "%s-%d", c->base, part);
	/* prev->path survives the array's move: it is the string's pointer */
	struct rm_import_result *r = rm_import_result_add(c->rep, prev->path, name, prev->format);
	r->file_part = part;
	r->first_line = line;
	r->prev_run_step = last;
	c->res = c->rep->n - 1;
	return open_run(c, err);
}

int rm_chain_feed(struct run_chain *c, const struct rm_row *row, uint64_t line, struct rm_err *err)
{
	struct rm_record rec;
	char why[256];
	if (rm_mapper_map(&c->k.map, row, &rec, why, sizeof(why)))
		return rm_bad_line(rm_chain_result(c), &c->opts, line, why, err);
	if (c->split && rm_run_split_check(&c->rs, &rec, line)) {
		int rc = finish_run(c, RM_OK, err);
		if (rc || (rc = next_run(c, line, err)))
			return rc;
		/* the new run's mapper reads the row afresh (its epochs, its keys) */
		if (rm_mapper_map(&c->k.map, row, &rec, why, sizeof(why)))
			return rm_bad_line(rm_chain_result(c), &c->opts, line, why, err);
		rm_run_split_check(&c->rs, &rec, line);
	}
	return rm_pipeline_put(c->p, &c->k, &rec, row, line, err);
}

int rm_chain_close(struct run_chain *c, int rc, struct rm_err *err)
{
	rc = finish_run(c, rc, err);
	free(c->base);
	c->base = NULL;
	return rc;
}
