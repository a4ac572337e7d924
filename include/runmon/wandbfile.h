/*
 * wandbfile.h - W&B's run-<id>.wandb transaction log, read straight from
 * disk, also while the SDK is still writing it.
 *
 * The container is LevelDB's log format behind a 7-byte W&B header
 * (wandb-api.md §6): 32 KiB blocks whose boundaries sit at file offsets
 * that are multiples of 32768 (the header counts against the first one),
 * chunks FULL/FIRST/MIDDLE/LAST that never cross a boundary, zero padding
 * when fewer than 7 bytes remain in a block, and plain CRC-32 (IEEE) over
 * the type byte and the payload. Each record is a serialised protobuf
 * wandb_internal.Record; rm_pb reads just enough of the wire format.
 */
#ifndef RUNMON_WANDBFILE_H
#define RUNMON_WANDBFILE_H

#include <stddef.h>
#include <stdint.h>

#include "runmon/common.h"

#define RM_WLOG_BLOCK  32768
#define RM_WLOG_HEADER 7 /* both the file header and a chunk header */

enum rm_wlog_chunk { RM_WLOG_FULL = 1, RM_WLOG_FIRST = 2, RM_WLOG_MIDDLE = 3, RM_WLOG_LAST = 4 };

/* The file header: ":W&B", magic 0xBEE1 little-endian, version 0. */
extern const uint8_t rm_wlog_magic[RM_WLOG_HEADER];

/* CRC-32 (IEEE 802.3, zlib's crc32) of data, continuing from crc (0 to start). */
uint32_t rm_crc32(uint32_t crc, const void *data, size_t n);

struct rm_wlog {
	const char *path; /* for messages; borrowed */
	int fd;           /* -1 when reading memory */
	const uint8_t *mem;
	uint64_t size;      /* bytes available when opened */
	uint64_t pos;       /* next chunk header */
	uint64_t resume;    /* just past the last complete record or skipped damage */
	uint8_t *block;     /* the block holding pos */
	uint64_t block_off; /* its file offset; UINT64_MAX when none is loaded */
	size_t block_len;   /* bytes of it in the file */
	uint8_t *rec;       /* a record being assembled from FIRST..LAST */
	size_t rec_len, rec_cap;
	int in_record;
	int after_damage; /* pieces of a record cut by damage may follow */
	int live;         /* the writer may still be appending */
	int partial;      /* the end came inside a record: truncated or mid-write */
	uint64_t records; /* complete records returned */
	uint64_t corrupt; /* damaged chunks or orphaned pieces skipped */
	uint64_t corrupt_bytes;
	uint64_t first_corrupt; /* offset of the first damage, for messages */
};

/* Opens path and reads from offset (0, or a resume offset of an earlier
 * reader). The header is checked when the file holds 7 bytes; a live file
 * shorter than that reads as empty. live: a partial chunk or a checksum
 * mismatch in the file's last block is taken as not yet written, not as
 * damage. */
int rm_wlog_open(struct rm_wlog *w, const char *path, uint64_t offset, int live, struct rm_err *err);
/* The same over a buffer (tests, fuzzing); not live. */
int rm_wlog_open_mem(struct rm_wlog *w, const void *data, size_t n, struct rm_err *err);
/* Next record: 1 with *data and *len (valid until the next call), 0 at the end
 * of what is complete, or an error code. After 0, w->resume is where a
 * later reader goes on, and w->partial says whether the end came inside a
 * record (a truncated file, or one the writer is still appending to). */
int rm_wlog_next(struct rm_wlog *w, const uint8_t **data, size_t *len, struct rm_err *err);
void rm_wlog_close(struct rm_wlog *w);

/* ---- protobuf wire format ---------------------------------------------- */

enum rm_pb_wire { RM_PB_VARINT = 0, RM_PB_I64 = 1, RM_PB_LEN = 2, RM_PB_I32 = 5 };

struct rm_pb {
	const uint8_t *p, *end;
};

struct rm_pb_field {
	uint32_t num;
	int wire;
	uint64_t varint;     /* RM_PB_VARINT (and fixed ints) */
	const uint8_t *data; /* RM_PB_LEN */
	size_t len;
};

/* Next field of a message: 1 with *f, 0 at the end, -1 when malformed.
 * Unknown fields are the caller's to ignore. */
int rm_pb_next(struct rm_pb *pb, struct rm_pb_field *f);

/* wandb_internal.Record field numbers (wandb_internal.proto) runmon reads. */
enum {
	RM_REC_HISTORY = 2,
	RM_REC_SUMMARY = 3,
	RM_REC_CONFIG = 5,
	RM_REC_RUN = 17,
	RM_REC_EXIT = 18,
};

#endif
