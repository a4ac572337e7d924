/*
 * common.c - rm_err helpers and aborting allocators.
 */
#include "runmon/common.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

int rm_err_set(struct rm_err *err, enum rm_status code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
		err->bad_line = 0;
	}
	return (int)code;
}

int rm_exit_code(enum rm_status code)
{
	switch (code) {
	case RM_OK: return RM_EXIT_OK;
	case RM_E_USAGE:
	case RM_E_INPUT:
	case RM_E_NOTFOUND: return RM_EXIT_USAGE;
	case RM_E_NET: return RM_EXIT_NET;
	case RM_E_IO:
	case RM_E_STORE: return RM_EXIT_STORE;
	}
	return RM_EXIT_STORE;
}

static void oom(size_t n)
{
	fprintf(stderr, "runmon: fatal: out of memory allocating %zu bytes\n", n);
	abort();
}

float rm_float_of(double v)
{
	if (isnan(v))
		return NAN;
	return v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
}

float rm_epoch_float(double v)
{
	float f = rm_float_of(v);
	if (isfinite(v) && fabs(v) < 16777216.0 && (f == floorf(f)) != (v == floor(v)))
		f = nextafterf(f, v > f ? INFINITY : -INFINITY);
	return f;
}

void *rm_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *rm_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *rm_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *rm_xstrdup(const char *s)
{
	return rm_xstrndup(s, strlen(s));
}

int rm_parse_utc(const char *s, double *t)
{
	struct tm tm = {0};
	int used = 0;
	if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &used) != 3 || used != 10)
		return -1;
	int more = 0;
	if (s[used] && (sscanf(s + used, "T%2d:%2d:%2dZ%n", &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &more) != 3 ||
	                more != 10 || s[used + more]))
		return -1;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon--;
	*t = (double)timegm(&tm);
	return 0;
}

char *rm_xstrndup(const char *s, size_t n)
{
	char *p = rm_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *rm_xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(0);
	char *s = rm_xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

double rm_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *rm_path_absolute(const char *path)
{
	char cwd[4096], *real = realpath(path, NULL); /* wandb/latest-run is a symlink */
	if (real)
		return real;
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return rm_xstrdup(path);
	return rm_xasprintf("%s/%s", cwd, path);
}

void rm_say(const struct rm_voice *v, enum rm_say_kind kind, const char *fmt, ...)
{
	if (!v || !v->say)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	v->say(v->arg, kind, msg);
}
