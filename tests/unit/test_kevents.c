/* SPDX-License-Identifier: MIT */
/*
 * The run dir's kernel-event log (klog/kevents.c) and what `check ena` makes of it
 * (ena/ena_kernel.c, check_ena.c's merge): resets logged by the kernel turn ENADeviceReset
 * True on a driver without reason counters, and never count twice with the counters.
 */

#include "testutil.h"

#include "ena/check_ena.h"
#include "check/condmsg.h"
#include "ena/ena_kernel.h"
#include "cpu/history.h"
#include "agent/metrics.h"
#include "node/model.h"
#include "view/render.h"
#include "view/svg.h"
#include "cpu/lockups.h"
#include "klog/kevents.h"
#include "base/npd.h"
#include "base/state.h"
#include "ena_fake.h"

static struct kevents K;

/* Record a message as the agent does (t_ms, seq), returning whether it was kept. */
static bool rec(struct kevents *k, uint64_t t_ms, uint64_t seq, const char *msg)
{
	struct klog_event e;

	if (klog_parse_message(msg, strlen(msg), NULL, 0, &e) != 1)
		return false;
	return kevents_record(k, &e, t_ms, seq, msg, strlen(msg));
}

static void test_record_and_roundtrip(void **s)
{
	static struct kevents back;
	char *payload = NULL;
	ssize_t n;
	struct klog_event e;

	memset(&K, 0, sizeof(K));
	snprintf(K.boot_id, sizeof(K.boot_id), "b324e3de-3280-41e0-8108-86ddaf81c015");
	K.have_seq = true;
	K.next_seq = 1240;
	K.lost = 3;
	K.overruns = 1;
	assert_true(rec(&K, 1000, 1, "ena 0000:00:05.0 eth0: Keep alive watchdog timeout."));
	assert_false(rec(&K, 1001, 2, "ena 0000:00:05.0 eth0: wd_expired: 1")); /* counted only */
	assert_true(rec(&K, 1002, 3, "ena 0000:00:05.0 eth0: Found a Tx that wasn't completed on "
				     "time, qid 0, index 1."));
	assert_false(rec(&K, 1003, 4, "ena 0000:00:05.0 eth0: Found a Tx that wasn't completed on "
				      "time, qid 0, index 2.")); /* a repeat within 10 s */
	assert_true(rec(&K, 1004, 5, "ena 0000:00:05.0 eth0: Found a Tx that wasn't completed on "
				     "time, qid 1, index 2.")); /* another queue */
	assert_true(rec(&K, 1005, 6, "watchdog: BUG: soft lockup - CPU#3 stuck for 23s! "
				     "[kube let:2212]\x01"));
	assert_int_equal(K.n, 4);
	assert_int_equal(K.count[KLOG_ENA_TX_MISSED], 3);
	assert_int_equal(K.count[KLOG_ENA_STAT], 1);
	assert_string_equal(K.ev[3].msg, "watchdog: BUG: soft lockup - CPU#3 stuck for 23s! "
					 "[kube let:2212]?"); /* made printable */
	n = kevents_format(&K, &payload);
	assert_true(n > 0);
	assert_int_equal(kevents_parse(payload, (size_t)n, &back), 0);
	assert_memory_equal(&back.count, &K.count, sizeof(K.count));
	assert_string_equal(back.boot_id, K.boot_id);
	assert_true(back.have_seq);
	assert_int_equal(back.next_seq, 1240);
	assert_int_equal(back.lost, 3);
	assert_int_equal(back.overruns, 1);
	assert_int_equal(back.n, 4);
	for (size_t i = 0; i < back.n; i++) {
		assert_string_equal(back.ev[i].msg, K.ev[i].msg);
		assert_int_equal(back.ev[i].t_ms, K.ev[i].t_ms);
		assert_int_equal(back.ev[i].seq, K.ev[i].seq);
	}
	assert_int_equal(kevents_event(&back, 3, &e), 1);
	assert_int_equal(e.kind, KLOG_SOFT_LOCKUP);
	assert_int_equal(e.clock, KLOG_CLOCK_WALL);
	assert_int_equal(e.t_us, 1005000);
	assert_int_equal(kevents_event(&back, 4, &e), 0); /* past the end */
	free(payload);
}

