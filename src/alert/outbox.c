/*
 * outbox.c - a webhook's or Slack's deliveries off the watch's tick: a
 * bounded queue per channel and a thread that sends from it with the
 * channel's own HTTP client (its timeout and bounded retries are the
 * deadlines), so a peer that accepts and never answers delays only its
 * own alerts. The thread never touches the store: what it did waits in a
 * done list until the tick thread drains it into the alert log, and the
 * alerts it still holds are known to the tick, which sends nothing twice.
 * A signal's flag (rm_http_set_cancel) ends a delivery at once; at a normal
 * exit the queue is delivered first. See runmon/alert.h.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/alert.h"

struct rm_outbox {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rm_http *http;
	struct rm_outbox_msg *todo, *done; /* FIFO (head, then tail), LIFO */
	struct rm_outbox_msg *todo_tail;
	int held; /* messages queued or in flight */
	int stopping;
};

/* POSTs body and waits; 0 on a 2xx (and, for W&B, success: true). */
int rm_alert_post(struct rm_http *h, const char *body, int wandb, char *why, size_t n)
{
	struct rm_http_req req = {.body = body, .body_len = strlen(body)};
	rm_http_start(h, &req);
	struct rm_http_req *r = rm_http_wait(h);
	int rc = 0;
	if (!r || !r->ok) {
		snprintf(why, n, "%s", req.err[0] ? req.err : "request failed");
		rc = -1;
	} else if (wandb) {
		json_t *doc = json_loadb(req.resp, req.resp_len, 0, NULL);
		json_t *ok = json_object_get(json_object_get(json_object_get(doc, "data"), "notifyScriptableRunAlert"),
		                             "success");
		if (!json_is_true(ok)) {
			snprintf(why, n, "W&B did not accept the alert: %.200s", req.resp ? req.resp : "");
			rc = -1;
		}
		json_decref(doc);
	}
	rm_http_req_release(&req);
	return rc;
}

static void *worker(void *arg)
{
	struct rm_outbox *b = arg;
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->todo && !b->stopping)
			pthread_cond_wait(&b->cv, &b->mu);
		struct rm_outbox_msg *m = b->todo;
		if (!m)
			break; /* stopping, and nothing left */
		pthread_mutex_unlock(&b->mu);
		m->ok = rm_alert_post(b->http, m->body, 0, m->why, sizeof(m->why)) == 0;
		pthread_mutex_lock(&b->mu);
		b->todo = m->next;
		if (!b->todo)
			b->todo_tail = NULL;
		m->next = b->done;
		b->done = m;
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

struct rm_outbox *rm_outbox_start(struct rm_http *http)
{
	struct rm_outbox *b = rm_xcalloc(1, sizeof(*b));
	b->http = http;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (pthread_create(&b->thread, NULL, worker, b)) {
		pthread_cond_destroy(&b->cv);
		pthread_mutex_destroy(&b->mu);
		free(b);
		return NULL;
	}
	return b;
}

int rm_outbox_put(struct rm_outbox *b, struct rm_outbox_msg *m)
{
	pthread_mutex_lock(&b->mu);
	int room = b->held < RM_OUTBOX_MAX;
	if (room) {
		m->next = NULL;
		if (b->todo_tail)
			b->todo_tail->next = m;
		else
			b->todo = m;
		b->todo_tail = m;
		b->held++;
		pthread_cond_signal(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	return room ? 0 : -1;
}

int rm_outbox_holds(struct rm_outbox *b, const char *fingerprint, enum rm_severity severity)
{
	int found = 0;
	pthread_mutex_lock(&b->mu);
	for (int pass = 0; pass < 2 && !found; pass++)
		for (struct rm_outbox_msg *m = pass ? b->done : b->todo; m && !found; m = m->next)
			for (int i = 0; i < m->n; i++)
				if (!strcmp(m->fp[i], fingerprint) && m->sev[i] >= severity)
					found = 1;
	pthread_mutex_unlock(&b->mu);
	return found;
}

struct rm_outbox_msg *rm_outbox_done(struct rm_outbox *b)
{
	pthread_mutex_lock(&b->mu);
	struct rm_outbox_msg *d = b->done;
	b->done = NULL;
	for (struct rm_outbox_msg *m = d; m; m = m->next)
		b->held--;
	pthread_mutex_unlock(&b->mu);
	return d;
}

struct rm_outbox_msg *rm_outbox_stop(struct rm_outbox *b)
{
	pthread_mutex_lock(&b->mu);
	b->stopping = 1;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->thread, NULL);
	struct rm_outbox_msg *d = rm_outbox_done(b);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
	return d;
}

void rm_outbox_msg_free(struct rm_outbox_msg *m)
{
	while (m) {
		struct rm_outbox_msg *next = m->next;
		free(m->body);
		free(m);
		m = next;
	}
}
