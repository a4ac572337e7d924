/*
 * fuzz_tfevents.c - libFuzzer target for the TensorBoard event file reader:
 * the TFRecord framing (lengths, masked CRC-32C) and the Event, Summary and
 * TensorProto messages behind it, through the real import into an
 * in-memory store; fuzz_replay.c runs it over the committed corpus.
 *
 * An input whose first byte is odd is the file itself, so the framing is
 * fuzzed. One whose first byte is even is a list of records (a 2-byte
 * little-endian length, then the Event) framed here with valid checksums,
 * so mutations reach the protobuf instead of dying at the CRC.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "runmon/parse.h"

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	struct rm_import_opts o = {.format = RM_FMT_TFEVENTS, .skip_bad = (data[0] >> 1) & 1};
	if (data[0] & 1) {
		fuzz_import_bytes(data + 1, size - 1, &o);
		return 0;
	}
	uint8_t *buf = malloc(size * 9 + 16);
	size_t len = 0;
	for (size_t at = 1; at + 2 <= size;) {
		size_t n = (size_t)data[at] | (size_t)data[at + 1] << 8;
		at += 2;
		if (n > size - at)
			n = size - at;
		uint8_t *h = buf + len;
		for (int i = 0; i < 8; i++)
			h[i] = (uint8_t)((uint64_t)n >> (8 * i));
		put32(h + 8, rm_tfrec_mask(rm_crc32c(0, h, 8)));
		memcpy(h + RM_TFREC_HEADER, data + at, n);
		put32(h + RM_TFREC_HEADER + n, rm_tfrec_mask(rm_crc32c(0, data + at, n)));
		len += RM_TFREC_HEADER + n + 4;
		at += n;
	}
	fuzz_import_bytes(buf, len, &o);
	free(buf);
	return 0;
}
