/* SPDX-License-Identifier: MIT */
/*
 * The kernel-log reader (klog/klog.c, klog_reader.c): one table row per message family, one
 * per prefix style, and the grouping into resets (klog_incident.c). Each line's text is the
 * format string of the source named beside it, filled with plausible values; no line is made
 * up without a source.
 */
#include "testutil.h"

#include "ena/klog_incident.h"
#include "base/util.h"

struct msg_case {
	const char *src; /* where the format comes from */
	const char *msg;
	enum klog_kind kind;
	int queue, cpu, pid;
	uint64_t n1, n2;
	const char *ifname, *pci, *comm, *stat;
	bool cont;
};

static const struct msg_case msgs[] = {
	{ "linux ena_netdev.c ena_tx_timeout() 5.19+, amzn-drivers 2.11.0",
	  "ena 0000:20:03.0 eth0: TX q 5 is paused for too long (threshold 5000000). Time since last "
	  "napi 6596000 usec. napi scheduled: 1",
	  KLOG_ENA_TX_TIMEOUT, 5, -1, -1, 6596000, 5000000, "eth0", "0000:20:03.0", "", "", false },
	{ "amzn-drivers 2.17.0 ena_tx_timeout()",
	  "ena 0000:00:05.0 eth0: TX q 2 is paused for too long (threshold 5000000). usecs since "
	  "napi 7001000. napi scheduled: 1. napi CPU: 11. msecs since interrupt: 7001",
	  KLOG_ENA_TX_TIMEOUT, 2, 11, -1, 7001000, 5000000, "eth0", "0000:00:05.0", "", "", false },
	{ "linux/amzn-drivers ena_tx_timeout()",
	  "ena 0000:20:03.0 eth0: napi handler hasn't been called for a long time but is scheduled",
	  KLOG_ENA_POLL_STARVED, -1, -1, -1, 0, 0, "eth0", "0000:20:03.0", "", "", false },
	{ "linux 5.x check_missing_comp_in_tx_queue()",
	  "ena 0000:00:05.0 eth0: Found a Tx that wasn't completed on time, qid 0, index 219. "
	  "5012000 usecs have passed since last napi execution. Missing Tx timeout value 5000 msecs",
	  KLOG_ENA_TX_MISSED, 0, -1, -1, 1, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.11.0 check_missing_comp_in_tx_queue()",
	  "ena 0000:00:05.0 eth0: TX hasn't completed, qid 4, index 17. 5100 msecs since last "
	  "interrupt, 5200 msecs since last napi execution, napi scheduled: 1",
	  KLOG_ENA_TX_MISSED, 4, -1, -1, 1, 5200, "eth0", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.17.0 [1/2] notice",
	  "ena 0000:00:05.0 eth0: [1/2] 12 new missed TX completions, qid: 2, 5120 msecs since "
	  "interrupt, 5120 msecs since napi, napi scheduled: 1",
	  KLOG_ENA_TX_MISSED, 2, -1, -1, 12, 5120, "eth0", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.17.0 [2/2] notice",
	  "ena 0000:00:05.0 eth0: [2/2] qid: 2, highest TX completion pending time (msec): 5120, "
	  "napi sched changes: 0, napi CPU: 7",
	  KLOG_ENA_TX_MISSED, 2, 7, -1, 0, 0, "eth0", "0000:00:05.0", "", "", true },
	{ "amzn-drivers 2.11.0 / linux 5.19+ threshold",
	  "ena 0000:00:05.0 eth0: Lost TX completions are above the threshold (156 > 128). "
	  "Completion transmission timeout: 5000 (msec). 10240 msecs since last interrupt, 10240 "
	  "msecs since last napi execution.",
	  KLOG_ENA_TX_LOST, -1, -1, -1, 156, 128, "eth0", "0000:00:05.0", "", "", false },
	{ "linux 4.9-5.18 threshold",
	  "ena 0000:00:05.0 eth0: The number of lost tx completions is above the threshold "
	  "(129 > 128). Reset the device",
	  KLOG_ENA_TX_LOST, -1, -1, -1, 129, 128, "eth0", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.17.0 [1/2] threshold (qid in the line)",
	  "ena 0000:00:05.0 eth0: [1/2] Lost TX completions are above threshold (156 > 128), "
	  "completion timeout: 5000 (msec), 10240 msecs since interrupt, 10240 msecs since napi, "
	  "qid: 2",
	  KLOG_ENA_TX_LOST, 2, -1, -1, 156, 128, "eth0", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.17.0 [2/2]: arguments (cpu, qid) under labels (qid, napi CPU)",
	  "ena 0000:00:05.0 eth0: [2/2] qid: 7, napi CPU: 2",
	  KLOG_ENA_TX_LOST, 2, 7, -1, 0, 0, "eth0", "0000:00:05.0", "", "", true },
	{ "linux/amzn-drivers check_for_rx_interrupt_queue()",
	  "ena 0000:00:05.0 eth0: Potential MSIX issue on Rx side Queue = 3. Reset the device",
	  KLOG_ENA_NO_INTERRUPT, 3, -1, -1, 0, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "linux / 2.11.0 check_for_missing_keep_alive()",
	  "ena 0000:00:05.0 eth0: Keep alive watchdog timeout.",
	  KLOG_ENA_KEEPALIVE, -1, -1, -1, 0, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.17.0 check_for_missing_keep_alive()",
	  "ena 0000:00:05.0 eth0: Keep alive watchdog timeout, 6012 msecs since last keep alive.",
	  KLOG_ENA_KEEPALIVE, -1, -1, -1, 6012, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "linux/amzn-drivers check_for_admin_com_state()",
	  "ena 0000:00:05.0 eth0: ENA admin queue is not in running state!",
	  KLOG_ENA_ADMIN, -1, -1, -1, 0, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "ena_com.c ena_com_wait_and_process_admin_cq_interrupts()",
	  "ena 0000:00:05.0: The ena device didn't send a completion for the admin cmd 11 status 0",
	  KLOG_ENA_ADMIN, -1, -1, -1, 0, 0, "", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.17.0 ena_admin_device_request_reset()",
	  "ena 0000:00:05.0 eth0: The device has detected an unhealthy state, reset is requested",
	  KLOG_ENA_DEVICE_REQUEST, -1, -1, -1, 0, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "linux/amzn-drivers ena_timer_service()",
	  "ena 0000:00:05.0 eth0: Trigger reset is on",
	  KLOG_ENA_TRIGGER, -1, -1, -1, 0, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "amzn-drivers 2.11.0 ena_fw_reset_device() (dev_err: no interface)",
	  "ena 0000:20:03.0: Device reset completed successfully, Driver info: Elastic Network "
	  "Adapter (ENA) v2.11.0g",
	  KLOG_ENA_RESET_DONE, -1, -1, -1, 0, 0, "", "0000:20:03.0", "", "v2.11.0g", false },
	{ "amzn-drivers 2.17.0 ena_fw_reset_device() status 0",
	  "ena 0000:00:05.0: Device reset completed, status: 0, Driver info: Elastic Network "
	  "Adapter (ENA) v2.17.0g",
	  KLOG_ENA_RESET_DONE, -1, -1, -1, 0, 0, "", "0000:00:05.0", "", "v2.17.0g", false },
	{ "amzn-drivers 2.17.0 ena_fw_reset_device() failed",
	  "ena 0000:00:05.0: Device reset completed, status: -110, Driver info: Elastic Network "
	  "Adapter (ENA) v2.17.0g",
	  KLOG_ENA_RESET_FAILED, -1, -1, -1, 110, 0, "", "0000:00:05.0", "", "v2.17.0g", false },
	{ "linux/amzn-drivers ena_restore_device()",
	  "ena 0000:00:05.0: Reset attempt failed. Can not reset the device",
	  KLOG_ENA_RESET_FAILED, -1, -1, -1, 0, 0, "", "0000:00:05.0", "", "", false },
	{ "ena_dump_stats_ex() / ena_dump_stats_to_log(): netif_err \"%s: %llu\"",
	  "ena 0000:00:05.0 eth0: queue_2_tx_missed_tx: 248",
	  KLOG_ENA_STAT, -1, -1, -1, 248, 0, "eth0", "0000:00:05.0", "", "queue_2_tx_missed_tx",
	  false },
	{ "kernel/watchdog.c, pr_fmt \"watchdog: \"",
	  "watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kubelet:2212]",
	  KLOG_SOFT_LOCKUP, -1, 3, 2212, 23, 0, "", "", "kubelet", "", false },
	{ "kernel/watchdog.c 4.x, pr_fmt \"NMI watchdog: \"; a comm with ':'",
	  "NMI watchdog: BUG: soft lockup - CPU#7 stuck for 22s! [kworker/7:1:88]",
	  KLOG_SOFT_LOCKUP, -1, 7, 88, 22, 0, "", "", "kworker/7:1", "", false },
	{ "kernel/watchdog_perf.c", "watchdog: Watchdog detected hard LOCKUP on cpu 5",
	  KLOG_HARD_LOCKUP, -1, 5, -1, 0, 0, "", "", "", "", false },
	{ "kernel/watchdog.c buddy detector (6.6+)",
	  "watchdog: CPU3: Watchdog detected hard LOCKUP on cpu 4",
	  KLOG_HARD_LOCKUP, -1, 4, -1, 0, 0, "", "", "", "", false },
	{ "kernel/hung_task.c",
	  "INFO: task jbd2/nvme0n1p1-:412 blocked for more than 120 seconds.",
	  KLOG_HUNG_TASK, -1, -1, 412, 120, 0, "", "", "jbd2/nvme0n1p1-", "", false },
	{ "kernel/rcu/tree_stall.h 5.0+",
	  "rcu: INFO: rcu_preempt self-detected stall on CPU",
	  KLOG_RCU_STALL, -1, -1, -1, 0, 0, "", "", "", "", false },
	{ "kernel/watchdog_hld.c before 4.x's nmi_panic(): panic() with the message",
	  "Kernel panic - not syncing: Watchdog detected hard LOCKUP on cpu 2",
	  KLOG_HARD_LOCKUP, -1, 2, -1, 0, 0, "", "", "", "", false },
	{ "kernel/watchdog.c before 4.13 WARN(1, ...) behind no prefix",
	  "BUG: soft lockup - CPU#1 stuck for 23s! [kubelet:2212]",
	  KLOG_SOFT_LOCKUP, -1, 1, 2212, 23, 0, "", "", "kubelet", "", false },
	{ "kernel/rcu/tree_stall.h 4.x: CPU in braces",
	  "INFO: rcu_sched detected stalls on CPUs/tasks: { 6} (detected by 2, t=60002 jiffies)",
	  KLOG_RCU_STALL, -1, 6, -1, 0, 0, "", "", "", "", false },
	{ "net/sched/sch_generic.c before 5.18",
	  "NETDEV WATCHDOG: eth0 (ena): transmit queue 5 timed out",
	  KLOG_NETDEV_WATCHDOG, 5, -1, -1, 0, 0, "eth0", "", "", "", false },
	{ "net/sched/sch_generic.c 5.18-6.7",
	  "NETDEV WATCHDOG: eth0 (ena): transmit queue 5 timed out 5376 ms",
	  KLOG_NETDEV_WATCHDOG, 5, -1, -1, 5376, 0, "eth0", "", "", "", false },
	{ "net/sched/sch_generic.c 6.8+ netdev_crit",
	  "ena 0000:00:05.0 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 3 timed out 5376 ms",
	  KLOG_NETDEV_WATCHDOG, 3, 1, -1, 5376, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "a paste without the driver and bus id",
	  "eth0: TX q 1 is paused for too long (threshold 5000000). Time since last napi 5100000 "
	  "usec. napi scheduled: 0",
	  KLOG_ENA_TX_TIMEOUT, 1, -1, -1, 5100000, 5000000, "eth0", "", "", "", false },
	{ "a bare dump line whose name only ENA prints (ena_ethtool.c queue strings)",
	  "eth0: queue_2_tx_missed_tx: 248",
	  KLOG_ENA_STAT, -1, -1, -1, 248, 0, "eth0", "", "", "queue_2_tx_missed_tx", false },
	{ "ena_close() with the reset flag set: [up], 2.11, 2.17",
	  "ena 0000:00:05.0 eth0: Destroy failure, restarting device",
	  KLOG_ENA_TRIGGER, -1, -1, -1, 0, 0, "eth0", "0000:00:05.0", "", "", false },
	{ "a paste of the bare text", "Keep alive watchdog timeout.",
	  KLOG_ENA_KEEPALIVE, -1, -1, -1, 0, 0, "", "", "", "", false },
};

