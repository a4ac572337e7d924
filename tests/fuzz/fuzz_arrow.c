/*
 * fuzz_arrow.c - libFuzzer target for the Arrow IPC reader: the first byte
 * picks which column to ask for (the default choice, an integer column, a
 * list column, a dictionary one), the rest is the file. A read that
 * succeeds has one length per row, each -1 (null) or at least 0.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "runmon/parse.h"
#include "runmon/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct rm_arrow_opts choices[8] = {
	    {NULL, NULL, NULL},     {"n_tokens", NULL, NULL}, {NULL, "input_ids", NULL}, {"lang", NULL, NULL},
	    {NULL, "tokens", NULL}, {"seq_len", NULL, NULL},  {"tokens", NULL, NULL},    {"length", NULL, NULL},
	};
	if (!size)
		return 0;
	const struct rm_arrow_opts *o = &choices[data[0] & 7];
	/* An exact-size copy, so any read past the end is caught. */
	uint8_t *copy = malloc(size - 1 ? size - 1 : 1);
	memcpy(copy, data + 1, size - 1);
	struct rm_arrow_lengths a;
	struct rm_err err;
	memset(&a, 0, sizeof(a));
	if (rm_arrow_read_buffer(copy, size - 1, "fuzz.arrow", o, &a, &err) == RM_OK)
		for (size_t i = 0; i < a.n; i++)
			if (a.len[i] < -1)
				abort();
	rm_arrow_lengths_release(&a);
	free(copy);
	return 0;
}
