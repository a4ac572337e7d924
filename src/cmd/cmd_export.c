/*
 * cmd_export.c - `runmon export`: a run's per-step series as the
 * detectors see it (the loss, bucket- and length-adjusted, the batches
 * each row covers), as CSV or JSON lines for a notebook or a plot.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "runmon/analyze.h"

static const char about[] = "Writes a run's per-step series: the loss as logged, the bucket-adjusted loss\n"
                            "(each row less its bucket's fitted level: the curve to watch), the length-\n"
                            "adjusted loss (when a length effect was fitted), the batches and ranks each\n"
                            "row covers (those since the previous row), the bucket of most of them and\n"
                            "each bucket's share. The run is diagnosed to fit the levels; its stored\n"
                            "findings are left as they are.";

static const struct rm_opt options[] = {
    {"format", 'f', "FORMAT", RM_ARG_CHOICE, "csv (a header row, then one row a step) or jsonl (one object a line)",
     "from --output's extension, else csv", "csv jsonl", 0},
    {"output", 'o', "FILE", RM_ARG_PATH, "write to FILE (replaced whole, never half-written)", "standard output", NULL,
     'o'},
    {0},
};

static const char *const examples[] = {
    "runmon export demo-homogeneous -o homog.csv",
    "runmon export acme/llm/ab12 --format jsonl | head",
    NULL,
};

enum format { CSV, JSONL };

struct writer {
	FILE *fp;
	enum format fmt;
	const struct rm_series *s;
	char **label; /* each bucket's label, as the format quotes it */
	int k;
};

static void number(FILE *fp, double v, const char *none)
{
	if (isfinite(v))
		fprintf(fp, "%.9g", v);
	else
		fputs(none, fp);
}

static const char *const nonfinite_word[] = {"", "nan", "inf", ""};

static int row(void *arg, const struct rm_step_row *r)
{
	struct writer *w = arg;
	FILE *fp = w->fp;
	int nf = r->nonfinite >= 0 && r->nonfinite <= 3 ? r->nonfinite : 1;
	if (w->fmt == CSV) {
		fprintf(fp, "%lld,", (long long)r->step);
		number(fp, r->loss, nonfinite_word[nf]);
		fputc(',', fp);
		number(fp, r->bucket_adjusted, "");
		fputc(',', fp);
		number(fp, r->length_adjusted, "");
		fprintf(fp, ",%d,%d,%s", r->batches, r->ranks, r->dominant >= 0 ? w->label[r->dominant] : "");
		for (int c = 0; c < w->k; c++) {
			fputc(',', fp);
			number(fp, r->share[c], "");
		}
		fputc('\n', fp);
	} else {
		fprintf(fp, "{\"step\": %lld, \"loss\": ", (long long)r->step);
		number(fp, r->loss, "null");
		if (nf)
			fprintf(fp, ", \"loss_logged\": \"%s\"", nf == 3 ? "no" : nonfinite_word[nf]);
		fputs(", \"bucket_adjusted\": ", fp);
		number(fp, r->bucket_adjusted, "null");
		fputs(", \"length_adjusted\": ", fp);
		number(fp, r->length_adjusted, "null");
		fprintf(fp, ", \"batches\": %d, \"ranks\": %d, \"bucket\": %s", r->batches, r->ranks,
		        r->dominant >= 0 ? w->label[r->dominant] : "null");
		if (r->dominant >= 0) {
			const char *sep = "";
			fputs(", \"shares\": {", fp);
			for (int c = 0; c < w->k; c++)
				if (r->share[c] > 0) {
					fprintf(fp, "%s%s: ", sep, w->label[c]);
					number(fp, r->share[c], "null");
					sep = ", ";
				}
			fputc('}', fp);
		}
		fputs("}\n", fp);
	}
	return ferror(fp) ? -1 : 0;
}

/* A label as a CSV cell (RFC 4180 quoting) or a JSON string. */
static char *quote_label(const char *label, enum format fmt)
{
	if (fmt == JSONL) {
		json_t *j = json_string(label);
		char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
		json_decref(j);
		return q ? q : rm_xstrdup("\"?\"");
	}
	if (!strpbrk(label, ",\"\r\n"))
		return rm_xstrdup(label);
	size_t n = strlen(label), o = 0;
	char *q = rm_xmalloc(2 * n + 3);
	q[o++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (label[i] == '"')
			q[o++] = '"';
		q[o++] = label[i];
	}
	q[o++] = '"';
	q[o] = '\0';
	return q;
}

