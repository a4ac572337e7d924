/*
 * test_wandbfile.c - the .wandb reader against logs written byte for byte
 * by tests/wandb_writer.c: block layout, padding, records across blocks,
 * damage, truncation, a growing file, preallocated zeros; then the import
 * of history, run, config and exit records into the store.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/import.h"
#include "runmon/parse.h"
#include "testutil.h"
#include "wandb_writer.h"

/* A payload of n bytes, its bytes a function of seed. */
static uint8_t *payload(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed * 7 + 1);
	return p;
}

/* Reads every record of a buffer; checks record i has length lens[i]
 * and payload(lens[i], i) as content. Returns the records read. */
static size_t read_all(struct rm_wlog *w, const size_t *lens, size_t n)
{
	const uint8_t *data;
	size_t len, got = 0;
	struct rm_err err;
	int rc;
	while ((rc = rm_wlog_next(w, &data, &len, &err)) == 1) {
		assert_true(got < n);
		assert_int_equal(len, lens[got]);
		uint8_t *want = payload(len, (unsigned)got);
		if (len)
			assert_memory_equal(data, want, len);
		free(want);
		got++;
	}
	assert_int_equal(rc, 0);
	return got;
}

static void write_records(struct ww *w, const size_t *lens, size_t n, size_t first)
{
	for (size_t i = first; i < n; i++) {
		uint8_t *p = payload(lens[i], (unsigned)i);
		ww_record(w, p, lens[i]);
		free(p);
	}
}

static void crc_and_header(void **state)
{
	assert_int_equal(rm_crc32(0, "123456789", 9), 0xCBF43926u); /* the CRC-32 check value */
	/* The magic is zlib.crc32(b"Weights & Biases") & 0xffff (wandb-api.md §6). */
	assert_int_equal(rm_crc32(0, "Weights & Biases", 16) & 0xffff, 0xBEE1);
	struct ww w;
	ww_init(&w, 0);
	static const uint8_t head[] = {0x3A, 0x57, 0x26, 0x42, 0xE1, 0xBE, 0x00};
	assert_int_equal(w.len, 7);
	assert_memory_equal(w.buf, head, 7);
	/* A FULL chunk: CRC over the type byte and the payload, length LE. */
	ww_record(&w, (const uint8_t *)"abc", 3);
	uint32_t crc = rm_crc32(rm_crc32(0, "\x01", 1), "abc", 3);
	assert_int_equal(w.buf[7] | w.buf[8] << 8 | w.buf[9] << 16 | (uint32_t)w.buf[10] << 24, crc);
	assert_int_equal(w.buf[11], 3);
	assert_int_equal(w.buf[12], 0);
	assert_int_equal(w.buf[13], RM_WLOG_FULL);
	ww_free(&w);

	struct rm_wlog r;
	struct rm_err err;
	uint8_t bad[7] = {':', 'W', '&', 'B', 0xE1, 0xBE, 0x01};
	assert_int_equal(rm_wlog_open_mem(&r, bad, 7, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "version 1"));
	bad[0] = 'x';
	assert_int_equal(rm_wlog_open_mem(&r, bad, 7, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "not a W&B .wandb file"));
	assert_int_equal(rm_wlog_open_mem(&r, bad, 3, &err), RM_E_INPUT);
}

/* The header counts against the first block; records span blocks; fewer
 * than 7 bytes left in a block are zero padding. */
/* TensorBoard's framing: CRC-32C against the published vectors (RFC 3720
 * B.4), the mask, and records read from memory: whole, a bad data
 * checksum flagged, a bad length checksum an error, a cut-off tail
 * partial. */
