/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "cpu/cpustat.h"
#include "host/hostfs.h"
#include "base/util.h"

static char *slurp(const char *name)
{
	static char buf[1 << 20];
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/cpu/%s", FIXTURES, name);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static struct cpustat_core cores[256];

static void test_sizes(void **state)
{
	assert_int_equal(cpustat_parse(slurp("stat-2cpu.txt"), cores, 256), 2);
	assert_true(cores[0].present && cores[1].present && !cores[2].present);
	assert_int_equal(cpustat_parse(slurp("stat-96cpu.txt"), cores, 256), 96);
	assert_int_equal(cpustat_parse(slurp("stat-192cpu.txt"), cores, 256), 192);
	for (int i = 0; i < 192; i++)
		assert_true(cores[i].present);
	assert_false(cores[192].present);
	assert_int_equal(cpustat_parse(slurp("stat-192cpu.txt"), cores, 191), -E2BIG);
}

static void test_offline_short_extra(void **state)
{
	assert_int_equal(cpustat_parse(slurp("stat-offline-cpu2.txt"), cores, 8), 4);
	assert_true(cores[1].present && !cores[2].present && cores[3].present);
	assert_int_equal(cpustat_parse(slurp("stat-short-rows-2.6.10.txt"), cores, 8), 2);
	assert_int_equal(cores[1].f[CPUSTAT_SOFTIRQ], 1);
	assert_int_equal(cores[1].f[CPUSTAT_STEAL], 0);
	assert_int_equal(cpustat_parse(slurp("stat-four-fields-2.4.txt"), cores, 8), 2);
	assert_int_equal(cores[0].f[CPUSTAT_IDLE], 450);
	assert_int_equal(cpustat_parse(slurp("stat-extra-fields.txt"), cores, 8), 1);
	assert_int_equal(cores[0].f[CPUSTAT_GUEST_NICE], 10);
}

static void test_garbage_untouched(void **state)
{
	static const char *const bad[] = { "stat-garbage-row.txt", "stat-too-short-row.txt",
					   "stat-duplicate-cpu.txt" };
	static const char *const inline_bad[] = { "", "intr 1 2\n", "cpu0 1 2 3 -4\n",
						  "cpu0 1 2 3 4x\n", "cpux 1 2 3 4\n",
						  "cpu0 1 2 3 99999999999999999999999\n",
						  "cpu0\t1 2 3 4\n", "cpu123456 1 2 3 4\n" };
	struct cpustat_core before[4];

	memset(cores, 0x5a, sizeof(cores));
	memcpy(before, cores, sizeof(before));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(cpustat_parse(slurp(bad[i]), cores, 8), -EINVAL);
	for (size_t i = 0; i < ARRAY_SIZE(inline_bad); i++)
		assert_true(cpustat_parse(inline_bad[i], cores, 8) < 0);
	assert_memory_equal(before, cores, sizeof(before));
}

static void test_share_like_mpstat(void **state)
{
	struct cpustat_core a = { .present = true }, b = { .present = true }, off = { 0 };
	double pct = -1;

	/* 100 ticks: 50 user (10 of them guest), 30 sys, 5 irq, 5 softirq, 10 steal */
	b.f[CPUSTAT_USER] = 50, b.f[CPUSTAT_GUEST] = 10, b.f[CPUSTAT_SYSTEM] = 30;
	b.f[CPUSTAT_IRQ] = 5, b.f[CPUSTAT_SOFTIRQ] = 5, b.f[CPUSTAT_STEAL] = 10;
	assert_int_equal(cpustat_share(&a, &b, CZ_METRIC_SYSTEM, &pct), 0);
	assert_true(pct > 29.999 && pct < 30.001); /* guest not counted twice: total 100 */
	assert_int_equal(cpustat_share(&a, &b, CZ_METRIC_SYSTEM_IRQ, &pct), 0);
	assert_true(pct > 39.999 && pct < 40.001);
	assert_int_equal(cpustat_share(&a, &b, CZ_METRIC_BUSY, &pct), 0);
	assert_true(pct > 99.999);
	pct = -1;
	assert_int_equal(cpustat_share(&b, &a, CZ_METRIC_SYSTEM, &pct), -ERANGE); /* backwards */
	assert_int_equal(cpustat_share(&a, &a, CZ_METRIC_SYSTEM, &pct), -ERANGE); /* no time */
	assert_int_equal(cpustat_share(&off, &b, CZ_METRIC_SYSTEM, &pct), -ENODATA);
	assert_true(pct == -1);
	/* iowait going backwards (NO_HZ accounting) counts 0, as in mpstat */
	a.f[CPUSTAT_IOWAIT] = 7;
	b.f[CPUSTAT_IDLE] = 50;
	assert_int_equal(cpustat_share(&a, &b, CZ_METRIC_SYSTEM, &pct), 0);
	assert_true(pct > 19.999 && pct < 20.001);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_offline_short_extra),
		cmocka_unit_test(test_garbage_untouched),
		cmocka_unit_test(test_share_like_mpstat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
