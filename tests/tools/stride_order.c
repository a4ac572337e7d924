/*
 * stride_order.c - prints the batches rm_stride_epoch() gives, one line of
 * indices each, so the Python sampler's tests can hold the C to the same
 * specification (tests/unit/python/test_runmon_sampler.py).
 *
 * usage: stride_order LENGTHS_FILE B0,B1,... (--batch-size N | --max-tokens N)
 *        [--seed N] [--epoch N] [--rank R --world-size W] [--drop-last]
 * LENGTHS_FILE: one length per line. Exit 2 when the C refuses the options.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/sim.h"

static int64_t num(const char *s)
{
	return strtoll(s, NULL, 10);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return fprintf(stderr, "usage: stride_order LENGTHS B0,B1,... options\n"), 2;
	FILE *fp = fopen(argv[1], "r");
	if (!fp)
		return perror(argv[1]), 2;
	size_t n = 0, cap = 1024;
	int64_t *len = malloc(cap * sizeof(int64_t)), v;
	while (fscanf(fp, "%" SCNd64, &v) == 1) {
		if (n == cap)
			len = realloc(len, (cap *= 2) * sizeof(int64_t));
		len[n++] = v;
	}
	fclose(fp);
	int64_t bounds[RM_STRIDE_MAX_BUCKETS + 1];
	int nb = 0;
	for (char *p = argv[2]; *p && nb <= RM_STRIDE_MAX_BUCKETS; p += *p == ',') {
		char *end;
		bounds[nb++] = strtoll(p, &end, 10);
		p = end;
	}
	struct rm_stride_opts o = {.bounds = bounds, .nbounds = nb, .world_size = 1};
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : "0";
		if (!strcmp(a, "--drop-last")) {
			o.drop_last = 1;
			continue;
		}
		i++;
		if (!strcmp(a, "--batch-size"))
			o.batch_size = num(val);
		else if (!strcmp(a, "--max-tokens"))
			o.max_tokens = num(val);
		else if (!strcmp(a, "--seed"))
			o.seed = (uint64_t)num(val);
		else if (!strcmp(a, "--epoch"))
			o.epoch = (uint32_t)num(val);
		else if (!strcmp(a, "--rank"))
			o.rank = (int)num(val);
		else if (!strcmp(a, "--world-size"))
			o.world_size = (int)num(val);
		else
			return fprintf(stderr, "stride_order: unknown %s\n", a), 2;
	}
	struct rm_stride_epoch ep;
	if (rm_stride_epoch(len, n, &o, &ep) < 0)
		return fprintf(stderr, "stride_order: options refused\n"), 2;
	for (size_t j = 0; j < ep.nbatches; j++) {
		for (size_t p = ep.start[j]; p < ep.start[j + 1]; p++)
			printf(p == ep.start[j] ? "%zu" : " %zu", ep.idx[p]);
		putchar('\n');
	}
	rm_stride_epoch_free(&ep);
	free(len);
	return 0;
}