static void test_bounded_and_bad_payloads(void **s)
{
	static struct kevents k, untouched;
	static const char *const bad[] = {
		"nope 1\n", "ev 1 2\n", "ev x 2 text\n", "count no_such_kind 1\n", "count ena_reset x\n",
		"next_seq 1 2\n", "lost -1\n", "boot a/b\n", "boot \n",
	};
	char msg[64];

	memset(&k, 0, sizeof(k));
	for (unsigned i = 0; i < KEVENTS_MAX + 10; i++) {
		snprintf(msg, sizeof(msg), "ena 0000:00:05.0 eth%u: Trigger reset is on", i % 10);
		assert_true(rec(&k, i, i, msg));
	}
	assert_int_equal(k.n, KEVENTS_MAX);
	assert_int_equal(k.ev[0].seq, 10); /* the oldest went first */
	assert_int_equal(k.count[KLOG_ENA_TRIGGER], KEVENTS_MAX + 10);
	memset(&untouched, 0x5a, sizeof(untouched));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct kevents c = untouched;

		print_message("  '%s'\n", bad[i]);
		assert_int_equal(kevents_parse(bad[i], strlen(bad[i]), &c), -EINVAL);
		assert_memory_equal(&c, &untouched, sizeof(c));
	}
	/* a message of blanks only (fuzz_kmsg found it): kept as "?", so the log it is written
	 * into still parses back, with the same event */
	{
		static struct kevents b, again;
		static const char blanks[] = "ev 1796087964770 100  \n";
		char *payload = NULL;
		ssize_t n;

		assert_int_equal(kevents_parse(blanks, strlen(blanks), &b), 0);
		assert_int_equal(b.n, 1);
		assert_string_equal(b.ev[0].msg, "?");
		n = kevents_format(&b, &payload);
		assert_true(n > 0);
		assert_int_equal(kevents_parse(payload, (size_t)n, &again), 0);
		assert_int_equal(again.n, 1);
		assert_string_equal(again.ev[0].msg, "?");
		assert_int_equal(again.ev[0].seq, 100);
		free(payload);
	}
}

/* check cpu: a soft lockup is a burst on its CPU, unless the sampler already has that burst. */
static void test_soft_lockups_as_bursts(void **s)
{
	static struct burst_event ev[8];
	size_t n, added;

	memset(&K, 0, sizeof(K));
	memset(ev, 0, sizeof(ev));
	rec(&K, 100000, 1, "watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kubelet:2212]");
	rec(&K, 200000, 2, "watchdog: BUG: soft lockup - CPU#5 stuck for 22s! [kworker/5:1:88]");
	rec(&K, 5000, 3, "watchdog: BUG: soft lockup - CPU#6 stuck for 22s! [old:1]"); /* too old */
	/* the sampler saw cpu5 saturated over the same seconds: that is the same burst */
	ev[0] = (struct burst_event){ .cpu = 5, .start_ms = 170000, .end_ms = 190000 };
	n = kevents_soft_lockups(&K, 50000, ev, 1, ARRAY_SIZE(ev), &added);
	assert_int_equal(n, 2);
	assert_int_equal(added, 1);
	assert_int_equal(ev[1].cpu, 3);
	assert_int_equal(ev[1].start_ms, 77000);
	assert_int_equal(ev[1].end_ms, 100000);
	assert_true(ev[1].peak_pct == 100.0);
	assert_int_equal(ev[1].ntasks, 1);
	assert_string_equal(ev[1].task[0].comm, "kubelet");
	assert_int_equal(ev[1].task[0].pid, 2212);
	assert_int_equal(ev[1].task[0].stime_ms, 23000);
	/* full: nothing written past max */
	assert_int_equal(kevents_soft_lockups(&K, 0, ev, 2, 2, &added), 2);
	assert_int_equal(added, 0);
}

static struct ena_kernel KR;

static void test_kernel_resets_window(void **s)
{
	uint64_t now = 10 * 3600 * 1000ull, hour = 3600 * 1000ull;

	memset(&K, 0, sizeof(K));
	/* an old reset (outside the window) and a recent one linked to kubelet's lockup */
	rec(&K, now - 2 * hour, 1, "ena 0000:00:05.0 eth0: Keep alive watchdog timeout.");
	rec(&K, now - 2 * hour, 2, "ena 0000:00:05.0 eth0: Trigger reset is on");
	rec(&K, now - 2 * hour, 3, "ena 0000:00:05.0: Device reset completed successfully");
	rec(&K, now - 60000, 4, "watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kubelet:2212]");
	rec(&K, now - 50000, 5, "ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold "
				"5000000). Time since last napi 6596000 usec. napi scheduled: 1");
	rec(&K, now - 50000, 6, "ena 0000:00:05.0 eth0: napi handler hasn't been called for a long "
				"time but is scheduled");
	rec(&K, now - 49000, 7, "ena 0000:00:05.0 eth0: Trigger reset is on");
	rec(&K, now - 48000, 8, "ena 0000:00:05.0: Reset attempt failed. Can not reset the device");
	assert_int_equal(ena_kernel_resets(&K, now, hour, &KR), 0);
	assert_int_equal(KR.n, 1);
	assert_int_equal(KR.dev[0].resets, 1);
	assert_string_equal(KR.dev[0].ifname, "eth0");
	assert_string_equal(KR.dev[0].pci, "0000:00:05.0");
	assert_true(KR.dev[0].failed);
	assert_string_equal(KR.dev[0].cause,
			    "poll starvation q5 (cpu3 soft lockup kubelet); reset FAILED");
	assert_int_equal(ena_kernel_resets(&K, now, 3 * hour, &KR), 0);
	assert_int_equal(KR.dev[0].resets, 2);
	assert_ptr_equal(ena_kernel_find(&KR, "0000:00:05.0", NULL), &KR.dev[0]);
	assert_ptr_equal(ena_kernel_find(&KR, "", "eth0"), &KR.dev[0]);
	assert_null(ena_kernel_find(&KR, "0000:00:06.0", "eth1"));
}

