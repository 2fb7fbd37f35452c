/* SPDX-License-Identifier: MIT */
/* ena.c semantics and check_ena.c through the scripted SIOCETHTOOL seam. */
#include "testutil.h"

#include <stdlib.h>

#include "base/config.h"
#include "ena/check_ena.h"
#include "ena/ena.h"
#include "ena_fake.h"
#include "base/npd.h"
#include "base/state.h"
#include "base/util.h"

static const struct ena_lists DEF = { NULL, NULL, NULL };

static struct ethtool_devdump parse1(const char *text)
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

static void diff(const char *before, const char *after, const struct ena_queue_cpu *qc, size_t nqc,
		 struct ena_verdict *v)
{
	struct ethtool_devdump b = parse1(before), a = parse1(after);

	assert_int_equal(ena_diff(&b, &a, &DEF, qc, nqc, v), 0);
	ethtool_dump_free(&b);
	ethtool_dump_free(&a);
}

static void test_name_match(void **s)
{
	int q = 99;

	assert_true(ena_name_match("total_resets", "total_resets", &q));
	assert_int_equal(q, -1);
	assert_true(ena_name_match("queue_*_tx_missed_tx", "queue_17_tx_missed_tx", &q));
	assert_int_equal(q, 17);
	assert_false(ena_name_match("queue_*_tx_missed_tx", "queue__tx_missed_tx", NULL));
	assert_false(ena_name_match("queue_*_tx_missed_tx", "queue_1_tx_missed_tx_x", NULL));
	assert_false(ena_name_match("total_resets", "total_reset", NULL));
	/* a driver name cut to 31 characters matches the full name in a list */
	assert_true(ena_name_match("queue_*_tx_xdp_short_linear_part", "queue_3_tx_xdp_short_linear_par", &q));
	assert_int_equal(q, 3);
	assert_false(ena_name_match("queue_*_tx_xdp_short_linear_part", "queue_3_tx_xdp_short_linear_pa", NULL));
	assert_int_equal(ena_classify(&DEF, "suspected_poll_starvation", NULL), ENA_CLASS_RESET);
	assert_int_equal(ena_classify(&DEF, "queue_5_tx_missed_tx", &q), ENA_CLASS_RISK);
	assert_int_equal(q, 5);
	assert_int_equal(ena_classify(&DEF, "pps_allowance_exceeded", NULL), ENA_CLASS_ALLOWANCE);
	assert_int_equal(ena_classify(&DEF, "queue_5_tx_cnt", &q), ENA_CLASS_NONE);
	assert_int_equal(q, -1);
	assert_string_equal(ena_explain("nonsense"), "driver counter");
}

static void test_configured_lists(void **s)
{
	struct cz_strlist reset = { .n = 1 }, empty = { 0 };
	struct ena_lists l = { &reset, &empty, &empty };

	snprintf(reset.item[0], sizeof(reset.item[0]), "my_reset");
	assert_int_equal(ena_classify(&l, "my_reset", NULL), ENA_CLASS_RESET);
	assert_int_equal(ena_classify(&l, "total_resets", NULL), ENA_CLASS_NONE);
	assert_int_equal(ena_classify(&l, "queue_1_tx_missed_tx", NULL), ENA_CLASS_NONE);
}

#define OOT_REST "  reset_fail: 0\n  tx_timeout: 1\n  %s: %d\n" \
		 "  queue_5_tx_missed_tx: 0\n  interface_up: 5\n  interface_down: 4\n"