static void tfrecord_framing(void **state)
{
	(void)state;
	uint8_t zeros[32] = {0}, ones[32], up[32];
	for (int i = 0; i < 32; i++) {
		ones[i] = 0xff;
		up[i] = (uint8_t)i;
	}
	assert_int_equal(rm_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(rm_crc32c(0, zeros, 32), 0x8A9136AAu);
	assert_int_equal(rm_crc32c(0, ones, 32), 0x62A8AB43u);
	assert_int_equal(rm_crc32c(0, up, 32), 0x46DD794Eu);
	assert_int_equal(rm_crc32c(rm_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
	assert_int_equal(rm_tfrec_mask(0), 0xa282ead8u);
	assert_int_equal(rm_tfrec_mask(0x80000001u), 0x00030000u + 0xa282ead8u);

	uint8_t file[3 * 32];
	size_t len = 0;
	const char *payload[] = {"first", "second!", "third"};
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(payload[i]);
		uint8_t *h = file + len;
		memset(h, 0, 8);
		h[0] = (uint8_t)n;
		uint32_t c = rm_tfrec_mask(rm_crc32c(0, h, 8)), d = rm_tfrec_mask(rm_crc32c(0, payload[i], n));
		for (int b = 0; b < 4; b++) {
			h[8 + b] = (uint8_t)(c >> (8 * b));
			h[12 + n + (size_t)b] = (uint8_t)(d >> (8 * b));
		}
		memcpy(h + 12, payload[i], n);
		len += 16 + n;
	}
	assert_true(rm_tfrec_sniff(file, len));
	file[21 + 12] ^= 1; /* a byte of "second!" */
	struct rm_tfrec r;
	struct rm_err err;
	const uint8_t *d;
	size_t n;
	rm_tfrec_open_mem(&r, file, len - 3); /* the last checksum cut */
	assert_int_equal(rm_tfrec_next(&r, &d, &n, &err), 1);
	assert_int_equal(n, 5);
	assert_memory_equal(d, "first", 5);
	assert_false(r.bad_crc);
	assert_int_equal(rm_tfrec_next(&r, &d, &n, &err), 1);
	assert_true(r.bad_crc);
	assert_int_equal(rm_tfrec_next(&r, &d, &n, &err), 0);
	assert_true(r.partial);
	assert_int_equal(r.pos, 21 + 23);
	rm_tfrec_close(&r);
	file[21 + 23 + 3] ^= 1; /* the third record's length */
	assert_false(rm_tfrec_sniff(file + 44, len - 44));
	rm_tfrec_open_mem(&r, file, len);
	assert_int_equal(rm_tfrec_next(&r, &d, &n, &err), 1);
	assert_int_equal(rm_tfrec_next(&r, &d, &n, &err), 1);
	assert_int_equal(rm_tfrec_next(&r, &d, &n, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "record 3 (byte 44): the length's checksum does not match"));
	rm_tfrec_close(&r);
}

static void blocks_and_padding(void **state)
{
	/* Record 0 leaves exactly 3 bytes in block 0: 7 + 7 + n0 = 32768 - 3. */
	size_t lens[] = {32768 - 3 - 14, 10, 100000, 0, 5};
	struct ww w;
	ww_init(&w, 0);
	write_records(&w, lens, 5, 0);
	assert_memory_equal(w.buf + 32765, "\0\0\0", 3);        /* padding */
	assert_int_equal(w.buf[32768 + 6], RM_WLOG_FULL);       /* record 1 starts block 1 */
	assert_int_equal(w.buf[32768 + 17 + 6], RM_WLOG_FIRST); /* record 2 begins after it */
	assert_int_equal(w.buf[2 * 32768 + 6], RM_WLOG_MIDDLE); /* ... goes on in block 2 */
	assert_int_equal(w.buf[32768 + 17 + 4] | w.buf[32768 + 17 + 5] << 8, 32768 - 17 - 7);
	struct rm_wlog r;
	struct rm_err err;
	assert_int_equal(rm_wlog_open_mem(&r, w.buf, w.len, &err), 0);
	assert_int_equal(read_all(&r, lens, 5), 5);
	assert_int_equal(r.corrupt, 0);
	assert_int_equal(r.partial, 0);
	assert_int_equal(r.resume, w.len);
	rm_wlog_close(&r);
	ww_free(&w);
}

/* A damaged chunk costs the rest of its block and nothing else. */
static void damage_skips_to_next_block(void **state)
{
	size_t lens[40];
	for (int i = 0; i < 40; i++)
		lens[i] = 3000; /* ~10 a block */
	struct ww w;
	ww_init(&w, 0);
	write_records(&w, lens, 40, 0);
	w.buf[7 + 2 * 3007 + 7 + 100] ^= 0x40; /* record 2's payload */
	struct rm_wlog r;
	struct rm_err err;
	const uint8_t *data;
	size_t len, got = 0, expect_next = 0;
	assert_int_equal(rm_wlog_open_mem(&r, w.buf, w.len, &err), 0);
	int rc;
	while ((rc = rm_wlog_next(&r, &data, &len, &err)) == 1) {
		/* Records 2..the end of block 0 are lost; the next one read is the
		 * first that starts in block 1 (a MIDDLE/LAST piece is dropped). */
		uint8_t *want;
		for (;; expect_next++) {
			want = payload(len, (unsigned)expect_next);
			if (!memcmp(want, data, len))
				break;
			free(want);
			assert_true(expect_next < 40);
		}
		free(want);
		if (got == 2) /* what followed record 2 in block 0 is lost */
			assert_true(expect_next >= 10);
		expect_next++;
		got++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(r.corrupt, 1); /* the orphaned pieces after it are the same damage */
	assert_true(got >= 40 - 12 && got <= 40 - 9);
	assert_int_equal(r.first_corrupt, 7 + 2 * 3007);
	assert_int_equal(expect_next, 40); /* the last record came through */
	rm_wlog_close(&r);
	ww_free(&w);
}

/* A file cut mid-record: the complete records, then an honest "partial". */
static void truncated_tail(void **state)
{
	size_t lens[] = {100, 50000, 200};
	struct ww w;
	ww_init(&w, 0);
	write_records(&w, lens, 3, 0);
	size_t cut = w.len - 50;
	struct rm_wlog r;
	struct rm_err err;
	assert_int_equal(rm_wlog_open_mem(&r, w.buf, cut, &err), 0);
	assert_int_equal(read_all(&r, lens, 3), 2);
	assert_int_equal(r.partial, 1);
	assert_int_equal(r.corrupt, 0);
	assert_int_equal(r.resume, w.len - 207);
	rm_wlog_close(&r);
	/* Cut inside the FIRST chunk of the spanning record, too. */
	assert_int_equal(rm_wlog_open_mem(&r, w.buf, 7 + 107 + 30000, &err), 0);
	assert_int_equal(read_all(&r, lens, 3), 1);
	assert_int_equal(r.partial, 1);
	assert_int_equal(r.resume, 7 + 107);
	rm_wlog_close(&r);
	ww_free(&w);
}

/* A live file read, grown, and read on from the resume offset; then
 * preallocated zeros at its end, overwritten by later records. */
static void growing_file(void **state)
{
	const char *path = tu_tmp_path("grow.wandb");
	size_t lens[60];
	for (int i = 0; i < 60; i++)
		lens[i] = (size_t)(700 + i * 97);
	struct ww w;
	ww_init(&w, 0);
	write_records(&w, lens, 25, 0);
	assert_int_equal(ww_save(&w, path), 0);
	ww_free(&w);

	struct rm_wlog r;
	struct rm_err err;
	assert_int_equal(rm_wlog_open(&r, path, 0, 1, &err), 0);
	assert_int_equal(read_all(&r, lens, 25), 25);
	uint64_t resume = r.resume;
	rm_wlog_close(&r);

	/* The writer adds records 25..39 and half of 40 (a torn write). */
	struct ww more;
	ww_init(&more, resume);
	write_records(&more, lens, 41, 25);
	more.len -= lens[40] / 2;
	assert_int_equal(ww_save(&more, path), 0);
	ww_free(&more);
	assert_int_equal(rm_wlog_open(&r, path, resume, 1, &err), 0);
	const uint8_t *data;
	size_t len;
	for (size_t i = 25; i < 40; i++) {
		assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 1);
		assert_int_equal(len, lens[i]);
	}
	assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 0);
	assert_int_equal(r.partial, 1);
	assert_int_equal(r.corrupt, 0);
	resume = r.resume;
	rm_wlog_close(&r);

	/* Rewrite the file up to resume, then preallocated zeros. */
	struct ww all;
	ww_init(&all, 0);
	write_records(&all, lens, 40, 0);
	assert_int_equal(all.len, resume);
	size_t zeros = 200000;
	all.buf = realloc(all.buf, all.len + zeros);
	memset(all.buf + all.len, 0, zeros);
	all.len += zeros;
	assert_int_equal(ww_save(&all, path), 0);
	assert_int_equal(rm_wlog_open(&r, path, resume, 1, &err), 0);
	assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 0);
	assert_int_equal(r.corrupt, 0);
	assert_int_equal(r.resume, resume); /* the zeros are not data yet */
	rm_wlog_close(&r);
	/* The writer fills the zeros with records 40..59. */
	struct ww tail;
	ww_init(&tail, resume);
	write_records(&tail, lens, 60, 40);
	assert_true(tail.len < zeros);
	memcpy(all.buf + resume, tail.buf, tail.len);
	assert_int_equal(ww_save(&all, path), 0);
	assert_int_equal(rm_wlog_open(&r, path, resume, 1, &err), 0);
	for (size_t i = 40; i < 60; i++) {
		assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 1);
		assert_int_equal(len, lens[i]);
	}
	assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 0);
	assert_int_equal(r.corrupt, 0);
	rm_wlog_close(&r);
	ww_free(&tail);
	ww_free(&all);
}

