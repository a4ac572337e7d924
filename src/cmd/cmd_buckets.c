/*
 * cmd_buckets.c - `runmon buckets`: bucket boundaries fitted to a length
 * distribution, with the padding they cost.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "runmon/buckets.h"
#include "runmon/csv.h"
#include "runmon/lines.h"
#include "runmon/row.h"

static const char usage_text[] = "usage: runmon buckets [options] LENGTHS\n"
                                 "\n"
                                 "Fits K bucket boundaries to a distribution of sequence lengths so that the\n"
                                 "padding is smallest (exact dynamic programming over the distinct lengths), and\n"
                                 "prints them with the padding efficiency per bucket and overall, beside\n"
                                 "equal-width and quantile boundaries. LENGTHS is one integer per line, a batch\n"
                                 "sidecar (JSON lines with \"lens\"; rows without are left out), or a CSV file\n"
                                 "with a header (--column).\n"
                                 "Padding model: each bucket pads to its longest length; with\n"
                                 "--tokens-per-batch, also the efficiency of real batches of that budget.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --k N                 buckets (default 6)\n"
                                 "  --max-len N           longest length (for equal-width; default the longest seen)\n"
                                 "  --tokens-per-batch N  token budget of a batch (default 65536)\n"
                                 "  --column NAME         the CSV column of lengths (default seq_len, length, len)\n"
                                 "  --json                machine-readable output\n";

static int add(int64_t **v, size_t *n, size_t *cap, double x, const char *path, uint64_t line, struct rm_err *err)
{
	if (!(x >= 1 && x < 1e9 && x == (double)(int64_t)x))
		return rm_err_set(err, RM_E_INPUT, "%s:%llu: %g is not a length (a positive integer)", path,
		                  (unsigned long long)line, x);
	if (*n == *cap)
		*v = rm_xrealloc(*v, (*cap = *cap ? *cap * 2 : 65536) * sizeof(int64_t));
	(*v)[(*n)++] = (int64_t)x;
	return RM_OK;
}

/* Reads lengths from the three accepted shapes. */
static int read_lengths(const char *path, const char *column, int64_t **out, size_t *n, size_t *skipped,
                        struct rm_err *err)
{
	struct rm_lines lr;
	struct rm_row row;
	struct rm_csv csv;
	char *line;
	size_t len, cap = 0;
	int rc, mode = 0, col = -1; /* 1 numbers, 2 JSON lines, 3 CSV */
	*out = NULL;
	*n = 0;
	if ((rc = rm_lines_open(&lr, path, err)))
		return rc;
	rm_row_init(&row);
	rm_csv_init(&csv, ',');
	while (!(rc = rm_lines_next(&lr, &line, &len, err)) && line) {
		if (strspn(line, " \t") == len)
			continue;
		if (!mode) {
			mode = line[strspn(line, " \t")] == '{'                       ? 2
			       : strpbrk(line, ",\t") || !strchr("0123456789", *line) ? 3
			                                                              : 1;
			if (mode == 3) { /* the header */
				csv.sep = rm_csv_guess_sep(line);
				if ((rc = rm_csv_split(&csv, line, len, err)))
					break;
				for (size_t c = 0; c < csv.n && col < 0; c++)
					if (column ? !strcmp(csv.cell[c], column)
					           : !strcmp(csv.cell[c], "seq_len") ||
					                 !strcmp(csv.cell[c], "length") || !strcmp(csv.cell[c], "len"))
						col = (int)c;
				if (col < 0) {
					rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: no column %s in the header", path,
					                (unsigned long long)lr.lineno,
					                column ? column : "seq_len, length or len");
					break;
				}
				continue;
			}
		}
		struct rm_err perr;
		double x;
		if (mode == 1) {
			char *end;
			x = strtod(line, &end);
			if (end == line || strspn(end, " \t") != strlen(end)) {
				rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: not a number", path,
				                (unsigned long long)lr.lineno);
				break;
			}
			if ((rc = add(out, n, &cap, x, path, lr.lineno, err)))
				break;
		} else if (mode == 2) {
			if (rm_jsonrow_parse(&row, line, len, &perr)) {
				rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: %s", path, (unsigned long long)lr.lineno,
				                perr.msg);
				break;
			}
			const struct rm_field *f = rm_row_get(&row, "lens");
			if (f && f->type == RM_F_NUMARR) {
				for (uint32_t i = 0; i < f->arr_len && !rc; i++)
					rc = add(out, n, &cap, row.nums[f->arr_off + i], path, lr.lineno, err);
			} else if ((f = rm_row_get(&row, column ? column : "seq_len")) && rm_field_num(f, &x) == 1) {
				rc = add(out, n, &cap, x, path, lr.lineno, err);
			} else {
				(*skipped)++; /* a sidecar row with precomputed stats only */
			}
			if (rc)
				break;
		} else {
			if ((rc = rm_csv_split(&csv, line, len, &perr)) || (size_t)col >= csv.n) {
				rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: %s", path, (unsigned long long)lr.lineno,
				                rc ? perr.msg : "too few columns");
				break;
			}
			struct rm_field f = {.type = RM_F_CELL, .raw = csv.cell[col], .rlen = (uint32_t)csv.len[col]};
			if (rm_field_num(&f, &x) != 1) {
				rc = rm_err_set(err, RM_E_INPUT, "%s:%llu: '%s' is not a length", path,
				                (unsigned long long)lr.lineno, csv.cell[col]);
				break;
			}
			if ((rc = add(out, n, &cap, x, path, lr.lineno, err)))
				break;
		}
	}
	if (!rc && *n == 0)
		rc = rm_err_set(err, RM_E_INPUT, "%s: no lengths", path);
	rm_csv_release(&csv);
	rm_row_release(&row);
	rm_lines_close(&lr);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

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

