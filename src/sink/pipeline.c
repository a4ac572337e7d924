/*
 * pipeline.c - overlaps parsing and writing on two cores.
 *
 * Parsing a history line costs about a quarter of what SQLite spends
 * storing it, so one thread parses and maps rows while another writes
 * them. Chunks of mapped records cycle through a ring of NCHUNK slots:
 * the reader fills one, the writer drains the oldest, and each side waits
 * when the other falls behind, so memory stays a few hundred KiB.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/sink.h"

#define NCHUNK     4
#define CHUNK_ROWS 2048

struct item {
	struct rm_sink *k;
	struct rm_record rec;
	uint64_t line;
	uint32_t ev0, nev; /* slice of the chunk's evals */
	uint32_t nother;   /* other losses, in the chunk's evals after the item's own */
	size_t lens_at;    /* the batch's lengths in the chunk's bytes */
};

struct chunk {
	struct item it[CHUNK_ROWS];
	size_t n;
	struct rm_eval_kv *ev; /* keys point into bytes[] after fix-up */
	size_t nev, evcap;
	char *bytes; /* eval keys and batch lengths the items point into */
	size_t blen, bcap;
};

struct rm_pipeline {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct chunk *ring[NCHUNK];
	size_t head, tail, full; /* producer slot, consumer slot, chunks waiting */
	int done;                /* no more chunks will come */
	int failed;              /* the writer stopped on err */
	struct rm_err err;
	int (*barrier)(void *arg, int64_t value, struct rm_err *err);
	void *barrier_arg;
};

static void chunk_reset(struct chunk *c)
{
	c->n = 0;
	c->nev = 0;
	c->blen = 0;
}

/* The writer thread: drains chunks in order until done. After a failure
 * it keeps draining (without writing) so the reader never blocks. */
static void *writer(void *arg)
{
	struct rm_pipeline *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->full == 0 && !p->done)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->full == 0) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		struct chunk *c = p->ring[p->tail];
		int failed = p->failed;
		pthread_mutex_unlock(&p->mu);

		struct rm_err err;
		int rc = 0;
		for (size_t i = 0; i < c->n && !failed && !rc; i++) {
			struct item *it = &c->it[i];
			if (!it->k) { /* a barrier: its value rides in line */
				rc = p->barrier(p->barrier_arg, (int64_t)it->line, &err);
				continue;
			}
			for (uint32_t e = 0; e < it->nev + it->nother; e++) /* keys were stored as offsets */
				c->ev[it->ev0 + e].key = c->bytes + (uintptr_t)c->ev[it->ev0 + e].key;
			if (it->rec.b.lens_bytes)
				it->rec.b.lens = (const uint8_t *)c->bytes + it->lens_at;
			/* No values: c->ev may be NULL, and NULL + 0 is undefined. */
			const struct rm_eval_kv *ev = it->nev + it->nother ? c->ev + it->ev0 : NULL;
			rc = rm_sink_put(it->k, &it->rec, ev, it->nev, ev ? ev + it->nev : NULL, it->nother, it->line,
			                 &err);
		}
		pthread_mutex_lock(&p->mu);
		if (rc && !p->failed) {
			p->failed = 1;
			p->err = err;
		}
		chunk_reset(c);
		p->tail = (p->tail + 1) % NCHUNK;
		p->full--;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

struct rm_pipeline *rm_pipeline_start(int (*barrier)(void *arg, int64_t value, struct rm_err *err), void *arg)
{
	struct rm_pipeline *p = rm_xcalloc(1, sizeof(*p));
	p->barrier = barrier;
	p->barrier_arg = arg;
	for (int i = 0; i < NCHUNK; i++)
		p->ring[i] = rm_xcalloc(1, sizeof(struct chunk));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (pthread_create(&p->thread, NULL, writer, p)) {
		fprintf(stderr, "runmon: fatal: cannot start the import writer thread\n");
		abort();
	}
	return p;
}

