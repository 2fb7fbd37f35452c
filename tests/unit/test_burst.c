/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "cpu/burst.h"
#include "cpu/cpu.h"
#include "cpu/history.h"
#include "base/util.h"

static const struct burst_params P = { .threshold_pct = 90.0, .min_burst_ms = 2000, .interval_ms = 250 };

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

/* Hysteresis: a 6 s burst at ~96% with single samples dipping (a neighbour stealing slices). */
static void test_dips(void **state)
{
	const struct burst_params H = { .threshold_pct = 90.0, .min_burst_ms = 2000,
					.interval_ms = 250, .hysteresis_pct = 10.0,
					.max_dip_ms = 250 };
	uint64_t t[40];
	double v[40];
	struct burst_run r[4];
	size_t n = series(t, v, 40, 4, 24, 96.0); /* samples 4..27 hot: 6 s */

	/* one-sample dips to 85% every 1 s of the first 4 s (the measured case) */
	v[7] = v[11] = v[15] = 85.0;
	assert_int_equal(burst_detect(t, v, n, &P, r, 4), 1); /* without hysteresis: only the end */
	assert_true(r[0].end_ms - r[0].start_ms < 4000);
	assert_int_equal(burst_detect(t, v, n, &H, r, 4), 1); /* with it: one 6 s burst */
	assert_true(r[0].start_ms == t[3] && r[0].end_ms == t[27]);
	assert_int_equal(r[0].samples, 24);
	assert_true(burst_mean(&r[0]) > 94.0 && burst_mean(&r[0]) < 96.0); /* dips in the mean */
	/* a dip below threshold - hysteresis ends it */
	v[11] = 96.0;
	v[13] = 79.0;
	assert_int_equal(burst_detect(t, v, n, &H, r, 4), 2);
	assert_true(r[0].start_ms == t[3] && r[0].end_ms == t[12] && r[1].start_ms == t[13]);
	assert_int_equal(r[0].samples, 9); /* the absorbed dip at 7 counts */
	/* two dips in a row are longer than max_dip (one sample): it ends with its last hot sample;
	 * a dip never starts the next run */
	v[13] = 85.0;
	v[14] = 85.0;
	v[15] = 96.0;
	assert_int_equal(burst_detect(t, v, n, &H, r, 4), 2);
	assert_true(r[0].end_ms == t[12] && r[0].samples == 9);
	assert_true(r[1].start_ms == t[14] && r[1].end_ms == t[27]);
	/* ...unless max_dip allows two samples */
	{
		struct burst_params H2 = H;

		H2.max_dip_ms = 500;
		assert_int_equal(burst_detect(t, v, n, &H2, r, 4), 1);
		assert_true(r[0].start_ms == t[3] && r[0].end_ms == t[27]);
	}
	/* trailing dips are not part of the burst: it ends at the last hot sample */
	series(t, v, 40, 4, 24, 96.0);
	v[28] = 85.0;
	assert_int_equal(burst_detect(t, v, n, &H, r, 4), 1);
	assert_true(r[0].end_ms == t[27] && r[0].samples == 24);
	/* a dip never starts a run, and an unusable sample ends one even inside the band */
	series(t, v, 40, 4, 24, 96.0);
	v[3] = 85.0;
	v[15] = -1.0;
	assert_int_equal(burst_detect(t, v, n, &H, r, 4), 2);
	assert_true(r[0].start_ms == t[3] && r[0].end_ms == t[14]);
}

/*
 * A short sample is judged over a nominal interval (burst.h): the sampler woke 100 ms late at
 * sample 10 and on time at 11, whose 150 ms held the 50 ms that the fair server gave other
 * tasks: 67% alone, 79% over 250 ms. The defaults' band (90 - 20) keeps the burst; a short
 * sample that is really cold still ends it, at its last hot sample.
 */
