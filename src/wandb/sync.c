/*
 * sync.c - see runmon/wandb.h. Rows go through the importer's mapper and sink, so
 * a synced run and an imported wandb-history.jsonl of the same rows give
 * the same database.
 */
#include "runmon/wandb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runmon/sink.h"
#include "runmon/parse.h"

struct window {
	struct rm_http_req req; /* its response stays until the commit */
	char *body;
	int64_t lo, hi;
	int state;                      /* 0 free, 1 in flight, 2 fetched */
	struct rm_row outer;            /* the parsed response */
	const struct rm_field *history; /* its row strings, NULL if none */
};

struct engine {
	struct rm_store *st;
	struct rm_wandb *w;
	struct rm_sink sink;
	struct rm_row row;
	char *text; /* an unescaped row string */
	size_t tcap;
	const char *path;           /* entity/project/id for messages */
	struct rm_sync_result *res; /* windows and cursor, updated by the writer */
	int64_t rows;
	int64_t stop; /* the step the sync ends before */
	int skip_bad;
};

void rm_sync_opts_default(struct rm_sync_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->jobs = 0; /* the client's: adaptive unless its opts pin it */
	o->page_size = 1000;
	o->max_rounds = 3;
}

/* On the writer thread, after a window's rows: the cursor moves past the
 * window and the transaction commits, so a window is stored whole or not
 * at all; the next window's transaction begins. */
static int commit_barrier(void *arg, int64_t hi, struct rm_err *err)
{
	struct engine *e = arg;
	int rc = rm_store_set_sync_cursor(e->st, e->sink.run_id, hi, err);
	if (!rc)
		rc = rm_store_commit(e->st, err);
	if (!rc)
		rc = rm_store_begin(e->st, err);
	if (!rc)
		rc = rm_store_lock_run(e->st, e->sink.run_id, err);
	if (!rc) {
		e->res->windows++;
		e->res->to = hi;
	}
	return rc;
}

/* A row that does not parse or map: the sync stops at its window (nothing
 * of it stored, the cursor before it), or with skip_bad it is counted and
 * the window's other rows are kept. */
static int bad_row(struct engine *e, const char *why, struct rm_err *err)
{
	if (!e->skip_bad)
		return rm_err_set(err, RM_E_INPUT, "%s: %s (--skip-bad keeps the other rows)", e->path, why);
	if (!e->res->skipped++)
		snprintf(e->res->first_bad, sizeof(e->res->first_bad), "%s", why);
	return RM_OK;
}

/* Parses and maps one fetched window's rows and queues them for the
 * writer, then the barrier that commits them. */
static int queue_window(struct engine *e, struct rm_pipeline *p, struct window *win, struct rm_err *err)
{
	size_t nrows = win->history ? win->history->arr_len : 0, losses = 0, good = 0;
	int rc;
	for (size_t i = 0; i < nrows; i++) {
		const struct rm_span *sp = &win->outer.spans[win->history->arr_off + i];
		struct rm_err perr;
		struct rm_record rec;
		char why[256];
		if (sp->len + 1 > e->tcap) {
			e->tcap = (sp->len + 1) * 2;
			e->text = rm_xrealloc(e->text, e->tcap);
		}
		size_t len = sp->len;
		if (sp->escaped)
			len = rm_json_unescape(sp->p, sp->len, e->text);
		else
			memcpy(e->text, sp->p, len);
		e->text[len] = '\0';
		char bad[640];
		if (rm_jsonrow_parse(&e->row, e->text, len, &perr)) {
			snprintf(bad, sizeof(bad), "steps [%lld, %lld): row %zu: %s", (long long)win->lo,
			         (long long)win->hi, i, perr.msg);
			if ((rc = bad_row(e, bad, err)))
				return rc;
			continue;
		}
		if (rm_mapper_map(&e->sink.map, &e->row, &rec, why, sizeof(why))) {
			const struct rm_field *sf = rm_row_get(&e->row, "_step");
			snprintf(bad, sizeof(bad), "step %.*s: %s", sf ? (int)(sf->rlen > 40 ? 40 : sf->rlen) : 1,
			         sf ? sf->raw : "?", why);
			if ((rc = bad_row(e, bad, err)))
				return rc;
			continue;
		}
		losses += rec.has_step_row;
		good++; /* read and mapped: a skipped bad row says nothing of the loss key */
		if ((rc = rm_pipeline_put(p, &e->sink, &rec, &e->row, (uint64_t)i + 1, err)))
			return rc;
		e->rows++;
	}
	/* Rows and no loss under a name runmon knows (train/nll): refused as
	 * import refuses, before the barrier, so the cursor stays where it was
	 * and a --loss-key sync finds the rows again. Ten rows at least, or
	 * the last window: a few rows of evals may come first. */
	if (good && !losses && !e->sink.map.locked[T_LOSS] && (good >= 10 || win->hi >= e->stop)) {
		char *keys = rm_mapper_unmapped(&e->sink.map);
		rc = rm_err_set(err, RM_E_INPUT,
		                "%s: no loss key found among the keys read (%s); name the loss with --loss-key KEY",
		                e->path, keys ? keys : "none");
		free(keys);
		return rc;
	}
	return rm_pipeline_barrier(p, win->hi, err);
}

