/*
 * fuzz_csv.c - libFuzzer target for the CSV line splitter (RFC 4180 quotes,
 * the separator guessed from the line as from a header).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "runmon/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_cstring(data, size);
	struct rm_csv c;
	struct rm_err err;
	rm_csv_init(&c, rm_csv_guess_sep(line));
	if (!rm_csv_split(&c, line, size, &err))
		for (size_t i = 0; i < c.n; i++)
			if (strlen(c.cell[i]) != c.len[i] && !memchr(c.cell[i], '\0', c.len[i]))
				abort(); /* a cell's length must match its text */
	rm_csv_release(&c);
	free(line);
	return 0;
}
