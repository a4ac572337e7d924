/*
 * test_csv.c - CSV cell splitting and cell-to-number conversion.
 */
#include <math.h>
#include <string.h>

#include "runmon/parse.h"
#include "testutil.h"

static struct rm_csv c;

static int split(const char *text)
{
	static char buf[256];
	struct rm_err err;
	strcpy(buf, text);
	return rm_csv_split(&c, buf, strlen(buf), &err);
}

static void plain_and_quoted_cells(void **state)
{
	rm_csv_init(&c, ',');
	assert_int_equal(split("a,\"b,c\",\"say \"\"hi\"\"\",,"), 0);
	assert_int_equal(c.n, 5);
	assert_string_equal(c.cell[0], "a");
	assert_string_equal(c.cell[1], "b,c");
	assert_string_equal(c.cell[2], "say \"hi\"");
	assert_int_equal(c.len[3], 0);
	assert_int_equal(c.len[4], 0);
	assert_int_equal(split(""), 0);
	assert_int_equal(c.n, 1);
	rm_csv_release(&c);
}

static void bad_quotes(void **state)
{
	struct rm_err err;
	char a[] = "a,\"open", b[] = "\"x\"y,z";
	rm_csv_init(&c, ',');
	assert_int_equal(rm_csv_split(&c, a, strlen(a), &err), RM_E_INPUT);
	assert_string_equal(err.msg, "column 3: unterminated quoted field");
	assert_int_equal(rm_csv_split(&c, b, strlen(b), &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, "after a closing quote"));
	rm_csv_release(&c);
}

static void separator_guess(void **state)
{
	assert_int_equal(rm_csv_guess_sep("step\tloss"), '\t');
	assert_int_equal(rm_csv_guess_sep("step,loss"), ',');
	assert_int_equal(rm_csv_guess_sep("a - b\tc,d"), ',');
	rm_csv_init(&c, '\t');
	assert_int_equal(split("1\t2.5"), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.cell[1], "2.5");
	rm_csv_release(&c);
}

static double cell(const char *text, int expect)
{
	struct rm_field f = {.type = RM_F_CELL, .raw = text, .rlen = (uint32_t)strlen(text)};
	double v = -999;
	assert_int_equal(rm_field_num(&f, &v), expect);
	return v;
}

static void cell_numbers(void **state)
{
	assert_true(cell("2.5", 1) == 2.5);
	assert_true(cell(" 3 ", 1) == 3);
	assert_true(cell("+4", 1) == 4);
	assert_true(cell(".5", 1) == 0.5);
	assert_true(isnan(cell("nan", 1)));
	assert_true(isnan(cell("NaN", 1)));
	assert_true(cell("inf", 1) > 1e308);
	assert_true(cell("-Infinity", 1) < -1e308);
	cell("", 0);
	cell("  ", 0);
	cell("abc", -1);
	cell("1.5x", -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(plain_and_quoted_cells),
	    cmocka_unit_test(bad_quotes),
	    cmocka_unit_test(separator_guess),
	    cmocka_unit_test(cell_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