static void test_messages(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(msgs); i++) {
		const struct msg_case *c = &msgs[i];
		struct klog_event e;

		print_message("  %s\n", c->src);
		assert_int_equal(klog_parse_message(c->msg, strlen(c->msg), NULL, 0, &e), 1);
		assert_int_equal(e.kind, c->kind);
		assert_int_equal(e.queue, c->queue);
		assert_int_equal(e.cpu, c->cpu);
		assert_int_equal(e.pid, c->pid);
		assert_int_equal(e.n1, c->n1);
		assert_int_equal(e.n2, c->n2);
		assert_string_equal(e.ifname, c->ifname);
		assert_string_equal(e.pci, c->pci);
		assert_string_equal(e.comm, c->comm);
		assert_string_equal(e.stat, c->stat);
		assert_int_equal(e.cont, c->cont);
		assert_int_equal(e.clock, KLOG_CLOCK_NONE);
	}
}

/* What is not an event: other drivers' look-alikes, stats without an ENA prefix, garbage. */
static void test_not_events(void **state)
{
	static const char *const none[] = {
		"",
		"ena 0000:00:05.0 eth0: Link is up",
		"ixgbe 0000:03:00.0 eth2: Trigger reset is on", /* not the ENA driver */
		"ixgbe 0000:03:00.0 eth2: tx_timeout: 1",
		"eth0: rx_packets: 248", /* no ENA prefix, eth0 not known as ENA, a generic name */
		"ena 0000:00:05.0 eth0: queue_2_tx_missed_tx: 248x",
		"ena 0000:00:05.0 eth0: a_name_that_is_far_too_long_for_ethtool_stats: 1",
		"watchdog: BUG: soft lockup - CPU#x stuck for 23s! [kubelet:2212]",
		"INFO: task kubelet:2212 blocked for more than many seconds.",
		"NETDEV WATCHDOG: eth0 (ena): transmit queue x timed out",
		"\x01\x02\xff\xfe binary",
		/* text the kernel quotes is not its own word. arch/x86/mm/fault.c
		 * show_signal_msg() prints the crashing file's name (any user chooses it) and the
		 * task's comm; a module, a device or a task may carry any of these words */
		"evil[4242]: segfault at 0 ip 0000000000401000 sp 00007ffc2c3d1e40 error 4 in "
		"BUG: soft lockup - CPU#0 stuck for 99s! [kubelet:1][400000+1000] likely on CPU 0",
		"evil[4242]: segfault at 0 ip 0000000000401000 sp 00007ffc2c3d1e40 error 4 in "
		"watchdog: BUG: soft lockup - CPU#0 stuck for 99s! [k:1][400000+1000]",
		"evil[4242]: segfault at 0 ip 0 sp 0 error 4 in Watchdog detected hard LOCKUP on cpu "
		"0[400000+1000]",
		"evil[4242]: segfault at 0 ip 0 sp 0 error 4 in INFO: task a:1 blocked for more than "
		"999 seconds.[400000+1000]",
		"evil[4242]: segfault at 0 ip 0 sp 0 error 4 in rcu: INFO: rcu_sched self-detected "
		"stall on CPU[400000+1000]",
		"evil[4242]: segfault at 0 ip 0 sp 0 error 4 in x detected stalls on CPUs/tasks: { 3}",
		"evil[4242]: segfault at 0 ip 0 sp 0 error 4 in NETDEV WATCHDOG: eth0 (ena): transmit "
		"queue 5 timed out[400000+1000]",
		"usb 1-1: Product: NETDEV WATCHDOG: eth0 (ena): transmit queue 5 timed out",
		"foo: BUG: soft lockup - CPU#3 stuck for 23s! [kubelet:2212]",
	};
	struct klog_event e = { .kind = KLOG_ENA_TRIGGER, .queue = 99 };

	for (size_t i = 0; i < ARRAY_SIZE(none); i++) {
		print_message("  '%s'\n", none[i]);
		assert_int_equal(klog_parse_message(none[i], strlen(none[i]), NULL, 0, &e), 0);
		assert_int_equal(e.kind, KLOG_ENA_TRIGGER); /* untouched */
		assert_int_equal(e.queue, 99);
	}
}

