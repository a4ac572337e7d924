/*
 * metrics.h - what `watch` knows, as Prometheus metrics: a registry the
 * watch loop fills after each sync and diagnosis, its text exposition
 * (format 0.0.4), and an HTTP endpoint that serves the latest rendering.
 *
 * The watch loop renders after each run's tick and hands the text to the
 * endpoint; a scrape copies it under a mutex and never waits for a tick,
 * and a tick never waits for a scraper (libmicrohttpd's own thread, non-
 * blocking sockets, a connection timeout and limit).
 */
#ifndef RUNMON_METRICS_H
#define RUNMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"
#include "runmon/detect.h"
#include "runmon/store.h"

struct rm_metrics;
struct rm_run_metrics;

struct rm_metrics *rm_metrics_new(void);
void rm_metrics_free(struct rm_metrics *m);

/* One run's record, made on first use; the labels are entity, project and
 * run (the run's name: a W&B run id, or the local name). */
struct rm_run_metrics *rm_metrics_run(struct rm_metrics *m, const char *entity, const char *project, const char *name);
/* After a diagnosis. A full one sets the detector figures and raises the
 * resets counters (never lowers them: a counter only grows); every pass
 * sets the latest step and loss. info gives the display name and, on a
 * full pass, the share of steps with a batch composition. */
void rm_metrics_diagnosed(struct rm_run_metrics *r, const struct rm_diagnosis *d, const struct rm_run_info *info,
                          int full, double now);
/* After a sync of the run (or a read of its .wandb log): ok, or an error. */
void rm_metrics_synced(struct rm_run_metrics *r, int ok, double now);
void rm_metrics_finished(struct rm_run_metrics *r);
/* A tick's wall time, into the histogram. */
void rm_metrics_tick(struct rm_metrics *m, double seconds);

/* The exposition, NUL-terminated; caller frees. */
char *rm_metrics_render(const struct rm_metrics *m, size_t *len);

/* Appends a label value as the exposition wants it: UTF-8 (malformed
 * bytes become U+FFFD), with \\, \" and \n escaped. */
void rm_metrics_label_value(FILE *out, const char *value);

struct rm_metrics_server;

/* Listens on spec ("PORT", ":PORT" or "ADDR:PORT", "[V6]:PORT"; no
 * address is 127.0.0.1; PORT 0 picks a free one) and serves path, /-/healthy
 * and /-/ready. *url gets the address it serves, like
 * "http://127.0.0.1:9464/metrics". */
int rm_metrics_server_start(const char *spec, const char *path, struct rm_metrics_server **out, char *url, size_t n,
                            struct rm_err *err);
/* Replaces the text scrapes get; takes ownership of text. */
void rm_metrics_server_publish(struct rm_metrics_server *s, char *text, size_t len);
/* /-/ready answers 200 from now on (503 before: the first tick runs). */
void rm_metrics_server_ready(struct rm_metrics_server *s);
void rm_metrics_server_stop(struct rm_metrics_server *s);

#endif
