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

#include "fuzz_util.h"
#include "wandb_writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
	struct rm_import_opts o = {.format = RM_FMT_WANDB_LOG, .skip_bad = (data[0] >> 1) & 1};
	if (data[0] & 1)
		fuzz_import_bytes(data + 1, size - 1, &o);
	else
		fuzz_import_bytes(w.buf, w.len, &o);
	ww_free(&w);
	return 0;
}
