/*
 * write_floor.c - the SQLite write floor for the import benchmark: the
 * same upserts runmon's import makes (steps and batches through the
 * store's prepared statements, one transaction), with values computed in
 * place and no parsing at all.
 *
 * usage: write_floor DB ROWS
 */
#include <stdio.h>
#include <stdlib.h>

#include "runmon/store.h"

int main(int argc, char **argv)
{
	struct rm_store *st;
	struct rm_err err;
	int64_t run;
	if (argc != 3) {
		fprintf(stderr, "usage: write_floor DB ROWS\n");
		return 2;
	}
	long rows = atol(argv[2]);
	const struct rm_run_key key = {"file", "", "", "floor"};
	if (rm_store_open(&st, argv[1], &err) || rm_store_begin(st, &err) || rm_store_run_ensure(st, &key, &run, &err))
		goto fail;
	for (long i = 0; i < rows; i++) {
		struct rm_step s = {.step = i,
		                    .v = {1.0 + (double)(i % 97) / 97.0, 3e-4, (double)i / 250000.0, 1.1,
		                          (double)i * 0.41, 1714556400.0 + (double)i * 0.41},
		                    .have = 0x3f};
		struct rm_batch b = {
		    .step = i, .v = {(double)(i % 6), 16, 1730, 1811, 1772.5, 28360, 616}, .have = 0x7f};
		if (rm_store_put_step(st, run, &s, &err) || rm_store_put_batch(st, run, &b, &err))
			goto fail;
	}
	if (rm_store_commit(st, &err))
		goto fail;
	rm_store_close(st);
	return 0;
fail:
	fprintf(stderr, "write_floor: %s\n", err.msg);
	return 1;
}
