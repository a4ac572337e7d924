/*
 * wandbfile.c - see runmon/parse.h. The container rules follow W&B's reader
 * and writer (wandb/sdk/internal/datastore.py, core/pkg/leveldb), as
 * summarised in wandb-api.md §6.
 */
#include "runmon/parse.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const uint8_t rm_wlog_magic[RM_WLOG_HEADER] = {':', 'W', '&', 'B', 0xE1, 0xBE, 0x00};

/* ---- CRC-32, slicing by 4 (polynomial 0xEDB88320, reflected) ------------ */

static uint32_t crc_table[4][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		crc_table[0][i] = c;
	}
	for (int t = 1; t < 4; t++)
		for (int i = 0; i < 256; i++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t rm_crc32(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	for (; n >= 4; n -= 4, p += 4) {
		crc ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		crc = crc_table[3][crc & 0xff] ^ crc_table[2][(crc >> 8) & 0xff] ^ crc_table[1][(crc >> 16) & 0xff] ^
		      crc_table[0][crc >> 24];
	}
	while (n--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- the log ----------------------------------------------------------- */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int read_at(struct rm_wlog *w, uint64_t off, uint8_t *buf, size_t n, struct rm_err *err)
{
	if (w->fd < 0) {
		memcpy(buf, w->mem + off, n);
		return RM_OK;
	}
	for (size_t done = 0; done < n;) {
		ssize_t got = pread(w->fd, buf + done, n - done, (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return rm_err_set(err, RM_E_IO, "%s: read at offset %llu: %s", w->path,
			                  (unsigned long long)(off + done), got ? strerror(errno) : "file shrank");
		done += (size_t)got;
	}
	return RM_OK;
}

static int check_header(struct rm_wlog *w, uint64_t offset, struct rm_err *err)
{
	uint8_t h[RM_WLOG_HEADER];
	if (w->size < RM_WLOG_HEADER) {
		if (w->live) { /* the SDK has not written it yet */
			w->size = 0;
			return RM_OK;
		}
		return rm_err_set(err, RM_E_INPUT, "%s: too short for a W&B .wandb file (%llu bytes)", w->path,
		                  (unsigned long long)w->size);
	}
	int rc = read_at(w, 0, h, sizeof(h), err);
	if (rc)
		return rc;
	if (memcmp(h, rm_wlog_magic, 6))
		return rm_err_set(err, RM_E_INPUT, "%s: not a W&B .wandb file (bad header)", w->path);
	if (h[6] != rm_wlog_magic[6])
		return rm_err_set(err, RM_E_INPUT, "%s: .wandb format version %u, runmon reads version 0", w->path,
		                  h[6]);
	w->pos = w->resume = offset < RM_WLOG_HEADER ? RM_WLOG_HEADER : offset;
	return RM_OK;
}

static void wlog_init(struct rm_wlog *w, const char *path, int live)
{
	memset(w, 0, sizeof(*w));
	w->path = path;
	w->fd = -1;
	w->live = live;
	w->block = rm_xmalloc(RM_WLOG_BLOCK);
	w->block_off = UINT64_MAX;
}

int rm_wlog_open(struct rm_wlog *w, const char *path, uint64_t offset, int live, struct rm_err *err)
{
	struct stat sb;
	wlog_init(w, path, live);
	w->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w->fd < 0 || fstat(w->fd, &sb)) {
		int rc = rm_err_set(err, RM_E_IO, "cannot open '%s': %s", path, strerror(errno));
		rm_wlog_close(w);
		return rc;
	}
	w->size = (uint64_t)sb.st_size;
	int rc = check_header(w, offset, err);
	if (rc)
		rm_wlog_close(w);
	return rc;
}

int rm_wlog_open_mem(struct rm_wlog *w, const void *data, size_t n, struct rm_err *err)
{
	wlog_init(w, "<memory>", 0);
	w->mem = data;
	w->size = n;
	int rc = check_header(w, 0, err);
	if (rc)
		rm_wlog_close(w);
	return rc;
}

void rm_wlog_close(struct rm_wlog *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->block);
	free(w->rec);
	w->fd = -1;
	w->block = w->rec = NULL;
}

static int load_block(struct rm_wlog *w, uint64_t off, struct rm_err *err)
{
	if (w->block_off == off)
		return RM_OK;
	uint64_t left = w->size - off;
	w->block_len = left < RM_WLOG_BLOCK ? (size_t)left : RM_WLOG_BLOCK;
	w->block_off = UINT64_MAX;
	int rc = read_at(w, off, w->block, w->block_len, err);
	if (!rc)
		w->block_off = off;
	return rc;
}

/* Skipped bytes that belonged to no complete record. The pieces of a
 * record cut by earlier damage are part of that damage, not new damage. */
static void damaged(struct rm_wlog *w, uint64_t at, uint64_t bytes)
{
	if (!w->corrupt)
		w->first_corrupt = at;
	w->corrupt += !w->after_damage;
	w->corrupt_bytes += bytes;
	w->after_damage = 1;
}

static void append(struct rm_wlog *w, const uint8_t *p, size_t n)
{
	if (w->rec_len + n > w->rec_cap) {
		w->rec_cap = (w->rec_len + n) * 2;
		w->rec = rm_xrealloc(w->rec, w->rec_cap);
	}
	memcpy(w->rec + w->rec_len, p, n);
	w->rec_len += n;
}

int rm_wlog_next(struct rm_wlog *w, const uint8_t **data, size_t *len, struct rm_err *err)
{
	while (w->pos < w->size) {
		uint64_t in_block = w->pos % RM_WLOG_BLOCK, start = w->pos - in_block;
		if (RM_WLOG_BLOCK - in_block < RM_WLOG_HEADER) { /* the block's zero padding */
			w->pos = start + RM_WLOG_BLOCK;
			continue;
		}
		int rc = load_block(w, start, err);
		if (rc)
			return rc;
		int last_block = w->block_len < RM_WLOG_BLOCK || start + RM_WLOG_BLOCK >= w->size;
		size_t avail = w->block_len - (size_t)in_block;
		if (avail < RM_WLOG_HEADER)
			return w->partial = 1, 0; /* a chunk header not written yet (or cut off) */
		const uint8_t *h = w->block + in_block;
		uint32_t crc = le32(h);
		size_t n = (size_t)h[4] | (size_t)h[5] << 8;
		int type = h[6];
		if (!crc && !n && !type) { /* zero-filled, preallocated space: no record */
			w->pos = start + RM_WLOG_BLOCK;
			continue;
		}
		if (RM_WLOG_HEADER + n > avail && w->block_len < RM_WLOG_BLOCK)
			return w->partial = 1, 0; /* the payload is not all there yet */
		int bad = RM_WLOG_HEADER + n > avail || type < RM_WLOG_FULL || type > RM_WLOG_LAST ||
		          rm_crc32(rm_crc32(0, h + 6, 1), h + RM_WLOG_HEADER, n) != crc;
		if (bad && w->live && last_block)
			return w->partial = 1, 0; /* maybe mid-write: look again next time */
		if (bad) {                        /* LevelDB's recovery: drop the rest of the block */
			w->after_damage = 0;
			damaged(w, w->pos, start + w->block_len - w->pos + w->rec_len);
			w->in_record = 0;
			w->rec_len = 0;
			w->pos = w->resume = start + RM_WLOG_BLOCK;
			continue;
		}
		const uint8_t *payload = h + RM_WLOG_HEADER;
		uint64_t end = w->pos + RM_WLOG_HEADER + n;
		if (type == RM_WLOG_FULL || type == RM_WLOG_FIRST) {
			if (w->in_record) { /* a record whose LAST never came */
				w->after_damage = 0;
				damaged(w, w->pos, w->rec_len);
			}
			w->after_damage = 0;
			w->in_record = 0;
			w->rec_len = 0;
		} else if (!w->in_record) { /* a piece of a record whose start was lost */
			damaged(w, w->pos, RM_WLOG_HEADER + n);
			w->pos = w->resume = end;
			continue;
		}
		w->pos = end;
		if (type == RM_WLOG_FULL) {
			w->resume = end;
			w->records++;
			*data = payload;
			*len = n;
			return 1;
		}
		append(w, payload, n);
		w->in_record = type != RM_WLOG_LAST;
		if (type == RM_WLOG_LAST) {
			w->resume = end;
			w->records++;
			*data = w->rec;
			*len = w->rec_len;
			return 1;
		}
	}
	w->partial = w->in_record;
	return 0;
}

/* ---- protobuf ----------------------------------------------------------- */

static int varint(struct rm_pb *pb, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (pb->p >= pb->end)
			return -1;
		uint8_t b = *pb->p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

int rm_pb_next(struct rm_pb *pb, struct rm_pb_field *f)
{
	uint64_t key, n;
	if (pb->p >= pb->end)
		return 0;
	if (varint(pb, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
		return -1;
	memset(f, 0, sizeof(*f));
	f->num = (uint32_t)(key >> 3);
	f->wire = (int)(key & 7);
	switch (f->wire) {
	case RM_PB_VARINT: return varint(pb, &f->varint) ? -1 : 1;
	case RM_PB_I64:
	case RM_PB_I32:
		n = f->wire == RM_PB_I64 ? 8 : 4;
		if ((uint64_t)(pb->end - pb->p) < n)
			return -1;
		for (uint64_t i = 0; i < n; i++)
			f->varint |= (uint64_t)pb->p[i] << (8 * i);
		pb->p += n;
		return 1;
	case RM_PB_LEN:
		if (varint(pb, &n) || n > (uint64_t)(pb->end - pb->p))
			return -1;
		f->data = pb->p;
		f->len = (size_t)n;
		pb->p += n;
		return 1;
	default: return -1; /* groups (3, 4) are not used by W&B's messages */
	}
}
