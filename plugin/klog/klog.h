/* SPDX-License-Identifier: MIT */
#ifndef CZ_KLOG_H
#define CZ_KLOG_H

/*
 * The kernel's own word: lines of kernel log text in, recognized events out. Pure (no I/O, no
 * clock), one line at a time, so `cpuzombie explain` (pasted text) and the agent (/dev/kmsg
 * records) share it.
 *
 * Two layers:
 *  - klog_parse_message(): one kernel message, as the kernel printed it (the text of a
 *    /dev/kmsg record, or a pasted line with its time/host prefix removed), into an event;
 *  - klog_reader_line(): one pasted line in any of the prefix styles people paste, with the
 *    state a paste needs across lines (relative stamps, the ENA interfaces seen so far, the
 *    CPU line that follows an RCU stall header).
 *
 * Prefix styles (each line may have any one; lines of other programs are skipped, never read
 * as kernel messages):
 *   dmesg             "[12345.678901] msg"                   monotonic seconds since boot
 *   dmesg -r          "<6>[12345.678901] msg"                 priority; facility != 0 skipped
 *   dmesg -x          "kern  :err   : [12345.678901] msg"    facility != kern skipped
 *   dmesg -T          "[Tue Jul 14 14:17:34 2026] msg"        wall clock
 *   dmesg -H / -e     "[Jul14 14:17] msg", "[  +0.005106] msg" relative to the line before
 *   syslog, journalctl -k (short, short-precise)
 *                     "Jul 14 14:17:34 host kernel: msg"      other tags than "kernel" skipped
 *   journalctl -o short-iso[-precise], RFC 3339 syslog
 *                     "2026-07-14T14:17:34+0000 host kernel: msg"
 *   journalctl -o short-monotonic
 *                     "[12345.678901] host kernel: msg"
 *   /dev/kmsg         "6,1234,5678901,-;msg"                  facility != 0 skipped
 *
 * The message texts recognized, and where each comes from, are listed in klog.c beside each
 * pattern (ENA driver: in-tree drivers/net/ethernet/amazon/ena and Amazon's out-of-tree
 * amzn-drivers kernel/linux/ena, generations 1.x to 2.17; kernel: kernel/watchdog.c,
 * kernel/watchdog_perf.c, kernel/hung_task.c, kernel/rcu/tree_stall.h, net/sched/sch_generic.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KLOG_LINE_MAX 1024	/* longer lines are cut here (kernel records are <= 1024) */
#define KLOG_STAMP_MAX 40

enum klog_kind {
	KLOG_NONE = 0,
	KLOG_ENA_TX_TIMEOUT,	  /* "TX q N is paused for too long": netdev watchdog on queue N */
	KLOG_ENA_POLL_STARVED,	  /* NAPI scheduled but its handler not run: CPU starvation */
	KLOG_ENA_TX_MISSED,	  /* a Tx completion missed on queue N (below the threshold) */
	KLOG_ENA_TX_LOST,	  /* lost Tx completions above the threshold: reset */
	KLOG_ENA_NO_INTERRUPT,	  /* "Potential MSIX issue ... Queue = N": reset */
	KLOG_ENA_KEEPALIVE,	  /* device keep-alive watchdog timeout: reset */
	KLOG_ENA_ADMIN,		  /* admin queue stopped / admin command timed out: reset */
	KLOG_ENA_DEVICE_REQUEST,  /* the device asked for a reset */
	KLOG_ENA_TRIGGER,	  /* "Trigger reset is on": the reset starts */
	KLOG_ENA_RESET_DONE,	  /* "Device reset completed successfully" */
	KLOG_ENA_RESET_FAILED,	  /* reset failed / device could not be restored */
	KLOG_ENA_STAT,		  /* one "name: value" line of the statistics dump at a reset */
	KLOG_NETDEV_WATCHDOG,	  /* "NETDEV WATCHDOG: ... transmit queue N timed out" */
	KLOG_SOFT_LOCKUP,	  /* "BUG: soft lockup - CPU#N stuck for Ss! [comm:pid]" */
	KLOG_HARD_LOCKUP,	  /* "Watchdog detected hard LOCKUP on cpu N" */
	KLOG_HUNG_TASK,		  /* "INFO: task comm:pid blocked for more than S seconds." */
	KLOG_RCU_STALL,		  /* RCU CPU stall (CPU from its own or the following line) */
	KLOG_KIND_MAX,
};

