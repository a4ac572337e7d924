/*
 * test_jsonrow.c - the history-row JSON scanner and number conversion.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmon/parse.h"
#include "testutil.h"

static struct rm_row row;

static int parse(const char *s)
{
	struct rm_err err;
	return rm_jsonrow_parse(&row, s, strlen(s), &err);
}

static double num(const char *key)
{
	const struct rm_field *f = rm_row_get(&row, key);
	double v = -12345;
	if (!f)
		fail_msg("no key %s", key);
	assert_int_equal(rm_field_num(f, &v), 1);
	return v;
}

static void flat_row(void **state)
{
	assert_int_equal(parse("{\"_step\": 7, \"train/loss\": 1.25, \"name\": \"x\", \"ok\": true, \"z\": null}"), 0);
	assert_int_equal(row.n, 5);
	assert_true(num("_step") == 7);
	assert_true(num("train/loss") == 1.25);
	assert_int_equal(rm_row_get(&row, "name")->type, RM_F_STR);
	assert_int_equal(rm_row_get(&row, "ok")->type, RM_F_BOOL);
	double v;
	assert_int_equal(rm_field_num(rm_row_get(&row, "z"), &v), 0);
	assert_int_equal(rm_field_num(rm_row_get(&row, "name"), &v), -1);
}

static void nonfinite_tokens(void **state)
{
	assert_int_equal(parse("{\"a\": NaN, \"b\": Infinity, \"c\": -Infinity, \"d\": \"NaN\", \"e\": \"-Infinity\"}"),
	                 0);
	assert_true(isnan(num("a")));
	assert_true(isinf(num("b")) && num("b") > 0);
	assert_true(isinf(num("c")) && num("c") < 0);
	assert_true(isnan(num("d")));
	assert_true(isinf(num("e")) && num("e") < 0);
	/* A "NaN" inside a string key or value is text, not a token. */
	assert_int_equal(parse("{\"NaN\": \"Infinity is far\"}"), 0);
	double v;
	assert_int_equal(rm_field_num(rm_row_get(&row, "NaN"), &v), -1);
}

static void nested_keys_flatten(void **state)
{
	assert_int_equal(parse("{\"train\": {\"loss\": 2.5, \"opt\": {\"lr\": 0.1}}, \"x\": 1}"), 0);
	assert_true(num("train.loss") == 2.5);
	assert_true(num("train.opt.lr") == 0.1);
	assert_true(num("x") == 1);
	assert_int_equal(row.n, 3);
}

static void media_objects_dropped(void **state)
{
	assert_int_equal(
	    parse("{\"img\": {\"path\": \"a.png\", \"_type\": \"image-file\", \"size\": 3},"
	          " \"h\": {\"_type\": \"histogram\", \"values\": [1,2], \"bins\": [0,1,2]}, \"loss\": 1}"),
	    0);
	assert_int_equal(row.n, 1);
	assert_true(num("loss") == 1);
}

/* Found by fuzz_graphql: objects inside an array under a nested key grow
 * the key buffer; the array's own key must not point into the old one. */
static void nested_array_of_objects(void **state)
{
	char line[2048], longkey[1000];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	snprintf(line, sizeof(line), "{\"outer\": {\"list\": [{\"%s\": 1}, 2], \"x\": 3}}", longkey);
	assert_int_equal(parse(line), 0);
	assert_non_null(rm_row_get(&row, "outer.list"));
	assert_true(num("outer.x") == 3);
}

static void number_arrays(void **state)
{
	assert_int_equal(parse("{\"lens\": [1801, 1755, 1790], \"objs\": [{\"a\": 1}, 2], \"e\": []}"), 0);
	const struct rm_field *f = rm_row_get(&row, "lens");
	assert_int_equal(f->type, RM_F_NUMARR);
	assert_int_equal(f->arr_len, 3);
	assert_true(row.nums[f->arr_off + 1] == 1755);
	assert_int_equal(rm_row_get(&row, "objs")->type, RM_F_OTHER);
	assert_int_equal(rm_row_get(&row, "e")->arr_len, 0);
}

