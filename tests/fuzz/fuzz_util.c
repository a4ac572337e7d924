/*
 * fuzz_util.c - see fuzz_util.h.
 */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runmon/store.h"

char *fuzz_cstring(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, data, n);
	s[n] = '\0';
	return s;
}

void fuzz_import_bytes(const uint8_t *data, size_t n, const struct rm_import_opts *opts)
{
	static struct rm_store *st;
	static char path[64];
	struct rm_err err;
	struct rm_import_report rep;
	if (!st) {
		if (rm_store_open(&st, ":memory:", &err))
			abort();
		snprintf(path, sizeof(path), "/tmp/runmon-fuzz-%d", (int)getpid());
	}
	FILE *fp = fopen(path, "wb");
	if (!fp || fwrite(data, 1, n, fp) != n || fclose(fp))
		abort();
	char *files[] = {path};
	if (!rm_import(st, opts, files, 1, &rep, &err))
		rm_import_report_release(&rep);
}
