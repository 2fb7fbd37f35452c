/* SPDX-License-Identifier: MIT */
#include "testutil.h"
#include "base/util.h"

static void test_parse_u64(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} t[] = {
		{ "0", 0, 0 }, { "42", 0, 42 }, { "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE, 0 }, { "", -EINVAL, 0 }, { " 1", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 }, { "+1", -EINVAL, 0 }, { "1 ", -EINVAL, 0 }, { "0x10", -EINVAL, 0 },
		{ "12a", -EINVAL, 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		uint64_t v = 777;

		assert_int_equal(parse_u64(t[i].s, &v), t[i].r);
		assert_true(v == (t[i].r == 0 ? t[i].v : 777)); /* untouched on failure */
	}
	assert_int_equal(parse_u64(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static void test_parse_u64_n(void **state)
{
	uint64_t v = 5;

	assert_int_equal(parse_u64_n("123456", 3, &v), 0);
	assert_true(v == 123);
	assert_int_equal(parse_u64_n("12x", 3, &v), -EINVAL);
	assert_int_equal(parse_u64_n("99999999999999999999", 20, &v), -ERANGE);
	assert_int_equal(parse_u64_n("1", 0, &v), -EINVAL);
	assert_true(v == 123);
}

static void test_parse_double(void **state)
{
	double d = -1;

	assert_int_equal(parse_double("10", &d), 0);
	assert_true(d == 10.0);
	assert_int_equal(parse_double("0.5", &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(parse_double("92.", &d), 0);
	assert_int_equal(parse_double("inf", &d), -EINVAL);
	assert_int_equal(parse_double("1e9", &d), -EINVAL);
	assert_int_equal(parse_double("-1", &d), -EINVAL);
	assert_int_equal(parse_double(".", &d), -EINVAL);
	assert_int_equal(parse_double("1.2.3", &d), -EINVAL);
	assert_int_equal(parse_double("", &d), -EINVAL);
}

static void test_durations(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t ms;
		const char *back;
	} t[] = {
		{ "250ms", 0, 250, "250ms" }, { "2s", 0, 2000, "2s" }, { "10m", 0, 600000, "10m" },
		{ "1h", 0, 3600000, "1h" }, { "1m30s", 0, 90000, "1m30s" }, { "0", 0, 0, "0s" },
		{ "1d", 0, 86400000, "1d" }, { "", -EINVAL, 0, NULL }, { "5", -EINVAL, 0, NULL },
		{ "s", -EINVAL, 0, NULL }, { "5x", -EINVAL, 0, NULL }, { "-1s", -EINVAL, 0, NULL },
		{ "1.5s", -EINVAL, 0, NULL }, { "99999999999999999999d", -ERANGE, 0, NULL },
		{ "999999999999999d", -ERANGE, 0, NULL }, { "2S", -EINVAL, 0, NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		uint64_t ms = 4242;
		char buf[64];

		assert_int_equal(parse_duration_ms(t[i].s, &ms), t[i].r);
		if (t[i].r == 0) {
			assert_true(ms == t[i].ms);
			assert_string_equal(format_duration(ms, buf, sizeof(buf)), t[i].back);
		} else {
			assert_true(ms == 4242);
		}
	}
}

static void test_format_bytes(void **state)
{
	char b[32];

	assert_string_equal(format_bytes(17, b, sizeof(b)), "17B");
	assert_string_equal(format_bytes(1992704ull * 1024, b, sizeof(b)), "1.9GiB");
	assert_string_equal(format_bytes(512 * 1024, b, sizeof(b)), "512KiB");
}

/* The one spelling of a ratio: the check line's (a fleet parser reads it), kept byte-stable. */
static void test_format_ratio(void **state)
{
	char b[32];

	assert_string_equal(format_ratio(1070.0, b, sizeof(b)), "x1070");
	assert_string_equal(format_ratio(24.6, b, sizeof(b)), "x25");
	assert_string_equal(format_ratio(10.0, b, sizeof(b)), "x10");
	assert_string_equal(format_ratio(9.96, b, sizeof(b)), "x10.0"); /* as the check printed */
	assert_string_equal(format_ratio(2.45, b, sizeof(b)), "x2.5");
	assert_string_equal(format_ratio(0, b, sizeof(b)), "x0.0");
	assert_string_equal(format_ratio(-1, b, sizeof(b)), "x0.0");
	assert_true(ratio_rounded(24.6) == 25.0);
	assert_true(ratio_rounded(2.44) == 2.4);
	assert_true(ratio_rounded(1070.4) == 1070.0);
	assert_true(ratio_rounded(9.96) == 10.0);
}

static void test_next_line_and_names(void **state)
{
	const char *pos = "a\n\nbc", *l;
	size_t n;

	assert_true(next_line(&pos, &l, &n) && n == 1 && l[0] == 'a');
	assert_true(next_line(&pos, &l, &n) && n == 0);
	assert_true(next_line(&pos, &l, &n) && n == 2 && memcmp(l, "bc", 2) == 0);
	assert_false(next_line(&pos, &l, &n));
	assert_true(valid_name("eth0", 15));
	assert_true(valid_name("ip-10-0-0-1.ec2.internal", 253));
	assert_false(valid_name("..", 15));
	assert_false(valid_name("a/b", 15));
	assert_false(valid_name("", 15));
	assert_false(valid_name("sixteen-chars-xx", 15));
	assert_false(valid_name("a b", 15));
}

static void test_buf_appendf(void **state)
{
	char buf[8];
	size_t off = 0;

	assert_int_equal(buf_appendf(buf, sizeof(buf), &off, "%s=%d", "a", 12), 0);
	assert_string_equal(buf, "a=12");
	assert_int_equal(off, 4);
	/* does not fit whole: the offset stays, the caller fails the whole line */
	assert_int_equal(buf_appendf(buf, sizeof(buf), &off, " %s", "toolong"), -ENOBUFS);
	assert_int_equal(off, 4);
	assert_int_equal(buf_appendf(buf, sizeof(buf), &off, ";%c", 'b'), 0);
	assert_string_equal(buf, "a=12;b");
	assert_int_equal(buf_appendf(buf, sizeof(buf), &off, "c"), 0); /* exactly full */
	assert_int_equal(off, 7);
	assert_int_equal(buf_appendf(buf, sizeof(buf), &off, "%s", ""), 0);
	assert_int_equal(buf_appendf(buf, sizeof(buf), &off, "d"), -ENOBUFS);
	assert_string_equal(buf, "a=12;bc");
	/* the cut variant: a message that may be cut stops one short of the end */
	off = 0;
	buf_appendf_cut(buf, sizeof(buf), &off, "%s", "abc");
	buf_appendf_cut(buf, sizeof(buf), &off, "; %s", "defgh");
	assert_string_equal(buf, "abc; de");
	assert_int_equal(off, 7);
	buf_appendf_cut(buf, sizeof(buf), &off, "more");
	assert_string_equal(buf, "abc; de");
	assert_int_equal(off, 7);
	off = 9; /* past the end: nothing written */
	assert_int_equal(buf_appendf(buf, sizeof(buf), &off, "x"), -ENOBUFS);
	assert_int_equal(buf_appendf(buf, 0, &(size_t){ 0 }, "x"), -ENOBUFS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_u64),	   cmocka_unit_test(test_parse_u64_n),
		cmocka_unit_test(test_parse_double),	   cmocka_unit_test(test_durations),
		cmocka_unit_test(test_format_bytes),	   cmocka_unit_test(test_format_ratio),
		cmocka_unit_test(test_next_line_and_names), cmocka_unit_test(test_buf_appendf),
	};
	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