/* Out-of-tree 2.10+: total_resets plus one counter per reason, each named in the cause. */
static void test_oot_each_reason(void **s)
{
	static const struct {
		const char *counter, *cause;
	} reasons[] = {
		{ "suspected_poll_starvation", "poll starvation" },
		{ "missing_tx_cmpl", "missing Tx completions" },
		{ "missing_intr", "missing interrupt" },
		{ "missing_first_intr", "missing first interrupt" },
		{ "missing_admin_interrupt", "missing admin interrupt" },
		{ "admin_to", "admin queue timeout" },
		{ "os_netdev_wd", "netdev watchdog" },
		{ "device_request_reset", "device requested reset" },
		{ "bad_tx_req_id", "bad_tx_req_id +1" },
		{ "bad_rx_req_id", "bad_rx_req_id +1" },
		{ "bad_rx_desc_num", "bad_rx_desc_num +1" },
		{ "rx_desc_malformed", "rx_desc_malformed +1" },
		{ "tx_desc_malformed", "tx_desc_malformed +1" },
		{ "invalid_state", "invalid_state +1" },
		{ "wd_expired", "wd_expired +1" },
		{ "admin_q_pause", "admin_q_pause +1" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(reasons); i++) {
		char b[512], a[512];
		struct ena_verdict v;

		snprintf(b, sizeof(b), "  total_resets: 4\n" OOT_REST, reasons[i].counter, 0);
		snprintf(a, sizeof(a), "  total_resets: 5\n" OOT_REST, reasons[i].counter, 1);
		diff(b, a, NULL, 0, &v);
		if (v.resets != 1 || v.new_baseline)
			fail_msg("%s: resets %d baseline %d cause '%s' a='%s'", reasons[i].counter,
				 (int)v.resets, v.new_baseline, v.cause, a);
		if (!strstr(v.cause, reasons[i].cause))
			fail_msg("%s: cause '%s'", reasons[i].counter, v.cause);
	}
}

/* The message the issue asks for, byte for byte. */
static void test_poll_starvation_queue_cpu(void **s)
{
	const char *b = "  total_resets: 0\n  tx_timeout: 0\n  suspected_poll_starvation: 0\n"
			"  queue_4_tx_missed_tx: 0\n  queue_5_tx_missed_tx: 0\n";
	const char *a = "  total_resets: 2\n  tx_timeout: 2\n  suspected_poll_starvation: 1\n"
			"  queue_4_tx_missed_tx: 1\n  queue_5_tx_missed_tx: 7\n";
	const struct ena_queue_cpu qc[] = { { 5, 38, 0 }, { 5, 39, 6200 }, { 4, 2, 0 } };
	struct ena_verdict v;

	diff(b, a, qc, ARRAY_SIZE(qc), &v);
	assert_int_equal(v.resets, 2);
	assert_int_equal(v.queue, 5);
	assert_true(v.risk);
	if (strncmp(v.cause, "poll starvation q5 (cpu39 burst 6.2s); tx_timeout +2", 51) != 0)
		fail_msg("cause '%s'", v.cause);
	/* most important first in the explanation list */
	assert_string_equal(v.moved[0].name, "total_resets");
	diff(b, a, NULL, 0, &v);
	assert_true(strncmp(v.cause, "poll starvation q5; tx_timeout +2", 33) == 0);
}

static void test_upstream(void **s)
{
	const char *b = "  tx_timeout: 0\n  wd_expired: 1\n  interface_up: 1\n  interface_down: 0\n"
			"  admin_q_pause: 0\n  queue_0_tx_cnt: 500\n  queue_0_rx_cnt: 400\n";
	struct ena_verdict v;

	/* tx_timeout +2 and wd_expired +1: three resets, no total_resets in upstream */
	diff(b, "  tx_timeout: 2\n  wd_expired: 2\n  interface_up: 4\n  interface_down: 3\n"
		"  admin_q_pause: 0\n  queue_0_tx_cnt: 3\n  queue_0_rx_cnt: 1\n", NULL, 0, &v);
	assert_int_equal(v.resets, 3);
	assert_false(v.restart);
	assert_non_null(strstr(v.cause, "tx_timeout +2"));
	assert_non_null(strstr(v.cause, "wd_expired +1"));
	/* down/up with queue counters back to zero and no reset counter: a restart, not a reset */
	diff(b, "  tx_timeout: 0\n  wd_expired: 1\n  interface_up: 2\n  interface_down: 1\n"
		"  admin_q_pause: 0\n  queue_0_tx_cnt: 3\n  queue_0_rx_cnt: 1\n", NULL, 0, &v);
	assert_int_equal(v.resets, 0);
	assert_true(v.restart);
	assert_non_null(strstr(v.cause, "interface restarted"));
	/* nothing moved */
	diff(b, b, NULL, 0, &v);
	assert_int_equal(v.resets, 0);
	assert_false(v.restart || v.risk || v.throttled);
	assert_string_equal(v.cause, "");
}

static void test_reset_fail(void **s)
{
	struct ena_verdict v;

	diff("  reset_fail: 0\n  tx_timeout: 0\n", "  reset_fail: 1\n  tx_timeout: 1\n", NULL, 0, &v);
	assert_true(v.reset_fail);
	assert_int_equal(v.resets, 1);
	assert_true(strncmp(v.cause, "reset FAILED +1", 15) == 0);
}

static void test_counters_down(void **s)
{
	struct ena_verdict v;

	/* driver reload: reset counters back to zero -> new baseline, no negative delta */
	diff("  total_resets: 9\n  suspected_poll_starvation: 3\n  interface_up: 4\n",
	     "  total_resets: 0\n  suspected_poll_starvation: 0\n  interface_up: 1\n", NULL, 0, &v);
	assert_true(v.new_baseline);
	assert_int_equal(v.resets, 0);
	assert_int_equal(v.n_moved, 0);
	/* an allowance counter restarting from zero at a reset: delta 0, flagged */
	diff("  total_resets: 1\n  pps_allowance_exceeded: 500\n",
	     "  total_resets: 2\n  pps_allowance_exceeded: 3\n", NULL, 0, &v);
	assert_int_equal(v.resets, 1);
	assert_false(v.throttled);
	for (size_t i = 0; i < v.n_moved; i++)
		if (streq(v.moved[i].name, "pps_allowance_exceeded")) {
			assert_true(v.moved[i].went_down);
			assert_int_equal(v.moved[i].delta, 0);
		}
	/* a counter that appears only in the newer reading is its own baseline */
	diff("  tx_timeout: 0\n", "  tx_timeout: 0\n  total_resets: 7\n", NULL, 0, &v);
	assert_int_equal(v.resets, 0);
}

/* Across a reload a counter that went down counts from its new value; without one (no reset
 * counter and not interface_up went down) ena_diff_across_reload() is ena_diff(): a counter
 * that went down alone counts 0 (the fuzzer's case: bw_in_allowance_exceeded 314 -> 157). */
static void test_across_reload_only_after_a_reload(void **s)
{
	struct ethtool_devdump b = parse1("  total_resets: 1\n  bw_in_allowance_exceeded: 314\n"),
			       a = parse1("  total_resets: 1\n  bw_in_allowance_exceeded: 157\n");
	struct ena_verdict v, r;
	size_t k;

	assert_int_equal(ena_diff(&b, &a, &DEF, NULL, 0, &v), 0);
	assert_int_equal(ena_diff_across_reload(&b, &a, &DEF, &r), 0);
	assert_false(r.new_baseline);
	assert_int_equal(r.n_moved, 1);
	assert_int_equal(v.n_moved, 1);
	assert_true(r.moved[0].went_down && v.moved[0].went_down);
	assert_int_equal(r.moved[0].delta, 0);
	assert_int_equal(v.moved[0].delta, 0);
	assert_false(r.throttled);
	ethtool_dump_free(&b);
	ethtool_dump_free(&a);
	b = parse1("  interface_up: 3\n  bw_in_allowance_exceeded: 314\n");
	a = parse1("  interface_up: 1\n  bw_in_allowance_exceeded: 157\n");
	assert_int_equal(ena_diff_across_reload(&b, &a, &DEF, &r), 0);
	assert_true(r.new_baseline);
	for (k = 0; k < r.n_moved && !streq(r.moved[k].name, "bw_in_allowance_exceeded"); k++)
		;
	assert_true(k < r.n_moved && r.moved[k].went_down);
	assert_int_equal(r.moved[k].delta, 157);
	assert_true(r.throttled);
	ethtool_dump_free(&b);
	ethtool_dump_free(&a);
}

static void test_allowance(void **s)
{
	struct ethtool_devdump b = parse1("  bw_in_allowance_exceeded: 10\n  pps_allowance_exceeded: 5\n"
					  "  conntrack_allowance_available: 900\n");
	struct ethtool_devdump a = parse1("  bw_in_allowance_exceeded: 324\n  pps_allowance_exceeded: 5\n"
					  "  conntrack_allowance_available: 512\n");
	struct ena_allowance al;
	char buf[256];

	assert_int_equal(ena_allowance_diff(&b, &a, &DEF, 1000, &al), 0);
	assert_int_equal(al.n_rose, 1);
	assert_int_equal(al.rose[0].delta, 314);
	assert_true(al.below_floor);
	assert_string_equal(ena_allowance_format(&al, 1000, buf, sizeof(buf)),
			    "bw_in_allowance_exceeded +314; conntrack_allowance_available 512 < 1000");
	assert_int_equal(ena_allowance_diff(NULL, &a, &DEF, 0, &al), 0);
	assert_int_equal(al.n_rose, 0);
	assert_false(al.below_floor);
	ethtool_dump_free(&b);
	ethtool_dump_free(&a);
}

static void test_history_and_state(void **s)
{
	struct ena_state st = { 0 }, back = { 0 };
	struct ena_ifstate *f;
	char *buf;
	ssize_t n;

	f = ena_state_add(&st, "pci:0000:00:05.0");
	assert_non_null(f);
	f->base = parse1("  total_resets: 3\n  queue_0_tx_missed_tx: 1\n");
	snprintf(f->base.ifname, sizeof(f->base.ifname), "eth0");
	f->read_ms = 5000;
	ena_history_add(&f->hist, 1000, 2, "poll starvation q5; tx_timeout +2");
	ena_history_add(&f->hist, 4000, 1, "wd_expired +1");
	assert_int_equal(ena_history_resets(&f->hist), 3);
	st.read_ms = 5000;
	n = ena_state_format(&st, &buf);
	assert_true(n > 0);
	assert_int_equal(ena_state_parse(buf, (size_t)n, &back), 0);
	assert_int_equal(back.n, 1);
	assert_int_equal(back.read_ms, 5000);
	assert_string_equal(back.ifs[0].base.ifname, "eth0");
	assert_int_equal(back.ifs[0].hist.n, 2);
	assert_string_equal(back.ifs[0].hist.ev[0].cause, "poll starvation q5; tx_timeout +2");
	assert_int_equal(ethtool_dump_find(&back.ifs[0].base, "total_resets")->value, 3);
	ena_history_prune(&back.ifs[0].hist, 3600000 + 2000, 3600000);
	assert_int_equal(back.ifs[0].hist.n, 1); /* the event at 1000 fell out of the window */
	for (int i = 0; i < 40; i++)
		ena_history_add(&back.ifs[0].hist, 5000 + (uint64_t)i, 1, "x");
	assert_int_equal(back.ifs[0].hist.n, ENA_EVENTS_MAX);
	ena_state_free(&back);
	ena_state_free(&st);
	free(buf);
	/* garbage payloads are refused, output untouched */
	{
		static const char *bad[] = { "nonsense\n", "read x\n", "stat a 1\n", "iface k 1 a b\n",
					     "iface k 1 a b c\nstat a -1\n", "read 1\n\n",
					     "iface k 1 a b c\niface k 1 a b c\n" };
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			back.n = 42;
			assert_int_equal(ena_state_parse(bad[i], strlen(bad[i]), &back), -EINVAL);
			assert_int_equal(back.n, 42);
		}
	}
}

