/*
 * wandblog.c - imports W&B's run-<id>.wandb transaction log.
 *
 * History records become rows for the mapper, as a line of
 * wandb-history.jsonl would; the run record names the run (ENTITY/PROJECT/ID
 * when it carries them, so a later `runmon sync` of the run lands in the
 * same place); config records are merged into the run's config; an exit
 * record marks the run finished (exit code 0) or failed. Field numbers are
 * those of wandb_internal.proto (wandb-api.md §6).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import/import_internal.h"
#include "runmon/parse.h"

/* HistoryItem, SummaryItem and ConfigItem share their layout. */
enum { ITEM_KEY = 1, ITEM_NESTED_KEY = 2, ITEM_VALUE_JSON = 16 };

struct item {
	size_t koff, klen; /* the dotted key in keys */
	const uint8_t *value;
	size_t vlen;
};

struct wandb_import {
	struct rm_store *st;
	const struct rm_import_opts *opts;
	struct rm_import_result *res;
	int64_t known_run; /* the run a live file was attached to before */
	struct rm_sink k;
	int sink_ready;
	struct rm_pipeline *p;
	struct rm_row row;
	char *keys, *json; /* scratch: dotted keys, the row's JSON text */
	size_t nkeys, ckeys, njson, cjson;
	struct item *items;
	size_t nitems, citems;
	char *entity, *project, *run_id, *display_name;
	json_t *config; /* updates seen in this read */
	const char *state;
};

static void put(char **buf, size_t *n, size_t *cap, const void *p, size_t len)
{
	if (*n + len + 1 > *cap) {
		*cap = (*n + len + 1) * 2;
		*buf = rm_xrealloc(*buf, *cap);
	}
	memcpy(*buf + *n, p, len);
	*n += len;
	(*buf)[*n] = '\0';
}

static void put_json_string(struct wandb_import *wi, const char *s, size_t n)
{
	put(&wi->json, &wi->njson, &wi->cjson, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(&wi->json, &wi->njson, &wi->cjson, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(&wi->json, &wi->njson, &wi->cjson, esc, 6);
		} else {
			put(&wi->json, &wi->njson, &wi->cjson, &s[i], 1);
		}
	}
	put(&wi->json, &wi->njson, &wi->cjson, "\"", 1);
}

/* Decodes one item into wi->items: the key is nested_key joined with '.'
 * when present (wandb-core writes one item per leaf), else key (older
 * SDKs, whose value may be an object). Returns -1 when malformed. */
static int read_item(struct wandb_import *wi, const uint8_t *p, size_t n)
{
	struct rm_pb pb = {p, p + n};
	struct rm_pb_field f;
	struct item it = {wi->nkeys, 0, NULL, 0};
	const uint8_t *key = NULL;
	size_t key_len = 0;
	int rc, nested = 0;
	while ((rc = rm_pb_next(&pb, &f)) == 1) {
		if (f.wire != RM_PB_LEN)
			continue;
		if (f.num == ITEM_NESTED_KEY) {
			if (nested++)
				put(&wi->keys, &wi->nkeys, &wi->ckeys, ".", 1);
			put(&wi->keys, &wi->nkeys, &wi->ckeys, f.data, f.len);
		} else if (f.num == ITEM_KEY) {
			key = f.data;
			key_len = f.len;
		} else if (f.num == ITEM_VALUE_JSON) {
			it.value = f.data;
			it.vlen = f.len;
		}
	}
	if (rc < 0)
		return -1;
	if (!nested && key)
		put(&wi->keys, &wi->nkeys, &wi->ckeys, key, key_len);
	it.klen = wi->nkeys - it.koff;
	if (!it.klen)
		return 0; /* an item without a name names nothing */
	if (wi->nitems == wi->citems) {
		wi->citems = wi->citems ? wi->citems * 2 : 32;
		wi->items = rm_xrealloc(wi->items, wi->citems * sizeof(*wi->items));
	}
	wi->items[wi->nitems++] = it;
	return 0;
}

/* Reads the items (field 1) of a HistoryRecord, SummaryRecord or
 * ConfigRecord, and HistoryStep.num (field 2) into *step. */
