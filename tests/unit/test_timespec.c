/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "base/timespec.h"
#include "base/util.h"

static void test_time_spec(void **state)
{
	/* 2026-12-01T03:10:00Z */
	const uint64_t t0310 = 1796094600ULL * 1000;
	const uint64_t now = t0310 + 7 * 3600 * 1000;
	uint64_t v = 42;

	assert_int_equal(parse_time_spec("2026-12-01T03:10", now, &v), 0);
	assert_true(v == t0310);
	assert_int_equal(parse_time_spec("2026-12-01 03:10:00Z", now, &v), 0);
	assert_true(v == t0310);
	assert_int_equal(parse_time_spec("2026-12-01T03:10:25", now, &v), 0);
	assert_true(v == t0310 + 25000);
	assert_int_equal(parse_time_spec("@1796094600", now, &v), 0);
	assert_true(v == t0310);
	assert_int_equal(parse_time_spec("7h", now, &v), 0);
	assert_true(v == t0310);
	assert_int_equal(parse_time_spec("6h60m", now, &v), 0);
	assert_true(v == t0310);
	assert_int_equal(parse_time_spec("now", now, &v), 0);
	assert_true(v == now);
	assert_int_equal(parse_time_spec("2024-02-29T00:00", now, &v), 0); /* a leap day */
	assert_true(v == 1709164800ULL * 1000);
	assert_int_equal(parse_time_spec("1970-01-01T00:00", now, &v), 0);
	assert_true(v == 0);
	v = 42;
	static const char *const bad[] = {
		"", "3", "-3h", "2026-12-01", "2026-12-01T3:10", "2026-13-01T03:10",
		"2026-02-29T03:10", "2026-12-01T24:00", "2026-12-01T03:60", "2026-12-01T03:10:61",
		"2026-12-01T03:10+01:00", "1969-12-31T23:59", "@", "@-1", "@x", "99999d", "3 h",
		"2026-12-01X03:10", "yesterday",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_true(parse_time_spec(bad[i], now, &v) < 0);
	assert_int_equal(parse_time_spec("@99999999999999999999", now, &v), -ERANGE);
	assert_int_equal(parse_time_spec(NULL, now, &v), -EINVAL);
	assert_int_equal(v, 42); /* untouched on failure */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