/* ---- the check through the scripted seam -------------------------------------------------- */

static struct fake F;
static char dir[64];
static struct cz_config cfg;

static int setup(void **s)
{
	tmptree_make(dir, sizeof(dir), "ena");
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

static struct fake_dev *oot(const char *name, const char *bus)
{
	struct fake_dev *d = fake_add(&F, name, "ena", bus);

	fake_set(d, "total_resets", 0);
	fake_set(d, "tx_timeout", 0);
	fake_set(d, "suspected_poll_starvation", 0);
	fake_set(d, "interface_up", 1);
	fake_set(d, "queue_5_tx_missed_tx", 0);
	fake_set(d, "queue_5_tx_cnt", 1000);
	fake_set(d, "bw_out_allowance_exceeded", 0);
	fake_set(d, "conntrack_allowance_available", 5000);
	return d;
}

static int run(uint64_t now, struct npd_result *res)
{
	struct ethtool_ops ops = fake_ops(&F);

	return ena_check_resets(&cfg, &ops, dir, now, NULL, res);
}

#define MIN (60u * 1000)

static void test_check_window(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct fake_dev *other = fake_add(&F, "veth9", "veth", "");
	struct npd_result res;

	fake_set(other, "peer_ifindex", 3);
	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	assert_non_null(strstr(res.msg, "eth0: no ENA resets in 1h"));
	fake_set(d, "total_resets", 1);
	fake_set(d, "suspected_poll_starvation", 1);
	fake_set(d, "queue_5_tx_missed_tx", 4);
	assert_int_equal(run(1001 * MIN, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "eth0 1 reset/1h: poll starvation q5", 35) == 0);
	/* nothing moves, but the reset is within the window: still True, same message */
	assert_int_equal(run(1030 * MIN, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "eth0 1 reset/1h: poll starvation q5", 35) == 0);
	/* a second reset adds up */
	fake_set(d, "total_resets", 2);
	fake_set(d, "tx_timeout", 2);
	assert_int_equal(run(1040 * MIN, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "eth0 2 resets/1h: tx_timeout +2", 31) == 0);
	/* the window passes */
	assert_int_equal(run(1101 * MIN + 1, &res), NPD_OK);
	assert_non_null(strstr(res.msg, "no ENA resets"));
}

static void test_check_rename_and_vanish(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct npd_result res;

	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	snprintf(d->name, sizeof(d->name), "ens5"); /* renamed: same bus_info, same baseline */
	fake_set(d, "total_resets", 1);
	fake_set(d, "tx_timeout", 1);
	assert_int_equal(run(1001 * MIN, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "ens5 1 reset/1h: tx_timeout +1", 30) == 0);
	d->gone = true; /* the device disappears: the reset still counts for the window */
	assert_int_equal(run(1002 * MIN, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "ens5 1 reset/1h", 15) == 0);
	assert_int_equal(run(1062 * MIN, &res), NPD_OK);
	assert_true(strncmp(res.msg, "No ENA interface (drivers: ena)", 31) == 0);
}

static void test_check_stale_baseline(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct npd_result res;

	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	fake_set(d, "total_resets", 3);
	fake_set(d, "tx_timeout", 3);
	/* two hours later: the resets may be older than the window; not a problem, said so */
	assert_int_equal(run(1120 * MIN, &res), NPD_OK);
	assert_non_null(strstr(res.msg, "older baseline than the window"));
}

static void test_check_reload_and_corrupt(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct npd_result res;
	char path[128];
	FILE *f;

	fake_set(d, "total_resets", 5);
	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	fake_set(d, "total_resets", 0); /* driver reloaded */
	assert_int_equal(run(1001 * MIN, &res), NPD_OK);
	assert_non_null(strstr(res.msg, "new baseline"));
	snprintf(path, sizeof(path), "%s/ena", dir);
	f = fopen(path, "w");
	fputs("cpuzombie-state 1 ena\ntotal_resets 999999\nend 00000000\n", f);
	fclose(f);
	fake_set(d, "total_resets", 1);
	assert_int_equal(run(1002 * MIN, &res), NPD_OK); /* never a false reset */
	assert_non_null(strstr(res.msg, "state was corrupt"));
	fake_set(d, "total_resets", 2);
	fake_set(d, "tx_timeout", 1);
	assert_int_equal(run(1003 * MIN, &res), NPD_PROBLEM); /* and works again afterwards */
}

static void test_check_rate_limit_and_count_change(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct npd_result res;
	unsigned calls;

	cfg.ena.min_read_interval_ms = 5000;
	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	calls = F.calls;
	fake_set(d, "total_resets", 1);
	assert_int_equal(run(1000 * MIN + 2000, &res), NPD_OK);
	assert_int_equal(F.calls, calls); /* within the interval: no ioctl at all */
	F.grow_at = F.calls + 3;	     /* the count changes between GSTRINGS and GSTATS */
	fake_set(d, "tx_timeout", 1);
	assert_int_equal(run(1000 * MIN + 6000, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "eth0 1 reset/1h: tx_timeout +1", 30) == 0);
}

/* The state file's inode: a rewrite (O_TMPFILE, rename) gives the name a new one. */
static ino_t file_ino(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

static void test_check_quiet_reads_keep_the_file(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct npd_result res;
	unsigned calls;
	ino_t ino;

	cfg.ena.min_read_interval_ms = 5000;
	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	ino = file_ino("ena");
	/* packets flowed and the conntrack gauge moved: nothing a verdict diffs, no rewrite */
	fake_set(d, "queue_5_tx_cnt", 5000);
	fake_set(d, "conntrack_allowance_available", 4000);
	calls = F.calls;
	assert_int_equal(run(1000 * MIN + 6000, &res), NPD_OK);
	assert_true(F.calls > calls); /* read */
	assert_true(file_ino("ena") == ino);
	assert_string_equal(res.msg, "eth0: no ENA resets in 1h");
	/* the rate limit counts from that read (the stamp), not from the state's own time */
	calls = F.calls;
	assert_int_equal(run(1000 * MIN + 8000, &res), NPD_OK);
	assert_int_equal(F.calls, calls);
	assert_string_equal(res.msg, "eth0: no ENA resets in 1h");
	/* a reset after quiet reads is caught, against the kept baseline, and written */
	fake_set(d, "total_resets", 1);
	fake_set(d, "tx_timeout", 1);
	assert_int_equal(run(1000 * MIN + 12000, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "eth0 1 reset/1h: tx_timeout +1", 30) == 0);
	assert_true(file_ino("ena") != ino);
	ino = file_ino("ena");
	assert_int_equal(run(1001 * MIN, &res), NPD_PROBLEM); /* still True, nothing new */
	assert_true(file_ino("ena") == ino);
	/* nothing changes, but the stored time is due a refresh (window/12 = 5 minutes) */
	assert_int_equal(run(1006 * MIN, &res), NPD_PROBLEM);
	assert_true(file_ino("ena") != ino);
	/* a risk counter that moved is news: written, so the next run does not say it again */
	ino = file_ino("ena");
	fake_set(d, "queue_5_tx_missed_tx", 3);
	assert_int_equal(run(1007 * MIN, &res), NPD_PROBLEM);
	assert_true(file_ino("ena") != ino);
}

static void test_check_kept_baseline_never_misses_a_reset(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct npd_result res;
	ino_t ino;

	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	ino = file_ino("ena");
	assert_int_equal(run(1004 * MIN, &res), NPD_OK); /* quiet: the state still says 1000 */
	assert_true(file_ino("ena") == ino);
	/* 59 minutes after the last read (63 after the stored time): within the window, a reset */
	fake_set(d, "total_resets", 1);
	fake_set(d, "tx_timeout", 1);
	assert_int_equal(run(1063 * MIN, &res), NPD_PROBLEM);
	assert_true(strncmp(res.msg, "eth0 1 reset/1h: tx_timeout +1", 30) == 0);
}

static void test_check_device_set_change_is_written(void **s)
{
	struct fake_dev *a = oot("eth0", "0000:00:05.0");
	struct npd_result res;
	ino_t ino;

	oot("eth1", "0000:00:06.0");
	assert_int_equal(run(1000 * MIN, &res), NPD_OK);
	ino = file_ino("ena");
	F.dev[1].gone = true; /* the last read saw two devices: this one sees one */
	assert_int_equal(run(1001 * MIN, &res), NPD_OK);
	assert_true(file_ino("ena") != ino);
	assert_string_equal(res.msg, "eth0: no ENA resets in 1h");
	ino = file_ino("ena");
	snprintf(a->name, sizeof(a->name), "ens5"); /* renamed: same key, new name */
	assert_int_equal(run(1002 * MIN, &res), NPD_OK);
	assert_true(file_ino("ena") != ino);
	assert_string_equal(res.msg, "ens5: no ENA resets in 1h");
}

static void test_baseline_same(void **s)
{
	struct ethtool_devdump a = parse1("NIC statistics:\n     total_resets: 1\n"
					  "     queue_0_tx_cnt: 10\n"
					  "     conntrack_allowance_available: 100\n");
	struct ethtool_devdump b = parse1("NIC statistics:\n     total_resets: 1\n"
					  "     queue_0_tx_cnt: 99\n"
					  "     conntrack_allowance_available: 7\n");
	struct ethtool_devdump c = parse1("NIC statistics:\n     total_resets: 2\n"
					  "     queue_0_tx_cnt: 10\n"
					  "     conntrack_allowance_available: 100\n");
	struct ethtool_devdump d = parse1("NIC statistics:\n     total_resets: 1\n"
					  "     queue_0_tx_cnt: 10\n");

	assert_true(ena_baseline_same(&a, &a));
	assert_true(ena_baseline_same(&a, &b));	 /* packets and the gauge only */
	assert_false(ena_baseline_same(&a, &c)); /* a reset counter moved */
	assert_false(ena_baseline_same(&a, &d)); /* a counter went away */
	snprintf(b.ifname, sizeof(b.ifname), "ens5");
	assert_false(ena_baseline_same(&a, &b)); /* renamed */
	ethtool_dump_free(&a);
	ethtool_dump_free(&b);
	ethtool_dump_free(&c);
	ethtool_dump_free(&d);
}

static void test_check_allowance_quiet_keeps_the_file(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct ethtool_ops ops = fake_ops(&F);
	struct npd_result res;
	ino_t ino;

	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1000 * MIN, &res), NPD_OK);
	ino = file_ino("ena-allowance");
	fake_set(d, "queue_5_tx_cnt", 9000);
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1001 * MIN, &res), NPD_OK);
	assert_true(file_ino("ena-allowance") == ino);
	/* a rise is an event once: written, so the next quiet read reports nothing */
	fake_set(d, "bw_out_allowance_exceeded", 4);
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1002 * MIN, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "eth0 bw_out_allowance_exceeded +4");
	assert_true(file_ino("ena-allowance") != ino);
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1003 * MIN, &res), NPD_OK);
}