static int read_items(struct wandb_import *wi, const uint8_t *p, size_t n, int64_t *step)
{
	struct rm_pb pb = {p, p + n}, sb;
	struct rm_pb_field f, g;
	int rc;
	wi->nitems = wi->nkeys = 0;
	while ((rc = rm_pb_next(&pb, &f)) == 1) {
		if (f.num == 1 && f.wire == RM_PB_LEN && read_item(wi, f.data, f.len))
			return -1;
		if (f.num == 2 && f.wire == RM_PB_LEN && step) {
			sb = (struct rm_pb){f.data, f.data + f.len};
			while ((rc = rm_pb_next(&sb, &g)) == 1)
				if (g.num == 1 && g.wire == RM_PB_VARINT)
					*step = (int64_t)g.varint;
			if (rc < 0)
				return -1;
		}
	}
	return rc;
}

static const char *key_of(const struct wandb_import *wi, const struct item *it)
{
	return wi->keys + it->koff;
}

/* A media value (an image, a table) is logged as leaves under a prefix
 * that holds a "_type" leaf: those are not metrics. */
static int is_type_leaf(const struct wandb_import *wi, const struct item *m)
{
	return m->klen >= 6 && !memcmp(key_of(wi, m) + m->klen - 6, "._type", 6);
}

static int is_media(const struct wandb_import *wi, const struct item *it)
{
	for (size_t i = 0; i < wi->nitems; i++) {
		const struct item *m = &wi->items[i];
		size_t plen = m->klen - 5; /* the prefix and its dot */
		if (is_type_leaf(wi, m) && it->klen >= plen && !memcmp(key_of(wi, it), key_of(wi, m), plen))
			return 1;
	}
	return 0;
}

static int open_sink(struct wandb_import *wi, struct rm_err *err)
{
	struct rm_run_info info;
	int rc;
	wi->sink_ready = 1;
	if (wi->known_run && !wi->opts->run_name) {
		if ((rc = rm_store_get_run(wi->st, wi->known_run, &info, err)))
			return rc;
		struct rm_run_key key = {info.source, info.entity, info.project, info.name};
		rc = rm_sink_open_key(&wi->k, wi->st, wi->opts, wi->res, &key, err);
		rm_run_info_release(&info);
	} else if (!wi->opts->run_name && wi->run_id && *wi->run_id && wi->project && *wi->project && wi->entity &&
	           *wi->entity) {
		struct rm_run_key key = {"wandb", wi->entity, wi->project, wi->run_id};
		free(wi->res->run_name);
		wi->res->run_name = rm_xasprintf("%s/%s/%s", wi->entity, wi->project, wi->run_id);
		rc = rm_sink_open_key(&wi->k, wi->st, wi->opts, wi->res, &key, err);
	} else {
		if (!wi->opts->run_name && wi->run_id && *wi->run_id) {
			free(wi->res->run_name);
			wi->res->run_name = rm_xstrdup(wi->run_id);
		}
		rc = rm_sink_open(&wi->k, wi->st, wi->opts, wi->res, err);
	}
	if (!rc)
		wi->p = rm_pipeline_start(NULL, NULL);
	return rc;
}

static int on_history(struct wandb_import *wi, const uint8_t *p, size_t n, uint64_t recno, struct rm_err *err)
{
	int64_t step = -1;
	int has_step = 0, rc;
	struct rm_err perr;
	if (read_items(wi, p, n, &step) < 0)
		return rm_bad_line(wi->res, wi->opts, recno, "malformed history record", err);
	int media = 0; /* rare: only then is each item checked against the media prefixes */
	for (size_t i = 0; i < wi->nitems && !media; i++)
		media = is_type_leaf(wi, &wi->items[i]);
	wi->njson = 0;
	put(&wi->json, &wi->njson, &wi->cjson, "{", 1);
	for (size_t i = 0; i < wi->nitems; i++) {
		const struct item *it = &wi->items[i];
		if (media && is_media(wi, it))
			continue;
		if (wi->njson > 1)
			put(&wi->json, &wi->njson, &wi->cjson, ",", 1);
		put_json_string(wi, key_of(wi, it), it->klen);
		put(&wi->json, &wi->njson, &wi->cjson, ":", 1);
		if (it->vlen)
			put(&wi->json, &wi->njson, &wi->cjson, it->value, it->vlen);
		else
			put(&wi->json, &wi->njson, &wi->cjson, "null", 4);
		has_step |= it->klen == 5 && !memcmp(key_of(wi, it), "_step", 5);
	}
	if (!has_step && step >= 0) { /* HistoryRecord.step is the row's step */
		char num[40];
		snprintf(num, sizeof(num), "%s\"_step\":%lld", wi->njson > 1 ? "," : "", (long long)step);
		put(&wi->json, &wi->njson, &wi->cjson, num, strlen(num));
	}
	put(&wi->json, &wi->njson, &wi->cjson, "}", 1);
	if (!wi->sink_ready && (rc = open_sink(wi, err)))
		return rc;
	if (rm_jsonrow_parse(&wi->row, wi->json, wi->njson, &perr))
		return rm_bad_line(wi->res, wi->opts, recno, perr.msg, err);
	return rm_pipeline_feed(wi->p, &wi->k, &wi->row, recno, err);
}

