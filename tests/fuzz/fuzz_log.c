/*
 * fuzz_log.c - libFuzzer target for the console-log reader: prefixes,
 * objects after them (JSON and Python dicts), name/value pairs in every
 * separator, numbers with separators and units, progress bars, restarts,
 * through the mapper and the store. The first byte picks detection or the
 * log format, whether bad lines are skipped and a --log-every.
 */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	struct rm_import_opts o = {.skip_bad = data[0] & 1, .log_every = (data[0] >> 2) & 7};
	o.format = data[0] & 2 ? RM_FMT_LOG : RM_FMT_AUTO;
	fuzz_import_bytes(data + 1, size - 1, &o);
	return 0;
}
