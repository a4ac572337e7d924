/*
 * test_lines.c - the chunked line reader: terminators, BOM, long lines.
 */
#include <stdlib.h>
#include <string.h>

#include "runmon/parse.h"
#include "testutil.h"

static void crlf_bom_and_last_line(void **state)
{
	const char text[] = "\xef\xbb\xbf"
	                    "first\r\nsecond\n\nlast";
	const char *path = tu_write_file("a.txt", text, sizeof(text) - 1);
	struct rm_lines lr;
	struct rm_err err;
	char *line;
	size_t len;
	assert_int_equal(rm_lines_open(&lr, path, &err), 0);
	const char *want[] = {"first", "second", "", "last"};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
		assert_non_null(line);
		assert_string_equal(line, want[i]);
		assert_int_equal(len, strlen(want[i]));
		assert_int_equal(lr.lineno, (uint64_t)i + 1);
	}
	assert_int_equal(lr.offset, 3 + 7 + 7 + 1);
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_null(line);
	rm_lines_close(&lr);
}

static void empty_file(void **state)
{
	const char *path = tu_write_file("e.txt", "", 0);
	struct rm_lines lr;
	struct rm_err err;
	char *line;
	size_t len;
	assert_int_equal(rm_lines_open(&lr, path, &err), 0);
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_null(line);
	rm_lines_close(&lr);
}

/* Lines longer than the read chunk grow the buffer; past max_line they
 * are an error naming the line. */
static void long_lines(void **state)
{
	size_t big = 3u << 20;
	char *text = malloc(big + 16);
	memset(text, 'x', big);
	memcpy(text + big, "\nshort\n", 7);
	const char *path = tu_write_file("long.txt", text, big + 7);
	struct rm_lines lr;
	struct rm_err err;
	char *line;
	size_t len;
	assert_int_equal(rm_lines_open(&lr, path, &err), 0);
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_int_equal(len, big);
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_string_equal(line, "short");
	rm_lines_close(&lr);

	assert_int_equal(rm_lines_open(&lr, path, &err), 0);
	lr.max_line = 1u << 20;
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), RM_E_INPUT);
	assert_non_null(strstr(err.msg, ":1: line longer than"));
	assert_int_equal(err.bad_line, 1); /* a followed file keeps the lines before it */
	rm_lines_close(&lr);
	free(text);

	/* skip_long (--skip-bad): read past, returned empty and marked, the
	 * lines around it whole (issue 67: a tqdm bar redrawn over an epoch) */
	text = malloc(big + 64);
	memcpy(text, "before\n", 7);
	memset(text + 7, 'y', big);
	memcpy(text + 7 + big, "\nafter\n\xef\xbb\xbfglued\n", 16);
	path = tu_write_file("long2.txt", text, 7 + big + 16);
	assert_int_equal(rm_lines_open(&lr, path, &err), 0);
	lr.max_line = 1u << 20;
	lr.skip_long = 1;
	const char *want[] = {"before", "", "after", "glued"};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
		assert_non_null(line);
		assert_string_equal(line, want[i]); /* a BOM mid-file (cat a b) goes too */
		assert_int_equal(lr.overlong, i == 1);
		assert_int_equal(lr.lineno, (uint64_t)i + 1);
	}
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_null(line);
	rm_lines_close(&lr);
	/* an over-long last line without its newline */
	path = tu_write_file("long3.txt", text, 7 + big);
	assert_int_equal(rm_lines_open(&lr, path, &err), 0);
	lr.max_line = 1u << 20;
	lr.skip_long = 1;
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_string_equal(line, "before");
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_true(lr.overlong && line && !len);
	assert_int_equal(rm_lines_next(&lr, &line, &len, &err), 0);
	assert_null(line);
	rm_lines_close(&lr);
	free(text);
}

static void missing_file(void **state)
{
	struct rm_lines lr;
	struct rm_err err;
	assert_int_equal(rm_lines_open(&lr, "/nonexistent/x.jsonl", &err), RM_E_INPUT); /* exit 2, not 4 */
	assert_string_equal(err.msg, "cannot open '/nonexistent/x.jsonl': No such file or directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(crlf_bom_and_last_line),
	    cmocka_unit_test(empty_file),
	    cmocka_unit_test(long_lines),
	    cmocka_unit_test(missing_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
