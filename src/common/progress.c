/*
 * progress.c - see runmon/common.h. One line on stderr, redrawn in place
 * ("\r" then erase to the end of the line), only when stderr is a terminal
 * and --quiet was not given: a cron job's log and a pipe get nothing. A
 * task's own thread redraws it every 200 ms, so work that reports no count
 * (a diagnosis) still shows its time, and the work itself only stores a
 * number at chunk or run granularity: nothing a benchmark can see.
 */
#include "runmon/common.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REDRAW_S     0.2
#define FIRST_DRAW_S 0.5 /* quick work shows nothing */

static struct {
	pthread_mutex_t mu;
	pthread_cond_t wake;
	pthread_t thread;
	int enabled; /* -1: not decided yet */
	int quiet;
	int active, shown, stopping;
	char what[160], unit[16];
	double total, done, start, quiet_until;
} pg = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .enabled = -1};

void rm_progress_set_quiet(int quiet)
{
	pg.quiet = quiet;
	pg.enabled = -1;
}

static int enabled(void)
{
	if (pg.enabled < 0) {
		const char *term = getenv("TERM");
		pg.enabled = !pg.quiet && isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
	}
	return pg.enabled;
}

int rm_progress_enabled(void)
{
	return enabled();
}

/* 1234567 -> "1.2M": a count or a rate at a glance. */
static void human(double v, char *buf, size_t n)
{
	static const char *const suffix[] = {"", "k", "M", "G", "T"};
	int i = 0;
	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, n, i && v < 10 ? "%.1f%s" : "%.0f%s", v, suffix[i]);
}

/* The line, under the lock: "import x.log: 27MB of 147MB (19%), 50MB/s, 1 s". */
static void draw(double now)
{
	char line[320], a[16], b[16], r[16];
	double el = now - pg.start;
	const char *sep = strcmp(pg.unit, "B") ? " " : ""; /* bytes read 27MB, other counts "41 runs" */
	int k = snprintf(line, sizeof(line), "%s", rm_tx(pg.what));
	if (*pg.unit) {
		human(pg.done, a, sizeof(a));
		if (pg.total > 0) {
			human(pg.total, b, sizeof(b));
			if (*sep)
				k += snprintf(line + k, sizeof(line) - (size_t)k, ": %s of %s %s (%.0f%%)", a, b,
				              pg.unit, 100 * (pg.done < pg.total ? pg.done / pg.total : 1));
			else
				k += snprintf(line + k, sizeof(line) - (size_t)k, ": %sB of %sB (%.0f%%)", a, b,
				              100 * (pg.done < pg.total ? pg.done / pg.total : 1));
		} else {
			k += snprintf(line + k, sizeof(line) - (size_t)k, ": %s%s%s", a, sep, pg.unit);
		}
		if (el >= 1 && pg.done > 0) {
			human(pg.done / el, r, sizeof(r));
			k += snprintf(line + k, sizeof(line) - (size_t)k, ", %s%s%s/s", r, sep, pg.unit);
		}
	}
	if (k > 0 && (size_t)k < sizeof(line))
		snprintf(line + k, sizeof(line) - (size_t)k, ", %.0f s", el);
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	pg.shown = 1;
}

static void *redraw(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pg.mu);
	while (!pg.stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(REDRAW_S * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&pg.wake, &pg.mu, &ts);
		double now = rm_monotonic();
		if (!pg.stopping && now - pg.start >= FIRST_DRAW_S && now >= pg.quiet_until)
			draw(now);
	}
	pthread_mutex_unlock(&pg.mu);
	return NULL;
}

void rm_progress_start(const char *what, const char *unit, double total)
{
	if (!enabled())
		return;
	rm_progress_end();
	pthread_mutex_lock(&pg.mu);
	snprintf(pg.what, sizeof(pg.what), "%s", what);
	snprintf(pg.unit, sizeof(pg.unit), "%s", unit ? unit : "");
	pg.total = total;
	pg.done = 0;
	pg.start = rm_monotonic();
	pg.quiet_until = 0;
	pg.stopping = 0;
	pthread_mutex_unlock(&pg.mu);
	pg.active = !pthread_create(&pg.thread, NULL, redraw, NULL);
}

void rm_progress_at(double done)
{
	if (!pg.active)
		return;
	pthread_mutex_lock(&pg.mu);
	pg.done = done;
	pthread_mutex_unlock(&pg.mu);
}

void rm_progress_text(const char *text)
{
	if (!enabled())
		return;
	pthread_mutex_lock(&pg.mu);
	fprintf(stderr, "\r\033[K%s%s", pg.active ? rm_tx(pg.what) : "", pg.active ? ": " : "");
	fputs(rm_tx(text), stderr);
	fflush(stderr);
	pg.shown = 1;
	pg.quiet_until = rm_monotonic() + 1; /* the caller's text stays up a second */
	pthread_mutex_unlock(&pg.mu);
}

void rm_progress_note(const char *fmt, ...)
{
	if (!enabled())
		return;
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rm_progress_text(msg);
}

void rm_progress_clear(void)
{
	if (pg.enabled != 1)
		return;
	pthread_mutex_lock(&pg.mu);
	if (pg.shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		pg.shown = 0;
	}
	pg.quiet_until = rm_monotonic() + REDRAW_S; /* let the other output be read */
	pthread_mutex_unlock(&pg.mu);
}

void rm_progress_end(void)
{
	if (!pg.active)
		return;
	pthread_mutex_lock(&pg.mu);
	pg.stopping = 1;
	pthread_cond_signal(&pg.wake);
	pthread_mutex_unlock(&pg.mu);
	pthread_join(pg.thread, NULL);
	pg.active = 0;
	rm_progress_clear();
}
