/*
 * sync.c - see sync.h. Rows go through the importer's mapper and sink, so
 * a synced run and an imported wandb-history.jsonl of the same rows give
 * the same database.
 */
#include "runmon/sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "import_internal.h"
#include "runmon/row.h"

struct window {
	struct rm_http_req req;
	char *body;
	int64_t lo, hi;
	int state; /* 0 free, 1 in flight, 2 fetched */
	json_t *doc, *rows;
};

struct engine {
	struct rm_store *st;
	struct rm_wandb *w;
	struct sink sink;
	struct rm_row row;
	const char *path; /* entity/project/id for messages */
	int64_t rows;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void rm_sync_opts_default(struct rm_sync_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->jobs = 4;
	o->page_size = 1000;
	o->max_rounds = 3;
}

/* The eval metrics of one row (a row rarely has more than a few). */
struct evals {
	struct eval_kv kv[64];
	size_t n;
};

static void add_eval(void *arg, const char *key, size_t klen, double value)
{
	struct evals *ev = arg;
	if (ev->n < 64) {
		ev->kv[ev->n].key = rm_xstrndup(key, klen);
		ev->kv[ev->n++].value = value;
	}
}

/* Writes one fetched window and advances the cursor, in one transaction. */
static int commit_window(struct engine *e, struct window *win, struct rm_err *err)
{
	int rc = rm_store_begin(e->st, err);
	if (rc)
		return rc;
	size_t i;
	json_t *v;
	json_array_foreach (win->rows, i, v) {
		struct rm_err perr;
		struct record rec;
		char why[256];
		const char *text = json_string_value(v);
		if (!text) {
			rc = rm_err_set(err, RM_E_INPUT, "%s: steps [%lld, %lld): row %zu is not a string", e->path,
			                (long long)win->lo, (long long)win->hi, i);
			goto fail;
		}
		if (rm_jsonrow_parse(&e->row, text, json_string_length(v), &perr)) {
			rc = rm_err_set(err, RM_E_INPUT, "%s: steps [%lld, %lld): row %zu: %s", e->path,
			                (long long)win->lo, (long long)win->hi, i, perr.msg);
			goto fail;
		}
		if (mapper_map(&e->sink.map, &e->row, &rec, why, sizeof(why))) {
			const struct rm_field *sf = rm_row_get(&e->row, "_step");
			rc = rm_err_set(err, RM_E_INPUT, "%s: step %.*s: %s", e->path, sf ? (int)sf->rlen : 1,
			                sf ? sf->raw : "?", why);
			goto fail;
		}
		struct evals ev = {0};
		if (rec.is_eval)
			mapper_each_eval(&e->sink.map, &e->row, add_eval, &ev);
		rc = sink_put(&e->sink, &rec, ev.kv, ev.n, (uint64_t)i + 1, err);
		for (size_t f = 0; f < ev.n; f++)
			free((char *)ev.kv[f].key);
		if (rc)
			goto fail;
		e->rows++;
	}
	if ((rc = rm_store_set_sync_cursor(e->st, e->sink.run_id, win->hi, err)) || (rc = rm_store_commit(e->st, err)))
		goto fail;
	return RM_OK;
fail:
	rm_store_rollback(e->st);
	return rc;
}

static void window_free(struct window *win)
{
	rm_http_req_release(&win->req);
	free(win->body);
	json_decref(win->doc);
	win->body = NULL;
	win->doc = win->rows = NULL;
	win->state = 0;
}

/* Fetches and commits windows [cursor, stop). */
static int fetch_range(struct engine *e, const char *entity, const char *project, const char *name, int64_t cursor,
                       int64_t stop, const struct rm_sync_opts *o, struct rm_sync_result *res, struct rm_err *err,
                       double t0, int64_t total)
{
	struct rm_http *http = rm_wandb_http(e->w);
	int jobs = o->jobs > 0 ? o->jobs : 1, nslots = 2 * jobs;
	int64_t page = o->page_size > 0 ? o->page_size : 1000;
	int64_t nwin = (stop - cursor + page - 1) / page, launched = 0, committed = 0;
	struct window *slots = rm_xcalloc((size_t)nslots, sizeof(*slots));
	int inflight = 0, rc = RM_OK;
	while (committed < nwin) {
		while (launched < nwin && inflight < jobs && launched < committed + nslots) {
			struct window *win = &slots[launched % nslots];
			win->lo = cursor + launched * page;
			win->hi = win->lo + page < stop ? win->lo + page : stop;
			win->body = rm_wandb_history_body(entity, project, name, win->lo, win->hi);
			win->req = (struct rm_http_req){.body = win->body, .body_len = strlen(win->body), .user = win};
			win->state = 1;
			rm_http_start(http, &win->req);
			launched++;
			inflight++;
		}
		struct rm_http_req *r = rm_http_wait(http);
		if (!r)
			break;
		struct window *win = r->user;
		if (!r->ok) {
			char msg[512];
			rm_wandb_describe_failure(e->w, r, msg, sizeof(msg));
			rc = rm_err_set(err, r->code ? r->code : RM_E_NET, "%s: steps [%lld, %lld): %s", e->path,
			                (long long)win->lo, (long long)win->hi, msg);
			goto out;
		}
		char why[384];
		int prc = rm_wandb_parse_history(r->resp, r->resp_len, &win->doc, &win->rows, why, sizeof(why));
		if (prc == RM_E_NET) { /* truncated or not JSON: fetch again */
			json_decref(win->doc);
			win->doc = NULL;
			if (rm_http_retry(http, r, why))
				continue;
			rc = rm_err_set(err, RM_E_NET, "%s: steps [%lld, %lld): %s", e->path, (long long)win->lo,
			                (long long)win->hi, r->err);
			goto out;
		}
		if (prc) {
			rc = rm_err_set(err, prc == RM_E_NOTFOUND ? RM_E_NOTFOUND : RM_E_NET,
			                "%s: steps [%lld, %lld): %s", e->path, (long long)win->lo, (long long)win->hi,
			                why);
			goto out;
		}
		win->state = 2;
		inflight--;
		free(r->resp); /* the parsed document is all that is needed now */
		r->resp = NULL;
		r->resp_len = r->cap = 0;
		while (committed < nwin && slots[committed % nslots].state == 2) {
			struct window *c = &slots[committed % nslots];
			if ((rc = commit_window(e, c, err)))
				goto out;
			res->windows++;
			res->to = c->hi;
			window_free(c);
			committed++;
			if (o->progress) {
				struct rm_sync_progress pr = {e->path, e->rows, total, res->to, stop, now() - t0};
				o->progress(o->progress_arg, &pr);
			}
		}
	}
out:
	if (rc)
		rm_http_cancel_all(http);
	for (int i = 0; i < nslots; i++)
		window_free(&slots[i]);
	free(slots);
	return rc;
}

int rm_sync_run(struct rm_store *st, struct rm_wandb *w, const char *entity, const char *project, const char *name,
                const struct rm_sync_opts *o, struct rm_sync_result *res, struct rm_err *err)
{
	struct engine e = {.st = st, .w = w};
	struct rm_import_opts io = {.format = RM_FMT_WANDB_HISTORY,
	                            .loss_key = o->loss_key,
	                            .batch_prefix = o->batch_prefix,
	                            .bounds = o->bounds,
	                            .nbounds = o->nbounds};
	struct rm_import_result ir;
	char path[512];
	double t0 = now();
	int rc, opened = 0;
	memset(res, 0, sizeof(*res));
	memset(&ir, 0, sizeof(ir));
	snprintf(path, sizeof(path), "%s/%s/%s", entity, project, name);
	e.path = path;
	ir.format = RM_FMT_WANDB_HISTORY;
	ir.path = path;
	ir.run_name = path;
	rm_row_init(&e.row);
	for (int round = 0; round < (o->max_rounds > 0 ? o->max_rounds : 1); round++) {
		struct rm_wandb_run meta;
		if ((rc = rm_wandb_get_run(w, entity, project, name, &meta, err)))
			goto out;
		if (!opened) {
			struct rm_run_key key = {"wandb", entity, project, name};
			if ((rc = sink_open_key(&e.sink, st, &io, &ir, &key, err))) {
				rm_wandb_run_release(&meta);
				goto out;
			}
			opened = 1;
			res->run_id = e.sink.run_id;
			if ((rc = rm_store_sync_cursor(st, e.sink.run_id, &res->from, err))) {
				rm_wandb_run_release(&meta);
				goto out;
			}
			if (o->full)
				res->from = 0;
			res->to = res->from;
		}
		struct rm_run_meta m = {meta.display_name, meta.state,     meta.config_json,  meta.created_at,
		                        meta.heartbeat_at, meta.last_step, meta.history_lines};
		rc = rm_store_set_run_meta(st, e.sink.run_id, &m, err);
		snprintf(res->state, sizeof(res->state), "%s", meta.state ? meta.state : "");
		int64_t stop = meta.last_step + 1, total = meta.history_lines;
		rm_wandb_run_release(&meta);
		if (rc)
			goto out;
		if (res->to >= stop)
			break; /* up to date */
		if ((rc = fetch_range(&e, entity, project, name, res->to, stop, o, res, err, t0, total)))
			goto out;
	}
out:
	if (opened) {
		struct rm_err ferr;
		if (sink_finish(&e.sink, rc ? &ferr : err) && !rc)
			rc = err->code;
		res->steps = (int64_t)ir.steps;
		res->batches = (int64_t)ir.batches;
		res->new_steps = ir.new_steps;
		if (ir.loss_key)
			snprintf(res->loss_key, sizeof(res->loss_key), "%s", ir.loss_key);
		free(ir.loss_key);
		sink_release(&e.sink);
	}
	res->rows = e.rows;
	res->seconds = now() - t0;
	rm_row_release(&e.row);
	return rc;
}