static int write_series(void *arg, const struct rm_series *s, const struct rm_diagnosis *d, struct rm_err *err)
{
	struct writer *w = arg;
	char num[16];
	w->s = s;
	w->k = s->nlabels < RM_MAX_BUCKETS ? s->nlabels : RM_MAX_BUCKETS;
	w->label = rm_xcalloc((size_t)(w->k ? w->k : 1), sizeof(char *));
	for (int c = 0; c < w->k; c++) {
		snprintf(num, sizeof(num), "%d", c);
		w->label[c] = quote_label(s->labels ? s->labels[c] : num, w->fmt);
	}
	if (w->fmt == CSV) {
		fputs("step,loss,bucket_adjusted,length_adjusted,batches,ranks,bucket", w->fp);
		for (int c = 0; c < w->k; c++) {
			char *h = rm_xasprintf("share_%s",
			                       s->labels ? s->labels[c] : (snprintf(num, sizeof(num), "%d", c), num));
			char *q = quote_label(h, CSV);
			fprintf(w->fp, ",%s", q);
			free(q);
			free(h);
		}
		fputc('\n', w->fp);
	}
	int rc = rm_each_step_row(s, d, row, w);
	for (int c = 0; c < w->k; c++)
		free(w->label[c]);
	free(w->label);
	return rc ? rm_err_set(err, RM_E_IO, "cannot write the series: %s", strerror(errno)) : RM_OK;
}

static int run_export(int argc, char **argv, struct rm_ctx *ctx)
{
	const char *output = "-", *format = NULL;
	int c, code;
	struct rm_optparse op;
	rm_optparse_init(&op, &cmd_export, argc, argv);
	while ((c = rm_opt_next(&op)) != -1) {
		switch (c) {
		case 'f': format = op.arg; break;
		case 'o': output = op.arg; break;
		case 'D': ctx->db_path = op.arg; break;
		case 'h': return rm_cmd_help(&cmd_export);
		default: return RM_EXIT_USAGE; /* rm_opt_next said why */
		}
	}
	if (argc - op.ind != 1)
		return rm_cmd_usage_error(&cmd_export, argc - op.ind ? "name one run" : "name the run to export");
	size_t olen = strlen(output);
	struct writer w = {0};
	w.fmt = format ? (!strcmp(format, "jsonl") ? JSONL : CSV)
	        : olen > 6 && (!strcmp(output + olen - 6, ".jsonl") || !strcmp(output + olen - 5, ".json")) ? JSONL
	                                                                                                    : CSV;
	struct rm_store *st;
	if ((code = rm_ctx_open_store_flags(ctx, &st, RM_STORE_MUST_EXIST)))
		return code;
	struct rm_err err;
	struct rm_outfile out;
	int64_t run_id;
	int rc = rm_store_find_run(st, argv[op.ind], &run_id, &err);
	if (!rc && !(rc = rm_outfile_open(&out, output, &err))) {
		struct rm_analyze_opts o;
		struct rm_diagnosis d;
		struct rm_run_info info;
		rm_analyze_opts_default(&o);
		o.store_findings = 0;
		o.each_series = write_series;
		o.each_arg = &w;
		w.fp = out.fp;
		if (!(rc = rm_analyze_run(st, run_id, &o, &d, &info, &err))) {
			rm_diagnosis_release(&d);
			rm_run_info_release(&info);
			rc = rm_outfile_commit(&out, &err);
		} else
			rm_outfile_abort(&out);
	}
	if (rc)
		rm_error("%s", err.msg);
	rm_store_close(st);
	return rc ? rm_exit_code(err.code) : RM_EXIT_OK;
}

const struct rm_cmd cmd_export = {
    .name = "export",
    .summary = "write a run's per-step series (loss, adjusted, buckets) as CSV or JSON lines",
    .synopsis = "RUN [--format csv|jsonl] [-o FILE]",
    .about = about,
    .opts = options,
    .notes = NULL,
    .examples = examples,
    .exit_status = "0 written, 2 usage error or unknown run, 4 database or file system error.",
    .operands = RM_OPERANDS_RUNS,
    .run = run_export,
};
