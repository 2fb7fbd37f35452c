/* SPDX-License-Identifier: MIT */
/*
 * checks/condmsg: what the checks' verdicts write is read back exactly, whole and cut by NPD at
 * max_output_length (80, NPD's default; 256, ours); a cut never yields a wrong number.
 */
#include "testutil.h"

#include <math.h>

#include "base/config.h"
#include "base/npd.h"
#include "cpu/burst.h"
#include "cpu/cpu.h"
#include "check/condmsg.h"
#include "ena/ena.h"
#include "memcg/memcg.h"
#include "host/ethtool.h"
#include "base/util.h"

static const size_t cuts[] = { 80, 256 };

/* The message NPD would publish when it cuts at @max: our line, cut, plus whether it was. */
static bool npd_cut(const struct npd_result *res, size_t max, char *buf, size_t size)
{
	size_t n = npd_format_line(res, max, buf, size);

	return n == max;
}

static void memcg_case(uint64_t dying, uint64_t live, bool growth, double per_hour,
		       const char *unit, uint64_t restarts, bool percpu)
{
	struct cz_config cfg;
	struct memcg_reading r = { .source = MEMCG_V1, .dying = dying, .live = live,
				   .has_growth = growth, .growth_per_hour = per_hour,
				   .has_percpu = percpu, .percpu_bytes = 1992704ull * 1024 };
	struct systemd_restarts sr = { .n = unit ? 2 : 0 };
	struct npd_result res;
	struct condmsg_memcg m;
	char line[NPD_MSG_MAX];
	double ratio = (double)dying / (double)(live ? live : 1);

	config_defaults(&cfg);
	if (unit) {
		snprintf(sr.u[0].name, sizeof(sr.u[0].name), "%s", unit);
		sr.u[0].restarts = restarts;
		sr.u[0].has_growth = true;
		sr.u[0].per_hour = 310;
		snprintf(sr.u[1].name, sizeof(sr.u[1].name), "containerd.service");
		sr.u[1].restarts = 2;
		condmsg_restarts_hint(&sr, r.hint, sizeof(r.hint));
	}
	memcg_verdict(&r, &cfg, &res);
	/* whole */
	assert_int_equal(condmsg_memcg_parse(res.msg, false, &m), 0);
	assert_true(m.has_counts);
	assert_int_equal(m.dying, dying);
	assert_int_equal(m.live, live);
	assert_true(m.has_ratio);
	/* printed as x%.0f from 10 up, x%.1f below */
	assert_true(fabs(m.ratio - ratio) <= (ratio >= 10 ? 0.5 : 0.05) + 1e-9);
	assert_int_equal(m.has_growth, growth);
	if (growth)
		assert_true(fabs(m.growth_per_hour - round(per_hour)) < 1e-9);
	if (m.has_leaker != (unit && res.status == NPD_PROBLEM))
		fail_msg("leaker in '%s'", res.msg);
	if (m.has_leaker) {
		assert_string_equal(m.leaker, unit);
		assert_int_equal(m.leaker_restarts, restarts);
	}
	/* cut: every field still reported is the true one; the head survives 80 bytes */
	for (size_t i = 0; i < ARRAY_SIZE(cuts); i++) {
		bool cut = npd_cut(&res, cuts[i], line, sizeof(line));

		assert_int_equal(condmsg_memcg_parse(line, cut, &m), 0);
		assert_int_equal(m.dying, dying);
		assert_int_equal(m.live, live);
		assert_true(m.has_ratio);
		if (m.has_growth)
			assert_true(fabs(m.growth_per_hour - round(per_hour)) < 1e-9);
		if (m.has_leaker) {
			assert_string_equal(m.leaker, unit);
			assert_int_equal(m.leaker_restarts, restarts);
		}
	}
}

