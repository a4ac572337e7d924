/*
 * fuzz_wandblog.c - libFuzzer target for the .wandb reader: the container
 * (blocks, chunks, checksums) and the records behind it (protobuf, history
 * items turned into rows, run, config, exit), through the real import into
 * an in-memory store. With RUNMON_FUZZ=ON (clang) it is a fuzzer; otherwise
 * fuzz_replay.c runs it over the committed corpus as a regression test.
 *
 * An input whose first byte is odd is the file itself, so the container is
 * fuzzed. One whose first byte is even is a list of records (a 2-byte
 * little-endian length, then the record) framed here with valid chunks and
 * checksums, so mutations reach the protobuf and the importer instead of
 * dying at the CRC.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runmon/import.h"
#include "runmon/store.h"
#include "wandb_writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rm_store *st;
	static char path[64];
	struct rm_err err;
	if (!st) {
		if (rm_store_open(&st, ":memory:", &err))
			abort();
		snprintf(path, sizeof(path), "/tmp/runmon-fuzz-%d.wandb", (int)getpid());
	}
	if (!size)
		return 0;
	struct ww w;
	ww_init(&w, 0);
	if (!(data[0] & 1)) {
		for (size_t at = 1; at + 2 <= size;) {
			size_t n = (size_t)data[at] | (size_t)data[at + 1] << 8;
			at += 2;
			if (n > size - at)
				n = size - at;
			ww_record(&w, data + at, n);
			at += n;
		}
	}
	const uint8_t *file = data[0] & 1 ? data + 1 : w.buf;
	size_t len = data[0] & 1 ? size - 1 : w.len;
	FILE *fp = fopen(path, "wb");
	if (!fp || fwrite(file, 1, len, fp) != len || fclose(fp))
		abort();
	ww_free(&w);
	struct rm_import_opts o = {.format = RM_FMT_WANDB_LOG, .skip_bad = (data[0] >> 1) & 1};
	struct rm_import_report rep;
	char *files[] = {path};
	if (!rm_import(st, &o, files, 1, &rep, &err))
		rm_import_report_release(&rep);
	return 0;
}
