/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "cpu/history.h"
#include "cpu/tier.h"
#include "base/util.h"

static void test_agg_maxima(void **state)
{
	struct tier_agg a;
	uint8_t row[3], s[3];
	uint64_t t = 0;

	assert_int_equal(tier_agg_init(&a, 3, 1000), 0);
	/* 250 ms samples: a one-sample spike to 100% on cpu1 must survive into its second */
	memcpy(s, (uint8_t[]){ 10, 20, HISTORY_NO_SAMPLE }, 3);
	assert_int_equal(tier_agg_add(&a, 5000, s, row, &t), 0);
	memcpy(s, (uint8_t[]){ 5, 100, HISTORY_NO_SAMPLE }, 3);
	assert_int_equal(tier_agg_add(&a, 5250, s, row, &t), 0);
	memcpy(s, (uint8_t[]){ 30, 0, HISTORY_NO_SAMPLE }, 3);
	assert_int_equal(tier_agg_add(&a, 5999, s, row, &t), 0);
	/* the next second closes the first: its maxima, offline cpu2 stays "no sample" */
	memcpy(s, (uint8_t[]){ 1, 1, 7 }, 3);
	assert_int_equal(tier_agg_add(&a, 6000, s, row, &t), 1);
	assert_int_equal(t, 5000);
	assert_memory_equal(row, ((uint8_t[]){ 30, 100, HISTORY_NO_SAMPLE }), 3);
	/* a gap of several periods emits only the period that had samples */
	assert_int_equal(tier_agg_add(&a, 9100, s, row, &t), 1);
	assert_int_equal(t, 6000);
	assert_memory_equal(row, ((uint8_t[]){ 1, 1, 7 }), 3);
	/* the clock steps back: the unfinished period is dropped, nothing emitted */
	memcpy(s, (uint8_t[]){ 50, 50, 50 }, 3);
	assert_int_equal(tier_agg_add(&a, 4000, s, row, &t), 0);
	assert_int_equal(tier_agg_flush(&a, row, &t), 1);
	assert_int_equal(t, 4000);
	assert_memory_equal(row, ((uint8_t[]){ 50, 50, 50 }), 3);
	assert_int_equal(tier_agg_flush(&a, row, &t), 0); /* nothing left */
	tier_agg_free(&a);
	tier_agg_free(&a);
	assert_int_equal(tier_agg_init(&a, 0, 1000), -EINVAL);
	assert_int_equal(tier_agg_init(&a, 1, 0), -EINVAL);
}

static void test_pick(void **state)
{
	const uint64_t h = 3600 * 1000;
	uint64_t now = 1000 * h;
	/* fine ring: last 15 min; seconds: 6 h; minutes: 7 d */
	uint64_t oldest[TIER_COUNT] = { now - h / 4, now - 6 * h, now - 7 * 24 * h };
	uint64_t fresh[TIER_COUNT] = { now - 60000, now - 60000, now - 60000 };
	uint64_t none[TIER_COUNT] = { 0, 0, 0 };
	uint64_t only_min[TIER_COUNT] = { 0, 0, now - 2 * h };

	assert_int_equal(tier_pick(oldest, now - 10 * 60000), TIER_FINE);
	assert_int_equal(tier_pick(oldest, now - 2 * h), TIER_SECONDS);
	assert_int_equal(tier_pick(oldest, now - 24 * h), TIER_MINUTES);
	/* nothing reaches back that far: the tier that reaches furthest */
	assert_int_equal(tier_pick(oldest, now - 30 * 24 * h), TIER_MINUTES);
	/* a fresh agent: every tier starts at the same time, the finest wins */
	assert_int_equal(tier_pick(fresh, now - 3 * h), TIER_FINE);
	assert_int_equal(tier_pick(none, now), -ENODATA);
	assert_int_equal(tier_pick(only_min, now - h), TIER_MINUTES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agg_maxima),
		cmocka_unit_test(test_pick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