/* Sets dotted key to the value JSON text (bare NaN allowed) in obj. */
static void config_set(json_t *obj, const char *key, size_t klen, const uint8_t *value, size_t vlen)
{
	size_t clen;
	char *clean = rm_json_quote_nonfinite((const char *)value, vlen, &clen);
	json_t *v = json_loadb(clean, clen, JSON_DECODE_ANY, NULL);
	free(clean);
	if (!v)
		return; /* a value runmon cannot read: leave the key out */
	char *path = rm_xstrndup(key, klen), *dot;
	json_t *at = obj;
	for (char *part = path; (dot = strchr(part, '.')); part = dot + 1) {
		*dot = '\0';
		json_t *next = json_object_get(at, part);
		if (!json_is_object(next)) {
			next = json_object();
			json_object_set_new(at, part, next);
		}
		at = next;
	}
	json_object_set_new(at, strrchr(path, '.') ? strrchr(path, '.') + 1 : path, v);
	free(path);
}

static int on_config(struct wandb_import *wi, const uint8_t *p, size_t n)
{
	if (read_items(wi, p, n, NULL) < 0)
		return -1;
	if (!wi->config)
		wi->config = json_object();
	for (size_t i = 0; i < wi->nitems; i++)
		if (wi->items[i].vlen)
			config_set(wi->config, key_of(wi, &wi->items[i]), wi->items[i].klen, wi->items[i].value,
			           wi->items[i].vlen);
	return 0;
}

static void set_str(char **dst, const struct rm_pb_field *f)
{
	free(*dst);
	*dst = rm_xstrndup((const char *)f->data, f->len);
}

/* RunRecord: run_id 1, entity 2, project 3, config 4, display_name 8. */
static int on_run(struct wandb_import *wi, const uint8_t *p, size_t n)
{
	struct rm_pb pb = {p, p + n};
	struct rm_pb_field f;
	int rc;
	while ((rc = rm_pb_next(&pb, &f)) == 1) {
		if (f.wire != RM_PB_LEN)
			continue;
		switch (f.num) {
		case 1: set_str(&wi->run_id, &f); break;
		case 2: set_str(&wi->entity, &f); break;
		case 3: set_str(&wi->project, &f); break;
		case 4:
			if (on_config(wi, f.data, f.len))
				return -1;
			break;
		case 8: set_str(&wi->display_name, &f); break;
		}
	}
	return rc;
}

/* RunExitRecord: exit_code 1 (int32). */
static int on_exit_record(struct wandb_import *wi, const uint8_t *p, size_t n)
{
	struct rm_pb pb = {p, p + n};
	struct rm_pb_field f;
	int rc;
	int32_t code = 0;
	while ((rc = rm_pb_next(&pb, &f)) == 1)
		if (f.num == 1 && f.wire == RM_PB_VARINT)
			code = (int32_t)(uint32_t)f.varint;
	wi->state = code == 0 ? "finished" : "failed";
	return rc;
}

static int on_record(struct wandb_import *wi, const uint8_t *p, size_t n, uint64_t recno, struct rm_err *err)
{
	struct rm_pb pb = {p, p + n};
	struct rm_pb_field f;
	int rc, bad = 0;
	while ((rc = rm_pb_next(&pb, &f)) == 1 && !bad) {
		if (f.wire != RM_PB_LEN)
			continue;
		switch (f.num) { /* the oneof record_type */
		case RM_REC_HISTORY: return on_history(wi, f.data, f.len, recno, err);
		case RM_REC_RUN: bad = on_run(wi, f.data, f.len) < 0; break;
		case RM_REC_CONFIG: bad = on_config(wi, f.data, f.len) < 0; break;
		case RM_REC_EXIT: bad = on_exit_record(wi, f.data, f.len) < 0; break;
		}
	}
	if (rc < 0 || bad)
		return rm_bad_line(wi->res, wi->opts, recno, "malformed record", err);
	return RM_OK;
}

