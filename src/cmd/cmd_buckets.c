/*
 * cmd_buckets.c - `runmon buckets`: bucket boundaries fitted to a length
 * distribution, with the padding they cost.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/cost.h"
#include "runmon/parse.h"

static const char about[] = "Fits K bucket boundaries to a distribution of sequence lengths so that the\n"
                            "padding is smallest (exact dynamic programming over the distinct lengths), and\n"
                            "prints them with the padding efficiency per bucket and overall, beside\n"
                            "equal-width and quantile boundaries.\n"
                            "DATASET is a Hugging Face dataset saved with save_to_disk (its folder, or a\n"
                            "DatasetDict's), or one Arrow file: the lengths come from an integer column\n"
                            "(seq_len, length, lengths, num_tokens or n_tokens) or else from the offsets of\n"
                            "input_ids, without reading a token. LENGTHS is one integer per line, a batch\n"
                            "sidecar (JSON lines with \"lens\"; rows without are left out), or a CSV file\n"
                            "with a header (--column).\n"
                            "Padding model: each bucket pads to its longest length; beside it, real\n"
                            "batches of --tokens-per-batch: each bucket's sequences shuffled and taken\n"
                            "into a batch until one more would pad it past the budget (the model\n"
                            "diagnose re-packs a run's lengths by: with the run's K and budget, diagnose\n"
                            "fits the same boundaries).";

static const struct rm_opt options[] = {
    {"k", 'k', "N", RM_ARG_COUNT, "buckets", "6", NULL, 0},
    {"max-len", 'm', "N", RM_ARG_COUNT, "longest length (for equal-width; default the longest seen)", NULL, NULL, 0},
    {"tokens-per-batch", 't', "N", RM_ARG_COUNT, "token budget of a batch", "65536", NULL, 0},
    {"column", 'c', "NAME", RM_ARG_TEXT, "the column of lengths: a dataset's integer or list column, a CSV column",
     "seq_len, length, len", NULL, 0},
    {"list-column", 'l', "NAME", RM_ARG_TEXT, "a dataset's list column whose lengths to take",
     "input_ids, when no length column is there", NULL, 0},
    {"split", 's', "NAME", RM_ARG_TEXT, "a DatasetDict's split", "train", NULL, 0},
    {"json", 'j', NULL, RM_ARG_NONE, "machine-readable output", NULL, NULL, 0},
    {0},
};

static const char *const examples[] = {
    "runmon buckets lengths.txt",
    "runmon buckets --k 8 --tokens-per-batch 16384 data/train/",
    "runmon buckets --column seq_len --json lengths.csv",
    NULL,
};

static void print_bounds(const struct rm_bucketing *b, char *buf, size_t n)
{
	size_t o = 0;
	for (int i = 0; i <= b->k && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)b->bound[i]);
}

static json_t *bucketing_json(const struct rm_bucketing *b, double packed)
{
	json_t *bounds = json_array(), *per = json_array();
	for (int i = 0; i <= b->k; i++)
		json_array_append_new(bounds, json_integer(b->bound[i]));
	for (int i = 0; i < b->k; i++) {
		int64_t t = b->bucket_tokens[i], p = b->bucket_padding[i];
		json_array_append_new(per, json_pack("{s:I, s:I, s:I, s:f}", "sequences", (json_int_t)b->bucket_seqs[i],
		                                     "tokens", (json_int_t)t, "padding", (json_int_t)p, "efficiency",
		                                     t + p ? (double)t / (double)(t + p) : 1.0));
	}
	return json_pack("{s:o, s:I, s:I, s:f, s:f, s:o}", "boundaries", bounds, "tokens", (json_int_t)b->tokens,
	                 "padding", (json_int_t)b->padding, "efficiency", b->efficiency, "packed_efficiency", packed,
	                 "buckets", per);
}

static json_t *source_json(const struct rm_length_source *src)
{
	const struct rm_arrow_lengths *a = &src->info;
	return json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:s?}", "column", a->column, "type", a->type,
	                 "from_offsets", a->from_offsets, "rows", (json_int_t)a->n, "shards", (json_int_t)a->shards,
	                 "null_rows", (json_int_t)src->skipped, "empty_rows", (json_int_t)src->empty, "split",
	                 a->split[0] ? a->split : NULL);
}

static int run_buckets(int argc, char **argv, struct rm_ctx *ctx)
{
	int64_t k = 6, max_len = 0, budget = 65536;
	struct rm_arrow_opts ao = {NULL, NULL, NULL};
	int c, json = 0;
	(void)ctx;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_buckets, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'k':
			if (rm_parse_int(op.arg, 1, &k) || k > 64)
				return rm_cmd_usage_error(&cmd_buckets, "--k wants 1..64");
			break;
		case 'm':
			if (rm_parse_int(op.arg, 1, &max_len))
				return rm_cmd_usage_error(&cmd_buckets, "--max-len wants a length");
			break;
		case 't':
			if (rm_parse_int(op.arg, 1, &budget))
				return rm_cmd_usage_error(&cmd_buckets, "--tokens-per-batch wants a token count");
			break;
		case 'c': ao.column = op.arg; break;
		case 'l': ao.list_column = op.arg; break;
		case 's': ao.split = op.arg; break;
		case 'j': json = 1; break;
		case 'h': return rm_cmd_help(&cmd_buckets);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	/* Equal-width boundaries max_len * i / k must rise at every step. */
	if (max_len && (max_len < k || max_len > RM_BATCH_MAX_LEN))
		return rm_cmd_usage_error(&cmd_buckets, "--max-len wants a length from --k (%lld) to %d", (long long)k,
		                          RM_BATCH_MAX_LEN);
	if (budget > (int64_t)1 << 40)
		return rm_cmd_usage_error(&cmd_buckets, "--tokens-per-batch wants at most 2^40");
	if (ao.column && ao.list_column)
		return rm_cmd_usage_error(&cmd_buckets, "--column or --list-column, not both");
	if (op.ind != argc - 1)
		return rm_cmd_usage_error(&cmd_buckets, "one DATASET or LENGTHS file, please");
	int64_t *lens;
	size_t n;
	struct rm_err err;
	struct rm_length_source src;
	if (rm_lengths_read(argv[op.ind], &ao, &lens, &n, &src, &err)) {
		rm_error("%s", err.msg);
		return rm_exit_code(err.code);
	}
	rm_length_source_note(&src, argv[op.ind], n, stderr);
	struct rm_lengths d;
	struct rm_bucketing fit, ew, q;
	rm_lengths_from(&d, lens, n);
	free(lens);
	rm_buckets_fit(&d, (int)k, &fit);
	rm_buckets_equal_width(&d, fit.k, max_len, &ew);
	rm_buckets_quantile(&d, fit.k, &q);
	double pf = rm_buckets_packed(&d, fit.bound, fit.k, budget, 1);
	double pe = rm_buckets_packed(&d, ew.bound, ew.k, budget, 1);
	double pq = rm_buckets_packed(&d, q.bound, q.k, budget, 1);
	char bf[1024], be[1024], bq[1024];
	print_bounds(&fit, bf, sizeof(bf));
	print_bounds(&ew, be, sizeof(be));
	print_bounds(&q, bq, sizeof(bq));
	if (json) {
		json_t *o = json_pack("{s:s, s:I, s:I, s:i, s:I, s:o, s:o, s:o}", "schema", "runmon.buckets/1",
		                      "sequences", (json_int_t)d.total, "distinct", (json_int_t)d.n, "k", fit.k,
		                      "tokens_per_batch", (json_int_t)budget, "fitted", bucketing_json(&fit, pf),
		                      "equal_width", bucketing_json(&ew, pe), "quantile", bucketing_json(&q, pq));
		if (src.arrow)
			json_object_set_new(o, "source", source_json(&src));
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		printf("%lld sequences, %zu distinct lengths, %lld tokens; %d buckets\n\n", (long long)d.total, d.n,
		       (long long)fit.tokens, fit.k);
		printf("fitted boundaries (least padding): %s\n", bf);
		printf("  bucket  lengths            sequences   padding  efficiency\n");
		for (int i = 0; i < fit.k; i++) {
			int64_t t = fit.bucket_tokens[i], p = fit.bucket_padding[i];
			char range[48];
			snprintf(range, sizeof(range), "(%lld, %lld]", (long long)fit.bound[i],
			         (long long)fit.bound[i + 1]);
			printf("  %6d  %-17s %10lld %9.1f%%  %9.1f%%\n", i, range, (long long)fit.bucket_seqs[i],
			       t + p ? 100.0 * (double)p / (double)(t + p) : 0,
			       t + p ? 100.0 * (double)t / (double)(t + p) : 100);
		}
		printf("\n  boundaries                                        padded to bucket max   real batches of "
		       "%lld tokens\n",
		       (long long)budget);
		printf("  fitted       %-36s %10.1f%%            %10.1f%%\n", bf, 100 * fit.efficiency, 100 * pf);
		printf("  equal-width  %-36s %10.1f%%            %10.1f%%\n", be, 100 * ew.efficiency, 100 * pe);
		printf("  quantile     %-36s %10.1f%%            %10.1f%%\n", bq, 100 * q.efficiency, 100 * pq);
		printf("\npreview the loss signature: runmon simulate --buckets %s\n", bf);
	}
	rm_lengths_release(&d);
	return RM_EXIT_OK;
}

const struct rm_cmd cmd_buckets = {
    .name = "buckets",
    .summary = "fit bucket boundaries to a length distribution (least padding)",
    .synopsis = "[options] DATASET|LENGTHS",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 fitted, 2 usage error or unreadable lengths, 4 file system error.",
    .no_store = 1,
    .operands = RM_OPERANDS_FILES,
    .run = run_buckets,
};