static int run_buckets(int argc, char **argv, struct rm_ctx *ctx)
{
	static const struct option longopts[] = {
	    {"k", required_argument, NULL, 'k'},
	    {"max-len", required_argument, NULL, 'm'},
	    {"tokens-per-batch", required_argument, NULL, 't'},
	    {"column", required_argument, NULL, 'c'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int64_t k = 6, max_len = 0, budget = 65536;
	const char *column = NULL;
	int c, json = 0;
	(void)ctx;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (rm_parse_int(optarg, 1, &k) || k > 64)
				return rm_cmd_usage_error(&cmd_buckets, "--k wants 1..64");
			break;
		case 'm':
			if (rm_parse_int(optarg, 1, &max_len))
				return rm_cmd_usage_error(&cmd_buckets, "--max-len wants a length");
			break;
		case 't':
			if (rm_parse_int(optarg, 1, &budget))
				return rm_cmd_usage_error(&cmd_buckets, "--tokens-per-batch wants a token count");
			break;
		case 'c': column = optarg; break;
		case 'j': json = 1; break;
		case 'h': return rm_cmd_help(&cmd_buckets);
		default: return rm_cmd_usage_error(&cmd_buckets, "bad option");
		}
	}
	/* Equal-width boundaries max_len * i / k must rise at every step. */
	if (max_len && (max_len < k || max_len > RM_BATCH_MAX_LEN))
		return rm_cmd_usage_error(&cmd_buckets, "--max-len wants a length from --k (%lld) to %d", (long long)k,
		                          RM_BATCH_MAX_LEN);
	if (budget > (int64_t)1 << 40)
		return rm_cmd_usage_error(&cmd_buckets, "--tokens-per-batch wants at most 2^40");
	if (optind != argc - 1)
		return rm_cmd_usage_error(&cmd_buckets, "one LENGTHS file, please");
	int64_t *lens;
	size_t n, skipped = 0;
	struct rm_err err;
	if (read_lengths(argv[optind], column, &lens, &n, &skipped, &err)) {
		rm_error("%s", err.msg);
		return rm_exit_code(err.code);
	}
	if (skipped)
		fprintf(stderr, "runmon: note: %zu rows had no \"lens\" (or %s) and were left out\n", skipped,
		        column ? column : "seq_len");
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
		json_t *o = json_pack("{s:I, s:I, s:i, s:I, s:o, s:o, s:o}", "sequences", (json_int_t)d.total,
		                      "distinct", (json_int_t)d.n, "k", fit.k, "tokens_per_batch", (json_int_t)budget,
		                      "fitted", bucketing_json(&fit, pf), "equal_width", bucketing_json(&ew, pe),
		                      "quantile", bucketing_json(&q, pq));
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

const struct rm_cmd cmd_buckets = {"buckets", "fit bucket boundaries to a length distribution (least padding)",
                                   usage_text, run_buckets};
