/*
 * arrow.c - sequence lengths from Arrow IPC data (see runmon/parse.h).
 *
 * Written from the Arrow columnar format specification
 * (arrow.apache.org/docs/format/Columnar.html, "Serialization and
 * Interprocess Communication") and its flatbuffer schemas (format/Message.fbs,
 * Schema.fbs, File.fbs): a stream is a sequence of encapsulated messages
 * (0xFFFFFFFF, int32 metadata size, a flatbuffer Message, the body), ended by
 * a zero size; the file format wraps a stream between "ARROW1" magics with a
 * footer. A record batch lists one FieldNode per field in depth-first order
 * and its buffers in the same order, so reaching one column means counting
 * the nodes and buffers of every field before it. Flatbuffers are read by
 * hand and every offset is checked: the file is untrusted input.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runmon/parse.h"
#include "runmon/common.h"

/* Type ids of Schema.fbs' union Type. */
enum {
	T_NULL = 1,
	T_INT,
	T_FLOAT,
	T_BINARY,
	T_UTF8,
	T_BOOL,
	T_DECIMAL,
	T_DATE,
	T_TIME,
	T_TIMESTAMP,
	T_INTERVAL,
	T_LIST,
	T_STRUCT,
	T_UNION,
	T_FIXED_BINARY,
	T_FIXED_LIST,
	T_MAP,
	T_DURATION,
	T_LARGE_BINARY,
	T_LARGE_UTF8,
	T_LARGE_LIST,
	T_RUN_END,
	T_BINARY_VIEW,
	T_UTF8_VIEW,
	T_LIST_VIEW,
	T_LARGE_LIST_VIEW,
	T_COUNT
};
static const char *const type_names[T_COUNT] = {"none",
                                                "null",
                                                "int",
                                                "float",
                                                "binary",
                                                "utf8",
                                                "bool",
                                                "decimal",
                                                "date",
                                                "time",
                                                "timestamp",
                                                "interval",
                                                "list",
                                                "struct",
                                                "union",
                                                "fixed_binary",
                                                "fixed_list",
                                                "map",
                                                "duration",
                                                "large_binary",
                                                "large_utf8",
                                                "large_list",
                                                "run_end_encoded",
                                                "binary_view",
                                                "utf8_view",
                                                "list_view",
                                                "large_list_view"};

/* Message.fbs: MessageHeader and MetadataVersion (V4 = 3, V5 = 4). */
enum { H_SCHEMA = 1, H_DICTIONARY = 2, H_RECORD_BATCH = 3 };
enum { V4 = 3, V5 = 4 };

