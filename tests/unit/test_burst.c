/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "checks/burst.h"
#include "checks/cpu.h"
#include "checks/history.h"
#include "base/util.h"

static const struct burst_params P = { 90.0, 2000, 250 };

/* A series at 250 ms: @n0 cold, @hot samples at @pct, then cold to @len. */
static size_t series(uint64_t *t, double *v, size_t len, size_t n0, size_t hot, double pct)
{
	for (size_t i = 0; i < len; i++) {
		t[i] = 1000 + 250 * i;
		v[i] = i >= n0 && i < n0 + hot ? pct : 5.0;
	}
	return len;
}

static void test_exact_boundaries(void **state)
{
	uint64_t t[40];
	double v[40];
	struct burst_run r[4];

	/* 8 hot samples = 2.0 s: a burst from the 7th sample's time to the 15th's */
	series(t, v, 40, 8, 8, 100.0);
	assert_int_equal(burst_detect(t, v, 40, &P, r, 4), 1);
	assert_int_equal(r[0].start_ms, t[7]);
	assert_int_equal(r[0].end_ms, t[15]);
	assert_int_equal(r[0].samples, 8);
	assert_true(r[0].peak_pct == 100.0 && burst_mean(&r[0]) == 100.0);
	/* one sample short is not a burst */
	series(t, v, 40, 8, 7, 100.0);
	assert_int_equal(burst_detect(t, v, 40, &P, r, 4), 0);
	/* exactly at the threshold counts, just below does not */
	series(t, v, 40, 8, 8, 90.0);
	assert_int_equal(burst_detect(t, v, 40, &P, r, 4), 1);
	series(t, v, 40, 8, 20, 89.9);
	assert_int_equal(burst_detect(t, v, 40, &P, r, 4), 0);
	/* the very first sample has no interval start: it cannot be hot */
	series(t, v, 40, 0, 8, 100.0);
	assert_int_equal(burst_detect(t, v, 40, &P, r, 4), 0);
	/* a burst running to the end of the series is closed by burst_finish */
	series(t, v, 12, 2, 10, 95.0);
	assert_int_equal(burst_detect(t, v, 12, &P, r, 4), 1);
	assert_int_equal(r[0].end_ms, t[11]);
}

static void test_gaps_and_jitter(void **state)
{
	uint64_t t[30];
	double v[30];
	struct burst_run r[4];
	struct burst_tracker tr = { 0 };

	/* an unusable sample (offline CPU) splits two 6-sample runs: no burst */
	series(t, v, 30, 2, 13, 100.0);
	v[8] = -1.0;
	assert_int_equal(burst_detect(t, v, 30, &P, r, 4), 0);
	/* timer jitter: 8 samples 1 ms early each still make a burst (half-interval slack) */
	series(t, v, 30, 2, 8, 100.0);
	for (size_t i = 2; i < 30; i++)
		t[i] -= i - 1;
	assert_int_equal(burst_detect(t, v, 30, &P, r, 4), 1);
	/* a starved sampler: one 3 s interval at 95% is a burst by itself */
	assert_int_equal(burst_feed(&tr, &P, 1000, 0.0, &r[0]), 0);
	assert_int_equal(burst_feed(&tr, &P, 4000, 95.0, &r[0]), 0);
	assert_int_equal(burst_current(&tr, &P, &r[1]), 1);
	assert_int_equal(burst_feed(&tr, &P, 4250, 10.0, &r[0]), 1);
	assert_int_equal(r[0].end_ms - r[0].start_ms, 3000);
	/* time going backwards is ignored */
	assert_int_equal(burst_feed(&tr, &P, 100, 100.0, &r[0]), 0);
	assert_false(tr.active);
	/* storage bound */
	series(t, v, 30, 1, 9, 100.0);
	for (size_t i = 0; i < 30; i++)
		v[i] = (i % 10) ? 100.0 : 0.0; /* three runs of 9 */
	assert_int_equal(burst_detect(t, v, 30, &P, r, 2), 3);
	assert_int_equal(burst_detect(t, v, 30, NULL, r, 2), -EINVAL);
}

static void test_log_roundtrip_and_verdict(void **state)
{
	struct burst_event ev = { .cpu = 39, .start_ms = 1000, .end_ms = 7200, .peak_pct = 100,
				  .mean_pct = 98.5, .metric = CZ_METRIC_SYSTEM, .ntasks = 2 };
	struct burst_event out[4];
	struct cz_config cfg;
	struct npd_result res;
	char line[2048];
	int n;

	snprintf(ev.irqs, sizeof(ev.irqs), "eth0-Tx-Rx-5,ena-mgmnt@pci:0000:27:00.0");
	ev.task[0] = (struct burst_task){ 10, 11, "kube let (x)", 5900 };
	ev.task[1] = (struct burst_task){ 12, 12, "-", 100 };
	snprintf(ev.stack, sizeof(ev.stack), "mem_cgroup_flush_stats<memory_stat_show");
	n = burst_log_format(&ev, line, sizeof(line));
	assert_true(n > 0 && line[n - 1] == '\n');
	assert_int_equal(burst_log_parse(line, 0, out, 4), 1);
	assert_string_equal(out[0].task[0].comm, "kube let (x)");
	assert_string_equal(out[0].task[1].comm, "-");
	assert_string_equal(out[0].irqs, ev.irqs);
	assert_string_equal(out[0].stack, ev.stack);
	assert_int_equal(burst_log_parse(line, 7201, out, 4), 0); /* ended before lookback */
	assert_int_equal(burst_log_parse("burst 1 2 3\n", 0, out, 4), -EINVAL);
	assert_int_equal(burst_log_format(&ev, line, 40), -ENOBUFS);

	config_defaults(&cfg);
	assert_int_equal(cpu_verdict(&ev, 1, &cfg, NULL, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "cpu39 100% sys 6.2s x1/10m; serves eth0-Tx-Rx-5 +more; "
				     "top kube let (x) 5.9s");
	ev.end_ms = ev.start_ms + 1700; /* 7 samples: not a burst */
	assert_int_equal(cpu_verdict(&ev, 1, &cfg, "inline 3s: no sampler", &res), NPD_OK);
	assert_string_equal(res.msg, "no core >= 90% sys for >= 2.0s in 10m; inline 3s: no sampler");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_boundaries),
		cmocka_unit_test(test_gaps_and_jitter),
		cmocka_unit_test(test_log_roundtrip_and_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