static void window_free(struct window *win)
{
	rm_http_req_release(&win->req);
	free(win->body);
	win->body = NULL;
	win->history = NULL;
	win->state = 0;
}

/* Where the windows go. Dense (the step range near the run's row count):
 * fixed windows of a page, several in flight. Sparse (lastStep far beyond
 * historyLineCount, as when a run logs step = tokens seen): one window at a
 * time whose span doubles while windows come back empty or thin, and halves
 * when one comes back with all the rows it asked for over a wider span (the
 * server may have sampled them), so the requests grow with the rows and the
 * doublings, not with the step range. An empty answer is certain: a window
 * with rows always gives some. */
struct plan {
	int sparse;
	int64_t page, stop, next, span;
};

static void plan_init(struct plan *pl, int64_t cursor, int64_t stop, int64_t page, int64_t total)
{
	pl->page = page;
	pl->stop = stop;
	pl->next = cursor;
	pl->span = page;
	pl->sparse = total >= 0 && (stop - cursor) / 8 > total + page;
}

/* The steps of the launched-th window, and the samples it asks for. */
static int64_t plan_window(const struct plan *pl, int64_t cursor, int64_t launched, struct window *win)
{
	if (!pl->sparse) {
		win->lo = cursor + launched * pl->page;
		win->hi = win->lo + pl->page < pl->stop ? win->lo + pl->page : pl->stop;
		return win->hi - win->lo;
	}
	win->lo = pl->next;
	win->hi = pl->stop - pl->next > pl->span ? pl->next + pl->span : pl->stop;
	return win->hi - win->lo < pl->page ? win->hi - win->lo : pl->page;
}

/* A sparse window's answer: 1 when it must be asked again, narrower. */
static int plan_answer(struct plan *pl, const struct window *win)
{
	if (!pl->sparse)
		return 0;
	int64_t n = win->history ? (int64_t)win->history->arr_len : 0, width = win->hi - win->lo;
	if (n >= pl->page && width > pl->page) {
		pl->span = width / 2;
		return 1;
	}
	pl->next = win->hi;
	if (n < pl->page / 4 && pl->span < INT64_MAX / 4)
		pl->span *= 2;
	return 0;
}

