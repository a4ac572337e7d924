/*
 * tfrecord.c - see runmon/parse.h. The framing is TensorFlow's
 * (tensorflow/core/lib/io/record_writer.cc, and the TFRecord section of
 * tensorflow.org/tutorials/load_data/tfrecord): each record is
 *
 *   uint64 length, uint32 masked_crc32c(length), byte data[length],
 *   uint32 masked_crc32c(data)
 *
 * little-endian, where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8
 * and crc32c is CRC-32C (Castagnoli, RFC 3720 section B.4).
 */
#include "runmon/parse.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- CRC-32C, bytewise (polynomial 0x82F63B78, reflected) --------------- */

static uint32_t crc32c_table[256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
		crc32c_table[i] = c;
	}
}

uint32_t rm_crc32c(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	pthread_once(&crc32c_once, crc32c_init);
	crc = ~crc;
	while (n--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint32_t rm_tfrec_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int rm_tfrec_sniff(const uint8_t *head, size_t n)
{
	return n >= RM_TFREC_HEADER && rm_tfrec_mask(rm_crc32c(0, head, 8)) == le32(head + 8);
}

/* ---- the reader ----------------------------------------------------------- */

#define WINDOW (1u << 16)

int rm_tfrec_open(struct rm_tfrec *r, const char *path, uint64_t offset, struct rm_err *err)
{
	struct stat sb;
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0 || fstat(r->fd, &sb)) {
		int rc = rm_err_set(err, RM_E_IO, "cannot open '%s': %s", path, strerror(errno));
		rm_tfrec_close(r);
		return rc;
	}
	r->size = (uint64_t)sb.st_size;
	r->pos = offset;
	return RM_OK;
}

int rm_tfrec_open_mem(struct rm_tfrec *r, const void *data, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->path = "<memory>";
	r->fd = -1;
	r->mem = data;
	r->size = n;
	return RM_OK;
}

void rm_tfrec_close(struct rm_tfrec *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	r->fd = -1;
	r->buf = NULL;
}

/* Points *out at n bytes from off (off + n <= size), read into the window. */
static int fetch(struct rm_tfrec *r, uint64_t off, size_t n, const uint8_t **out, struct rm_err *err)
{
	if (r->fd < 0) {
		*out = r->mem + off;
		return RM_OK;
	}
	if (off >= r->buf_off && off + n <= r->buf_off + r->buf_len) {
		*out = r->buf + (off - r->buf_off);
		return RM_OK;
	}
	size_t want = n > WINDOW ? n : WINDOW;
	if (want > r->size - off)
		want = (size_t)(r->size - off);
	if (want > r->cap) {
		r->cap = want;
		free(r->buf);
		r->buf = rm_xmalloc(r->cap);
	}
	r->buf_len = 0;
	for (size_t done = 0; done < want;) {
		ssize_t got = pread(r->fd, r->buf + done, want - done, (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return rm_err_set(err, RM_E_IO, "%s: read at byte %llu: %s", r->path,
			                  (unsigned long long)(off + done), got ? strerror(errno) : "file shrank");
		done += (size_t)got;
	}
	r->buf_off = off;
	r->buf_len = want;
	*out = r->buf;
	return RM_OK;
}

int rm_tfrec_next(struct rm_tfrec *r, const uint8_t **data, size_t *len, struct rm_err *err)
{
	const uint8_t *h, *d;
	r->bad_crc = 0;
	r->partial = 0;
	if (r->pos >= r->size)
		return 0;
	if (r->size - r->pos < RM_TFREC_HEADER)
		return r->partial = 1, 0;
	int rc = fetch(r, r->pos, RM_TFREC_HEADER, &h, err);
	if (rc)
		return rc;
	uint64_t n = le64(h);
	if (rm_tfrec_mask(rm_crc32c(0, h, 8)) != le32(h + 8))
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: record %llu (byte %llu): the length's checksum does not match; the file is"
		                  " damaged here and nothing after it can be framed",
		                  r->path, (unsigned long long)r->records + 1, (unsigned long long)r->pos);
	if (n > r->size - r->pos - RM_TFREC_HEADER || r->size - r->pos - RM_TFREC_HEADER - n < 4)
		return r->partial = 1, 0; /* cut off, or still being written */
	if ((rc = fetch(r, r->pos + RM_TFREC_HEADER, (size_t)n + 4, &d, err)))
		return rc;
	r->bad_crc = rm_tfrec_mask(rm_crc32c(0, d, (size_t)n)) != le32(d + n);
	r->pos += RM_TFREC_HEADER + n + 4;
	r->records++;
	*data = d;
	*len = (size_t)n;
	return 1;
}