static void test_check_unknown(void **s)
{
	struct npd_result res;
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct ethtool_ops ops = fake_ops(&F);

	d->no_drvinfo = false;
	assert_int_equal(ena_check_resets(&cfg, &ops, "/proc/cz-no-such/dir", 1, NULL, &res),
			 NPD_UNKNOWN);
	assert_non_null(strstr(res.msg, "state"));
}

static void test_check_allowance(void **s)
{
	struct fake_dev *d = oot("eth0", "0000:00:05.0");
	struct ethtool_ops ops = fake_ops(&F);
	struct npd_result res;

	cfg.ena.conntrack_floor = 1000;
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1000 * MIN, &res), NPD_OK);
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1001 * MIN, &res), NPD_OK);
	fake_set(d, "bw_out_allowance_exceeded", 530);
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1002 * MIN, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "eth0 bw_out_allowance_exceeded +530");
	/* an event per rise, not a condition: next run nothing rose */
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1003 * MIN, &res), NPD_OK);
	fake_set(d, "conntrack_allowance_available", 12);
	assert_int_equal(ena_check_allowance(&cfg, &ops, dir, 1004 * MIN, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "eth0 conntrack_allowance_available 12 < 1000");
	/* its state is its own: the reset check's baseline is untouched */
	assert_int_equal(access("/dev/null", F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_match),
		cmocka_unit_test(test_configured_lists),
		cmocka_unit_test(test_oot_each_reason),
		cmocka_unit_test(test_poll_starvation_queue_cpu),
		cmocka_unit_test(test_upstream),
		cmocka_unit_test(test_reset_fail),
		cmocka_unit_test(test_counters_down),
		cmocka_unit_test(test_across_reload_only_after_a_reload),
		cmocka_unit_test(test_allowance),
		cmocka_unit_test(test_history_and_state),
		cmocka_unit_test_setup_teardown(test_check_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_rename_and_vanish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_stale_baseline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_reload_and_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_rate_limit_and_count_change, setup, teardown),
		cmocka_unit_test(test_baseline_same),
		cmocka_unit_test_setup_teardown(test_check_allowance_quiet_keeps_the_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_quiet_reads_keep_the_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_kept_baseline_never_misses_a_reset, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_device_set_change_is_written, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_allowance, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