static const char *const length_columns[] = {"seq_len", "length", "lengths", "num_tokens", "n_tokens"};

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* A flatbuffer (one message's metadata) and a table in it. */
struct fb {
	const uint8_t *p;
	size_t n;
};
struct fbt {
	const struct fb *b;
	size_t pos, vt;
	uint16_t vtlen, tlen;
};

static int fb_table(const struct fb *b, size_t pos, struct fbt *t)
{
	if (pos > b->n || b->n - pos < 4)
		return 0;
	int64_t vt = (int64_t)pos - (int32_t)rd32(b->p + pos);
	if (vt < 0 || (uint64_t)vt + 4 > b->n)
		return 0;
	t->b = b;
	t->pos = pos;
	t->vt = (size_t)vt;
	t->vtlen = rd16(b->p + vt);
	t->tlen = rd16(b->p + vt + 2);
	return t->vtlen >= 4 && !(t->vtlen & 1) && t->vt + t->vtlen <= b->n && t->tlen >= 4 && pos + t->tlen <= b->n;
}

/* Where field id's inline value of sz bytes lies, or 0 when it is absent. */
static size_t fb_field(const struct fbt *t, int id, size_t sz)
{
	size_t v = 4 + 2 * (size_t)id;
	if (v + 2 > t->vtlen)
		return 0;
	size_t off = rd16(t->b->p + t->vt + v);
	return off && off + sz <= t->tlen ? t->pos + off : 0;
}
static int64_t fb_int(const struct fbt *t, int id, size_t sz, int64_t def)
{
	size_t f = fb_field(t, id, sz);
	const uint8_t *p = t->b->p + f;
	if (!f)
		return def;
	return sz == 1 ? p[0] : sz == 2 ? (int16_t)rd16(p) : sz == 4 ? (int32_t)rd32(p) : (int64_t)rd64(p);
}

/* Follows the offset in field id: the position it points at, or 0. */
static size_t fb_ref(const struct fbt *t, int id)
{
	size_t f = fb_field(t, id, 4);
	if (!f)
		return 0;
	uint64_t to = (uint64_t)f + rd32(t->b->p + f);
	return to < t->b->n ? (size_t)to : 0;
}
static int fb_subtable(const struct fbt *t, int id, struct fbt *sub)
{
	size_t at = fb_ref(t, id);
	return at && fb_table(t->b, at, sub);
}
/* A vector of elements of sz bytes: the first one's position; 0 when absent
 * or out of bounds. */
static size_t fb_vec(const struct fbt *t, int id, size_t sz, uint32_t *n)
{
	size_t v = fb_ref(t, id);
	*n = 0;
	if (!v || t->b->n - v < 4)
		return 0;
	uint32_t len = rd32(t->b->p + v);
	if ((uint64_t)len * sz > t->b->n - v - 4)
		return 0;
	*n = len;
	return v + 4;
}
static int fb_vec_table(const struct fb *b, size_t el, uint32_t i, struct fbt *t)
{
	size_t at = el + 4 * (size_t)i;
	uint64_t to = (uint64_t)at + rd32(b->p + at);
	return to < b->n && fb_table(b, (size_t)to, t);
}

struct reader {
	const uint8_t *p;
	size_t n;
	const char *name;
	const struct rm_arrow_opts *o;
	struct rm_arrow_lengths *out;
	struct rm_err *err;
	size_t msg;  /* the message being read, from 0 */
	int version; /* the schema message's MetadataVersion */
	int have;    /* a schema was read */
	int kind;    /* T_INT, T_LIST or T_LARGE_LIST */
	int bytes;   /* an integer column's width */
	int is_signed;
	size_t node, buffer; /* the column's first FieldNode and buffer */
};

static int fail(struct reader *r, const char *what, const char *detail)
{
	return rm_err_set(r->err, RM_E_INPUT, "%s: message %zu: %s%s", r->name, r->msg, what, detail ? detail : "");
}

static void type_name(const struct fbt *f, int type, char *buf, size_t n, int depth)
{
	struct fbt t;
	uint32_t nc;
	size_t el;
	const char *base = type > 0 && type < T_COUNT ? type_names[type] : "unknown";
	if ((type == T_INT || type == T_FLOAT) && fb_subtable(f, 3, &t)) {
		if (type == T_INT)
			snprintf(buf, n, "%sint%d", fb_int(&t, 1, 1, 0) ? "" : "u", (int)fb_int(&t, 0, 4, 0));
		else
			snprintf(buf, n, "float%d", 16 << (int)(fb_int(&t, 0, 2, 0) & 3)); /* HALF, SINGLE, DOUBLE */
	} else if ((type == T_LIST || type == T_LARGE_LIST) && (el = fb_vec(f, 5, 4, &nc)) && nc == 1 &&
	           fb_vec_table(f->b, el, 0, &t) && depth < 3) {
		char item[24];
		type_name(&t, (int)fb_int(&t, 2, 1, 0), item, sizeof(item), depth + 1);
		snprintf(buf, n, "%s<%s>", base, item);
	} else {
		snprintf(buf, n, "%s", base);
	}
}

/* Counts the FieldNodes and buffers a field takes in a record batch (its
 * children's too); -1 for a layout runmon cannot step over, -2 corrupt
 * (children nested too deep, or more fields than a schema that size could
 * hold: a table reached twice). */
static int layout(const struct fbt *f, int version, int depth, size_t *nodes, size_t *buffers)
{
	struct fbt t;
	uint32_t nc;
	int type = (int)fb_int(f, 2, 1, 0);
	if (depth > 64 || *nodes > f->b->n / 4)
		return -2;
	(*nodes)++;
	if (fb_ref(f, 4)) { /* dictionary-encoded: laid out as its indices */
		*buffers += 2;
		return 0;
	}
	switch (type) {
	case T_NULL:
	case T_RUN_END: break;
	case T_BINARY:
	case T_UTF8:
	case T_LARGE_BINARY:
	case T_LARGE_UTF8:
	case T_LIST_VIEW:
	case T_LARGE_LIST_VIEW: *buffers += 3; break;
	case T_LIST:
	case T_LARGE_LIST:
	case T_MAP: *buffers += 2; break;
	case T_STRUCT:
	case T_FIXED_LIST: *buffers += 1; break;
	case T_UNION: /* no validity bitmap since V5; dense unions add offsets */
		*buffers += (version < V5) + 1 + (fb_subtable(f, 3, &t) && fb_int(&t, 0, 2, 0) == 1);
		break;
	case T_INT:
	case T_FLOAT:
	case T_BOOL:
	case T_DECIMAL:
	case T_DATE:
	case T_TIME:
	case T_TIMESTAMP:
	case T_INTERVAL:
	case T_FIXED_BINARY:
	case T_DURATION: *buffers += 2; break;
	default: return -1; /* view types: their buffer count varies per batch */
	}
	size_t el = fb_vec(f, 5, 4, &nc);
	for (uint32_t i = 0; i < nc; i++) {
		struct fbt c;
		int rc;
		if (!fb_vec_table(f->b, el, i, &c))
			return -2;
		if ((rc = layout(&c, version, depth + 1, nodes, buffers)))
			return rc;
	}
	return 0;
}

static int field_name(const struct fbt *f, char *buf, size_t n)
{
	uint32_t len;
	size_t s = fb_vec(f, 0, 1, &len);
	if (!s || len >= n)
		return 0;
	memcpy(buf, f->b->p + s, len);
	buf[len] = '\0';
	return 1;
}

/* Picks the column in a schema: by name when told (or when an earlier shard
 * chose it), else the first length-like integer column, else input_ids. */
static int read_schema(struct reader *r, const struct fbt *s)
{
	struct rm_arrow_lengths *out = r->out;
	const char *want = out->column[0] ? out->column : r->o->column ? r->o->column : r->o->list_column;
	int want_list = !out->column[0] && !r->o->column && r->o->list_column;
	char names[400] = "", name[128], ty[32];
	uint32_t nf;
	size_t el = fb_vec(s, 1, 4, &nf), nodes = 0, buffers = 0, cn = 0, cb = 0;
	int pick = -1, rank = 99, blocked = -1;
	char blocked_name[128] = "", blocked_type[32] = "";
	struct fbt col = {0};
	if (r->have)
		return fail(r, "a second schema in one stream", NULL);
	if (fb_int(s, 0, 2, 0) == 1)
		return fail(r, "big-endian data; runmon reads little-endian Arrow only", NULL);
	for (uint32_t i = 0; i < nf; i++) {
		struct fbt f;
		if (!fb_vec_table(s->b, el, i, &f) || !field_name(&f, name, sizeof(name)))
			return fail(r, "a schema field that is not a flatbuffer table with a name", NULL);
		size_t ln = strlen(names);
		snprintf(names + ln, sizeof(names) - ln, "%s%s", ln ? ", " : "", name);
		int this = -1;
		if (want)
			this = !strcmp(name, want) ? 0 : -1;
		else
			for (int c = 0; c < (int)(sizeof(length_columns) / sizeof(*length_columns)); c++)
				if (!strcmp(name, length_columns[c]))
					this = c;
		if (!want && this < 0 && !strcmp(name, "input_ids"))
			this = 50;
		if (this >= 0 && this < rank) {
			rank = this;
			pick = (int)i;
			col = f;
			cn = nodes;
			cb = buffers;
			snprintf(out->column, sizeof(out->column), "%s", name);
		}
		int rc = layout(&f, r->version, 0, &nodes, &buffers);
		if (rc == -2)
			return fail(r, "a corrupt schema field: ", name);
		if (rc == -1 && blocked < 0) { /* fatal only if the column comes after it */
			blocked = (int)i;
			snprintf(blocked_name, sizeof(blocked_name), "%s", name);
			type_name(&f, (int)fb_int(&f, 2, 1, 0), blocked_type, sizeof(blocked_type), 0);
		}
	}
	if (pick >= 0 && blocked >= 0 && blocked < pick)
		return rm_err_set(r->err, RM_E_INPUT,
		                  "%s: column %s comes after %s, a %s column whose layout runmon cannot step over",
		                  r->name, out->column, blocked_name, blocked_type);
	if (pick < 0) {
		if (want)
			return rm_err_set(r->err, RM_E_INPUT, "%s: no column %s; the columns are: %s", r->name, want,
			                  names);
		return rm_err_set(r->err, RM_E_INPUT,
		                  "%s: no length column (seq_len, length, lengths, num_tokens, n_tokens) and no "
		                  "input_ids; the columns are: %s (choose one with --column or --list-column)",
		                  r->name, names);
	}
	int type = (int)fb_int(&col, 2, 1, 0);
	type_name(&col, type, ty, sizeof(ty), 0);
	if (fb_ref(&col, 4))
		return rm_err_set(r->err, RM_E_INPUT,
		                  "%s: column %s is dictionary-encoded; lengths want a plain integer or list column",
		                  r->name, out->column);
	struct fbt it;
	int kind = type == T_INT ? T_INT : type == T_LIST || type == T_LARGE_LIST ? type : 0;
	if (!kind || (want_list && kind == T_INT))
		return rm_err_set(r->err, RM_E_INPUT, "%s: column %s is %s; lengths want %s", r->name, out->column, ty,
		                  want_list ? "a list or large_list column" : "integers or a list column");
	if (out->type[0] && (kind == T_INT) == out->from_offsets)
		return rm_err_set(r->err, RM_E_INPUT, "%s: column %s is %s here but %s in the shards before", r->name,
		                  out->column, ty, out->type);
	r->kind = kind;
	r->node = cn;
	r->buffer = cb;
	if (kind == T_INT) {
		if (!fb_subtable(&col, 3, &it))
			return fail(r, "an Int type without its width", NULL);
		int bits = (int)fb_int(&it, 0, 4, 0);
		if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
			return fail(r, "an integer width that is not 8, 16, 32 or 64", NULL);
		r->bytes = bits / 8;
		r->is_signed = (int)fb_int(&it, 1, 1, 0);
	}
	out->from_offsets = kind != T_INT;
	snprintf(out->type, sizeof(out->type), "%s", ty);
	r->have = 1;
	return RM_OK;
}

/* One record batch: the column's validity bitmap and its values or offsets. */
static int read_batch(struct reader *r, const struct fbt *rb, const uint8_t *body, uint64_t body_len)
{
	struct rm_arrow_lengths *out = r->out;
	uint32_t nn, nb;
	if (!r->have)
		return fail(r, "a record batch before the schema", NULL);
	if (fb_ref(rb, 3))
		return fail(r,
		            "the record batch bodies are compressed (LZ4 or ZSTD); runmon reads uncompressed Arrow, "
		            "as save_to_disk writes it",
		            NULL);
	size_t nodes = fb_vec(rb, 1, 16, &nn), bufs = fb_vec(rb, 2, 16, &nb);
	if (r->node >= nn || r->buffer + 1 >= nb)
		return fail(r, "a record batch with fewer nodes or buffers than its schema has fields", NULL);
	const uint8_t *node = rb->b->p + nodes + 16 * r->node, *vb = rb->b->p + bufs + 16 * r->buffer;
	int64_t len = (int64_t)rd64(node), nulls = (int64_t)rd64(node + 8);
	if (len < 0 || len > ((int64_t)1 << 40) || nulls < 0 || nulls > len)
		return fail(r, "a record batch with an impossible row or null count", NULL);
	uint64_t at[2], size[2];
	for (int i = 0; i < 2; i++) {
		at[i] = rd64(vb + 16 * i);
		size[i] = rd64(vb + 16 * i + 8);
		if (at[i] > body_len || size[i] > body_len - at[i])
			return fail(r, "a buffer that runs past the message body (a truncated or corrupt file)", NULL);
	}
	size_t width = r->kind == T_INT ? (size_t)r->bytes : r->kind == T_LIST ? 4 : 8;
	uint64_t need = r->kind == T_INT ? (uint64_t)len * width : (uint64_t)(len + 1) * width;
	if ((nulls && size[0] < (uint64_t)(len + 7) / 8) || (len && size[1] < need))
		return fail(r, "a buffer shorter than its rows need", NULL);
	out->batches++;
	if (!len)
		return RM_OK;
	const uint8_t *valid = nulls ? body + at[0] : NULL, *v = body + at[1];
	if (out->n + (size_t)len > out->cap)
		out->len = rm_xrealloc(out->len, (out->cap = (out->n + (size_t)len) * 2) * sizeof(int64_t));
	int64_t *dst = out->len + out->n;
	for (int64_t i = 0; i < len; i++) {
		if (valid && !(valid[i >> 3] >> (i & 7) & 1)) {
			dst[i] = -1;
			out->nulls++;
			continue;
		}
		int64_t x;
		if (r->kind == T_INT) {
			const uint8_t *e = v + (size_t)i * width;
			uint64_t u = width == 1 ? e[0] : width == 2 ? rd16(e) : width == 4 ? rd32(e) : rd64(e);
			x = !r->is_signed ? (int64_t)u
			    : width == 1  ? (int8_t)u
			    : width == 2  ? (int16_t)u
			    : width == 4  ? (int32_t)u
			                  : (int64_t)u;
			if (x < 0 || (!r->is_signed && width == 8 && u > INT64_MAX))
				return rm_err_set(r->err, RM_E_INPUT, "%s: row %zu: %s is %lld, not a length", r->name,
				                  out->n + (size_t)i, out->column, (long long)x);
		} else if (width == 4) {
			x = (int64_t)(int32_t)rd32(v + 4 * (size_t)i + 4) - (int32_t)rd32(v + 4 * (size_t)i);
		} else {
			x = (int64_t)(rd64(v + 8 * (size_t)i + 8) - rd64(v + 8 * (size_t)i));
		}
		if (x < 0)
			return fail(r, "list offsets that fall (a corrupt file)", NULL);
		dst[i] = x;
	}
	out->n += (size_t)len;
	return RM_OK;
}

/* Reads the messages of one file's bytes; mapped: p is a private read-only
 * mapping of the file, whose pages are handed back after each message, so
 * the memory held does not grow with the file (the kernel maps whole 64 KiB
 * neighbourhoods of each page touched). */
static int read_bytes(const uint8_t *p, size_t size, const char *name, const struct rm_arrow_opts *o,
                      struct rm_arrow_lengths *out, int mapped, struct rm_err *err)
{
	struct reader r = {.p = p, .n = size, .name = name, .o = o, .out = out, .err = err};
	size_t page = mapped ? (size_t)sysconf(_SC_PAGESIZE) : 0, held = 0;
	size_t at = 0, end = size;
	if (size >= 8 && !memcmp(p, "ARROW1", 6)) { /* the file format: magic, stream, footer, size, magic */
		if (size < 18 || memcmp(p + size - 6, "ARROW1", 6))
			return rm_err_set(err, RM_E_INPUT, "%s: an Arrow file without its footer (truncated?)", name);
		uint32_t footer = rd32(p + size - 10);
		if (footer > size - 18)
			return rm_err_set(err, RM_E_INPUT, "%s: an Arrow file footer larger than the file", name);
		at = 8;
		end = size - 10 - footer;
		/* File.fbs: the Footer holds the schema (version, schema, ...);
		 * some writers leave it out of the stream part. */
		struct fb b = {p + end, footer};
		struct fbt f, s;
		int rc;
		if (footer < 8 || !fb_table(&b, rd32(b.p), &f) || !fb_subtable(&f, 1, &s))
			return rm_err_set(err, RM_E_INPUT, "%s: an Arrow file footer without a schema", name);
		r.version = (int)fb_int(&f, 0, 2, 0);
		if ((rc = read_schema(&r, &s)))
			return rc;
	}
	while (at < end) {
		if (end - at < 4)
			return fail(&r, "truncated before its size", NULL);
		uint32_t w = rd32(p + at);
		size_t hdr = 4;
		uint64_t mlen = w;
		if (w == 0xFFFFFFFFu) { /* the continuation marker; older streams go without */
			if (end - at < 8)
				return fail(&r, "truncated before its size", NULL);
			mlen = rd32(p + at + 4);
			hdr = 8;
		}
		if (mlen == 0)
			break; /* end of stream */
		if (mlen > end - at - hdr || mlen < 8)
			return fail(&r, "metadata that runs past the end of the file (truncated?)", NULL);
		struct fb b = {p + at + hdr, (size_t)mlen};
		struct fbt m, h;
		if (!fb_table(&b, rd32(b.p), &m))
			return fail(&r, "metadata that is not a flatbuffer Message", NULL);
		int version = (int)fb_int(&m, 0, 2, 0), type = (int)fb_int(&m, 1, 1, 0);
		int64_t body_len = fb_int(&m, 3, 8, 0);
		size_t body = at + hdr + (size_t)mlen;
		if (version < V4 || version > V5)
			return fail(&r, "a metadata version other than V4 or V5 (Arrow 0.15 and later)", NULL);
		if (body_len < 0 || (uint64_t)body_len > end - body)
			return fail(&r, "a body that runs past the end of the file (truncated?)", NULL);
		if (type != H_DICTIONARY && !fb_subtable(&m, 2, &h))
			return fail(&r, "a message without its header", NULL);
		int rc = RM_OK;
		if (type == H_SCHEMA && r.have && end < size) {
			/* the file format's copy of the footer's schema */
		} else if (type == H_SCHEMA) {
			r.version = version;
			rc = read_schema(&r, &h);
		} else if (type == H_RECORD_BATCH) {
			rc = read_batch(&r, &h, p + body, (uint64_t)body_len);
		} else if (type != H_DICTIONARY) {
			rc = fail(&r, "a message that is neither a schema, a dictionary nor a record batch", NULL);
		}
		if (rc)
			return rc;
		at = body + (size_t)body_len;
		r.msg++;
		if (mapped && at / page > held) {
			madvise((void *)(p + held * page), (at / page - held) * page, MADV_DONTNEED);
			held = at / page;
		}
	}
	if (!r.have)
		return rm_err_set(err, RM_E_INPUT, "%s: no Arrow schema (not an Arrow IPC file?)", name);
	out->shards++;
	return RM_OK;
}

int rm_arrow_read_buffer(const uint8_t *p, size_t size, const char *name, const struct rm_arrow_opts *o,
                         struct rm_arrow_lengths *out, struct rm_err *err)
{
	return read_bytes(p, size, name, o, out, 0, err);
}

static int read_file(const char *path, const struct rm_arrow_opts *o, struct rm_arrow_lengths *out, struct rm_err *err)
{
	struct stat sb;
	/* O_NONBLOCK: a FIFO named as a shard must not hold the read forever */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc;
	if (fd < 0 || fstat(fd, &sb)) {
		rc = rm_err_set(err, RM_E_IO, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return rm_err_set(err, RM_E_INPUT, "%s: not a regular file (an Arrow shard is one)", path);
	}
	if (sb.st_size == 0) {
		close(fd);
		return rm_err_set(err, RM_E_INPUT, "%s: an empty file", path);
	}
	void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return rm_err_set(err, RM_E_IO, "%s: %s", path, strerror(errno));
	rc = read_bytes(p, (size_t)sb.st_size, path, o, out, 1, err);
	munmap(p, (size_t)sb.st_size);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shards of a saved dataset: state.json's _data_files in order, else
 * every *.arrow file by name. */
/* json_load_file of path if it is a regular file (a FIFO would block), else
 * NULL. */
static json_t *load_json_file(const char *path)
{
	struct stat sb;
	return !stat(path, &sb) && S_ISREG(sb.st_mode) ? json_load_file(path, 0, NULL) : NULL;
}

static int dataset_files(const char *dir, char ***files, size_t *n, struct rm_err *err)
{
	char *state = rm_xasprintf("%s/state.json", dir);
	json_t *js = load_json_file(state), *df = json_object_get(js, "_data_files");
	*files = NULL;
	*n = 0;
	free(state);
	if (json_is_array(df) && json_array_size(df)) {
		*files = rm_xcalloc(json_array_size(df), sizeof(char *));
		for (size_t i = 0; i < json_array_size(df); i++) {
			const char *f = json_string_value(json_object_get(json_array_get(df, i), "filename"));
			if (!f || strchr(f, '/')) {
				json_decref(js);
				return rm_err_set(err, RM_E_INPUT, "%s/state.json: _data_files[%zu] is not a file name",
				                  dir, i);
			}
			char *shard = rm_xasprintf("%s/%s", dir, f);
			size_t k = 0;
			while (k < *n && strcmp((*files)[k], shard))
				k++;
			if (k < *n)
				free(shard); /* listed again: its rows are counted once */
			else
				(*files)[(*n)++] = shard;
		}
		json_decref(js);
		return RM_OK;
	}
	json_decref(js);
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t cap = 0;
	if (!d)
		return rm_err_set(err, RM_E_IO, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 6 && !strcmp(e->d_name + l - 6, ".arrow")) {
			if (*n == cap)
				*files = rm_xrealloc(*files, (cap = cap ? cap * 2 : 16) * sizeof(char *));
			(*files)[(*n)++] = rm_xasprintf("%s/%s", dir, e->d_name);
		}
	}
	closedir(d);
	if (!*n)
		return rm_err_set(err, RM_E_INPUT,
		                  "%s: no .arrow files (a dataset saved with save_to_disk holds data-*.arrow)", dir);
	qsort(*files, *n, sizeof(char *), cmp_str);
	return RM_OK;
}

/* A DatasetDict folder: the split's folder, from dataset_dict.json. */
static int split_dir(const char *dir, const char *split, char **out, struct rm_err *err)
{
	char *path = rm_xasprintf("%s/dataset_dict.json", dir);
	json_t *js = load_json_file(path), *splits = json_object_get(js, "splits"), *s;
	size_t i;
	char names[256] = "";
	int rc = RM_OK;
	*out = NULL;
	json_array_foreach (splits, i, s) {
		const char *name = json_string_value(s);
		size_t l = strlen(names);
		if (name && !strcmp(name, split) && !strchr(name, '/'))
			*out = rm_xasprintf("%s/%s", dir, name);
		snprintf(names + l, sizeof(names) - l, "%s%s", l ? ", " : "", name ? name : "?");
	}
	if (!js)
		rc = rm_err_set(err, RM_E_INPUT, "%s: not a JSON file", path);
	else if (!*out)
		rc = rm_err_set(err, RM_E_INPUT, "%s: no split %s; the splits are: %s (choose one with --split)", path,
		                split, names);
	json_decref(js);
	free(path);
	return rc;
}

int rm_arrow_read_lengths(const char *path, const struct rm_arrow_opts *o, struct rm_arrow_lengths *out,
                          struct rm_err *err)
{
	struct stat sb;
	char **files = NULL, *dir = NULL;
	size_t n = 0;
	int rc;
	memset(out, 0, sizeof(*out));
	if (stat(path, &sb))
		return rm_err_set(err, RM_E_IO, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(sb.st_mode)) {
		if (o->split)
			return rm_err_set(err, RM_E_USAGE, "--split wants a DatasetDict folder, and %s is a file",
			                  path);
		rc = read_file(path, o, out, err);
	} else {
		char *dd = rm_xasprintf("%s/dataset_dict.json", path);
		int is_dict = access(dd, F_OK) == 0;
		free(dd);
		if (is_dict) {
			const char *split = o->split ? o->split : "train";
			rc = split_dir(path, split, &dir, err);
			snprintf(out->split, sizeof(out->split), "%s", split);
		} else if (o->split) {
			rc = rm_err_set(err, RM_E_USAGE,
			                "--split wants a DatasetDict folder; %s has no dataset_dict.json", path);
		} else {
			dir = rm_xstrdup(path);
			rc = RM_OK;
		}
		if (!rc)
			rc = dataset_files(dir, &files, &n, err);
		for (size_t i = 0; i < n && !rc; i++)
			rc = read_file(files[i], o, out, err);
		for (size_t i = 0; i < n; i++)
			free(files[i]);
		free(files);
		free(dir);
	}
	if (!rc && out->n == 0)
		rc = rm_err_set(err, RM_E_INPUT, "%s: no rows", path);
	if (rc)
		rm_arrow_lengths_release(out);
	return rc;
}

int rm_arrow_is_path(const char *path)
{
	struct stat sb;
	unsigned char head[8];
	size_t l = strlen(path);
	if (stat(path, &sb))
		return 0;
	if (S_ISDIR(sb.st_mode))
		return 1;
	if ((l > 6 && !strcmp(path + l - 6, ".arrow")) || (l > 8 && !strcmp(path + l - 8, ".feather")))
		return 1;
	if (!S_ISREG(sb.st_mode))
		return 0; /* a FIFO's open would wait for a writer */
	FILE *fp = fopen(path, "rb");
	size_t got = fp ? fread(head, 1, sizeof(head), fp) : 0;
	if (fp)
		fclose(fp);
	return (got >= 6 && !memcmp(head, "ARROW1", 6)) || (got >= 4 && rd32(head) == 0xFFFFFFFFu);
}

void rm_arrow_lengths_release(struct rm_arrow_lengths *out)
{
	free(out->len);
	out->len = NULL;
	out->n = out->cap = 0;
}
