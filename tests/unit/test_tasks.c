/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "cpu/history.h"
#include "host/tasks.h"
#include "base/util.h"

/* A stat line of tid @tid with @comm, stime @st and processor @cpu (52 fields, 6.x). */
static void stat_line(char *buf, size_t size, int tid, const char *comm, int st, int cpu)
{
	int o = snprintf(buf, size, "%d (%s) R 1 1 1 0 -1 4194304 10 0 0 0 7 %d", tid, comm, st);

	for (int f = 16; f <= 52; f++)
		o += snprintf(buf + o, size - (size_t)o, " %d", f == 39 ? cpu : 0);
	snprintf(buf + o, size - (size_t)o, "\n");
}

static void test_parse_stat(void **state)
{
	struct task_stat s, keep;
	char buf[512];

	stat_line(buf, sizeof(buf), 4242, "kube let) (x", 590, 39);
	assert_int_equal(tasks_parse_stat(buf, &s), 0);
	assert_int_equal(s.tid, 4242);
	assert_string_equal(s.comm, "kube let) (x");
	assert_int_equal(s.stime, 590);
	assert_int_equal(s.cpu, 39);
	/* 2.4 kernels end before processor: cpu unknown */
	assert_int_equal(tasks_parse_stat("7 (a) S 1 1 1 0 -1 0 0 0 0 0 1 2 3\n", &s), 0);
	assert_int_equal(s.cpu, -1);
	keep = s;
	static const char *const bad[] = { "", "7 a S 1", "7 (a) S 1 2\n", "x (a) S 1 1 1 0 -1 0 0 0 0 0 1 2\n",
					   "7 (a)S 1\n", "7 (a) S 1 1 1 0 -1 0 0 0 0 0 1 -2\n" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(tasks_parse_stat(bad[i], &s), -EINVAL);
	assert_memory_equal(&s, &keep, sizeof(s));
}

static void test_parse_stack(void **state)
{
	char buf[256];

	assert_int_equal(tasks_parse_stack("[<0>] mem_cgroup_flush_stats+0x1a/0x40\n"
					   "[<0>] memory_numa_stat_show+0x20/0x300\n", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "mem_cgroup_flush_stats<memory_numa_stat_show");
	assert_int_equal(tasks_parse_stack("", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(tasks_parse_stack("garbage\n", buf, sizeof(buf)), -EINVAL);
}

static void test_account(void **state)
{
	struct tasks_tracker t;
	struct task_stat a[3] = { { 1, 1, "dd", 100, 1 }, { 2, 2, "kubelet", 50, 0 },
				  { 3, 3, "idle", 0, 1 } };
	struct task_stat b[3] = { { 1, 1, "dd", 400, 1 }, { 2, 2, "kubelet", 90, 1 },
				  { 4, 4, "new", 30, 1 } };
	bool watch[2] = { false, true };
	struct burst_event ev;
	int best[2];

	assert_int_equal(tasks_tracker_init(&t, 2), 0);
	t.hz = 100;
	tasks_account(&t, a, 3, watch, best); /* baseline only */
	assert_int_equal(best[1], -1);
	tasks_account(&t, b, 3, watch, best);
	assert_int_equal(best[1], 0); /* dd gained 300 ticks */
	ev.ntasks = tasks_take(&t, 1, ev.task, HISTORY_TASKS_MAX, ev.stack, sizeof(ev.stack));
	assert_int_equal(ev.ntasks, 3);
	assert_string_equal(ev.task[0].comm, "dd");
	assert_int_equal(ev.task[0].stime_ms, 3000);
	assert_string_equal(ev.task[1].comm, "kubelet");
	assert_int_equal(ev.task[1].stime_ms, 400);
	assert_string_equal(ev.task[2].comm, "new"); /* born between scans: all its time */
	ev.ntasks = tasks_take(&t, 1, ev.task, HISTORY_TASKS_MAX, ev.stack, sizeof(ev.stack));
	assert_int_equal(ev.ntasks, 0); /* taken: reset */
	tasks_tracker_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_parse_stack),
		cmocka_unit_test(test_account),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