/* How an event's time reads. */
enum klog_clock {
	KLOG_CLOCK_NONE = 0, /* the line had no time */
	KLOG_CLOCK_MONO,     /* microseconds since boot (dmesg, /dev/kmsg) */
	KLOG_CLOCK_REL,	     /* microseconds since the paste's first relative stamp (dmesg -H) */
	KLOG_CLOCK_WALL,     /* microseconds since the epoch, UTC (dmesg -T, ISO, agent log) */
	KLOG_CLOCK_YEARLESS, /* microseconds since Jan 1 of an unknown year (syslog, journalctl) */
};

struct klog_event {
	enum klog_kind kind;
	enum klog_clock clock;
	int64_t t_us;			/* in @clock; comparable only within one clock */
	unsigned line;			/* 1-based line in the paste (reader only) */
	bool cont; /* details of the event before (the CPU line of an RCU stall) */
	int queue;			/* -1 when the message names none */
	int cpu;			/* -1 when none */
	int pid;			/* -1 when none */
	uint64_t n1, n2;		/* kind-specific numbers, see klog_event_numbers() */
	char ifname[16];		/* "" when the line does not say */
	char pci[16];			/* "0000:00:05.0", "" when not said */
	char comm[17];			/* the task a lockup/hung-task line names */
	char stat[32];			/* KLOG_ENA_STAT: counter name; others: driver version */
	char stamp[KLOG_STAMP_MAX];	/* the line's own time prefix, for display */
};

/*
 * The numbers n1/n2 mean, by kind:
 *   ENA_TX_TIMEOUT    n1 time since last NAPI run (us), n2 threshold (us); cpu = napi CPU
 *   ENA_POLL_STARVED  -
 *   ENA_TX_MISSED     n1 missed completions (1 per line in the old drivers), n2 ms since napi
 *   ENA_TX_LOST       n1 lost completions, n2 threshold
 *   ENA_KEEPALIVE     n1 ms since the last keep-alive (0 when not logged)
 *   ENA_RESET_DONE/FAILED n1 status (0 when not logged)
 *   ENA_STAT          n1 the counter's value
 *   NETDEV_WATCHDOG   n1 ms the queue was stopped (0 when not logged)
 *   SOFT_LOCKUP       n1 seconds stuck
 *   HUNG_TASK         n1 seconds blocked
 * Unused numbers are 0.
 */

/* klog_kind_name - "ena_tx_timeout", "soft_lockup", ... ("none" for KLOG_NONE); never NULL. */
const char *klog_kind_name(enum klog_kind k);

/* klog_kind_from_name - the kind called @name, or KLOG_NONE. */
enum klog_kind klog_kind_from_name(const char *name);

/* klog_kind_is_ena - true for the KLOG_ENA_* kinds. */
bool klog_kind_is_ena(enum klog_kind k);

/* klog_kind_is_reset - true for the kinds that mean the ENA driver resets the device. */
bool klog_kind_is_reset(enum klog_kind k);

/*
 * klog_parse_message - pure: one kernel message (no time prefix; @len bytes, need not be
 * NUL-terminated) into *@ret. The message may start with the device prefix the kernel's
 * dev_*()/netdev_*() print ("ena 0000:00:05.0 eth0: ", "ena 0000:00:05.0: ", or a bare
 * "eth0: "). Statistics lines ("eth0: queue_2_tx_missed_tx: 248") are recognized only with
 * the "ena" driver prefix, or when the interface named is one of the @n_ifs names in @ena_ifs
 * (ENA interfaces seen before; may be NULL/0). Returns 1 and fills *@ret (times left NONE), 0
 * when the message is none we know (*@ret untouched).
 */