static void test_memcg_roundtrip(void **state)
{
	memcg_case(12840, 241, true, 310, "ecs.service", 4211, true);
	memcg_case(12840, 241, false, 0, "ecs.service", 4211, false);	/* leaker ends the line */
	memcg_case(999, 3, true, -12, NULL, 0, true);			/* OK: limits */
	memcg_case(5300, 1000, false, 0, "a.service", 1, false);	/* x5.3: OK */
	memcg_case(18446744073709551ull % 10000000000000000000ull, 7, true, 123456, NULL, 0,
		   true);
	/* a unit name as long as a unit gets: cut at 80 mid-name, it is not reported */
	memcg_case(40210, 300, true, 310,
		   "kubelet-very-long-instance-name-for-a-templated@unit-0123456789abcdef.service",
		   987654, true);
	memcg_case(40210, 300, true, 2, "user@1000.service", 31, true);
}

static void test_memcg_cut_number(void **state)
{
	struct condmsg_memcg m;
	const char *s = "12840 dying memcgs vs 241 live (x53 >= x10); top restarts: ecs.service=42";

	/* the same text, whole or cut right after "=42" (was it "=4211"?) */
	assert_int_equal(condmsg_memcg_parse(s, false, &m), 0);
	assert_true(m.has_leaker);
	assert_int_equal(m.leaker_restarts, 42);
	assert_int_equal(condmsg_memcg_parse(s, true, &m), 0);
	assert_false(m.has_leaker);
	assert_int_equal(m.dying, 12840);
	/* cut inside the counts or the ratio */
	assert_int_equal(condmsg_memcg_parse("12840 dying memcgs vs 24", true, &m), -EINVAL);
	assert_int_equal(condmsg_memcg_parse("12840 dying memcgs vs 241 live (x5", true, &m), 0);
	assert_false(m.has_ratio);
	assert_int_equal(condmsg_memcg_parse("12840 dying memcgs vs 241 live (x53 >= x10); +31",
					     true, &m), 0);
	assert_false(m.has_growth);
}

static void test_memcg_not_ours(void **state)
{
	struct condmsg_memcg m;
	static const char *const bad[] = {
		"", "cannot read /proc/cgroups: No such file or directory",
		"no memory controller in /proc/cgroups", "kubelet is posting ready status",
		"99999999999999999999 dying memcgs vs 1 live (x1 >= x10)", /* 20 digits */
		"-5 dying memcgs vs 1 live", "12 dying memcgs vs", " 12 dying memcgs vs 1 live (",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&m, 0x5a, sizeof(m));
		assert_int_equal(condmsg_memcg_parse(bad[i], false, &m), -EINVAL);
		assert_false(m.has_counts);
	}
	/* hostile names are refused, the numbers kept */
	assert_int_equal(condmsg_memcg_parse("1 dying memcgs vs 1 live (x1.0; limits); "
					     "top restarts: a\x1b[2Jb=4", false, &m), 0);
	assert_false(m.has_leaker);
}

