/* SPDX-License-Identifier: MIT */
/* The pure sampler (cpu/sampler.h): /proc/stat texts of a known tick series in, shares and
 * bursts out, with the agent's defaults (250 ms, >= 90 % system for >= 2 s). */
#include "testutil.h"

#include "cpu/sampler.h"

static const struct sampler_params P = {
	.metric = CZ_METRIC_SYSTEM,
	.burst = { .threshold_pct = 90.0, .min_burst_ms = 2000, .interval_ms = 250 },
};

/* Cumulative ticks of up to 4 CPUs; a CPU with online[c] false has no row (offline). */
struct ticks {
	uint64_t user[4], system[4], idle[4];
	bool offline[4];
};

/* Advances @k by one 250 ms interval (25 ticks at USER_HZ 100) with @sys_pct system time on
 * each CPU (rest idle), and writes the /proc/stat text of the result into @buf. */
static const char *step(struct ticks *k, unsigned ncpu, const unsigned *sys_pct, char *buf,
			size_t size)
{
	size_t off = (size_t)snprintf(buf, size, "cpu  1 2 3 4 0 0 0 0 0 0\n");

	for (unsigned c = 0; c < ncpu; c++) {
		unsigned sys = 25 * sys_pct[c] / 100;

		k->system[c] += sys;
		k->idle[c] += 25 - sys;
		if (k->offline[c])
			continue;
		off += (size_t)snprintf(buf + off, size - off,
					"cpu%u %llu 0 %llu %llu 0 0 0 0 0 0\n", c,
					(unsigned long long)k->user[c],
					(unsigned long long)k->system[c],
					(unsigned long long)k->idle[c]);
	}
	snprintf(buf + off, size - off, "intr 0\nctxt 1\nbtime 2\nprocesses 3\n");
	return buf;
}

/* Feeds @n intervals with the shares in @pct (ncpu each) starting at @t; returns bursts. */
static int feed(struct sampler *s, struct ticks *k, uint64_t *t, const unsigned *pct, size_t n,
		struct sampler_burst *ret, size_t max)
{
	char buf[1024];
	int found = 0;

	for (size_t i = 0; i < n; i++) {
		int r;

		*t += 250;
		r = sampler_feed(s, *t, step(k, s->ncpu, pct, buf, sizeof(buf)),
				 ret ? ret + found : NULL, ret ? max - (size_t)found : 0);
		assert_true(r >= 0);
		found += r;
	}
	return found;
}

static void test_first_reading_only_starts(void **state)
{
	struct sampler s;
	struct ticks k = { 0 };
	unsigned pct[2] = { 100, 100 };
	char buf[1024];

	assert_int_equal(sampler_init(&s, 2, &P), 0);
	assert_int_equal(s.shares[0], SAMPLER_NO_SHARE);
	assert_int_equal(sampler_feed(&s, 1000, step(&k, 2, pct, buf, sizeof(buf)), NULL, 0), 0);
	assert_int_equal(s.shares[0], SAMPLER_NO_SHARE); /* nothing to compare with yet */
	assert_int_equal(sampler_feed(&s, 1250, step(&k, 2, pct, buf, sizeof(buf)), NULL, 0), 0);
	assert_int_equal(s.shares[0], 100);
	assert_int_equal(s.shares[1], 100);
	sampler_done(&s);
}

static void test_burst_on_one_core(void **state)
{
	struct sampler s;
	struct ticks k = { 0 };
	struct sampler_burst b[4];
	unsigned cold[2] = { 4, 8 }, hot[2] = { 4, 100 };
	uint64_t t = 1000;

	assert_int_equal(sampler_init(&s, 2, &P), 0);
	assert_int_equal(feed(&s, &k, &t, cold, 3, NULL, 0), 0);
	assert_int_equal(s.shares[0], 4);
	assert_int_equal(s.shares[1], 8);
	/* 8 hot intervals = 2 s on cpu1 only */
	assert_int_equal(feed(&s, &k, &t, hot, 1, NULL, 0), 0);
	assert_true(s.started[1] && s.watch[1]);
	assert_false(s.started[0] || s.watch[0]);
	assert_int_equal(feed(&s, &k, &t, hot, 7, NULL, 0), 0);
	assert_false(s.started[1]);
	assert_int_equal(sampler_active(&s, b, 4), 1); /* qualifies before it ends */
	assert_int_equal(b[0].cpu, 1);
	memset(b, 0, sizeof(b));
	assert_int_equal(feed(&s, &k, &t, cold, 1, b, 4), 1); /* it ends with the cold sample */
	assert_int_equal(b[0].cpu, 1);
	assert_int_equal(b[0].run.end_ms - b[0].run.start_ms, 2000);
	assert_int_equal(b[0].run.samples, 8);
	assert_true(b[0].run.peak_pct == 100.0);
	assert_true(s.watch[1]); /* watched once more as the run ends */
	assert_int_equal(feed(&s, &k, &t, cold, 1, NULL, 0), 0);
	assert_false(s.watch[1]);
	assert_int_equal(sampler_active(&s, b, 4), 0);
	sampler_done(&s);
}

static void test_short_run_is_no_burst(void **state)
{
	struct sampler s;
	struct ticks k = { 0 };
	struct sampler_burst b[4];
	unsigned cold[1] = { 0 }, hot[1] = { 100 };
	uint64_t t = 1000;

	assert_int_equal(sampler_init(&s, 1, &P), 0);
	assert_int_equal(feed(&s, &k, &t, cold, 2, NULL, 0), 0);
	assert_int_equal(feed(&s, &k, &t, hot, 7, NULL, 0), 0); /* 1.75 s */
	assert_int_equal(sampler_active(&s, b, 4), 0);
	assert_int_equal(feed(&s, &k, &t, cold, 1, b, 4), 0);
	sampler_done(&s);
}