int klog_parse_message(const char *msg, size_t len, const char (*ena_ifs)[16], size_t n_ifs,
		       struct klog_event *ret);

/* Cross-line state of a paste. Zero it (or klog_reader_init) before the first line. */
struct klog_reader {
	unsigned line;
	int64_t rel_us;			/* running time of dmesg -H relative stamps */
	bool rel_base;			/* a "[Jul14 14:17]" absolute stamp was seen */
	bool rcu_pending;		/* the line before was an RCU stall header without CPU */
	char ena_if[4][16];		/* ENA interfaces seen, for bare statistics lines */
	unsigned kernel_lines;		/* lines that were kernel messages (any prefix style) */
	unsigned skipped_foreign;	/* lines of other programs or facilities: skipped */
};

/* klog_reader_init - zero @rd. */
void klog_reader_init(struct klog_reader *rd);

/*
 * klog_reader_line - pure: one pasted line (@len bytes, without '\n') in any prefix style
 * above. Returns 1 and fills *@ret (with the line number, time and stamp), or 0 when the line
 * is no event we know or not a kernel line. Never fails: garbage is 0.
 */
int klog_reader_line(struct klog_reader *rd, const char *line, size_t len,
		     struct klog_event *ret);

/* ---- splitting a stream into lines -------------------------------------------------------- */

/*
 * A byte stream (a file, a pipe) cut into lines for klog_reader_line(), in bounded memory: a
 * line longer than KLOG_LINE_MAX keeps its first KLOG_LINE_MAX bytes and its tail is skipped
 * up to the next '\n' (the tail is never read as a line of its own). Zero it before the
 * first bytes.
 */
struct klog_lines {
	char buf[KLOG_LINE_MAX];
	size_t len;		/* bytes of the current line held in @buf */
	bool skipping;		/* inside the tail of an over-long line */
	unsigned lines;		/* lines completed so far (the current one is lines + 1) */
	unsigned nul_line;	/* the first line holding a NUL byte (0: none yet) */
};

/*
 * klog_lines_feed - pure: take bytes from @data (@n > 0) up to and including the end of the
 * next line. Returns how many bytes were taken (1..@n); when a line is complete (or the kept
 * head of an over-long one), *@ret_line and *@ret_len point at it (valid until the next call;
 * at most KLOG_LINE_MAX bytes, without '\n'), else *@ret_line is NULL. The caller calls again
 * with the rest.
 */
size_t klog_lines_feed(struct klog_lines *ls, const char *data, size_t n, const char **ret_line,
		       size_t *ret_len);

/*
 * klog_lines_end - the last line of the stream when it did not end in '\n': returns true and
 * sets *@ret_line and *@ret_len, or false when nothing is left.
 */
bool klog_lines_end(struct klog_lines *ls, const char **ret_line, size_t *ret_len);

/* ---- /dev/kmsg records ------------------------------------------------------------------- */

/* One record of /dev/kmsg (Documentation/ABI/testing/dev-kmsg). */
struct kmsg_record {
	unsigned facility;	/* PRI >> 3; 0 = the kernel itself */
	unsigned level;		/* PRI & 7 */
	uint64_t seq;
	uint64_t usec;		/* CLOCK_MONOTONIC-like time of the record, since boot */
	char flag;		/* '-' or 'c' (continuation start) */
	const char *msg;	/* into the input, not NUL-terminated */
	size_t msg_len;
};

/*
 * kmsg_parse_record - pure: "PRI,SEQ,USEC,FLAGS[,more];message" (the first line of a record;
 * continuation lines " KEY=value" are not part of it). Numbers are strict decimals, PRI below
 * 2^31; fields after FLAGS are allowed (the ABI reserves them). Returns 0 and fills *@ret (its
 * msg points into @rec), or -EINVAL; *@ret untouched on failure.
 */
int kmsg_parse_record(const char *rec, size_t len, struct kmsg_record *ret);

#endif
