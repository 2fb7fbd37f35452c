/* SPDX-License-Identifier: MIT */
/*
 * Reclaim as a remediation, the pure half (memcg/reclaim.h): every guard of the plan as a table
 * row (config, the memcg status, how long it has been True, the last reclaim, cgroup v1/v2,
 * memory.reclaim present) -> (verdict, method, why); the watch clock (reclaim_observe) through
 * gaps and Unknowns; how an attempt is recorded (before the write) and ended; the state file
 * round trip and its hostile inputs; the amount asked of memory.reclaim; the messages.
 */
#include "testutil.h"

#include <stdlib.h>

#include "base/config.h"
#include "base/npd.h"
#include "base/util.h"
#include "memcg/reclaim.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define NOW 1796000000000ull
#define S 1000ull
#define M (60 * S)
#define H (60 * M)

struct row {
	const char *name;
	enum cz_reclaim_mode reclaim;
	enum cz_remediation_mode mode;
	int status;
	uint64_t true_for;	/* how long MemcgZombieLeak has been True (0: not) */
	uint64_t last_ago;	/* the last reclaim, this long ago (0: never; ~0: in the future) */
	bool v2, has_memory_reclaim;
	enum reclaim_verdict want;
	enum reclaim_method method;
	const char *why;	/* a part of plan.why */
};

#define FUTURE UINT64_MAX

static const struct row rows[] = {
	{ "off", CZ_RECLAIM_OFF, CZ_REMEDIATE_DRAIN, NPD_PROBLEM, 2 * H, 0, false, false,
	  RECLAIM_IDLE, RECLAIM_NONE, "is off" },
	{ "no leak", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_OK, 0, 0, false, false,
	  RECLAIM_IDLE, RECLAIM_NONE, "not True" },
	{ "unknown is not a leak", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_UNKNOWN, 2 * H, 0,
	  false, false, RECLAIM_IDLE, RECLAIM_NONE, "not True" },
	{ "for not reached", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_PROBLEM, 9 * M, 0, false,
	  false, RECLAIM_WAIT, RECLAIM_NONE, "True for 9m of 10m" },
	{ "for reached, v1: drop_caches", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_PROBLEM,
	  10 * M, 0, false, false, RECLAIM_GO, RECLAIM_DROP_CACHES, "as configured" },
	{ "mode cordon: still reclaims (independent)", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_CORDON,
	  NPD_PROBLEM, H, 0, false, false, RECLAIM_GO, RECLAIM_DROP_CACHES, "as configured" },
	{ "dry-run", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_DRY_RUN, NPD_PROBLEM, H, 0, false, false,
	  RECLAIM_WOULD, RECLAIM_DROP_CACHES, "as configured" },
	{ "rate-limited", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_PROBLEM, 3 * H, 59 * M,
	  false, false, RECLAIM_RATE_LIMITED, RECLAIM_NONE, "last reclaim 59m ago, at most one per 1h" },
	{ "dry-run is rate-limited too", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_DRY_RUN, NPD_PROBLEM,
	  3 * H, 10 * M, false, false, RECLAIM_RATE_LIMITED, RECLAIM_NONE, "at most one per" },
	{ "interval passed", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_PROBLEM, 3 * H, H, false,
	  false, RECLAIM_GO, RECLAIM_DROP_CACHES, "as configured" },
	{ "clock set back: wait", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_PROBLEM, 3 * H,
	  FUTURE, false, false, RECLAIM_RATE_LIMITED, RECLAIM_NONE, "at most one per" },
	{ "memory.reclaim on v2", CZ_RECLAIM_MEMORY_RECLAIM, CZ_REMEDIATE_OFF, NPD_PROBLEM, H, 0,
	  true, true, RECLAIM_GO, RECLAIM_MEMORY_RECLAIM, "proactive" },
	{ "memory.reclaim on v1: drop_caches", CZ_RECLAIM_MEMORY_RECLAIM, CZ_REMEDIATE_OFF,
	  NPD_PROBLEM, H, 0, false, false, RECLAIM_GO, RECLAIM_DROP_CACHES, "cgroup v2" },
	{ "memory.reclaim, v2 kernel < 5.19: drop_caches", CZ_RECLAIM_MEMORY_RECLAIM,
	  CZ_REMEDIATE_OFF, NPD_PROBLEM, H, 0, true, false, RECLAIM_GO, RECLAIM_DROP_CACHES,
	  "5.19" },
	{ "drop_caches configured on v2", CZ_RECLAIM_DROP_CACHES, CZ_REMEDIATE_OFF, NPD_PROBLEM, H,
	  0, true, true, RECLAIM_GO, RECLAIM_DROP_CACHES, "as configured" },
	{ "memory.reclaim dry-run on v2", CZ_RECLAIM_MEMORY_RECLAIM, CZ_REMEDIATE_DRY_RUN,
	  NPD_PROBLEM, H, 0, true, true, RECLAIM_WOULD, RECLAIM_MEMORY_RECLAIM, "proactive" },
};

