/*
 * wandb_writer.h - writes W&B .wandb transaction logs byte for byte as the
 * SDK does (LevelDB's log format behind the W&B header, wandb-api.md §6),
 * for fixtures, the tests and the benchmark. Test code: it aborts on
 * out-of-memory.
 */
#ifndef RUNMON_WANDB_WRITER_H
#define RUNMON_WANDB_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* A protobuf message being built. */
struct pbuf {
	uint8_t *p;
	size_t n, cap;
};

void pb_varint(struct pbuf *b, uint64_t v);
void pb_int(struct pbuf *b, uint32_t field, int64_t v);
void pb_bytes(struct pbuf *b, uint32_t field, const void *data, size_t n);
void pb_str(struct pbuf *b, uint32_t field, const char *s);
void pb_msg(struct pbuf *b, uint32_t field, const struct pbuf *sub);
void pb_free(struct pbuf *b);

/* A log being written: bytes for the file from offset base on. */
struct ww {
	uint8_t *buf;
	size_t len, cap;
	uint64_t base; /* the file's size before these bytes */
};

/* Starts a log; a new file (size 0) gets the 7-byte header first. */
void ww_init(struct ww *w, uint64_t file_size);
/* Appends one record as FULL, or FIRST, MIDDLE..., LAST chunks. */
void ww_record(struct ww *w, const uint8_t *payload, size_t n);
/* Appends (or, at base 0, writes) the bytes to path; 0 on success. */
int ww_save(const struct ww *w, const char *path);
void ww_free(struct ww *w);

/* One history item: nested_key parts (NULL-terminated), or key alone. */
struct ww_item {
	const char *nested[4];
	const char *key;
	const char *value_json;
};

/* Record payloads (wandb_internal.Record with one field of record_type). */
void ww_history(struct pbuf *rec, int64_t step, const struct ww_item *items, size_t n);
void ww_run(struct pbuf *rec, const char *run_id, const char *entity, const char *project, const char *display_name,
            const struct ww_item *config, size_t nconfig);
void ww_config(struct pbuf *rec, const struct ww_item *items, size_t n);
void ww_exit(struct pbuf *rec, int32_t code);
/* A record runmon does not read (an output line): must be skipped. */
void ww_output(struct pbuf *rec, const char *line);

#endif
