/* SPDX-License-Identifier: MIT */
#include "testutil.h"
#include "base/npd.h"

static void test_status_and_exit(void **state)
{
	struct npd_result r;
	FILE *f = tmpfile();

	assert_int_equal(npd_set(&r, NPD_OK, "fine"), 0);
	assert_int_equal(npd_emit(&r, 0, f), 0);
	assert_int_equal(npd_set(&r, NPD_PROBLEM, "bad"), 1);
	assert_int_equal(npd_emit(&r, 0, f), 1);
	assert_int_equal(npd_unknown(&r, -ENOENT, "cannot read %s", "/x"), 2);
	assert_string_equal(r.msg, "cannot read /x: No such file or directory");
	assert_int_equal(npd_emit(&r, 0, f), 2);
	npd_unknown(&r, -EINVAL, "cannot read %s", "/y");
	assert_string_equal(r.msg, "cannot read /y: malformed content");
	fclose(f);
}

static void test_cut_and_ascii(void **state)
{
	struct npd_result r;
	char line[NPD_MSG_MAX];

	npd_set(&r, NPD_PROBLEM, "  caf\xc3\xa9\tline\nnext  ");
	assert_int_equal(npd_format_line(&r, 0, line, sizeof(line)), 15);
	assert_string_equal(line, "caf?? line next");
	/* cut exactly at max bytes, then trailing blanks trimmed like NPD does */
	npd_set(&r, NPD_PROBLEM, "0123456789 123456789");
	assert_int_equal(npd_format_line(&r, 11, line, sizeof(line)), 10);
	assert_string_equal(line, "0123456789");
	assert_int_equal(npd_format_line(&r, 5, line, sizeof(line)), 5);
	assert_string_equal(line, "01234");
	/* the default is 256 */
	memset(r.msg, 'a', 600);
	r.msg[600] = '\0';
	assert_int_equal(npd_format_line(&r, 0, line, sizeof(line)), NPD_DEFAULT_MAX_OUTPUT);
}

static void test_append(void **state)
{
	struct npd_result r;

	npd_set(&r, NPD_OK, "%s", "");
	npd_append(&r, "a%d", 1);
	npd_append(&r, "b");
	assert_string_equal(r.msg, "a1; b");
	memset(r.msg, 'x', NPD_MSG_MAX - 2);
	r.msg[NPD_MSG_MAX - 2] = '\0';
	npd_append(&r, "overflow"); /* silently cut, never overruns */
	assert_int_equal(strlen(r.msg), NPD_MSG_MAX - 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_and_exit),
		cmocka_unit_test(test_cut_and_ascii),
		cmocka_unit_test(test_append),
	};
	return cmocka_run_group_tests_name("npd", tests, NULL, NULL);
}
