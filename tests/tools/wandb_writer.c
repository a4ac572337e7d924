/*
 * wandb_writer.c - see wandb_writer.h. The chunking follows LevelDB's log
 * writer: a chunk never crosses a 32 KiB block boundary, and fewer than 7
 * bytes left in a block are zero padding.
 */
#include "wandb_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/parse.h"

static void grow(uint8_t **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	*cap = need * 2 + 64;
	*p = realloc(*p, *cap);
	if (!*p)
		abort();
}

static void pb_raw(struct pbuf *b, const void *data, size_t n)
{
	grow(&b->p, &b->cap, b->n + n);
	if (n)
		memcpy(b->p + b->n, data, n);
	b->n += n;
}

void pb_varint(struct pbuf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_raw(b, tmp, n);
}

void pb_int(struct pbuf *b, uint32_t field, int64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, (uint64_t)v);
}

void pb_bytes(struct pbuf *b, uint32_t field, const void *data, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, data, n);
}

void pb_str(struct pbuf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_msg(struct pbuf *b, uint32_t field, const struct pbuf *sub)
{
	pb_bytes(b, field, sub->p, sub->n);
}

void pb_free(struct pbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void ww_raw(struct ww *w, const void *data, size_t n)
{
	grow(&w->buf, &w->cap, w->len + n);
	memcpy(w->buf + w->len, data, n);
	w->len += n;
}

void ww_init(struct ww *w, uint64_t file_size)
{
	memset(w, 0, sizeof(*w));
	w->base = file_size;
	if (!file_size)
		ww_raw(w, rm_wlog_magic, RM_WLOG_HEADER);
}

void ww_record(struct ww *w, const uint8_t *payload, size_t n)
{
	int begin = 1;
	do {
		uint64_t off = w->base + w->len, left = RM_WLOG_BLOCK - off % RM_WLOG_BLOCK;
		if (left < RM_WLOG_HEADER) {
			static const uint8_t zeros[RM_WLOG_HEADER];
			ww_raw(w, zeros, (size_t)left);
			left = RM_WLOG_BLOCK;
		}
		size_t frag = n < left - RM_WLOG_HEADER ? n : (size_t)(left - RM_WLOG_HEADER);
		int end = frag == n;
		uint8_t type = begin && end ? RM_WLOG_FULL
		               : begin      ? RM_WLOG_FIRST
		               : end        ? RM_WLOG_LAST
		                            : RM_WLOG_MIDDLE;
		uint32_t crc = rm_crc32(rm_crc32(0, &type, 1), payload, frag);
		uint8_t h[RM_WLOG_HEADER] = {(uint8_t)crc,
		                             (uint8_t)(crc >> 8),
		                             (uint8_t)(crc >> 16),
		                             (uint8_t)(crc >> 24),
		                             (uint8_t)frag,
		                             (uint8_t)(frag >> 8),
		                             type};
		ww_raw(w, h, sizeof(h));
		if (frag)
			ww_raw(w, payload, frag);
		payload += frag;
		n -= frag;
		begin = 0;
	} while (n > 0);
}

int ww_save(const struct ww *w, const char *path)
{
	FILE *fp = fopen(path, w->base ? "ab" : "wb");
	if (!fp)
		return -1;
	int rc = fwrite(w->buf, 1, w->len, fp) == w->len ? 0 : -1;
	return fclose(fp) || rc ? -1 : 0;
}

void ww_free(struct ww *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

/* HistoryItem / ConfigItem: key 1, nested_key 2, value_json 16. */
static void item(struct pbuf *out, uint32_t field, const struct ww_item *it)
{
	struct pbuf b = {0};
	if (it->key)
		pb_str(&b, 1, it->key);
	for (int i = 0; i < 4 && it->nested[i]; i++)
		pb_str(&b, 2, it->nested[i]);
	if (it->value_json)
		pb_str(&b, 16, it->value_json);
	pb_msg(out, field, &b);
	pb_free(&b);
}

static void wrap(struct pbuf *rec, uint32_t field, struct pbuf *body)
{
	pb_int(rec, 1, 0); /* Record.num: not read, but the SDK sets it */
	pb_msg(rec, field, body);
	pb_str(rec, 19, "uuid-not-read");
	pb_free(body);
}

void ww_history(struct pbuf *rec, int64_t step, const struct ww_item *items, size_t n)
{
	struct pbuf h = {0}, s = {0};
	for (size_t i = 0; i < n; i++)
		item(&h, 1, &items[i]);
	if (step >= 0) {
		pb_int(&s, 1, step);
		pb_msg(&h, 2, &s);
		pb_free(&s);
	}
	wrap(rec, RM_REC_HISTORY, &h);
}

void ww_run(struct pbuf *rec, const char *run_id, const char *entity, const char *project, const char *display_name,
            const struct ww_item *config, size_t nconfig)
{
	struct pbuf r = {0}, c = {0};
	pb_str(&r, 1, run_id);
	pb_str(&r, 2, entity);
	pb_str(&r, 3, project);
	for (size_t i = 0; i < nconfig; i++)
		item(&c, 1, &config[i]);
	if (nconfig)
		pb_msg(&r, 4, &c);
	pb_free(&c);
	pb_str(&r, 8, display_name);
	pb_int(&r, 14, 0); /* starting_step: an int field runmon skips */
	wrap(rec, RM_REC_RUN, &r);
}

void ww_config(struct pbuf *rec, const struct ww_item *items, size_t n)
{
	struct pbuf c = {0};
	for (size_t i = 0; i < n; i++)
		item(&c, 1, &items[i]);
	wrap(rec, RM_REC_CONFIG, &c);
}

void ww_exit(struct pbuf *rec, int32_t code)
{
	struct pbuf e = {0};
	pb_int(&e, 1, (int64_t)code);
	pb_int(&e, 2, 3600);
	wrap(rec, RM_REC_EXIT, &e);
}

void ww_output(struct pbuf *rec, const char *line)
{
	struct pbuf o = {0};
	pb_int(&o, 1, 1);
	pb_str(&o, 3, line);
	wrap(rec, 13, &o); /* output_raw */
}