static void test_plan_table(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct row *w = &rows[i];
		struct cz_config cfg;
		struct reclaim_state s = { 0 };
		struct reclaim_plan p;
		struct reclaim_input in;

		config_defaults(&cfg);
		cfg.remediation.reclaim = w->reclaim;
		cfg.remediation.mode = w->mode;
		if (w->true_for) {
			s.since_ms = NOW - w->true_for;
			s.seen_ms = NOW;
		}
		if (w->last_ago)
			s.last_ms = w->last_ago == FUTURE ? NOW + H : NOW - w->last_ago;
		in = (struct reclaim_input){ &cfg, NOW, w->status, w->v2, w->has_memory_reclaim };
		reclaim_plan(&in, &s, &p);
		if (p.verdict != w->want || (w->method && p.method != w->method) ||
		    !strstr(p.why, w->why))
			fail_msg("row '%s': verdict %d method %d why '%s'", w->name, p.verdict,
				 p.method, p.why);
	}
}

static void test_observe_clock(void **unused)
{
	struct reclaim_state s = { 0 };

	(void)unused;
	reclaim_observe(&s, NPD_PROBLEM, NOW, 10 * M);
	assert_int_equal(s.since_ms, NOW);
	reclaim_observe(&s, NPD_PROBLEM, NOW + 30 * S, 10 * M);
	assert_int_equal(s.since_ms, NOW);		/* watched on: the clock runs */
	reclaim_observe(&s, NPD_UNKNOWN, NOW + 60 * S, 10 * M);
	assert_int_equal(s.since_ms, NOW);		/* Unknown: no sighting, no reset */
	assert_int_equal(s.seen_ms, NOW + 30 * S);
	reclaim_observe(&s, NPD_PROBLEM, NOW + 5 * M, 10 * M);
	assert_int_equal(s.since_ms, NOW);		/* a short blind spot */
	reclaim_observe(&s, NPD_PROBLEM, NOW + 20 * M, 10 * M);
	assert_int_equal(s.since_ms, NOW + 20 * M);	/* 15m unwatched > for: start again */
	reclaim_observe(&s, NPD_PROBLEM, NOW, 10 * M);
	assert_int_equal(s.since_ms, NOW);		/* the clock went back: start again */
	reclaim_observe(&s, NPD_OK, NOW + S, 10 * M);
	assert_int_equal(s.since_ms, 0);
	assert_int_equal(s.seen_ms, 0);
}

static void test_begin_end(void **unused)
{
	struct reclaim_state s = { 0 };
	char msg[400];

	(void)unused;
	reclaim_begin(&s, RECLAIM_DROP_CACHES, "ignored", false, NOW, 65);
	assert_int_equal(s.result, RECLAIM_STARTED);	/* saved so before the write */
	assert_string_equal(s.target, "");		/* drop_caches has no target */
	assert_int_equal(s.last_ms, NOW);
	assert_string_equal(reclaim_message(&s, msg, sizeof(msg)),
			    "reclaim with vm.drop_caches=1 started with 65 dying memcgs");
	reclaim_end(&s, 0, 9, 1234);
	assert_int_equal(s.result, RECLAIM_OK);
	assert_int_equal(s.freed, 56);
	assert_int_equal(s.runs[RECLAIM_OK], 1);
	assert_string_equal(reclaim_message(&s, msg, sizeof(msg)),
			    "vm.drop_caches=1 freed 56 of 65 dying memcgs (9 left) in 1.2 s");

	/* memory.reclaim: EAGAIN is a partial success; the count may even grow meanwhile */
	reclaim_begin(&s, RECLAIM_MEMORY_RECLAIM, "system.slice", false, NOW + H, 100);
	reclaim_end(&s, -EAGAIN, 120, 500);
	assert_int_equal(s.result, RECLAIM_PARTIAL);
	assert_int_equal(s.freed, 56);			/* nothing freed: not negative */
	assert_non_null(strstr(reclaim_message(&s, msg, sizeof(msg)),
			       "memory.reclaim of system.slice freed 0 of 100"));
	assert_non_null(strstr(msg, "less than asked"));

	/* refused: no privilege */
	reclaim_begin(&s, RECLAIM_DROP_CACHES, NULL, false, NOW + 2 * H, 100);
	reclaim_end(&s, -EROFS, 100, 1);
	assert_int_equal(s.result, RECLAIM_FAILED);
	assert_int_equal(s.err, EROFS);
	assert_int_equal(s.runs[RECLAIM_FAILED], 1);
	assert_non_null(strstr(reclaim_message(&s, msg, sizeof(msg)), "refused: Read-only file"));
	assert_non_null(strstr(msg, "/proc/sys/vm writable"));

	/* dry run: counted, nothing freed */
	reclaim_begin(&s, RECLAIM_MEMORY_RECLAIM, "", true, NOW + 3 * H, 7);
	assert_int_equal(s.result, RECLAIM_DRY_RUN);
	assert_int_equal(s.runs[RECLAIM_DRY_RUN], 1);
	assert_string_equal(reclaim_message(&s, msg, sizeof(msg)),
			    "dry-run: would reclaim with memory.reclaim of /: 7 dying memcgs");
}

