/*
 * test_text.c - text as a terminal, JSON and the store may take it:
 * rm_tx (no escape sequence reaches the screen), rm_utf8_len, rm_utf8_fix
 * and rm_utf8_copy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/common.h"
#include "testutil.h"

static void tx_leaves_plain_text_alone(void **state)
{
	const char *s = "run 'demo': 3 steps, loss 0.5 \xc3\xa9t\xc3\xa9 \xe2\x9c\x93";
	assert_ptr_equal(rm_tx(s), s); /* nothing to escape: the same pointer */
}

static void tx_escapes_c0_controls_and_del(void **state)
{
	assert_string_equal(rm_tx("a\x1b[31mred"), "a\\x1b[31mred");
	assert_string_equal(rm_tx("line\nforged"), "line\\x0aforged");
	assert_string_equal(rm_tx("bell\a"), "bell\\x07");
	assert_string_equal(rm_tx("del\x7f"), "del\\x7f");
	assert_string_equal(rm_tx("cr\rx"), "cr\\x0dx");
}

/* C1 controls are two bytes in UTF-8 (C2 80..C2 9F); C2 9B is a CSI, which
 * a terminal takes like ESC [. */
static void tx_escapes_c1_controls(void **state)
{
	assert_string_equal(rm_tx("a\xc2\x9b"
	                          "31mred"),
	                    "a\\u009b31mred");
	assert_string_equal(rm_tx("\xc2\x80"), "\\u0080");
	assert_string_equal(rm_tx("\xc2\x9f"), "\\u009f");
	/* The neighbours are printable: U+00A0 is kept. */
	const char *nbsp = "a\xc2\xa0"
	                   "b";
	assert_ptr_equal(rm_tx(nbsp), nbsp);
}