/* Hands the filled chunk to the writer and waits for a free slot. */
static int hand_off(struct rm_pipeline *p, struct rm_err *err)
{
	int failed;
	pthread_mutex_lock(&p->mu);
	p->full++;
	p->head = (p->head + 1) % NCHUNK;
	pthread_cond_broadcast(&p->cv);
	while (p->full == NCHUNK)
		pthread_cond_wait(&p->cv, &p->mu);
	failed = p->failed;
	if (failed && err)
		*err = p->err;
	pthread_mutex_unlock(&p->mu);
	return failed ? (int)p->err.code : RM_OK;
}

/* Copies n bytes into the chunk's bytes[] and returns their offset: an
 * offset, not a pointer, until the writer fixes it up, as bytes[] may
 * still move. */
static size_t chunk_copy(struct chunk *c, const void *data, size_t n)
{
	if (c->blen + n > c->bcap) {
		c->bcap = (c->blen + n) * 2;
		c->bytes = rm_xrealloc(c->bytes, c->bcap);
	}
	memcpy(c->bytes + c->blen, data, n);
	c->blen += n;
	return c->blen - n;
}

static void add_eval(void *arg, const char *key, size_t klen, double v)
{
	struct chunk *c = arg;
	if (c->nev == c->evcap) {
		c->evcap = c->evcap ? c->evcap * 2 : 64;
		c->ev = rm_xrealloc(c->ev, c->evcap * sizeof(*c->ev));
	}
	size_t at = chunk_copy(c, key, klen);
	chunk_copy(c, "", 1);
	c->ev[c->nev].key = (const char *)(uintptr_t)at;
	c->ev[c->nev].value = v;
	c->nev++;
}

int rm_pipeline_put(struct rm_pipeline *p, struct rm_sink *k, const struct rm_record *rec, const struct rm_row *row,
                    uint64_t line, struct rm_err *err)
{
	struct chunk *c = p->ring[p->head];
	struct item *it = &c->it[c->n];
	it->rec = *rec;
	it->k = k;
	it->line = line;
	it->ev0 = (uint32_t)c->nev;
	if (rec->b.lens && rec->b.lens_bytes)
		it->lens_at = chunk_copy(c, rec->b.lens, rec->b.lens_bytes); /* the mapper's buffer is reused */
	else
		it->rec.b.lens_bytes = 0;
	it->rec.b.lens = NULL;
	if (k && rec->is_eval)
		rm_mapper_each_eval(&k->map, row, add_eval, c);
	it->nev = (uint32_t)c->nev - it->ev0;
	/* A rank's line has its own losses: kept per step, the ranks' would collide. */
	if (k && rec->has_step_row && !rec->has_rank && k->map.nother)
		rm_mapper_each_other_loss(&k->map, row, add_eval, c);
	it->nother = (uint32_t)c->nev - it->ev0 - it->nev;
	if (++c->n == CHUNK_ROWS)
		return hand_off(p, err);
	return RM_OK;
}

int rm_pipeline_feed(struct rm_pipeline *p, struct rm_sink *k, const struct rm_row *row, uint64_t line,
                     struct rm_err *err)
{
	struct rm_record rec;
	char why[256];
	if (rm_mapper_map(&k->map, row, &rec, why, sizeof(why)))
		return rm_bad_line(k->res, k->opts, line, why, err);
	return rm_pipeline_put(p, k, &rec, row, line, err);
}

int rm_pipeline_barrier(struct rm_pipeline *p, int64_t value, struct rm_err *err)
{
	struct rm_record none;
	memset(&none, 0, sizeof(none));
	return rm_pipeline_put(p, NULL, &none, NULL, (uint64_t)value, err);
}

int rm_pipeline_finish(struct rm_pipeline *p, struct rm_err *err)
{
	if (p->ring[p->head]->n)
		hand_off(p, NULL);
	pthread_mutex_lock(&p->mu);
	p->done = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	int rc = p->failed ? p->err.code : RM_OK;
	if (p->failed && err)
		*err = p->err;
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	for (int i = 0; i < NCHUNK; i++) {
		free(p->ring[i]->ev);
		free(p->ring[i]->bytes);
		free(p->ring[i]);
	}
	free(p);
	return rc;
}