/* While live, a bad checksum in the last block may be a write in progress;
 * once the file is done, it is damage. */
static void live_checksum_in_last_block(void **state)
{
	const char *path = tu_tmp_path("live.wandb");
	size_t lens[] = {100, 100, 100};
	struct ww w;
	ww_init(&w, 0);
	write_records(&w, lens, 3, 0);
	w.buf[w.len - 1] ^= 1;
	assert_int_equal(ww_save(&w, path), 0);
	struct rm_wlog r;
	struct rm_err err;
	assert_int_equal(rm_wlog_open(&r, path, 0, 1, &err), 0);
	assert_int_equal(read_all(&r, lens, 3), 2);
	assert_int_equal(r.corrupt, 0);
	assert_int_equal(r.partial, 1);
	rm_wlog_close(&r);
	assert_int_equal(rm_wlog_open(&r, path, 0, 0, &err), 0);
	const uint8_t *data;
	size_t len;
	assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 1);
	assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 1);
	assert_int_equal(rm_wlog_next(&r, &data, &len, &err), 0);
	assert_int_equal(r.corrupt, 1);
	rm_wlog_close(&r);
	ww_free(&w);
}

static void protobuf_fields(void **state)
{
	struct pbuf b = {0};
	pb_int(&b, 1, 300);
	pb_str(&b, 16, "NaN");
	pb_int(&b, 2, -1);
	struct rm_pb pb = {b.p, b.p + b.n};
	struct rm_pb_field f;
	assert_int_equal(rm_pb_next(&pb, &f), 1);
	assert_int_equal(f.num, 1);
	assert_int_equal(f.varint, 300);
	assert_int_equal(rm_pb_next(&pb, &f), 1);
	assert_int_equal(f.num, 16);
	assert_int_equal(f.wire, RM_PB_LEN);
	assert_int_equal(f.len, 3);
	assert_memory_equal(f.data, "NaN", 3);
	assert_int_equal(rm_pb_next(&pb, &f), 1);
	assert_int_equal((int64_t)f.varint, -1);
	assert_int_equal(rm_pb_next(&pb, &f), 0);
	/* A length past the end, a cut varint, field 0, a group: malformed. */
	static const uint8_t bad[][3] = {{0x0A, 0x05, 'x'}, {0x08, 0xFF, 0xFF}, {0x00, 0x01, 0}, {0x0B, 0, 0}};
	for (int i = 0; i < 4; i++) {
		pb = (struct rm_pb){bad[i], bad[i] + 3};
		assert_int_equal(rm_pb_next(&pb, &f), -1);
	}
	pb_free(&b);
}

