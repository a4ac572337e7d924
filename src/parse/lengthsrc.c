/*
 * lengthsrc.c - sequence lengths from a dataset or a file (see runmon/parse.h).
 */
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "runmon/parse.h"

static int add(int64_t **v, size_t *n, size_t *cap, double x, const char *path, uint64_t line, struct rm_err *err)
{
	/* one rule for a length, as import reads a batch's (RM_BATCH_MAX_LEN) */
	if (!(x >= 0 && x <= RM_BATCH_MAX_LEN && x == (double)(int64_t)x))
		return rm_err_set(err, RM_E_INPUT, "%s:%llu: %s is not a length (an integer in 0..2^30)", path,
		                  (unsigned long long)line, rm_num(x, (char[32]){0}, 32));
	if (*n == *cap)
		*v = rm_xrealloc(*v, (*cap = *cap ? *cap * 2 : 65536) * sizeof(int64_t));
	(*v)[(*n)++] = (int64_t)x;
	return RM_OK;
}

/* Reads lengths from the three text shapes. */
static int read_text(const char *path, const char *column, int64_t **out, size_t *n, size_t *skipped,
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

/* Keeps the positive lengths of Arrow rows, in place; nulls and empty rows
 * are counted. */
static int read_arrow(const char *path, const struct rm_arrow_opts *o, int64_t **out, size_t *n,
                      struct rm_length_source *src, struct rm_err *err)
{
	struct rm_arrow_lengths *a = &src->info;
	size_t k = 0;
	if (rm_arrow_read_lengths(path, o, a, err))
		return err->code;
	for (size_t i = 0; i < a->n; i++) {
		if (a->len[i] > 0 && a->len[i] <= RM_BATCH_MAX_LEN)
			a->len[k++] = a->len[i];
		else if (a->len[i] == 0)
			src->empty++;
		else if (a->len[i] > 0)
			return rm_err_set(err, RM_E_INPUT, "%s: row %zu: %s is %lld, not a length", path, i, a->column,
			                  (long long)a->len[i]);
	}
	src->skipped = a->nulls;
	if (!k) {
		rm_arrow_lengths_release(a);
		return rm_err_set(err, RM_E_INPUT, "%s: no lengths (%zu rows, all null or empty)", path, a->n);
	}
	*out = a->len;
	*n = k;
	a->len = NULL;
	return RM_OK;
}

int rm_lengths_read(const char *path, const struct rm_arrow_opts *o, int64_t **lens, size_t *n,
                    struct rm_length_source *src, struct rm_err *err)
{
	memset(src, 0, sizeof(*src));
	*lens = NULL;
	*n = 0;
	if (rm_arrow_is_path(path)) {
		src->arrow = 1;
		return read_arrow(path, o, lens, n, src, err);
	}
	if (o->list_column || o->split)
		return rm_err_set(err, RM_E_USAGE, "%s: --%s is for Arrow data (a saved dataset or an .arrow file)",
		                  path, o->list_column ? "list-column" : "split");
	return read_text(path, o->column, lens, n, &src->skipped, err);
}

void rm_length_source_note(const struct rm_length_source *src, const char *path, size_t n, FILE *fp)
{
	const struct rm_arrow_lengths *a = &src->info;
	if (src->arrow) {
		fprintf(fp, "runmon: %s: %zu lengths from %s %s (%s), %zu rows in %zu shard%s%s%s", path, n,
		        a->from_offsets ? "the offsets of" : "column", a->column, a->type, a->n, a->shards,
		        a->shards == 1 ? "" : "s", a->split[0] ? ", split " : "", a->split);
		if (src->skipped || src->empty)
			fprintf(fp, "; left out %zu null and %zu empty rows", src->skipped, src->empty);
		fputc('\n', fp);
	} else if (src->skipped) {
		fprintf(fp, "runmon: note: %zu rows had no \"lens\" and were left out\n", src->skipped);
	}
}
