/*
 * parse.h - the parse layer: bytes into rows or arrays. Line reading, CSV,
 * flat rows and their JSON reader, Arrow IPC, W&B's .wandb transaction log,
 * and sequence lengths from files. Nothing here knows the store.
 */
#ifndef RUNMON_PARSE_H
#define RUNMON_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runmon/common.h"

/* ==== lines ================================================================= */
/*
 * buffered line reader for text inputs (JSONL, CSV).
 *
 * Reads in large chunks and hands out NUL-terminated lines in place, so the
 * memory used is one chunk plus the longest line, whatever the file size.
 * Strips a UTF-8 byte-order mark at the start and a CR before each LF.
 */
#define RM_LINES_MAX_DEFAULT (64u << 20) /* bytes: longest line accepted */

struct rm_lines {
	FILE *fp;
	const char *path; /* borrowed, for error messages */
	char *buf;
	size_t cap;      /* bytes allocated in buf */
	size_t len;      /* bytes of data in buf */
	size_t pos;      /* start of the next line in buf */
	size_t max_line; /* bytes; a longer line is an error */
	int eof;
	int complete_only;    /* hold back a last line without its newline */
	int partial;          /* set when such a line was held back */
	uint64_t lineno;      /* 1-based number of the line last returned */
	uint64_t offset;      /* file offset of the line last returned */
	uint64_t next_offset; /* file offset just past it */
	uint64_t buf_offset;  /* file offset of buf[0] */
	uint64_t stop_before; /* > 0: the file ends before this line (a followed file's bad line) */
	int skip_long;        /* a line over max_line is read past and returned empty, overlong set */
	int overlong;         /* the line last returned was one */
};

/* Opens path ("-" is stdin). Returns RM_OK or RM_E_IO. */
int rm_lines_open(struct rm_lines *lr, const char *path, struct rm_err *err);

/* Next line without its terminator; *line is NULL at end of file. The line
 * stays valid until the next call. Returns RM_OK, RM_E_IO or RM_E_INPUT
 * (line longer than max_line). */
int rm_lines_next(struct rm_lines *lr, char **line, size_t *len, struct rm_err *err);

/* Continues reading at a byte offset that starts a line; lineno is the
 * number of the line before it. For files that grow between reads. */
int rm_lines_seek(struct rm_lines *lr, uint64_t offset, uint64_t lineno, struct rm_err *err);

void rm_lines_close(struct rm_lines *lr);

/* ==== csv =================================================================== */
/*
 * split one CSV line into cells (RFC 4180 quoting, "" escapes).
 *
 * Cells are unquoted in place, so the line buffer is modified; cell
 * pointers stay valid as long as the line does. A quoted field may not span
 * lines: training logs do not produce them, and rejecting them keeps line
 * numbers in errors exact.
 */
struct rm_csv {
	char **cell;
	size_t *len;
	size_t n, cap;
	char sep; /* ',' or '\t' */
};

void rm_csv_init(struct rm_csv *c, char sep);
void rm_csv_release(struct rm_csv *c);

/* Splits line into c->cell[0..n). Returns RM_OK or RM_E_INPUT with
 * "column N: what" in err. */
int rm_csv_split(struct rm_csv *c, char *line, size_t len, struct rm_err *err);

/* Picks the separator from a header line: tab if it has tabs and no commas. */
char rm_csv_guess_sep(const char *header);

/* ==== row =================================================================== */
/*
 * one input row as a flat list of (key, value) fields.
 *
 * Every text format (JSON lines, CSV, Hugging Face log_history) is turned
 * into this shape so that one mapper decides which field is the loss, the
 * step or the bucket. Values stay as raw text until asked for: a row has a
 * dozen keys but a run needs a few, so most numbers are never converted.
 */
enum rm_ftype {
	RM_F_NUM,  /* JSON number or bare NaN/Infinity/-Infinity token */
	RM_F_STR,  /* JSON string (raw, still escaped) */
	RM_F_CELL, /* CSV cell: text that may hold a number */
	RM_F_BOOL,
	RM_F_NULL,   /* JSON null or empty CSV cell: missing */
	RM_F_NUMARR, /* JSON array of numbers, values in row->nums */
	RM_F_STRARR, /* JSON array of strings, spans in row->spans */
	RM_F_OTHER   /* anything else (arrays of objects, ...) */
};

