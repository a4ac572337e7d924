/*
 * fuzz_jsonrow.c - libFuzzer target for the JSON row scanner (one history
 * line, bare NaN/Infinity allowed, nested objects flattened, media dropped),
 * the number parser, and the NaN quoting used before jansson.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "runmon/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_cstring(data, size);
	struct rm_row row;
	struct rm_err err;
	rm_row_init(&row);
	if (!rm_jsonrow_parse(&row, line, size, &err)) {
		for (size_t i = 0; i < row.n; i++) {
			double v;
			rm_field_num(&row.f[i], &v);
		}
		rm_row_get(&row, "_step");
	}
	rm_row_release(&row);
	size_t qlen;
	free(rm_json_quote_nonfinite(line, size, &qlen));
	double v;
	rm_parse_double(line, size < 64 ? size : 64, &v);
	free(line);
	return 0;
}