struct prefix_case {
	const char *style;
	const char *line;
	int found;
	enum klog_clock clock;
	int64_t t_us;
	const char *stamp;
};

static const struct prefix_case prefixes[] = {
	{ "dmesg", "[1034155.884012] ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_MONO, 1034155884012LL, "[1034155.884012]" },
	{ "dmesg, short uptime", "[   12.500000] ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_MONO, 12500000, "[   12.500000]" },
	{ "dmesg -r", "<3>[   12.500000] ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_MONO, 12500000, "[   12.500000]" },
	{ "dmesg -r, user facility", "<12>[   12.500000] ena 0000:20:03.0 eth0: Trigger reset is on",
	  0, KLOG_CLOCK_NONE, 0, "" },
	{ "dmesg -x", "kern  :err   : [   12.500000] ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_MONO, 12500000, "[   12.500000]" },
	{ "dmesg -x, user facility",
	  "user  :warn  : [   12.500000] ena 0000:20:03.0 eth0: Trigger reset is on", 0,
	  KLOG_CLOCK_NONE, 0, "" },
	{ "dmesg -T", "[Tue Jul 14 14:17:34 2026] ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_WALL, 1784038654000000LL, "[Tue Jul 14 14:17:34 2026]" },
	{ "dmesg -T, day padded", "[Sat Jul  4 14:17:34 2026] ena 0000:20:03.0 eth0: Trigger reset is on",
	  1, KLOG_CLOCK_WALL, 1783174654000000LL, "[Sat Jul  4 14:17:34 2026]" },
	{ "syslog / journalctl -k",
	  "Jul 14 14:17:34 ip-10-0-1-23 kernel: ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_YEARLESS, ((181LL + 13) * 86400 + 14 * 3600 + 17 * 60 + 34) * 1000000,
	  "Jul 14 14:17:34" },
	{ "journalctl -o short-precise",
	  "Jul 14 14:17:34.250000 ip-10-0-1-23 kernel: ena 0000:20:03.0 eth0: Trigger reset is on",
	  1, KLOG_CLOCK_YEARLESS, ((181LL + 13) * 86400 + 14 * 3600 + 17 * 60 + 34) * 1000000 +
	  250000, "Jul 14 14:17:34.250000" },
	{ "syslog with the kernel's own stamp",
	  "Jul 14 14:17:34 host kernel: [1034155.884012] ena 0000:20:03.0 eth0: Trigger reset is on",
	  1, KLOG_CLOCK_YEARLESS, ((181LL + 13) * 86400 + 14 * 3600 + 17 * 60 + 34) * 1000000,
	  "Jul 14 14:17:34" },
	{ "syslog, another program",
	  "Jul 14 14:17:34 host root[30121]: ena 0000:20:03.0 eth0: Trigger reset is on", 0,
	  KLOG_CLOCK_NONE, 0, "" },
	{ "journalctl -o short-iso",
	  "2026-07-14T14:17:34+0000 host kernel: ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_WALL, 1784038654000000LL, "2026-07-14T14:17:34+0000" },
	{ "RFC 3339 with an offset",
	  "2026-07-14T16:17:34.500000+02:00 host kernel: ena 0000:20:03.0 eth0: Trigger reset is on",
	  1, KLOG_CLOCK_WALL, 1784038654500000LL, "2026-07-14T16:17:34.500000+02:00" },
	{ "journalctl -o short-monotonic",
	  "[ 1034155.884012] host kernel: ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_MONO, 1034155884012LL, "[ 1034155.884012]" },
	{ "/dev/kmsg record", "3,1235,1034155884,-;ena 0000:20:03.0 eth0: Trigger reset is on", 1,
	  KLOG_CLOCK_MONO, 1034155884, "[ 1034.155884]" },
	{ "/dev/kmsg record, user facility",
	  "12,1235,1034155884,-;ena 0000:20:03.0 eth0: Trigger reset is on", 0, KLOG_CLOCK_NONE, 0,
	  "" },
	{ "no prefix", "ena 0000:20:03.0 eth0: Trigger reset is on", 1, KLOG_CLOCK_NONE, 0, "" },
};

static void test_prefixes(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		const struct prefix_case *c = &prefixes[i];
		struct klog_reader rd;
		struct klog_event e = { 0 };

		print_message("  %s\n", c->style);
		klog_reader_init(&rd);
		assert_int_equal(klog_reader_line(&rd, c->line, strlen(c->line), &e), c->found);
		if (!c->found) {
			assert_int_equal(rd.skipped_foreign, 1);
			continue;
		}
		assert_int_equal(e.kind, KLOG_ENA_TRIGGER);
		assert_string_equal(e.ifname, "eth0");
		assert_int_equal(e.clock, c->clock);
		assert_int_equal(e.t_us, c->t_us);
		assert_string_equal(e.stamp, c->stamp);
		assert_int_equal(e.line, 1);
	}
}

/* dmesg -H: an absolute "[Jul14 14:16]" then deltas; RCU's CPU on the line after. */
static void test_reader_state(void **state)
{
	static const char *const lines[] = {
		"[Jul14 14:16] ena 0000:00:05.0 eth0: Trigger reset is on",
		"[  +0.500000] eth0: queue_2_tx_missed_tx: 156", /* bare: eth0 is known as ENA now */
		"[  +1.250000] rcu: INFO: rcu_sched self-detected stall on CPU",
		"[  +0.000001] rcu: \t6-....: (14997 ticks this GP) idle=3c4c/1/0x4000000000000000",
		"[  +0.000001] \t(t=15000 jiffies g=1204517 q=2210 ncpus=8)",
		"[  +0.000001] rcu: \t7-....: (1 ticks this GP)", /* not after a stall header */
	};
	struct klog_reader rd;
	struct klog_event e;
	int64_t base = ((181LL + 13) * 86400 + 14 * 3600 + 16 * 60) * 1000000;

	klog_reader_init(&rd);
	assert_int_equal(klog_reader_line(&rd, lines[0], strlen(lines[0]), &e), 1);
	assert_int_equal(e.clock, KLOG_CLOCK_YEARLESS);
	assert_int_equal(e.t_us, base);
	assert_int_equal(klog_reader_line(&rd, lines[1], strlen(lines[1]), &e), 1);
	assert_int_equal(e.kind, KLOG_ENA_STAT);
	assert_int_equal(e.n1, 156);
	assert_int_equal(e.t_us, base + 500000);
	assert_int_equal(klog_reader_line(&rd, lines[2], strlen(lines[2]), &e), 1);
	assert_int_equal(e.kind, KLOG_RCU_STALL);
	assert_int_equal(e.cpu, -1);
	assert_int_equal(e.t_us, base + 1750000);
	assert_int_equal(klog_reader_line(&rd, lines[3], strlen(lines[3]), &e), 1);
	assert_true(e.cont);
	assert_int_equal(e.cpu, 6);
	assert_int_equal(klog_reader_line(&rd, lines[4], strlen(lines[4]), &e), 0);
	assert_int_equal(klog_reader_line(&rd, lines[5], strlen(lines[5]), &e), 0);
	assert_int_equal(rd.line, 6);
}

static void test_kmsg_records(void **state)
{
	struct kmsg_record k = { .seq = 77 };
	static const char *const bad[] = {
		"", "6", "6,1", "6,1,2", "6,1,2,-", "x,1,2,-;m", "6,-1,2,-;m", "6,1,2,--;m",
		"99999999999,1,2,-;m", "6,1,2;m", "6,18446744073709551616,2,-;m",
	};
	const char *ok = "14,1237,1034157400,-;hello\n SUBSYSTEM=net";
	const char *more = "3,5,6,c,future;msg";

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		print_message("  '%s'\n", bad[i]);
		assert_int_equal(kmsg_parse_record(bad[i], strlen(bad[i]), &k), -EINVAL);
		assert_int_equal(k.seq, 77);
	}
	assert_int_equal(kmsg_parse_record(ok, strlen(ok), &k), 0);
	assert_int_equal(k.facility, 1);
	assert_int_equal(k.level, 6);
	assert_int_equal(k.seq, 1237);
	assert_int_equal(k.usec, 1034157400);
	assert_int_equal(k.flag, '-');
	assert_int_equal(strncmp(k.msg, "hello\n", 6), 0);
	assert_int_equal(kmsg_parse_record(more, strlen(more), &k), 0);
	assert_int_equal(k.flag, 'c');
	assert_int_equal(k.facility, 0);
	assert_int_equal(k.msg_len, 3);
}

static void read_fixture(const char *name, struct klog_reader *rd, struct klog_log *l)
{
	char path[512], *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), FIXTURES "/klog/%s", name);
	f = fopen(path, "re");
	assert_non_null(f);
	klog_reader_init(rd);
	memset(l, 0, sizeof(*l));
	while ((n = getline(&buf, &cap, f)) >= 0) {
		struct klog_event e;

		if (n > 0 && buf[n - 1] == '\n')
			n--;
		if (klog_reader_line(rd, buf, (size_t)n, &e) == 1)
			assert_int_equal(klog_log_add(l, &e), 0);
	}
	free(buf);
	fclose(f);
}

static struct klog_incident inc;

/* The incident's own signature: poll starvation on q5, 6.6 s, reset completed, 2.11.0g. */
static void test_incident_signature(void **state)
{
	struct ena_lists def = { NULL, NULL, NULL };
	struct klog_reader rd;
	struct klog_log l;
	char chain[512];
	const struct klog_reset *r;

	read_fixture("incident-2.11.0g.dmesg", &rd, &l);
	assert_int_equal(klog_analyze(&l, &def, &inc), 0);
	assert_int_equal(inc.n_resets, 1);
	r = &inc.resets[0];
	assert_true(r->is_reset);
	assert_int_equal(r->cause, KLOG_ENA_TX_TIMEOUT);
	assert_true(r->poll_starved);
	assert_string_equal(klog_reset_reason(r), "suspected_poll_starvation");
	assert_int_equal(r->queue, 5);
	assert_int_equal(r->napi_us, 6596000);
	assert_int_equal(r->outcome, KLOG_OUTCOME_COMPLETED);
	assert_string_equal(r->version, "v2.11.0g");
	assert_string_equal(r->ifname, "eth0");
	assert_string_equal(r->pci, "0000:20:03.0");
	assert_string_equal(klog_reset_chain(&l, r, chain, sizeof(chain)),
			    "eth0 q5 Tx stopped 6.6s, NAPI scheduled but not run -> poll starvation "
			    "-> reset (completed, ENA v2.11.0g)");
	/* the dump at the reset, through the same verdict as `ethtool -S` */
	assert_true(r->has_verdict);
	assert_true(r->since_load);
	assert_int_equal(r->n_stats, 29);
	assert_int_equal(r->verdict.resets, 1);
	assert_false(r->verdict.reset_fail);
	assert_non_null(strstr(r->verdict.cause, "poll starvation"));
	assert_int_equal(inc.n_lockups, 1); /* the NETDEV WATCHDOG warning */
	klog_log_free(&l);
}

/* journalctl -k: kubelet's soft lockup on cpu3, then lost Tx completions on q0. */
static void test_lockup_linked(void **state)
{
	struct ena_lists def = { NULL, NULL, NULL };
	struct klog_reader rd;
	struct klog_log l;
	char chain[512];

	read_fixture("lost-tx-softlockup.journal", &rd, &l);
	assert_int_equal(rd.skipped_foreign, 3); /* kubelet's line and the two forged ones */
	assert_int_equal(klog_analyze(&l, &def, &inc), 0);
	assert_int_equal(inc.n_resets, 1);
	assert_int_equal(inc.n_lockups, 1);
	assert_string_equal(klog_reset_chain(&l, &inc.resets[0], chain, sizeof(chain)),
			    "cpu3 soft lockup 23s (kubelet) -> eth0 q0 Tx not completed (3) -> lost "
			    "Tx completions 156 > 128 -> reset (completed)");
	assert_non_null(strstr(inc.resets[0].verdict.cause, "missed_tx q0 +156"));
	klog_log_free(&l);

	/* 2.17: linked by the NAPI CPU the driver names, across the swapped [2/2] labels */
	read_fixture("lost-tx-2.17.dmesg-H", &rd, &l);
	assert_int_equal(klog_analyze(&l, &def, &inc), 0);
	assert_int_equal(inc.n_resets, 1);
	assert_int_equal(inc.resets[0].queue, 2);
	assert_int_equal(inc.resets[0].cpu, 7);
	assert_int_equal(inc.resets[0].lockup_cpu, 7);
	assert_string_equal(klog_reset_chain(&l, &inc.resets[0], chain, sizeof(chain)),
			    "cpu7 soft lockup 22s (kworker/7:1) -> eth0 q2 Tx not completed (12) "
			    "[napi cpu7] -> lost Tx completions 156 > 128 -> reset (completed, ENA "
			    "v2.17.0g)");
	klog_log_free(&l);
}

static void test_failed_and_quiet(void **state)
{
	struct ena_lists def = { NULL, NULL, NULL };
	struct klog_reader rd;
	struct klog_log l;

	read_fixture("txtimeout-failed-rcu.short-iso", &rd, &l);
	assert_int_equal(klog_analyze(&l, &def, &inc), 0);
	assert_int_equal(inc.n_resets, 1);
	assert_int_equal(inc.resets[0].outcome, KLOG_OUTCOME_FAILED);
	assert_false(inc.resets[0].poll_starved); /* "napi scheduled: 0" */
	assert_string_equal(klog_reset_reason(&inc.resets[0]), "os_netdev_wd");
	assert_int_equal(inc.n_lockups, 2); /* NETDEV WATCHDOG and the RCU stall */
	klog_log_free(&l);

	read_fixture("quiet-boot.dmesg", &rd, &l);
	assert_int_equal(l.n, 0);
	assert_int_equal(klog_analyze(&l, &def, &inc), 0);
	assert_int_equal(inc.n_resets, 0);
	assert_int_equal(inc.n_lockups, 0);
	klog_log_free(&l);
}

/* Two resets of one interface: the second dump is compared with the first, not with zero. */
static void test_two_dumps(void **state)
{
	static const char *const lines[] = {
		"ena 0000:00:05.0 eth0: Keep alive watchdog timeout.",
		"ena 0000:00:05.0 eth0: Trigger reset is on",
		"ena 0000:00:05.0 eth0: wd_expired: 1",
		"ena 0000:00:05.0 eth0: tx_timeout: 3",
		"ena 0000:00:05.0: Device reset completed successfully",
		"ena 0000:00:05.0 eth0: Keep alive watchdog timeout.",
		"ena 0000:00:05.0 eth0: Trigger reset is on",
		"ena 0000:00:05.0 eth0: wd_expired: 2",
		"ena 0000:00:05.0 eth0: tx_timeout: 3",
		"ena 0000:00:05.0: Device reset completed successfully",
	};
	struct ena_lists def = { NULL, NULL, NULL };
	struct klog_reader rd;
	struct klog_log l = { 0 };
	struct klog_event e;

	klog_reader_init(&rd);
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		if (klog_reader_line(&rd, lines[i], strlen(lines[i]), &e) == 1)
			assert_int_equal(klog_log_add(&l, &e), 0);
	assert_int_equal(klog_analyze(&l, &def, &inc), 0);
	assert_int_equal(inc.n_resets, 2);
	assert_true(inc.resets[0].since_load);
	assert_int_equal(inc.resets[0].verdict.resets, 4); /* wd_expired 1 + tx_timeout 3 */
	assert_false(inc.resets[1].since_load);
	assert_int_equal(inc.resets[1].verdict.resets, 1); /* only wd_expired moved */
	assert_string_equal(inc.resets[1].verdict.cause, "wd_expired +1");
	klog_log_free(&l);
}

/* A paste of only the dump ("eth0: name: value"): a reset (the driver dumps only at one),
 * its cause from the counters through the ethtool -S verdict. */
static void test_bare_dump(void **state)
{
	static const char *const lines[] = {
		"eth0: total_resets: 3",
		"eth0: suspend: 0", /* generic name, accepted: eth0 is now known as ENA */
		"eth0: suspected_poll_starvation: 2",
		"eth0: queue_5_tx_missed_tx: 248",
		"eth7: suspend: 0", /* another interface with a generic name: not ENA's */
	};
	struct ena_lists def = { NULL, NULL, NULL };
	struct klog_reader rd;
	struct klog_log l = { 0 };
	struct klog_event e;
	char chain[512];

	klog_reader_init(&rd);
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		if (klog_reader_line(&rd, lines[i], strlen(lines[i]), &e) == 1)
			assert_int_equal(klog_log_add(&l, &e), 0);
	assert_int_equal(l.n, 4);
	assert_int_equal(klog_analyze(&l, &def, &inc), 0);
	assert_int_equal(inc.n_resets, 1);
	assert_true(inc.resets[0].is_reset);
	assert_int_equal(inc.resets[0].n_stats, 4);
	assert_int_equal(inc.resets[0].verdict.resets, 3);
	assert_string_equal(klog_reset_chain(&l, &inc.resets[0], chain, sizeof(chain)),
			    "eth0 -> statistics: poll starvation x2 q5; tx_missed_tx q5 +248 -> reset "
			    "(outcome not logged)");
	klog_log_free(&l);
}

static void test_log_bounded(void **state)
{
	struct klog_log l = { 0 };
	struct klog_event e = { .kind = KLOG_ENA_TRIGGER };

	struct klog_event noisy = { .kind = KLOG_ENA_TX_MISSED };

	for (size_t i = 0; i < KLOG_EVENTS_MAX - KLOG_EVENTS_RESERVE; i++)
		assert_int_equal(klog_log_add(&l, &noisy), 0);
	assert_int_equal(klog_log_add(&l, &noisy), -E2BIG); /* the reserve is not for these */
	for (size_t i = 0; i < KLOG_EVENTS_RESERVE; i++)
		assert_int_equal(klog_log_add(&l, &e), 0);
	assert_int_equal(klog_log_add(&l, &e), -E2BIG);
	assert_int_equal(l.dropped, 2);
	assert_int_equal(l.n, KLOG_EVENTS_MAX);
	klog_log_free(&l);
	assert_null(l.ev);
}

static void test_kind_names(void **state)
{
	for (int k = 1; k < KLOG_KIND_MAX; k++)
		assert_int_equal(klog_kind_from_name(klog_kind_name((enum klog_kind)k)), k);
	assert_int_equal(klog_kind_from_name("nope"), KLOG_NONE);
	assert_string_equal(klog_kind_name((enum klog_kind)999), "none");
}

/* Feed @text in pieces of @step bytes; the lines seen, joined by '|', into @out. */
static unsigned split(const char *text, size_t n, size_t step, char *out, size_t size,
		      struct klog_lines *ls)
{
	const char *line;
	size_t len, o = 0;

	memset(ls, 0, sizeof(*ls));
	out[0] = '\0';
	for (size_t at = 0; at < n;) {
		size_t piece = n - at < step ? n - at : step;

		for (size_t i = 0; i < piece;) {
			i += klog_lines_feed(ls, text + at + i, piece - i, &line, &len);
			if (line)
				o += (size_t)snprintf(out + o, size - o, "%.*s|", (int)len, line);
		}
		at += piece;
	}
	if (klog_lines_end(ls, &line, &len))
		o += (size_t)snprintf(out + o, size - o, "%.*s|", (int)len, line);
	return ls->lines;
}

/* Issue 24: an over-long line keeps its head and its tail is skipped, whatever the pieces the
 * stream comes in (the tail was read as a line of its own, and a read past the buffer). */
static void test_lines_split(void **state)
{
	static char text[3 * KLOG_LINE_MAX + 64], want[2 * KLOG_LINE_MAX], got[4 * KLOG_LINE_MAX];
	static const size_t steps[] = { 1, 2, 7, 100, KLOG_LINE_MAX - 1, KLOG_LINE_MAX,
					KLOG_LINE_MAX + 1, 65536 };
	struct klog_lines ls;
	size_t n = 0;

	n += (size_t)snprintf(text + n, sizeof(text) - n, "a\n\nbc\n");
	memset(text + n, 'x', 2 * KLOG_LINE_MAX);
	memcpy(text + n + KLOG_LINE_MAX, "TAIL", 4); /* in the tail: never a line */
	n += 2 * KLOG_LINE_MAX;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\nlast");
	memset(want, 'x', KLOG_LINE_MAX);
	want[KLOG_LINE_MAX] = '\0';
	for (size_t k = 0; k < ARRAY_SIZE(steps); k++) {
		char exp[2 * KLOG_LINE_MAX + 32];

		snprintf(exp, sizeof(exp), "a||bc|%s|last|", want);
		assert_int_equal(split(text, n, steps[k], got, sizeof(got), &ls), 5);
		assert_string_equal(got, exp);
		assert_int_equal(ls.nul_line, 0);
	}
	/* exactly KLOG_LINE_MAX bytes, then '\n': one line, the next one read */
	memset(text, 'y', KLOG_LINE_MAX);
	memcpy(text + KLOG_LINE_MAX, "\nz\n", 3);
	for (size_t k = 0; k < ARRAY_SIZE(steps); k++) {
		assert_int_equal(split(text, KLOG_LINE_MAX + 3, steps[k], got, sizeof(got), &ls), 2);
		assert_int_equal(strlen(got), KLOG_LINE_MAX + 3);
		assert_string_equal(got + KLOG_LINE_MAX, "|z|");
	}
	/* a line that never ends (/dev/zero-like, but no NUL): one head, nothing else */
	memset(text, 'q', sizeof(text));
	assert_int_equal(split(text, sizeof(text), 100, got, sizeof(got), &ls), 1);
	assert_int_equal(strlen(got), KLOG_LINE_MAX + 1);
	/* a NUL names its line, also in a skipped tail */
	assert_int_equal(split("ok\nx\0y\n", 7, 3, got, sizeof(got), &ls), 2);
	assert_int_equal(ls.nul_line, 2);
	memset(text, 'w', sizeof(text));
	text[0] = '\n';
	text[KLOG_LINE_MAX + 500] = '\0';
	split(text, sizeof(text), 64, got, sizeof(got), &ls);
	assert_int_equal(ls.nul_line, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_not_events),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_reader_state),
		cmocka_unit_test(test_kmsg_records),
		cmocka_unit_test(test_incident_signature),
		cmocka_unit_test(test_lockup_linked),
		cmocka_unit_test(test_failed_and_quiet),
		cmocka_unit_test(test_two_dumps),
		cmocka_unit_test(test_bare_dump),
		cmocka_unit_test(test_log_bounded),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_lines_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
