/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "testutil.h"

#include "condition/recover.h"

#define M 60000ull	/* a minute */
#define T0 1704067200000ull

/* One row: the check's status at a time, and what the hysteresis makes of it. */
struct row {
	enum npd_status status;
	uint64_t at_ms;			/* T0 + this */
	enum recover_verdict verdict;
	bool active;			/* afterwards */
	uint64_t flaps, clears;		/* afterwards */
};

static void run(const struct row *rows, size_t n, uint64_t after_ms)
{
	struct recover_state s = { 0 };

	for (size_t i = 0; i < n; i++) {
		enum recover_verdict v = recover_step(&s, rows[i].status, T0 + rows[i].at_ms,
						      after_ms);

		if (v != rows[i].verdict || s.active != rows[i].active || s.flaps != rows[i].flaps ||
		    s.clears != rows[i].clears)
			fail_msg("row %zu: verdict %d active %d flaps %llu clears %llu", i, v,
				 s.active, (unsigned long long)s.flaps, (unsigned long long)s.clears);
	}
}

/* recover_after 10m: a burst every few minutes never flips the node False between bursts */
static void test_hold_then_clear(void **st)
{
	static const struct row rows[] = {
		{ NPD_OK, 0, RECOVER_PASS, false, 0, 0 },		/* healthy: as it is */
		{ NPD_PROBLEM, 1 * M, RECOVER_PASS, true, 0, 0 },	/* True */
		{ NPD_OK, 2 * M, RECOVER_HOLD, true, 0, 0 },		/* absent 0 of 10m */
		{ NPD_OK, 8 * M, RECOVER_HOLD, true, 0, 0 },		/* absent 6m */
		{ NPD_PROBLEM, 9 * M, RECOVER_PASS, true, 1, 0 },	/* back: a flap absorbed */
		{ NPD_PROBLEM, 10 * M, RECOVER_PASS, true, 1, 0 },	/* still: no flap */
		{ NPD_OK, 11 * M, RECOVER_HOLD, true, 1, 0 },		/* the clock restarts */
		{ NPD_OK, 20 * M, RECOVER_HOLD, true, 1, 0 },		/* 9m of 10m */
		{ NPD_OK, 21 * M, RECOVER_CLEAR, false, 1, 1 },		/* 10m: False */
		{ NPD_OK, 22 * M, RECOVER_PASS, false, 1, 1 },		/* stays False */
		{ NPD_PROBLEM, 23 * M, RECOVER_PASS, true, 1, 1 },	/* a new problem, no flap */
	};
	run(rows, ARRAY_SIZE(rows), 10 * M);
}

/* Unknown is published as Unknown and restarts the recovery clock (absence not proven) */
static void test_unknown_restarts_clock(void **st)
{
	static const struct row rows[] = {
		{ NPD_UNKNOWN, 0, RECOVER_PASS, false, 0, 0 },		/* Unknown, nothing held */
		{ NPD_PROBLEM, 1 * M, RECOVER_PASS, true, 0, 0 },
		{ NPD_OK, 2 * M, RECOVER_HOLD, true, 0, 0 },
		{ NPD_UNKNOWN, 9 * M, RECOVER_PASS, true, 0, 0 },	/* published Unknown */
		{ NPD_OK, 10 * M, RECOVER_HOLD, true, 0, 0 },		/* from 10m, not 2m */
		{ NPD_OK, 19 * M, RECOVER_HOLD, true, 0, 0 },
		{ NPD_OK, 20 * M, RECOVER_CLEAR, false, 0, 1 },
	};
	run(rows, ARRAY_SIZE(rows), 10 * M);
}

/* 0 = NPD's behaviour: the first OK clears; a clock that goes back never clears early */
static void test_zero_and_clock_back(void **st)
{
	static const struct row zero[] = {
		{ NPD_PROBLEM, 0, RECOVER_PASS, true, 0, 0 },
		{ NPD_OK, 1, RECOVER_CLEAR, false, 0, 1 },
		{ NPD_PROBLEM, 2, RECOVER_PASS, true, 0, 1 },		/* not a flap: it was False */
	};
	static const struct row back[] = {
		{ NPD_PROBLEM, 30 * M, RECOVER_PASS, true, 0, 0 },
		{ NPD_OK, 31 * M, RECOVER_HOLD, true, 0, 0 },
		{ NPD_OK, 5 * M, RECOVER_HOLD, true, 0, 0 },		/* clock back 26m: restart */
		{ NPD_OK, 14 * M, RECOVER_HOLD, true, 0, 0 },
		{ NPD_OK, 15 * M, RECOVER_CLEAR, false, 0, 1 },
	};
	run(zero, ARRAY_SIZE(zero), 0);
	run(back, ARRAY_SIZE(back), 10 * M);
}

static void test_state_roundtrip_and_bad(void **st)
{
	struct recover_state s = { true, T0, T0 - M, 3, 7 }, r = { 0 }, keep = { false, 1, 2, 3, 4 };
	static const char *const bad[] = {
		"",							/* nothing */
		"active 1\nok_since 0\ntrue_since 0\nflaps 0\n",	/* clears missing */
		"active 2\nok_since 0\ntrue_since 0\nflaps 0\nclears 0\n", /* not a bool */
		"active 1\nactive 1\nok_since 0\ntrue_since 0\nflaps 0\nclears 0\n", /* twice */
		"active 1\nok_since -1\ntrue_since 0\nflaps 0\nclears 0\n", /* sign */
		"active 1\nok_since 0\ntrue_since 0\nflaps 0\nclears 0",  /* no final newline */
		"active 1 \nok_since 0\ntrue_since 0\nflaps 0\nclears 0\n", /* trailing space */
	};
	char *p = NULL, buf[300];
	ssize_t n = recover_format(&s, &p);

	assert_true(n > 0);
	assert_int_equal(recover_parse(p, (size_t)n, &r), 0);
	assert_true(r.active && r.ok_since_ms == T0 && r.true_since_ms == T0 - M && r.flaps == 3 &&
		    r.clears == 7);
	free(p);
	/* a later version's key is skipped */
	snprintf(buf, sizeof(buf), "active 0\nok_since 0\ntrue_since 0\nflaps 1\nclears 2\nnew 9\n");
	assert_int_equal(recover_parse(buf, strlen(buf), &r), 0);
	assert_int_equal(r.clears, 2);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		r = keep;
		assert_int_equal(recover_parse(bad[i], strlen(bad[i]), &r), -EINVAL);
		assert_int_equal(r.ok_since_ms, 1);	/* untouched */
	}
}

static void test_hold_message(void **st)
{
	struct recover_state s = { true, T0, T0 - M, 0, 0 };
	char buf[80];

	assert_string_equal(recover_hold_message(&s, T0 + 2 * M + 999, 10 * M, "3 dying", buf,
						 sizeof(buf)),
			    "recovering: OK for 2m of recover_after 10m; 3 dying");
	assert_string_equal(recover_state_name("cpu", buf, sizeof(buf)), "recover-cpu");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_then_clear),
		cmocka_unit_test(test_unknown_restarts_clock),
		cmocka_unit_test(test_zero_and_clock_back),
		cmocka_unit_test(test_state_roundtrip_and_bad),
		cmocka_unit_test(test_hold_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