static void tx_escapes_malformed_bytes(void **state)
{
	assert_string_equal(rm_tx("bad\xff"), "bad\\xff");
	assert_string_equal(rm_tx("\xc3"), "\\xc3");                   /* cut short */
	assert_string_equal(rm_tx("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
	assert_string_equal(rm_tx("\xc0\xaf"), "\\xc0\\xaf");          /* overlong '/' */
}

/* Up to 8 results stay valid at once (several in one printf). */
static void tx_buffers_rotate(void **state)
{
	const char *a = rm_tx("1\n"), *b = rm_tx("2\n"), *c = rm_tx("3\n");
	assert_string_equal(a, "1\\x0a");
	assert_string_equal(b, "2\\x0a");
	assert_string_equal(c, "3\\x0a");
}

static void utf8_len_follows_rfc3629(void **state)
{
	assert_int_equal(rm_utf8_len((const unsigned char *)"a", 1), 1);
	assert_int_equal(rm_utf8_len((const unsigned char *)"\xc3\xa9", 2), 2);
	assert_int_equal(rm_utf8_len((const unsigned char *)"\xe2\x9c\x93", 3), 3);
	assert_int_equal(rm_utf8_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(rm_utf8_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0); /* above U+10FFFF */
	assert_int_equal(rm_utf8_len((const unsigned char *)"\xe0\x80\xaf", 3), 0);     /* overlong */
	assert_int_equal(rm_utf8_len((const unsigned char *)"\xe2\x9c", 2), 0);         /* short */
}

static void utf8_fix_replaces_bad_bytes(void **state)
{
	char *s = rm_utf8_fix("ok\xff\xc3\xa9");
	assert_string_equal(s, "ok\xef\xbf\xbd\xc3\xa9");
	free(s);
}

static void utf8_copy_cuts_at_a_character(void **state)
{
	char buf[6];
	rm_utf8_copy(buf, sizeof(buf), "abc");
	assert_string_equal(buf, "abc");
	rm_utf8_copy(buf, sizeof(buf), "ab\xc3\xa9\xc3\xa9xyz"); /* never half an é */
	assert_string_equal(buf, "ab\xc3\xa9~");
}

/* Shortened labels: whole when short, else cut at a character with a hash
 * of the whole, so two that share a long start stay apart. */
static void label_short_keeps_labels_apart(void **state)
{
	char a[64], b[64], buf[64];
	(void)state;
	assert_string_equal(rm_label_short("long", 40, buf, sizeof(buf)), "long");
	rm_label_short("bucket-of-sequences-from-the-webcrawl-shard-a", 40, a, sizeof(a));
	rm_label_short("bucket-of-sequences-from-the-webcrawl-shard-b", 40, b, sizeof(b));
	assert_true(strlen(a) <= 40 && strlen(b) <= 40);
	assert_string_not_equal(a, b);
	assert_memory_equal(a, "bucket-of-sequences-from-the-webc~", 34);
	/* a two-byte character at the cut is kept whole or left out */
	rm_label_short("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 12, a, sizeof(a));
	assert_int_equal(strlen(a), 4 + 7);
	assert_int_equal(rm_utf8_len((const unsigned char *)a, 2), 2);
}

/* Long lines break at blanks within the width, the rest hangs under the
 * text after a "3. " marker; colour escapes and UTF-8 take their columns. */
static void wrap_breaks_at_blanks_and_hangs(void **state)
{
	(void)state;
	const char in[] = "  3. \033[1mone\033[0m two three four five six seven eight nine ten eleven twelve"
	                  " \xe2\x96\x88\xe2\x96\x88 thirteen\nshort\n";
	char *out = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&out, &len);
	rm_wrap(fp, in, sizeof(in) - 1, 40);
	fclose(fp);
	assert_string_equal(out, "  3. \033[1mone\033[0m two three four five six seven\n"
	                         "     eight nine ten eleven twelve \xe2\x96\x88\xe2\x96\x88\n"
	                         "     thirteen\n"
	                         "short\n");
	free(out);
	/* a word wider than the line stays whole; below 40 columns nothing wraps */
	fp = open_memstream(&out, &len);
	rm_wrap(fp, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b\n", 52, 40);
	rm_wrap(fp, "x y z x y z x y z x y z\n", 24, 10);
	fclose(fp);
	assert_string_equal(out, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nb\nx y z x y z x y z x y z\n");
	free(out);
}

/* FIPS 180-2's examples (one block, two blocks, a million a's) and
 * RFC 4648's base64 vectors, each length modulo 3. */
static void sha256_and_base64_match_their_standards(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t repeat;
		const char *b64;
	} cases[] = {
	    {"abc", 1, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="},
	    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
	     "JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE="},
	    {"a", 1000000, "zcduXJkU+5KBocfihNc+Z/GAmkiklyAOBG05zMcRLNA="},
	    {"", 1, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i].in) * cases[i].repeat;
		char *buf = malloc(n + 1);
		for (size_t r = 0; r < cases[i].repeat; r++)
			memcpy(buf + r * strlen(cases[i].in), cases[i].in, strlen(cases[i].in));
		uint8_t d[32];
		char b[64];
		rm_sha256(buf, n, d);
		assert_int_equal(rm_base64(d, 32, b, sizeof(b)), 44);
		assert_string_equal(b, cases[i].b64);
		free(buf);
	}
	static const char *const rfc[][2] = {{"", ""},
	                                     {"f", "Zg=="},
	                                     {"fo", "Zm8="},
	                                     {"foo", "Zm9v"},
	                                     {"foob", "Zm9vYg=="},
	                                     {"fooba", "Zm9vYmE="},
	                                     {"foobar", "Zm9vYmFy"}};
	for (size_t i = 0; i < 7; i++) {
		char b[16];
		rm_base64((const uint8_t *)rfc[i][0], strlen(rfc[i][0]), b, sizeof(b));
		assert_string_equal(b, rfc[i][1]);
	}
	char tiny[4];
	assert_int_equal(rm_base64((const uint8_t *)"foo", 3, tiny, sizeof(tiny)), 0); /* 4 chars need 5 bytes */
}

/* Epochs held as floats keep their whole part and wholeness: the
 * order and resets detectors read nothing else of them. */
static void epoch_float_keeps_whole_parts(void **state)
{
	const double near[] = {2.99999999, 3.00000001, 1e6 - 1e-9, 1e6 + 1e-9, 0.9999999999, 12345.99999999};
	for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
		float f = rm_epoch_float(near[i]);
		assert_true(floorf(f) == floor(near[i]));
		assert_true(f != floorf(f)); /* not whole, as the double is not */
		assert_true(fabs(f - near[i]) < 1e-6 * fmax(1, fabs(near[i])));
	}
	assert_true(rm_epoch_float(3.0) == 3.0f);
	assert_true(rm_epoch_float(0.25) == 0.25f);
	assert_true(isnan(rm_epoch_float(NAN)));
	assert_true(rm_float_of(1e300) == INFINITY && rm_float_of(-1e300) == -INFINITY);
	assert_true(isinf(rm_epoch_float(1e300)));
	assert_true(rm_float_of(3e-4) == 3e-4f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tx_leaves_plain_text_alone),
	    cmocka_unit_test(wrap_breaks_at_blanks_and_hangs),
	    cmocka_unit_test(tx_escapes_c0_controls_and_del),
	    cmocka_unit_test(tx_escapes_c1_controls),
	    cmocka_unit_test(tx_escapes_malformed_bytes),
	    cmocka_unit_test(tx_buffers_rotate),
	    cmocka_unit_test(label_short_keeps_labels_apart),
	    cmocka_unit_test(utf8_len_follows_rfc3629),
	    cmocka_unit_test(utf8_fix_replaces_bad_bytes),
	    cmocka_unit_test(utf8_copy_cuts_at_a_character),
	    cmocka_unit_test(sha256_and_base64_match_their_standards),
	    cmocka_unit_test(epoch_float_keeps_whole_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
