/*
 * hf.c - Hugging Face Trainer's trainer_state.json.
 *
 * The file is one JSON document (written by Python's json module, so it may
 * hold bare NaN/Infinity) whose "log_history" array mixes training rows
 * {"step", "loss", "learning_rate", "epoch", "grad_norm"}, evaluation rows
 * {"step", "eval_loss", ...} and a final summary row {"train_runtime",
 * "train_loss" (an average), ...}. It is read whole: these files hold one
 * entry per logging interval and stay small.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"

static int read_all(const char *path, char **buf, size_t *len, struct rm_err *err)
{
	FILE *fp = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	if (!fp)
		return rm_err_set(err, RM_E_IO, "cannot open '%s': %s", path, strerror(errno));
	char *b = rm_xmalloc(cap + 1);
	for (;;) {
		size_t got = fread(b + n, 1, cap - n, fp);
		n += got;
		if (n < cap)
			break;
		cap *= 2;
		b = rm_xrealloc(b, cap + 1);
	}
	int bad = ferror(fp);
	fclose(fp);
	if (bad) {
		free(b);
		return rm_err_set(err, RM_E_IO, "cannot read '%s'", path);
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return RM_OK;
}

int rm_read_json_doc(const struct rm_import_opts *opts, const char *path, json_t **doc, struct rm_err *err)
{
	char *text = NULL;
	size_t len = 0, clen;
	json_error_t jerr;
	int rc = read_all(path, &text, &len, err);
	if (rc)
		return rc;
	size_t skip = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
	char *clean = rm_json_quote_nonfinite(text + skip, len - skip, &clen);
	*doc = json_loadb(clean, clen, 0, &jerr);
	if (!*doc)
		rc = rm_err_set(err, RM_E_INPUT, "%s:%d: %s", rm_shown_path(opts, path), jerr.line, jerr.text);
	free(clean);
	free(text);
	return rc;
}

/* Turns one log_history entry into a row of fields. Strings stay owned by
 * the jansson value. */
static void entry_row(json_t *entry, struct rm_row *row)
{
	const char *key;
	json_t *v;
	rm_row_clear(row);
	json_object_foreach (entry, key, v) {
		struct rm_field *f = rm_row_add(row, key, strlen(key), 0);
		if (json_is_number(v)) {
			f->type = RM_F_NUM;
			f->have_num = 1;
			f->num = json_number_value(v);
		} else if (json_is_string(v)) {
			f->type = RM_F_STR; /* "NaN" after rm_json_quote_nonfinite */
			f->raw = json_string_value(v);
			f->rlen = (uint32_t)json_string_length(v);
		} else if (json_is_null(v)) {
			f->type = RM_F_NULL;
		} else {
			f->type = RM_F_OTHER;
		}
	}
}

/* A JSON document whose first line is not a whole object (Python's
 * json.dump with indent), or one line holding log_history. */
int rm_sniff_hf_state(const struct sniff *s)
{
	struct rm_row row;
	struct rm_err err;
	if (!rm_sniff_json_object(s))
		return 0;
	rm_row_init(&row);
	int yes = rm_jsonrow_parse(&row, s->line, s->len, &err) || rm_row_get(&row, "log_history");
	rm_row_release(&row);
	return yes;
}

int rm_read_hf_state(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                     struct rm_import_report *rep, struct rm_err *err)
{
	json_t *doc = NULL;
	struct rm_row row;
	struct rm_sink k;
	int rc;
	memset(&k, 0, sizeof(k));
	rm_row_init(&row);
	if ((rc = rm_read_json_doc(opts, path, &doc, err)))
		goto out;
	json_t *hist = json_object_get(doc, "log_history");
	if (!json_is_array(hist)) {
		rc = rm_err_set(err, RM_E_INPUT, "%s: no \"log_history\" array (not a trainer_state.json?)", path);
		goto out;
	}
	char *name = rm_run_name_for(opts, path);
	struct rm_import_result *res = rm_import_result_add(rep, rm_shown_path(opts, path), name, fmt);
	free(name);
	if ((rc = rm_sink_open(&k, st, opts, res, err)))
		goto out;
	size_t i;
	json_t *entry;
	struct rm_pipeline *p = rm_pipeline_start(NULL, NULL);
	json_array_foreach (hist, i, entry) {
		res->lines++;
		if (!json_is_object(entry)) {
			char why[64];
			snprintf(why, sizeof(why), "log_history[%zu] is not an object", i);
			rc = rm_bad_line(res, opts, i + 1, why, err);
		} else {
			entry_row(entry, &row);
			rc = rm_pipeline_feed(p, &k, &row, i + 1, err);
		}
		if (rc)
			break;
	}
	int wrc = rm_pipeline_finish(p, rc ? NULL : err);
	if (rc || (rc = wrc))
		goto out;
	rc = rm_sink_finish(&k, err);
out:
	rm_sink_release(&k);
	rm_row_release(&row);
	json_decref(doc);
	return rc;
}