static void test_hostile_target(void **unused)
{
	struct reclaim_state s = { 0 }, back;
	char msg[400], *text = NULL;
	ssize_t n;

	(void)unused;
	/* a cgroup name is anyone's: a newline, a space, an escape and UTF-8 must not reach the
	 * state's lines, the Event or a terminal */
	reclaim_begin(&s, RECLAIM_MEMORY_RECLAIM, "evil slice\n\x1b[31m\xc3\xa9", false, NOW, 3);
	assert_string_equal(s.target, "evil?slice??[31m??");
	n = reclaim_state_format(&s, &text);
	assert_true(n > 0);
	assert_int_equal(reclaim_state_parse(text, (size_t)n, &back), 0);
	assert_string_equal(back.target, s.target);
	assert_non_null(strstr(reclaim_message(&back, msg, sizeof(msg)), "of evil?slice"));
	free(text);
}

static void test_state_roundtrip_and_bad(void **unused)
{
	struct reclaim_state s = { 0 }, back = { 0 }, keep;
	char *text = NULL;
	ssize_t n;
	static const char *const bad[] = {
		"since x\n", "method rm -rf\n", "result exploded\n", "runs ok\n", "runs bogus 1\n",
		"err 99999\n", "what is this\n", "before 18446744073709551616\n",
	};

	(void)unused;
	s.since_ms = NOW - H;
	s.seen_ms = NOW;
	reclaim_begin(&s, RECLAIM_MEMORY_RECLAIM, "kubepods.slice", false, NOW, 70000);
	reclaim_end(&s, 0, 12, 2500);
	n = reclaim_state_format(&s, &text);
	assert_true(n > 0 && (size_t)n < reclaim_state_type.max);
	assert_int_equal(reclaim_state_parse(text, (size_t)n, &back), 0);
	assert_int_equal(back.since_ms, s.since_ms);
	assert_int_equal(back.seen_ms, s.seen_ms);
	assert_int_equal(back.last_ms, s.last_ms);
	assert_int_equal(back.method, RECLAIM_MEMORY_RECLAIM);
	assert_int_equal(back.result, RECLAIM_OK);
	assert_int_equal(back.before, 70000);
	assert_int_equal(back.after, 12);
	assert_int_equal(back.took_ms, 2500);
	assert_int_equal(back.freed, 69988);
	assert_int_equal(back.runs[RECLAIM_OK], 1);
	assert_string_equal(back.target, "kubepods.slice");
	free(text);
	assert_false(reclaim_state_type.durable);	/* a reboot frees the zombies anyway */
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		keep = back;
		if (reclaim_state_parse(bad[i], strlen(bad[i]), &back) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_int_equal(back.freed, keep.freed);	/* untouched */
		assert_string_equal(back.target, keep.target);
	}
	/* an empty file is a fresh state */
	assert_int_equal(reclaim_state_parse("", 0, &back), 0);
	assert_int_equal(back.last_ms, 0);
}