static int finish(struct wandb_import *wi, int live, uint64_t records, struct rm_err *err)
{
	int rc = RM_OK;
	/* A live file that has not named its run yet waits: its position is
	 * not kept, so the next read starts over. */
	if (!wi->sink_ready && (!records || (live && !wi->run_id && !wi->known_run)))
		return RM_OK;
	if (!wi->sink_ready)
		rc = open_sink(wi, err);
	if (wi->p) {
		int wrc = rm_pipeline_finish(wi->p, rc ? NULL : err);
		wi->p = NULL;
		if (!rc)
			rc = wrc;
	}
	if (!rc)
		rc = rm_sink_finish(&wi->k, err);
	if (!rc && (wi->display_name || wi->state))
		rc = rm_store_set_run_state(wi->st, wi->k.run_id, wi->display_name, wi->state, err);
	if (!rc && wi->config && json_object_size(wi->config)) {
		char *text = json_dumps(wi->config, JSON_COMPACT);
		rc = rm_store_merge_config(wi->st, wi->k.run_id, text, err);
		free(text);
	}
	return rc;
}

static void release(struct wandb_import *wi)
{
	if (wi->p)
		rm_pipeline_finish(wi->p, NULL);
	if (wi->sink_ready)
		rm_sink_release(&wi->k);
	rm_row_release(&wi->row);
	free(wi->keys);
	free(wi->json);
	free(wi->items);
	free(wi->entity);
	free(wi->project);
	free(wi->run_id);
	free(wi->display_name);
	json_decref(wi->config);
}

/* Reads path from pos->offset (0: the start) to its last complete record;
 * pos->offset, lineno (records) and partial say where it stopped. */
static int read_log(struct rm_store *st, const struct rm_import_opts *opts, const char *path, int live,
                    struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	struct wandb_import wi;
	struct rm_wlog w;
	const uint8_t *rec;
	size_t len;
	char *name = rm_run_name_for(opts, path);
	memset(&wi, 0, sizeof(wi));
	wi.st = st;
	wi.opts = opts;
	wi.res = rm_import_result_add(rep, rm_shown_path(opts, path), name, RM_FMT_WANDB_LOG);
	wi.known_run = pos->run_id;
	free(name);
	rm_row_init(&wi.row);
	int rc = rm_wlog_open(&w, path, pos->offset, live, err);
	if (rc)
		goto out;
	struct stat sb;
	if (!fstat(w.fd, &sb)) {
		pos->dev = (uint64_t)sb.st_dev;
		pos->ino = (uint64_t)sb.st_ino;
	}
	uint64_t recno = pos->lineno, before = w.resume;
	while ((rc = rm_wlog_next(&w, &rec, &len, err)) == 1) {
		if (opts->tail_stop && recno + 1 >= opts->tail_stop) { /* a followed file up to its bad record */
			w.resume = before;
			w.partial = 0;
			rc = 0;
			break;
		}
		if ((rc = on_record(&wi, rec, len, ++recno, err)))
			break;
		before = w.resume;
		if (!(recno & 1023))
			rm_progress_at((double)w.pos);
	}
	if (!rc)
		rc = finish(&wi, live, w.records, err);
	if (!rc) {
		struct rm_import_result *res = wi.res;
		if (!res->run_id) /* nothing new: still the run it fed before */
			res->run_id = wi.known_run;
		res->lines = w.records;
		res->corrupt = w.corrupt;
		res->corrupt_bytes = w.corrupt_bytes;
		res->first_corrupt = w.first_corrupt;
		res->tail_bytes = w.partial && w.size > w.resume ? w.size - w.resume : 0;
		pos->offset = w.resume;
		pos->lineno = recno;
		pos->partial = w.partial;
	}
	rm_wlog_close(&w);
out:
	release(&wi);
	return rc;
}

int rm_sniff_wandb_log(const struct sniff *s)
{
	return s->nhead >= RM_WLOG_HEADER && !memcmp(s->head, rm_wlog_magic, 6);
}

int rm_read_wandb_log(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                      struct rm_import_report *rep, struct rm_err *err)
{
	(void)fmt;
	struct rm_tail_pos pos;
	memset(&pos, 0, sizeof(pos));
	return read_log(st, opts, path, 0, &pos, rep, err);
}

int rm_tail_wandb_log(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                      struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	(void)fmt;
	return read_log(st, opts, path, 1, pos, rep, err);
}