static void escaped_keys(void **state)
{
	assert_int_equal(parse("{\"train\\/loss\": 3, \"caf\\u00e9\": 4, \"q\\\"k\": 5, \"s\\ud83d\\ude00\": 6}"), 0);
	assert_true(num("train/loss") == 3);
	assert_true(num("caf\xc3\xa9") == 4);
	assert_true(num("q\"k") == 5);
	assert_true(num("s\xf0\x9f\x98\x80") == 6);
}

static void syntax_errors_name_the_column(void **state)
{
	struct rm_err err;
	const char *bad[] = {"{\"a\": 1,}",    "{\"a\" 1}",    "[1]",        "{\"a\": tru}", "{\"a\": 1} x",
	                     "{\"a\": \"x",    "{\"a\": 01.}", "{\"a\": -}", "{\"a\": Nan}", "",
	                     "{\"a\": [1, 2}", "{\"a\": 1e}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = rm_jsonrow_parse(&row, bad[i], strlen(bad[i]), &err);
		if (rc != RM_E_INPUT)
			fail_msg("accepted bad row %s", bad[i]);
		assert_non_null(strstr(err.msg, "column "));
	}
	assert_int_equal(rm_jsonrow_parse(&row, "{\"a\": 1,}", 9, &err), RM_E_INPUT);
	assert_string_equal(err.msg, "column 9: expected a string key");
}

static void deep_nesting_is_refused(void **state)
{
	char buf[1024] = "";
	for (int i = 0; i < 100; i++)
		strcat(buf, "{\"a\":");
	strcat(buf, "1");
	for (int i = 0; i < 100; i++)
		strcat(buf, "}");
	struct rm_err err;
	assert_int_equal(rm_jsonrow_parse(&row, buf, strlen(buf), &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "nesting too deep"));
}

/* The fast path must give exactly what strtod gives. */
static void parse_double_matches_strtod(void **state)
{
	char buf[64];
	unsigned seed = 12345;
	for (int i = 0; i < 200000; i++) {
		seed = seed * 1103515245u + 12345u;
		double x = (double)(seed >> 8) / (double)(1u << 24) * pow(10, (int)(seed % 17) - 8);
		int prec = 1 + (int)(seed % 17);
		snprintf(buf, sizeof(buf), "%.*g", prec, (i & 1) ? -x : x);
		double a, b = strtod(buf, NULL);
		assert_int_equal(rm_parse_double(buf, strlen(buf), &a), 1);
		if (memcmp(&a, &b, sizeof(a)))
			fail_msg("%s: got %.17g, strtod %.17g", buf, a, b);
	}
	const char *hard[] = {"0.1",
	                      "1e23",
	                      "9007199254740993",
	                      "2.2250738585072014e-308",
	                      "1.7976931348623157e308",
	                      "123456789012345678901234567890",
	                      "0.000000000000000000001",
	                      "-0",
	                      "5e-324"};
	for (size_t i = 0; i < sizeof(hard) / sizeof(hard[0]); i++) {
		double a, b = strtod(hard[i], NULL);
		assert_int_equal(rm_parse_double(hard[i], strlen(hard[i]), &a), 1);
		assert_memory_equal(&a, &b, sizeof(a));
	}
	double v;
	assert_int_equal(rm_parse_double("1.2.3", 5, &v), 0);
	assert_int_equal(rm_parse_double("", 0, &v), 0);
	assert_int_equal(rm_parse_double("e5", 2, &v), 0);
}

static int teardown(void **state)
{
	rm_row_release(&row);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(flat_row),
	    cmocka_unit_test(nonfinite_tokens),
	    cmocka_unit_test(nested_keys_flatten),
	    cmocka_unit_test(media_objects_dropped),
	    cmocka_unit_test(number_arrays),
	    cmocka_unit_test(escaped_keys),
	    cmocka_unit_test(syntax_errors_name_the_column),
	    cmocka_unit_test(deep_nesting_is_refused),
	    cmocka_unit_test(nested_array_of_objects),
	    cmocka_unit_test(parse_double_matches_strtod),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
