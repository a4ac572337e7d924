/*
 * fuzz_log.c - libFuzzer target for the console-log reader: prefixes,
 * objects after them (JSON and Python dicts), name/value pairs in every
 * separator, numbers with separators and units, progress bars, restarts,
 * through the mapper and the store. The first byte picks detection or the
 * log format, whether bad lines are skipped, a --log-every, and whether the
 * first line is a --pattern for the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	struct rm_import_opts o = {.skip_bad = data[0] & 1, .log_every = (data[0] >> 2) & 7};
	o.format = data[0] & 2 ? RM_FMT_LOG : RM_FMT_AUTO;
	data++, size--;
	char *pattern = NULL;
	if (o.format == RM_FMT_LOG && (data[-1] & 0x20)) {
		const uint8_t *nl = memchr(data, '\n', size);
		if (!nl)
			return 0;
		char why[128];
		pattern = fuzz_cstring(data, (size_t)(nl - data));
		if (strlen(pattern) != (size_t)(nl - data) || rm_log_pattern_check(pattern, why, sizeof(why))) {
			free(pattern);
			return 0;
		}
		o.pattern = pattern;
		size -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
	fuzz_import_bytes(data, size, &o);
	free(pattern);
	return 0;
}