static void cpu_case(const char *comm, uint64_t len_ms, uint64_t stime_ms, const char *irqs,
		     const char *hot, unsigned hot_pct)
{
	struct burst_event ev = { .cpu = 39, .start_ms = 1000, .end_ms = 1000 + len_ms,
				  .peak_pct = 100, .mean_pct = 98, .metric = CZ_METRIC_SYSTEM,
				  .ntasks = comm ? 1 : 0 };
	struct cz_config cfg;
	struct npd_result res;
	struct condmsg_cpu c;
	char line[NPD_MSG_MAX];

	config_defaults(&cfg);
	snprintf(ev.irqs, sizeof(ev.irqs), "%s", irqs);
	if (comm)
		ev.task[0] = (struct burst_task){ 10, 11, "", stime_ms };
	if (comm)
		snprintf(ev.task[0].comm, sizeof(ev.task[0].comm), "%s", comm);
	snprintf(ev.hot, sizeof(ev.hot), "%s", hot);
	ev.hot_pct = hot_pct;
	assert_int_equal(cpu_verdict(&ev, 1, &cfg, "inline 3s: sampler stale 5m", &res),
			 NPD_PROBLEM);
	assert_int_equal(condmsg_cpu_parse(res.msg, false, &c), 0);
	assert_true(c.has_burst);
	assert_int_equal(c.cpu, 39);
	assert_true(fabs(c.peak_pct - 100) < 1e-9);
	assert_int_equal(c.len_ms, (len_ms + 50) / 100 * 100);
	assert_int_equal(c.count, 1);
	assert_int_equal(c.has_irq, irqs[0] != '\0');
	if (irqs[0])
		assert_true(strncmp(c.irq, irqs, strcspn(irqs, ",")) == 0);
	assert_int_equal(c.has_top, comm != NULL);
	if (comm) {
		assert_string_equal(c.top, comm);
		assert_int_equal(c.top_ms, (stime_ms + 50) / 100 * 100);
	}
	assert_int_equal(c.has_hot, comm && hot[0]);
	if (c.has_hot) {
		assert_string_equal(c.hot, hot);
		assert_int_equal(c.hot_pct, hot_pct);
	}
	for (size_t i = 0; i < ARRAY_SIZE(cuts); i++) {
		bool cut = npd_cut(&res, cuts[i], line, sizeof(line));

		assert_int_equal(condmsg_cpu_parse(line, cut, &c), 0);
		assert_int_equal(c.cpu, 39);
		if (c.has_top) {
			assert_string_equal(c.top, comm);
			assert_int_equal(c.top_ms, (stime_ms + 50) / 100 * 100);
		}
		if (c.has_hot) { /* read only when whole: a cut never yields a wrong function */
			assert_string_equal(c.hot, hot);
			assert_int_equal(c.hot_pct, hot_pct);
		}
		if (c.has_irq)
			assert_true(strncmp(c.irq, irqs, strcspn(irqs, ",")) == 0);
	}
}

static void test_cpu_roundtrip(void **state)
{
	cpu_case("kubelet", 6200, 5900, "eth0-Tx-Rx-5,ena-mgmnt@pci:0000:27:00.0", "", 0);
	cpu_case("kube let (x)", 9000, 100, "", "", 0);
	cpu_case(NULL, 2000, 0, "eth0-Tx-Rx-12", "", 0);
	cpu_case("kworker/39:1H", 123400, 120000,
		 "enp39s0-very-long-queue-name-Tx-Rx-63,other", "", 0);
	/* with the burst profile's hot function; a comm that looks like one */
	cpu_case("kubelet", 6200, 5900, "eth0-Tx-Rx-5", "memcg_numa_stat_show", 74);
	cpu_case("a in b 5%", 3000, 2900, "", "read_iter_zero", 100);
	cpu_case("a in b 5%", 3000, 2900, "", "", 0);
}

static void test_cpu_not_ours(void **state)
{
	struct condmsg_cpu c;

	assert_int_equal(condmsg_cpu_parse("no core >= 90% sys for >= 2.0s in 10m", false, &c),
			 -EINVAL);
	assert_int_equal(condmsg_cpu_parse("cpu3 100% sys 6.2", true, &c), -EINVAL);
	/* cut inside the top task's time: no top task, rather than a wrong one */
	assert_int_equal(condmsg_cpu_parse("cpu3 100% sys 6.2s x4/10m; top kubelet 5.", true, &c),
			 0);
	assert_false(c.has_top);
	assert_int_equal(condmsg_cpu_parse("cpu3 100% sys 6.2s x4/10m; serves eth0-Tx", true, &c),
			 0);
	assert_false(c.has_irq);
}

static struct ethtool_devdump dump(const char *text)
{
	struct ethtool_devdump *d, out;
	size_t n;
	struct ethtool_text_error e;

