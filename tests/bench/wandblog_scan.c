/*
 * wandblog_scan - reads every record of a .wandb log and does nothing with
 * it: the container's floor (blocks, chunks, CRC-32), for the benchmark.
 * usage: wandblog_scan FILE
 */
#include <stdio.h>

#include "runmon/parse.h"

int main(int argc, char **argv)
{
	struct rm_wlog w;
	struct rm_err err;
	const uint8_t *data;
	size_t len;
	uint64_t bytes = 0;
	int rc;
	if (argc != 2 || rm_wlog_open(&w, argv[1], 0, 0, &err)) {
		fprintf(stderr, "usage: wandblog_scan FILE%s%s\n", argc == 2 ? ": " : "", argc == 2 ? err.msg : "");
		return 2;
	}
	while ((rc = rm_wlog_next(&w, &data, &len, &err)) == 1)
		bytes += len;
	printf("%llu records, %llu payload bytes, %llu damaged\n", (unsigned long long)w.records,
	       (unsigned long long)bytes, (unsigned long long)w.corrupt);
	rm_wlog_close(&w);
	return rc ? 1 : 0;
}