/* Fetches and commits windows [cursor, stop). */
static int fetch_range(struct engine *e, const char *entity, const char *project, const char *name, int64_t cursor,
                       int64_t stop, const struct rm_sync_opts *o, struct rm_sync_result *res, struct rm_err *err,
                       double t0, int64_t total)
{
	struct rm_http *http = rm_wandb_http(e->w);
	/* Windows in flight: o->jobs, else the client's limit, read anew each
	 * time a window can start; slots for twice the most it may reach. */
	const struct rm_flow *flow = rm_http_flow(http);
	int most = o->jobs > 0 ? o->jobs : flow->pinned ? flow->pinned : flow->max, nslots = 2 * most;
	int64_t page = o->page_size > 0 ? o->page_size : 1000;
	struct plan pl;
	plan_init(&pl, cursor, stop, page, total);
	e->stop = stop;
	int64_t nwin = pl.sparse ? INT64_MAX : (stop - cursor + page - 1) / page, launched = 0, committed = 0;
	struct window *slots = rm_xcalloc((size_t)nslots, sizeof(*slots));
	int inflight = 0, rc = rm_store_begin(e->st, err);
	if (!rc && (rc = rm_store_lock_run(e->st, e->sink.run_id, err)))
		rm_store_rollback(e->st);
	if (rc) {
		free(slots);
		return rc;
	}
	/* While the pipeline runs, its writer thread owns the store. */
	struct rm_pipeline *p = rm_pipeline_start(commit_barrier, e);
	while (committed < nwin) {
		if (o->cancel && *o->cancel) {
			res->cancelled = 1;
			break;
		}
		int jobs = pl.sparse ? 1 : o->jobs > 0 ? o->jobs : rm_http_concurrency(http);
		if (pl.sparse && !inflight && pl.next >= stop)
			break; /* sparse: the last window is in */
		while (launched < nwin && inflight < jobs && launched < committed + nslots) {
			struct window *win = &slots[launched % nslots];
			int64_t samples = plan_window(&pl, cursor, launched, win);
			win->body = rm_wandb_history_body_n(entity, project, name, win->lo, win->hi, samples);
			win->req = (struct rm_http_req){
			    .body = win->body, .body_len = strlen(win->body), .user = win, .cls = 1};
			win->state = 1;
			rm_http_start(http, &win->req);
			launched++;
			inflight++;
		}
		struct rm_http_req *r = rm_http_wait(http);
		if (!r) {
			res->cancelled = o->cancel && *o->cancel; /* a signal ended the wait */
			break;
		}
		struct window *win = r->user;
		if (!r->ok) {
			char msg[512];
			rm_wandb_describe_failure(e->w, r, msg, sizeof(msg));
			rc = rm_err_set(err, r->code ? r->code : RM_E_NET, "%s: steps [%lld, %lld): %s", e->path,
			                (long long)win->lo, (long long)win->hi, msg);
			goto out;
		}
		char why[384];
		int prc = rm_wandb_parse_history(r->resp, r->resp_len, &win->outer, &win->history, why, sizeof(why));
		if (prc == RM_E_NET) { /* truncated or not JSON: fetch again */
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
		inflight--;
		if (plan_answer(&pl, win)) { /* sampled, maybe: ask again for less */
			window_free(win);
			launched--;
			continue;
		}
		win->state = 2;
		while (committed < nwin && slots[committed % nslots].state == 2) {
			struct window *c = &slots[committed % nslots];
			if ((rc = queue_window(e, p, c, err)))
				goto out;
			window_free(c);
			committed++;
			if (o->progress) {
				struct rm_sync_progress pr = {e->path, e->rows, total,
				                              c->hi,   stop,    rm_monotonic() - t0};
				o->progress(o->progress_arg, &pr);
			}
		}
	}
out:
	if (rc || res->cancelled)
		rm_http_cancel_all(http);
	/* Queued windows are written and committed; rows queued after the last
	 * barrier (a window cut short by an error) are rolled back. */
	int wrc = rm_pipeline_finish(p, rc ? NULL : err);
	if (!rc)
		rc = wrc;
	if (rc)
		rm_store_rollback(e->st);
	else
		rc = rm_store_commit(e->st, err);
	for (int i = 0; i < nslots; i++) {
		window_free(&slots[i]);
		rm_row_release(&slots[i].outer);
	}
	free(slots);
	return rc;
}

int rm_sync_run(struct rm_store *st, struct rm_wandb *w, const char *entity, const char *project, const char *name,
                const struct rm_sync_opts *o, struct rm_sync_result *res, struct rm_err *err)
{
	struct engine e = {.st = st, .w = w, .res = res, .skip_bad = o->skip_bad};
	struct rm_import_opts io = {.format = RM_FMT_WANDB_HISTORY,
	                            .loss_key = o->loss_key,
	                            .batch_prefix = o->batch_prefix,
	                            .bounds = o->bounds,
	                            .nbounds = o->nbounds};
	struct rm_import_result ir;
	char path[512];
	double t0 = rm_monotonic();
	int rc, opened = 0;
	memset(res, 0, sizeof(*res));
	memset(&ir, 0, sizeof(ir));
	snprintf(path, sizeof(path), "%s/%s/%s", entity, project, name);
	e.path = path;
	ir.format = RM_FMT_WANDB_HISTORY;
	ir.path = path;
	ir.run_name = path;
	rm_row_init(&e.row);
	rm_http_set_cancel(rm_wandb_http(w), o->cancel); /* every wait ends on a signal */
	for (int round = 0; round < (o->max_rounds > 0 ? o->max_rounds : 1); round++) {
		struct rm_wandb_run meta;
		if ((rc = rm_wandb_get_run(w, entity, project, name, &meta, err))) {
			if (o->cancel && *o->cancel)
				res->cancelled = 1, rc = RM_OK; /* interrupted: nothing of this round to keep */
			goto out;
		}
		if (!opened) {
			struct rm_run_key key = {"wandb", entity, project, name};
			if ((rc = rm_sink_open_key(&e.sink, st, &io, &ir, &key, err))) {
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
		if (res->cancelled)
			break;
	}
out:
	if (opened) {
		struct rm_err ferr;
		if (rm_sink_finish(&e.sink, rc ? &ferr : err) && !rc)
			rc = err->code;
		res->steps = (int64_t)ir.steps;
		res->batches = (int64_t)ir.batches;
		res->new_steps = ir.new_steps;
		if (ir.loss_key)
			snprintf(res->loss_key, sizeof(res->loss_key), "%s", ir.loss_key);
		free(ir.loss_key);
		free(ir.composition);
		free(ir.unmapped); /* ir's path and run name are path[], not its own */
		free(ir.inferred);
		free(ir.other_keys);
		rm_sink_release(&e.sink);
	}
	res->rows = e.rows;
	res->seconds = rm_monotonic() - t0;
	rm_row_release(&e.row);
	free(e.text);
	return rc;
}