	if (ethtool_parse_text(text, strlen(text), &d, &n, &e) < 0)
		fail_msg("bad test text: line %u: %s", e.line, e.what);
	out = d[0];
	memset(&d[0], 0, sizeof(d[0]));
	ethtool_dumps_free(d, n);
	return out;
}

/* The cause the ENA verdict builds from two real-shaped dumps, written and read back. */
static void ena_case(const char *before, const char *after, const char *label)
{
	static const struct ena_lists def = { NULL, NULL, NULL };
	const struct ena_queue_cpu qc[] = { { 5, 39, 6200 } };
	struct ethtool_devdump b = dump(before), a = dump(after);
	struct ena_verdict v;
	struct npd_result res;
	struct condmsg_ena e;
	char line[NPD_MSG_MAX];

	assert_int_equal(ena_diff(&b, &a, &def, qc, ARRAY_SIZE(qc), &v), 0);
	ethtool_dump_free(&b);
	ethtool_dump_free(&a);
	npd_set(&res, NPD_PROBLEM, "%s", "");
	condmsg_ena_resets(&res, "eth0", v.resets, "1h", v.cause);
	condmsg_ena_resets(&res, "eth1", 1, "1h", "");
	npd_append(&res, "risk: missed_tx q5 +7");
	assert_int_equal(condmsg_ena_parse(res.msg, false, &e), 0);
	assert_string_equal(e.ifname, "eth0");
	assert_int_equal(e.resets, v.resets);
	assert_true(e.has_cause);
	assert_string_equal(e.cause, label);
	for (size_t i = 0; i < ARRAY_SIZE(cuts); i++) {
		bool cut = npd_cut(&res, cuts[i], line, sizeof(line));

		assert_int_equal(condmsg_ena_parse(line, cut, &e), 0);
		assert_int_equal(e.resets, v.resets);
		if (e.has_cause)
			assert_string_equal(e.cause, label);
	}
}

static void test_ena_roundtrip(void **state)
{
	struct condmsg_ena e;

	ena_case("  total_resets: 0\n  tx_timeout: 0\n  suspected_poll_starvation: 0\n"
		 "  queue_5_tx_missed_tx: 0\n",
		 "  total_resets: 2\n  tx_timeout: 2\n  suspected_poll_starvation: 1\n"
		 "  queue_5_tx_missed_tx: 7\n", "poll starvation");
	ena_case("  wd_expired: 0\n  tx_timeout: 0\n  reset_fail: 0\n",
		 "  wd_expired: 1\n  tx_timeout: 0\n  reset_fail: 1\n", "reset FAILED");
	ena_case("  wd_expired: 0\n  tx_timeout: 0\n", "  wd_expired: 0\n  tx_timeout: 3\n",
		 "tx_timeout");
	/* one reset, no cause */
	assert_int_equal(condmsg_ena_parse("eth0 1 reset/1h", false, &e), 0);
	assert_int_equal(e.resets, 1);
	assert_false(e.has_cause);
	/* a label cut mid-word is not a cause */
	assert_int_equal(condmsg_ena_parse("eth0 2 resets/1h: poll starv", true, &e), 0);
	assert_false(e.has_cause);
	assert_int_equal(condmsg_ena_parse("eth0: no ENA resets in 1h", false, &e), -EINVAL);
	assert_int_equal(condmsg_ena_parse("No ENA interface (drivers: ena)", false, &e), -EINVAL);
	assert_int_equal(condmsg_ena_parse("3 ENA interfaces: no resets in 1h", false, &e),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memcg_roundtrip), cmocka_unit_test(test_memcg_cut_number),
		cmocka_unit_test(test_memcg_not_ours),	cmocka_unit_test(test_cpu_roundtrip),
		cmocka_unit_test(test_cpu_not_ours),	cmocka_unit_test(test_ena_roundtrip),
	};
	return cmocka_run_group_tests_name("condmsg", tests, NULL, NULL);
}