static void test_amount(void **unused)
{
	uint64_t v = 0;

	(void)unused;
	assert_int_equal(reclaim_amount("anon 4096\nfile 900000000\ninactive_file 734003200\n"
					"active_file 1\n", NULL, &v), 0);
	assert_int_equal(v, 734003200);
	/* no memory.stat (the root before 6.x): meminfo's kB */
	assert_int_equal(reclaim_amount(NULL, "MemTotal:  100 kB\nInactive(file):  524288 kB\n",
					&v), 0);
	assert_int_equal(v, 524288ull * 1024);
	/* a memory.stat without it falls back too; "inactive_file_x" is not it */
	assert_int_equal(reclaim_amount("inactive_file_x 5\n", "Inactive(file): 2048 kB\n", &v), 0);
	assert_int_equal(v, 2048ull * 1024);
	/* tiny: at least 1 MiB */
	assert_int_equal(reclaim_amount("inactive_file 0\n", NULL, &v), 0);
	assert_int_equal(v, 1u << 20);
	assert_int_equal(reclaim_amount("garbage", "Inactive(file): lots\n", &v), -EINVAL);
	assert_int_equal(reclaim_amount(NULL, NULL, &v), -EINVAL);
	assert_int_equal(reclaim_amount(NULL, "Inactive(file): 99999999999999999999 kB\n", &v),
			 -EINVAL);
}

static void test_active_allowance(void **unused)
{
	static const char st[] = "inactive_file 734003200\nactive_file 28672\n";

	(void)unused;
	/* the zombies' few active pages: all of them (the 6.1 VM's: 7 pages, 32 zombies) */
	assert_int_equal(reclaim_active_allowance(st, 32), 28672);
	/* a live workload's big active list: no more than RECLAIM_ACTIVE_PER_MEMCG a zombie */
	assert_int_equal(reclaim_active_allowance("active_file 900000000\n", 3),
			 3 * RECLAIM_ACTIVE_PER_MEMCG);
	assert_int_equal(reclaim_active_allowance(st, 0), 0);
	assert_int_equal(reclaim_active_allowance("active_file 12288\n", UINT64_MAX), 12288);
	/* whole pages only: a remainder below 4 KiB is nothing to reclaim */
	assert_int_equal(reclaim_active_allowance("active_file 12289\n", 9), 12288);
	assert_int_equal(reclaim_active_allowance("active_file 1\n", 9), 0);
	/* absent, not a number, a longer key, or no memory.stat: nothing extra */
	assert_int_equal(reclaim_active_allowance("inactive_file 5\n", 9), 0);
	assert_int_equal(reclaim_active_allowance("active_file lots\n", 9), 0);
	assert_int_equal(reclaim_active_allowance("active_file_x 5\n", 9), 0);
	assert_int_equal(reclaim_active_allowance(NULL, 9), 0);
}

static void test_config_keys(void **unused)
{
	struct cz_config c;
	char errs[512];
	static const char good[] = "remediation:\n  reclaim: memory.reclaim\n  reclaim_interval: 2h\n";
	static const char bad[] = "remediation:\n  reclaim: echo3\n";
	static const char zero[] = "remediation:\n  reclaim_interval: 0s\n";

	(void)unused;
	config_defaults(&c);
	assert_int_equal(c.remediation.reclaim, CZ_RECLAIM_OFF);
	assert_int_equal(c.remediation.reclaim_interval_ms, H);
	assert_int_equal(config_load_string("t", good, strlen(good), &c, errs, sizeof(errs)), 0);
	assert_int_equal(c.remediation.reclaim, CZ_RECLAIM_MEMORY_RECLAIM);
	assert_int_equal(c.remediation.reclaim_interval_ms, 2 * H);
	assert_string_equal(config_reclaim_name(c.remediation.reclaim), "memory.reclaim");
	assert_int_equal(config_load_string("t", bad, strlen(bad), &c, errs, sizeof(errs)), -EINVAL);
	assert_non_null(strstr(errs, "expected off, memory.reclaim or drop_caches"));
	/* no rate limit is not a rate limit */
	assert_int_equal(config_load_string("t", zero, strlen(zero), &c, errs, sizeof(errs)),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_table),
		cmocka_unit_test(test_observe_clock),
		cmocka_unit_test(test_begin_end),
		cmocka_unit_test(test_hostile_target),
		cmocka_unit_test(test_state_roundtrip_and_bad),
		cmocka_unit_test(test_amount),
		cmocka_unit_test(test_active_allowance),
		cmocka_unit_test(test_config_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