/* The report and the metrics: kernel events as series, lines and heatmap markers. */
static void test_report_metrics_svg(void **s)
{
	struct cz_config c;
	struct node_model *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	json_object *j;

	config_defaults(&c);
	r = node_model_new(&c, 10 * 60 * 1000);
	assert_non_null(r);
	/* no log: no series, no section, no JSON key */
	f = open_memstream(&buf, &len);
	assert_int_equal(metrics_format(r, f), 0);
	fclose(f);
	assert_null(strstr(buf, "cpuzombie_kernel_events_total"));
	free(buf);
	r->kev = calloc(1, sizeof(*r->kev));
	assert_non_null(r->kev);
	rec(r->kev, 9 * 60 * 1000, 1, "watchdog: BUG: soft lockup - CPU#1 stuck for 23s! "
				      "[kubelet:2212]");
	rec(r->kev, 9 * 60 * 1000 + 500, 2, "ena 0000:00:05.0 eth0: Trigger reset is on");
	rec(r->kev, 9 * 60 * 1000 + 600, 3, "ena 0000:00:05.0 eth0: tx_timeout: 1");
	r->kev->lost = 7;
	f = open_memstream(&buf, &len);
	assert_int_equal(metrics_format(r, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\ncpuzombie_kernel_events_total{kind=\"soft_lockup\"} 1\n"));
	assert_non_null(strstr(buf, "\ncpuzombie_kernel_events_total{kind=\"ena_stat\"} 1\n"));
	assert_non_null(strstr(buf, "\ncpuzombie_kernel_events_total{kind=\"hung_task\"} 0\n"));
	assert_non_null(strstr(buf, "\ncpuzombie_kernel_records_lost_total 7\n"));
	free(buf);
	f = open_memstream(&buf, &len);
	report_print_kernel(r, f);
	fclose(f);
	assert_non_null(strstr(buf, "records lost"));
	assert_non_null(strstr(buf, "00:09:00  cpu1 soft lockup 23s (kubelet) pid 2212\n"));
	assert_non_null(strstr(buf, "00:09:00  eth0 reset starts\n"));
	free(buf);
	j = report_kernel_json(r);
	assert_non_null(j);
	assert_int_equal(json_object_array_length(json_object_object_get(j, "events")), 2);
	json_object_put(j);
	r->ncpu = 2;
	f = open_memstream(&buf, &len);
	assert_int_equal(svg_write(r, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "<g class=\"marker kernel soft_lockup\" id=\"kernel-0\">"));
	assert_non_null(strstr(buf, "<g class=\"marker kernel ena_reset_trigger\" id=\"kernel-1\">"));
	assert_non_null(strstr(buf, "purple: kernel log"));
	free(buf);
	node_model_free(r);
}

/* ---- through the check, with a scripted upstream device (no reason counters) -------------- */

static char dir[64];
static struct fake F;
static struct cz_config cfg;

static int setup(void **s)
{
	tmptree_make(dir, sizeof(dir), "kevents");
	config_defaults(&cfg);
	cfg.ena.min_read_interval_ms = 0;
	memset(&F, 0, sizeof(F));
	return 0;
}

static int teardown(void **s)
{
	tmptree_remove(dir);
	return 0;
}

/* The upstream driver's counters: no total_resets, no reason counters. */
static struct fake_dev *upstream(void)
{
	struct fake_dev *d = fake_add(&F, "eth0", "ena", "0000:00:05.0");

	fake_set(d, "tx_timeout", 0);
	fake_set(d, "wd_expired", 0);
	fake_set(d, "interface_up", 1);
	fake_set(d, "interface_down", 0);
	fake_set(d, "queue_0_tx_missed_tx", 0);
	fake_set(d, "queue_0_tx_cnt", 1000);
	return d;
}

static int check(uint64_t now, struct ena_kernel *kr, struct npd_result *res)
{
	struct ethtool_ops ops = fake_ops(&F);

	return ena_check_resets_kernel(&cfg, &ops, dir, now, NULL, kr, res);
}

static void test_check_merges_without_double_count(void **s)
{
	uint64_t t0 = 100 * 3600 * 1000ull;
	struct fake_dev *d = upstream();
	struct npd_result res;

	memset(&K, 0, sizeof(K));
	assert_int_equal(check(t0, NULL, &res), NPD_OK); /* first reading */
	/* a lost-Tx reset: the upstream driver moves no counter for it */
	rec(&K, t0 + 1000, 1, "ena 0000:00:05.0 eth0: The number of lost tx completions is above "
			      "the threshold (156 > 128). Reset the device");
	rec(&K, t0 + 1000, 2, "ena 0000:00:05.0 eth0: Trigger reset is on");
	rec(&K, t0 + 2000, 3, "ena 0000:00:05.0: Device reset completed successfully");
	assert_int_equal(ena_kernel_resets(&K, t0 + 60000, cfg.ena.window_ms, &KR), 0);
	assert_int_equal(check(t0 + 60000, &KR, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "eth0 1 reset/1h: lost Tx completions 156 > 128; kernel log");
	{ /* `cpuzombie fleet` reads it as any other reset message (condmsg.h) */
		struct condmsg_ena ce;

		assert_int_equal(condmsg_ena_parse(res.msg, false, &ce), 0);
		assert_string_equal(ce.ifname, "eth0");
		assert_int_equal(ce.resets, 1);
	}
	/* without the log the same counters say nothing happened */
	assert_int_equal(check(t0 + 61000, NULL, &res), NPD_OK);

	/* a keep-alive reset seen by both: wd_expired +1 and the kernel's lines: one reset */
	rec(&K, t0 + 70000, 4, "ena 0000:00:05.0 eth0: Keep alive watchdog timeout.");
	rec(&K, t0 + 70000, 5, "ena 0000:00:05.0 eth0: Trigger reset is on");
	fake_set(d, "wd_expired", 1);
	assert_int_equal(ena_kernel_resets(&K, t0 + 80000, cfg.ena.window_ms, &KR), 0);
	assert_int_equal(KR.dev[0].resets, 2);
	assert_int_equal(check(t0 + 80000, &KR, &res), NPD_PROBLEM);
	/* counters: 1 (wd_expired), log: 2: the log's count, never 3 */
	assert_string_equal(res.msg, "eth0 2 resets/1h: wd_expired +1; kernel log");
}

static void test_check_kernel_only_device(void **s)
{
	uint64_t t0 = 100 * 3600 * 1000ull;
	struct npd_result res;

	/* no ENA interface the ioctl sees (e.g. the driver is not in ena.drivers) */
	memset(&K, 0, sizeof(K));
	rec(&K, t0, 1, "ena 0000:00:06.0 eth1: ENA admin queue is not in running state!");
	rec(&K, t0, 2, "ena 0000:00:06.0 eth1: Trigger reset is on");
	assert_int_equal(ena_kernel_resets(&K, t0 + 1000, cfg.ena.window_ms, &KR), 0);
	assert_int_equal(check(t0 + 1000, &KR, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "eth1 1 reset/1h: admin queue timeout; kernel log");
	/* an hour and more later it has left the window */
	assert_int_equal(ena_kernel_resets(&K, t0 + 3601000, cfg.ena.window_ms, &KR), 0);
	assert_int_equal(check(t0 + 3601000, &KR, &res), NPD_OK);
}

static void test_load_from_run_dir(void **s)
{
	uint64_t t0 = 100 * 3600 * 1000ull;
	char *payload = NULL;
	ssize_t n;

	assert_int_equal(ena_kernel_load(dir, t0, cfg.ena.window_ms, &KR), 0); /* no log yet */
	assert_int_equal(KR.n, 0);
	memset(&K, 0, sizeof(K));
	rec(&K, t0, 1, "ena 0000:00:05.0 eth0: Keep alive watchdog timeout.");
	n = kevents_format(&K, &payload);
	assert_true(n > 0);
	assert_int_equal(state_save_volatile(dir, RUN_KERNEL_EVENTS, payload, (size_t)n), 0);
	free(payload);
	assert_int_equal(ena_kernel_load(dir, t0 + 1, cfg.ena.window_ms, &KR), 0);
	assert_int_equal(KR.n, 1);
	assert_string_equal(KR.dev[0].cause, "keep-alive watchdog timeout");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_and_roundtrip),
		cmocka_unit_test(test_bounded_and_bad_payloads),
		cmocka_unit_test(test_kernel_resets_window),
		cmocka_unit_test(test_soft_lockups_as_bursts),
		cmocka_unit_test(test_report_metrics_svg),
		cmocka_unit_test_setup_teardown(test_check_merges_without_double_count, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_kernel_only_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_from_run_dir, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