static void test_short_dip(void **state)
{
	const struct burst_params D = { .threshold_pct = 90.0, .min_burst_ms = 2000,
					.interval_ms = 250, .hysteresis_pct = 20.0,
					.max_dip_ms = 1000 };
	uint64_t t[40];
	double v[40];
	struct burst_run r[4];
	size_t n = series(t, v, 40, 4, 24, 96.0); /* samples 4..27 hot: 6 s */

	t[16] += 100;
	v[17] = 67.0;
	assert_int_equal(burst_detect(t, v, n, &D, r, 4), 1);
	assert_true(r[0].start_ms == t[3] && r[0].end_ms == t[27]);
	assert_int_equal(r[0].samples, 24);
	/* the same 67% over a whole interval is under the band: two runs */
	t[16] -= 100;
	assert_int_equal(burst_detect(t, v, n, &D, r, 4), 2);
	assert_true(r[0].end_ms == t[16] && r[1].start_ms == t[17]);
	/* a short sample that is really cold: (5 x 150 + 96 x 100) / 250 = 41%, the run ends */
	t[16] += 100;
	v[17] = 5.0;
	assert_int_equal(burst_detect(t, v, n, &D, r, 4), 2);
	assert_true(r[0].start_ms == t[3] && r[0].end_ms == t[16] && r[0].samples == 13);
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
	/* with a profile: the hot kernel function after the top task; the log keeps it */
	snprintf(ev.profile, sizeof(ev.profile), "cpu-profile-39-1000.folded");
	snprintf(ev.hot, sizeof(ev.hot), "memcg_numa_stat_show");
	ev.hot_pct = 74;
	assert_int_equal(cpu_verdict(&ev, 1, &cfg, NULL, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "cpu39 100% sys 6.2s x1/10m; serves eth0-Tx-Rx-5 +more; "
				     "top kube let (x) 5.9s in memcg_numa_stat_show 74%");
	n = burst_log_format(&ev, line, sizeof(line));
	assert_true(n > 0);
	assert_int_equal(burst_log_parse(line, 0, out, 4), 1);
	assert_string_equal(out[0].profile, ev.profile);
	assert_string_equal(out[0].hot, "memcg_numa_stat_show");
	assert_int_equal(out[0].hot_pct, 74);
	assert_string_equal(out[0].why, "");
	/* no profile, and why: an escaped reason */
	ev.profile[0] = ev.hot[0] = '\0';
	snprintf(ev.why, sizeof(ev.why), "no CAP_PERFMON (CAP_SYS_ADMIN before 5.8)");
	n = burst_log_format(&ev, line, sizeof(line));
	assert_non_null(strstr(line, " profile=- hot=- why=no%20CAP_PERFMON%20"));
	assert_int_equal(burst_log_parse(line, 0, out, 4), 1);
	assert_string_equal(out[0].why, ev.why);
	/* a profile that is a path, not a run-dir file name, is refused; so is a bad share */
	static const char *const bad[] = {
		"burst 1 2 3 9.0 9.0 system irqs=- tasks=- stack=- profile=..%2Fetc%2Fshadow hot=- why=-\n",
		"burst 1 2 3 9.0 9.0 system irqs=- tasks=- stack=- profile=x hot=- why=-\n",
		"burst 1 2 3 9.0 9.0 system irqs=- tasks=- stack=- profile=- hot=f/101 why=-\n",
		"burst 1 2 3 9.0 9.0 system irqs=- tasks=- stack=- profile=- hot=f why=-\n",
		"burst 1 2 3 9.0 9.0 system irqs=- tasks=- stack=- profile=- why=- hot=-\n",
		"burst 1 2 3 9.0 9.0 system irqs=- tasks=- stack=- profile=-\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(burst_log_parse(bad[i], 0, out, 4), -EINVAL);
	ev.why[0] = '\0';
	ev.end_ms = ev.start_ms + 1700; /* 7 samples: not a burst */
	assert_int_equal(cpu_verdict(&ev, 1, &cfg, "inline 3s: no sampler", &res), NPD_OK);
	assert_string_equal(res.msg, "no core >= 90% sys for >= 2.0s in 10m; inline 3s: no sampler");
}

/* The heartbeat's active bursts carry the tasks seen so far (report during a burst names them). */
static void test_heartbeat_active_tasks(void **state)
{
	static struct heartbeat hb, out;
	char buf[8192];
	int n;

	hb = (struct heartbeat){ .pid = 7, .time_ms = 5000, .interval_ms = 250,
				 .metric = CZ_METRIC_SYSTEM, .ncpu = 2, .nactive = 2 };
	hb.active[0] = (struct burst_event){ .cpu = 1, .start_ms = 1000, .end_ms = 4000,
					     .peak_pct = 100, .mean_pct = 97, .ntasks = 1 };
	hb.active[0].task[0] = (struct burst_task){ 42, 43, "dd x", 2900 };
	hb.active[1] = (struct burst_event){ .cpu = 0, .start_ms = 2000, .end_ms = 4500,
					     .peak_pct = 95, .mean_pct = 92 };
	n = heartbeat_format(&hb, buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(buf, "active 1 1000 4000 100.0 97.0 tasks=42/43/dd%20x/2900\n"));
	assert_non_null(strstr(buf, "active 0 2000 4500 95.0 92.0\n"));
	assert_int_equal(heartbeat_parse(buf, &out), 0);
	assert_int_equal(out.nactive, 2);
	assert_int_equal(out.active[0].ntasks, 1);
	assert_string_equal(out.active[0].task[0].comm, "dd x");
	assert_int_equal(out.active[1].ntasks, 0);
	assert_int_equal(heartbeat_parse("pid 1\ntime_ms 2\ninterval_ms 3\nmetric system\nncpu 1\n"
					 "stopped 0\nactive 0 1 2 3.0 3.0 stack=x\n", &out), -EINVAL);
}

/* Mid-burst links: an active burst carries its NIC IRQs, profile and hot frame. */
static void test_heartbeat_active_links(void **state)
{
	static struct heartbeat hb, out;
	static const char *const bad[] = {
		"irqs=a irqs=b", "profile=../x", "profile=other-1.folded", "hot=read_zero",
		"hot=read_zero/101", "color=red", "tasks=- tasks=-",
	};
	char buf[8192];
	int n;

	hb = (struct heartbeat){ .pid = 7, .time_ms = 5000, .interval_ms = 250,
				 .metric = CZ_METRIC_SYSTEM, .ncpu = 2, .nactive = 1 };
	hb.active[0] = (struct burst_event){ .cpu = 1, .start_ms = 1000, .end_ms = 4000,
					     .peak_pct = 100, .mean_pct = 97, .ntasks = 1,
					     .irqs = "eth0-Tx-Rx-1,eth0 x", .hot_pct = 94,
					     .profile = "cpu-profile-1-1000.folded",
					     .hot = "read_zero" };
	hb.active[0].task[0] = (struct burst_task){ 42, 43, "dd", 2900 };
	n = heartbeat_format(&hb, buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(buf, "active 1 1000 4000 100.0 97.0 tasks=42/43/dd/2900 "
				    "irqs=eth0-Tx-Rx-1%2Ceth0%20x profile=cpu-profile-1-1000.folded "
				    "hot=read_zero/94\n"));
	assert_int_equal(heartbeat_parse(buf, &out), 0);
	assert_string_equal(out.active[0].irqs, "eth0-Tx-Rx-1,eth0 x");
	assert_string_equal(out.active[0].profile, "cpu-profile-1-1000.folded");
	assert_string_equal(out.active[0].hot, "read_zero");
	assert_int_equal(out.active[0].hot_pct, 94);
	assert_int_equal(out.active[0].ntasks, 1);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(buf, sizeof(buf), "pid 1\ntime_ms 2\ninterval_ms 3\nmetric system\nncpu 1\n"
			 "stopped 0\nactive 0 1 2 3.0 3.0 %s\n", bad[i]);
		assert_int_equal(heartbeat_parse(buf, &out), -EINVAL);
	}
}

/* The heartbeat says who wrote it (host pid, boot id) for the check's liveness test; the burst
 * log and the ring drop stamps from the future. */
static void test_heartbeat_host_pid_and_future_stamps(void **state)
{
	static struct heartbeat hb, out;
	static const char *const bad[] = {
		"host_pid 0\n", "host_pid 2147483648\n", "host_pid 1\nhost_pid 2\n",
		"boot_id 0b2f6c1e-8a4d-4c3b-9e77-5f0d2a1c3b4\n",	/* short */
		"boot_id 0b2f6c1e-8a4d-4c3b-9e77-5f0d2a1c3b4E\n",	/* upper case: not the kernel's */
		"boot_id 0b2f6c1e+8a4d-4c3b-9e77-5f0d2a1c3b4e\n",
	};
	struct burst_event ev[4];
	char buf[8192];
	int n;

	hb = (struct heartbeat){ .pid = 7, .host_pid = 98765, .time_ms = 5000, .interval_ms = 250,
				 .metric = CZ_METRIC_SYSTEM, .ncpu = 2 };
	memcpy(hb.boot_id, "0b2f6c1e-8a4d-4c3b-9e77-5f0d2a1c3b4e", 37);
	n = heartbeat_format(&hb, buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(buf, "pid 7\nhost_pid 98765\nboot_id 0b2f6c1e-8a4d-4c3b-9e77-"
				    "5f0d2a1c3b4e\ntime_ms 5000\n"));
	assert_int_equal(heartbeat_parse(buf, &out), 0);
	assert_int_equal(out.host_pid, 98765);
	assert_string_equal(out.boot_id, hb.boot_id);
	/* an older agent's heartbeat has neither */
	assert_int_equal(heartbeat_parse("pid 1\ntime_ms 2\ninterval_ms 3\nmetric system\n"
					 "ncpu 1\nstopped 0\n", &out), 0);
	assert_int_equal(out.host_pid, 0);
	assert_string_equal(out.boot_id, "");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(buf, sizeof(buf), "pid 1\n%stime_ms 2\ninterval_ms 3\nmetric system\n"
			 "ncpu 1\nstopped 0\n", bad[i]);
		out.pid = 99;
		assert_int_equal(heartbeat_parse(buf, &out), -EINVAL);
		assert_int_equal(out.pid, 99);
	}
	snprintf(buf, sizeof(buf), "burst 0 1000 3000 99.0 98.0 system irqs=- tasks=- stack=-\n"
		 "burst 1 9000 12000 99.0 98.0 system irqs=- tasks=- stack=-\n");
	assert_int_equal(burst_log_parse_range(buf, 0, 10000, ev, 4), 1);
	assert_int_equal(ev[0].cpu, 0);
	assert_int_equal(burst_log_parse_range(buf, 0, 0, ev, 4), 2); /* 0: no limit */
	assert_int_equal(burst_log_parse_range(buf, 0, 12000, ev, 4), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_boundaries),
		cmocka_unit_test(test_gaps_and_jitter),
		cmocka_unit_test(test_dips), cmocka_unit_test(test_short_dip),
		cmocka_unit_test(test_log_roundtrip_and_verdict),
		cmocka_unit_test(test_heartbeat_active_tasks),
		cmocka_unit_test(test_heartbeat_active_links),
		cmocka_unit_test(test_heartbeat_host_pid_and_future_stamps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