struct rm_field {
	const char *key; /* flattened with ".", klen bytes (not NUL-terminated) */
	uint32_t klen;
	uint8_t type; /* enum rm_ftype */
	uint8_t have_num;
	uint8_t key_in_arena; /* key lives at arena + koff until rm_row_fix_keys */
	uint32_t koff;
	const char *raw; /* token text (not NUL-terminated) */
	uint32_t rlen;
	double num;                /* valid when have_num */
	uint32_t arr_off, arr_len; /* RM_F_NUMARR: slice of row->nums */
};

struct rm_span {
	const char *p;
	uint32_t len;
	uint8_t escaped; /* holds a backslash: rm_json_unescape before use */
};

struct rm_row {
	struct rm_field *f;
	size_t n, cap;
	char *arena; /* decoded and flattened keys */
	size_t alen, acap;
	double *nums; /* array values */
	size_t nn, ncap;
	struct rm_span *spans; /* string array elements (raw, still escaped) */
	size_t ns, scap;
};

void rm_row_init(struct rm_row *row);
void rm_row_release(struct rm_row *row);
void rm_row_clear(struct rm_row *row);

/* Appends a field; key is copied into the arena when copy_key is set. */
struct rm_field *rm_row_add(struct rm_row *row, const char *key, size_t klen, int copy_key);

/* Points copied keys at the arena; call once all fields are added. */
void rm_row_fix_keys(struct rm_row *row);

/* The field named key, or NULL. */
const struct rm_field *rm_row_get(const struct rm_row *row, const char *key);

/* Converts a field to a number. Returns 1 and sets *out for numbers,
 * non-finite tokens and the strings "NaN", "Infinity", "-Infinity" (as W&B
 * writes them in JSON-typed fields) and numbers written as strings ("5",
 * "11.52", as fairseq logs them); CSV cells also accept "nan", "inf".
 * Returns 0 for missing values (null, empty cell) and -1 for non-numbers. */
int rm_field_num(const struct rm_field *f, double *out);

/* Parses one number token of length n (JSON grammar plus the non-finite
 * tokens). Returns 1 on success, 0 if the text is not a number. Exact:
 * uses Clinger's fast path and falls back to strtod. */
int rm_parse_double(const char *s, size_t n, double *out);

/* Decodes the escapes of a JSON string's contents s[0..n) into out (at
 * least n bytes); returns the decoded length. */
size_t rm_json_unescape(const char *s, size_t n, char *out);

/* Parses a JSON object line into row (cleared first). Nested objects are
 * flattened with '.'; objects holding a "_type" key (W&B media) are dropped.
 * The line must be NUL-terminated and stays borrowed by the row. On a syntax
 * error returns RM_E_INPUT with "column N: what" in err. */
int rm_jsonrow_parse(struct rm_row *row, const char *line, size_t len, struct rm_err *err);

/* ==== arrow ================================================================= */
/*
 * sequence lengths straight from Arrow IPC files: a Hugging Face
 * dataset saved with save_to_disk (a folder of data-*.arrow shards), a
 * DatasetDict folder, or one .arrow file (stream or file format).
 *
 * Reads the length of every row from an integer column (seq_len and the
 * like) or, without one, from the offsets of a list column (input_ids):
 * offset[i+1] - offset[i], so not one token is read. Files are mapped, and
 * only the metadata and the one or two buffers needed are touched.
 */
struct rm_err;

struct rm_arrow_opts {
	const char *column;      /* an integer column; NULL: the first of seq_len, length, ... */
	const char *list_column; /* a list column whose lengths to take; NULL: input_ids */
	const char *split;       /* a DatasetDict's split; NULL: train */
};

struct rm_arrow_lengths {
	int64_t *len; /* one per row in order; -1 for a null row */
	size_t n, cap;
	size_t nulls, shards, batches;
	int from_offsets; /* 1: the lengths of a list column's values */
	char column[128]; /* the column read */
	char type[32];    /* its Arrow type, e.g. int64 or list<...> */
	char split[64];   /* the DatasetDict split read, or "" */
};

/* 1 when path names Arrow data: a folder, a .arrow/.feather file, or a file
 * that starts like one. */
int rm_arrow_is_path(const char *path);

/* Reads the lengths of a dataset folder or an Arrow file into *out (the
 * caller releases it). Errors name the file and the message. */