static void test_bad_reading_leaves_the_series(void **state)
{
	struct sampler s;
	struct ticks k = { 0 };
	struct sampler_burst b[2] = { { 77, { 0 } }, { 77, { 0 } } };
	unsigned hot[2] = { 100, 0 };
	char buf[1024];
	uint64_t t = 1000;

	assert_int_equal(sampler_init(&s, 2, &P), 0);
	assert_int_equal(feed(&s, &k, &t, hot, 5, NULL, 0), 0); /* a baseline + 4 intervals */
	assert_int_equal(sampler_feed(&s, t + 250, "cpu0 1 2\n", b, 2), -EINVAL);
	assert_int_equal(sampler_feed(&s, t + 250, "cpu9 1 2 3 4\n", b, 2), -E2BIG);
	assert_int_equal(sampler_feed(&s, t + 250, "", b, 2), -EINVAL);
	assert_int_equal(b[0].cpu, 77); /* untouched */
	assert_int_equal(s.shares[0], 100);
	/* the skipped interval folds into the next good one: 2 x 25 ticks, all system */
	step(&k, 2, hot, buf, sizeof(buf));
	t += 500;
	assert_int_equal(sampler_feed(&s, t, step(&k, 2, hot, buf, sizeof(buf)), b, 2), 0);
	assert_int_equal(s.shares[0], 100);
	assert_int_equal(feed(&s, &k, &t, hot, 2, NULL, 0), 0);
	assert_int_equal(sampler_finish(&s, b, 2), 1); /* 1 s + 0.5 s + 0.5 s */
	assert_int_equal(b[0].cpu, 0);
	assert_int_equal(b[0].run.end_ms - b[0].run.start_ms, 2000);
	assert_int_equal(b[0].run.samples, 7);
	sampler_done(&s);
}

static void test_offline_cpu_ends_its_run(void **state)
{
	struct sampler s;
	struct ticks k = { 0 };
	struct sampler_burst b[2];
	unsigned hot[3] = { 100, 100, 0 };
	uint64_t t = 1000;

	assert_int_equal(sampler_init(&s, 3, &P), 0);
	assert_int_equal(feed(&s, &k, &t, hot, 10, NULL, 0), 0);
	k.offline[1] = true; /* cpu1 unplugged: its run ends where its samples stop */
	assert_int_equal(feed(&s, &k, &t, hot, 1, b, 2), 1);
	assert_int_equal(b[0].cpu, 1);
	assert_int_equal(s.shares[1], SAMPLER_NO_SHARE);
	assert_int_equal(s.shares[0], 100);
	assert_int_equal(sampler_finish(&s, b, 2), 1);
	assert_int_equal(b[0].cpu, 0);
	assert_true(s.watch[0]);
	sampler_done(&s);
}

static void test_more_bursts_than_room(void **state)
{
	struct sampler s;
	struct ticks k = { 0 };
	struct sampler_burst b[2];
	unsigned hot[4] = { 100, 100, 100, 95 }, cold[4] = { 0, 0, 0, 0 };
	uint64_t t = 1000;

	assert_int_equal(sampler_init(&s, 4, &P), 0);
	assert_int_equal(feed(&s, &k, &t, hot, 9, NULL, 0), 0);
	assert_int_equal(sampler_active(&s, b, 2), 2);
	assert_int_equal(feed(&s, &k, &t, cold, 1, b, 2), 4); /* all counted, two stored */
	assert_int_equal(b[0].cpu, 0);
	assert_int_equal(b[1].cpu, 1);
	sampler_done(&s);
}

static void test_metric_busy(void **state)
{
	struct sampler_params p = P;
	struct sampler s;
	char buf[256];

	/* 50 % user + 45 % system: not a system-time burst, but a busy one */
	p.metric = CZ_METRIC_BUSY;
	assert_int_equal(sampler_init(&s, 1, &p), 0);
	assert_int_equal(sampler_feed(&s, 1000, "cpu0 0 0 0 100 0 0 0 0 0 0\n", NULL, 0), 0);
	snprintf(buf, sizeof(buf), "cpu0 50 0 45 105 0 0 0 0 0 0\n");
	assert_int_equal(sampler_feed(&s, 1250, buf, NULL, 0), 0);
	assert_int_equal(s.shares[0], 95);
	sampler_done(&s);
	assert_int_equal(sampler_init(&s, 1, &P), 0);
	assert_int_equal(sampler_feed(&s, 1000, "cpu0 0 0 0 100 0 0 0 0 0 0\n", NULL, 0), 0);
	assert_int_equal(sampler_feed(&s, 1250, buf, NULL, 0), 0);
	assert_int_equal(s.shares[0], 45);
	sampler_done(&s);
}

static void test_init_refuses(void **state)
{
	struct sampler_params p = P;
	struct sampler s;

	assert_int_equal(sampler_init(&s, 0, &P), -EINVAL);
	assert_int_equal(sampler_init(&s, CPUSTAT_MAX_CPUS + 1, &P), -EINVAL);
	p.burst.interval_ms = 0;
	assert_int_equal(sampler_init(&s, 1, &p), -EINVAL);
	sampler_done(&s); /* safe on what a failed init left */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_reading_only_starts),
		cmocka_unit_test(test_burst_on_one_core),
		cmocka_unit_test(test_short_run_is_no_burst),
		cmocka_unit_test(test_bad_reading_leaves_the_series),
		cmocka_unit_test(test_offline_cpu_ends_its_run),
		cmocka_unit_test(test_more_bursts_than_room),
		cmocka_unit_test(test_metric_busy),
		cmocka_unit_test(test_init_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