static void add(struct ww *w, struct pbuf *rec)
{
	ww_record(w, rec->p, rec->n);
	pb_free(rec);
}

/* Writes the log to path and frees it. */
static void save(struct ww *w, const char *path)
{
	assert_int_equal(ww_save(w, path), 0);
	ww_free(w);
}

/* Imports path into db with opts. */
static int import_path(const char *path, const char *db, const struct rm_import_opts *o, struct rm_import_report *rep,
                       struct rm_err *err)
{
	struct rm_store *st;
	char *files[] = {(char *)path};
	assert_int_equal(rm_store_open(&st, db, err), 0);
	int rc = rm_import(st, o, files, 1, rep, err);
	rm_store_close(st);
	return rc;
}

/* History with nested and flat keys, NaN, media; run, config and exit. */
static void import_records(void **state)
{
	const char *path = tu_tmp_path("run-ab12.wandb"), *db = tu_tmp_path("wf.db");
	struct ww w;
	struct pbuf rec = {0};
	ww_init(&w, 0);
	struct ww_item cfg[] = {{.key = "save_steps", .value_json = "250"}, {.key = "lr", .value_json = "NaN"}};
	ww_run(&rec, "ab12", "acme", "llm", "brave-fox", cfg, 2);
	add(&w, &rec);
	ww_output(&rec, "hello");
	add(&w, &rec);
	for (int s = 0; s < 3; s++) { /* wandb-core: one item per leaf */
		char step[16], loss[32];
		snprintf(step, sizeof(step), "%d", s);
		snprintf(loss, sizeof(loss), s == 1 ? "NaN" : "%.17g", 2.5 - s * 0.5);
		struct ww_item it[] = {
		    {.nested = {"_step"}, .value_json = step},
		    {.nested = {"train", "loss"}, .value_json = loss},
		    {.nested = {"batch/bucket"}, .value_json = "3"}, /* wandb.log({"batch/bucket": 3}) */
		    {.nested = {"batch/max_len"}, .value_json = "2000"},
		    {.nested = {"examples", "_type"}, .value_json = "\"image-file\""},
		    {.nested = {"examples", "width"}, .value_json = "64"},
		};
		ww_history(&rec, s, it, 6);
		add(&w, &rec);
	}
	/* An older SDK: key and a whole object, no _step item (HistoryStep). */
	struct ww_item old[] = {{.key = "train", .value_json = "{\"loss\": 0.75, \"lr\": 1e-4}"},
	                        {.key = "batch/bucket", .value_json = "1"}};
	ww_history(&rec, 3, old, 2);
	add(&w, &rec);
	struct ww_item more[] = {{.key = "save_steps", .value_json = "500"}, {.key = "warmup", .value_json = "10"}};
	ww_config(&rec, more, 2);
	add(&w, &rec);
	ww_exit(&rec, 1);
	add(&w, &rec);
	struct rm_err err;
	struct rm_import_report rep;
	struct rm_import_opts o = {0};
	save(&w, path);
	assert_int_equal(import_path(path, db, &o, &rep, &err), 0);
	assert_int_equal(rep.r[0].format, RM_FMT_WANDB_LOG);
	assert_int_equal(rep.r[0].lines, 8);
	assert_int_equal(rep.r[0].steps, 4);
	assert_int_equal(rep.r[0].batches, 4);
	assert_string_equal(rep.r[0].run_name, "acme/llm/ab12");
	rm_import_report_release(&rep);
	assert_string_equal(tu_q_text(db,
	                              "SELECT source||' '||entity||' '||project||' '||name||' '||display_name||' '||"
	                              "state FROM runs"),
	                    "wandb acme llm ab12 brave-fox failed");
	assert_string_equal(tu_q_text(db, "SELECT json_extract(config_json, '$.save_steps') || ' ' ||"
	                                  " json_extract(config_json, '$.warmup') || ' ' ||"
	                                  " json_extract(config_json, '$.lr') FROM runs"),
	                    "500 10 NaN");
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 0") == 2.5);
	assert_string_equal(tu_q_text(db, "SELECT quote(loss) || ',' || nan_mask FROM steps WHERE step = 1"), "NULL,1");
	assert_true(tu_q_dbl(db, "SELECT loss FROM steps WHERE step = 3") == 0.75);
	assert_true(tu_q_dbl(db, "SELECT lr FROM steps WHERE step = 3") == 1e-4);
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 2"), 3);
	assert_int_equal(tu_q_int(db, "SELECT bucket FROM batches WHERE step = 3"), 1);
	assert_true(tu_q_dbl(db, "SELECT max_len FROM batches WHERE step = 2") == 2000);
}