int rm_arrow_read_lengths(const char *path, const struct rm_arrow_opts *o, struct rm_arrow_lengths *out,
                          struct rm_err *err);

/* The same on one file's bytes (name is for messages); appends to *out. */
int rm_arrow_read_buffer(const uint8_t *buf, size_t size, const char *name, const struct rm_arrow_opts *o,
                         struct rm_arrow_lengths *out, struct rm_err *err);

void rm_arrow_lengths_release(struct rm_arrow_lengths *out);

/* ==== wandbfile ============================================================= */
/*
 * W&B's run-<id>.wandb transaction log, read straight from
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

/* ---- TFRecord (tfrecord.c) ----------------------------------------------
 * TensorFlow's record framing, which TensorBoard event files use: a
 * little-endian uint64 length and its masked CRC-32C, the data, and the
 * data's masked CRC-32C. */
#define RM_TFREC_HEADER 12

/* CRC-32C (Castagnoli) of data, continuing from crc (0 to start). */
uint32_t rm_crc32c(uint32_t crc, const void *data, size_t n);
/* TensorFlow's mask of a stored CRC: ((c >> 15) | (c << 17)) + 0xa282ead8. */
uint32_t rm_tfrec_mask(uint32_t crc);
/* Do the first bytes open a TFRecord (a length whose checksum matches)? */
int rm_tfrec_sniff(const uint8_t *head, size_t n);

struct rm_tfrec {
	const char *path; /* for messages; borrowed */
	int fd;           /* -1 when reading memory */
	const uint8_t *mem;
	uint64_t size;    /* bytes available when opened */
	uint64_t pos;     /* the next record's start */
	uint64_t records; /* records returned */
	int bad_crc;      /* the record just returned fails its data checksum */
	int partial;      /* the end came inside a record: cut off or mid-write */
	uint8_t *buf;     /* a window of the file */
	uint64_t buf_off;
	size_t buf_len, cap;
};

/* Opens path to read from offset (0, or where an earlier reader stopped). */
int rm_tfrec_open(struct rm_tfrec *r, const char *path, uint64_t offset, struct rm_err *err);
/* The same over a buffer (tests, fuzzing). */
int rm_tfrec_open_mem(struct rm_tfrec *r, const void *data, size_t n);
/* Next record: 1 with *data and *len (valid until the next call; bad_crc
 * set when its checksum fails), 0 at the end of what is complete (partial
 * says whether a record was cut off), or an error code: RM_E_INPUT when a
 * length's checksum fails, after which nothing can be framed. */
int rm_tfrec_next(struct rm_tfrec *r, const uint8_t **data, size_t *len, struct rm_err *err);
void rm_tfrec_close(struct rm_tfrec *r);

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

/* ==== lengthsrc ============================================================= */
/*
 * a distribution of sequence lengths read from a file or a
 * dataset, for `buckets`, `simulate --lengths-from` and `diagnose
 * --lengths-from`: a saved Hugging Face dataset or an Arrow file (see
 * arrow.h), one integer per line, a batch sidecar's "lens", or a CSV column.
 */
struct rm_err;

/* What was read, for the user. */
struct rm_length_source {
	int arrow;                    /* 1: Arrow data; the fields below say what */
	struct rm_arrow_lengths info; /* its len array is not kept */
	size_t skipped;               /* sidecar rows without lens, Arrow null rows */
	size_t empty;                 /* Arrow rows of length 0 (an empty input_ids), left out */
};

/* Reads the lengths at path (o's column choices apply to Arrow data, and
 * o->column to a CSV column or a sidecar key) into *lens (the caller frees). */
int rm_lengths_read(const char *path, const struct rm_arrow_opts *o, int64_t **lens, size_t *n,
                    struct rm_length_source *src, struct rm_err *err);

/* One line to stderr-style fp saying what was read and what was left out. */
void rm_length_source_note(const struct rm_length_source *src, const char *path, size_t n, FILE *fp);

/* ==== JSON as Python writes it ============================================== */
/* Copies a JSON text replacing bare NaN, Infinity and -Infinity tokens
 * (outside strings) with the strings "NaN", "Infinity", "-Infinity", so a
 * strict parser such as jansson accepts it. Caller frees the result. */
char *rm_json_quote_nonfinite(const char *in, size_t n, size_t *outlen);

#endif
