/*
 * load_series.c - the store's read of one run, alone: the rows diagnose
 * reads before any detector runs (rm_store_load_series), timed, for the
 * benchmark's comparison with sqlite3 reading the same columns.
 *
 * usage: load_series DB RUN     prints: SECONDS STEPS BATCHES
 */
#include <stdio.h>
#include <time.h>

#include "runmon/store.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct rm_store *st;
	struct rm_store_series ss;
	struct rm_err err;
	int64_t run;
	if (argc != 3) {
		fprintf(stderr, "usage: load_series DB RUN\n");
		return 2;
	}
	if (rm_store_open_flags(&st, argv[1], RM_STORE_MUST_EXIST, &err) || rm_store_find_run(st, argv[2], &run, &err))
		goto fail;
	double t0 = now();
	if (rm_store_load_series(st, run, 0, NULL, &ss, &err))
		goto fail;
	printf("%.3f %zu %zu\n", now() - t0, ss.n, ss.nb);
	rm_store_series_release(&ss);
	rm_store_close(st);
	return 0;
fail:
	fprintf(stderr, "load_series: %s\n", err.msg);
	return 1;
}