/* A malformed record is named by its number; --skip-bad goes on. */
static void malformed_record(void **state)
{
	const char *path = tu_tmp_path("bad.wandb"), *db = tu_tmp_path("bad.db");
	struct ww w;
	struct pbuf rec = {0};
	ww_init(&w, 0);
	ww_run(&rec, "r1", "", "", "", NULL, 0);
	add(&w, &rec);
	static const uint8_t junk[] = {0x12, 0x09, 0x0A, 0x7F};
	ww_record(&w, junk, sizeof(junk));
	struct ww_item it[] = {{.nested = {"loss"}, .value_json = "1.0"}, {.nested = {"_step"}, .value_json = "7"}};
	ww_history(&rec, 7, it, 2);
	add(&w, &rec);
	struct rm_err err;
	struct rm_import_report rep;
	struct rm_import_opts o = {0};
	save(&w, path);
	assert_int_equal(import_path(path, db, &o, &rep, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "bad.wandb: record 2: malformed"));
	assert_int_equal(tu_q_int(db, "SELECT COUNT(*) FROM steps"), 0); /* nothing half-written */
	o.skip_bad = 1;
	assert_int_equal(import_path(path, db, &o, &rep, &err), 0);
	assert_int_equal(rep.r[0].skipped, 1);
	assert_int_equal(rep.r[0].steps, 1);
	assert_string_equal(rep.r[0].run_name, "r1"); /* offline: no entity */
	rm_import_report_release(&rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(crc_and_header),
	    cmocka_unit_test(tfrecord_framing),
	    cmocka_unit_test(blocks_and_padding),
	    cmocka_unit_test(damage_skips_to_next_block),
	    cmocka_unit_test(truncated_tail),
	    cmocka_unit_test(growing_file),
	    cmocka_unit_test(live_checksum_in_last_block),
	    cmocka_unit_test(protobuf_fields),
	    cmocka_unit_test(import_records),
	    cmocka_unit_test(malformed_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
