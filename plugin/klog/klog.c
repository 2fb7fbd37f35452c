/* SPDX-License-Identifier: MIT */
/*
 * Kernel messages into events (klog.h). Every pattern below cites the source that prints it;
 * the texts were read in the ENA driver's sources (in-tree Linux drivers/net/ethernet/amazon/ena
 * and Amazon's amzn-drivers kernel/linux/ena at the tags named) and in the kernel's own files.
 * Patterns are matched against the start of the message (the driver's text after the device
 * prefix); what follows the matched part is ignored, so a later driver that appends fields to
 * a line still matches.
 */
#include <errno.h>
#include <string.h>

#include "klog/klog.h"
#include "base/util.h"

static const char *const kind_names[KLOG_KIND_MAX] = {
	[KLOG_NONE] = "none",
	[KLOG_ENA_TX_TIMEOUT] = "ena_tx_timeout",
	[KLOG_ENA_POLL_STARVED] = "ena_poll_starvation",
	[KLOG_ENA_TX_MISSED] = "ena_tx_missed",
	[KLOG_ENA_TX_LOST] = "ena_tx_lost",
	[KLOG_ENA_NO_INTERRUPT] = "ena_missing_interrupt",
	[KLOG_ENA_KEEPALIVE] = "ena_keep_alive",
	[KLOG_ENA_ADMIN] = "ena_admin_queue",
	[KLOG_ENA_DEVICE_REQUEST] = "ena_device_request",
	[KLOG_ENA_TRIGGER] = "ena_reset_trigger",
	[KLOG_ENA_RESET_DONE] = "ena_reset",
	[KLOG_ENA_RESET_FAILED] = "ena_reset_failed",
	[KLOG_ENA_STAT] = "ena_stat",
	[KLOG_NETDEV_WATCHDOG] = "netdev_watchdog",
	[KLOG_SOFT_LOCKUP] = "soft_lockup",
	[KLOG_HARD_LOCKUP] = "hard_lockup",
	[KLOG_HUNG_TASK] = "hung_task",
	[KLOG_RCU_STALL] = "rcu_stall",
};

const char *klog_kind_name(enum klog_kind k)
{
	return (unsigned)k < KLOG_KIND_MAX && kind_names[k] ? kind_names[k] : "none";
}

enum klog_kind klog_kind_from_name(const char *name)
{
	for (int k = 1; k < KLOG_KIND_MAX; k++)
		if (streq(kind_names[k], name))
			return (enum klog_kind)k;
	return KLOG_NONE;
}

bool klog_kind_is_ena(enum klog_kind k)
{
	return k >= KLOG_ENA_TX_TIMEOUT && k <= KLOG_ENA_STAT;
}

bool klog_kind_is_reset(enum klog_kind k)
{
	switch (k) {
	case KLOG_ENA_TX_TIMEOUT:
	case KLOG_ENA_TX_LOST:
	case KLOG_ENA_NO_INTERRUPT:
	case KLOG_ENA_KEEPALIVE:
	case KLOG_ENA_ADMIN:
	case KLOG_ENA_DEVICE_REQUEST:
	case KLOG_ENA_TRIGGER:
	case KLOG_ENA_RESET_DONE:
	case KLOG_ENA_RESET_FAILED:
		return true;
	default:
		return false;
	}
}

/* ---- a tiny matcher: literal text, %d = a decimal (optional '-'), %* = skip to what follows */

#define PAT_NUMS 8

static bool pat_match(const char *p, const char *s, const char *end, int64_t *num, size_t *nn)
{
	while (*p) {
		if (p[0] == '%' && p[1] == 'd') {
			bool neg = s < end && *s == '-';
			int64_t v = 0;
			const char *d = s + neg;

			if (d >= end || *d < '0' || *d > '9')
				return false;
			for (; d < end && *d >= '0' && *d <= '9'; d++)
				v = v < INT64_MAX / 10 - 10 ? v * 10 + (*d - '0') : INT64_MAX / 10;
			if (*nn < PAT_NUMS)
				num[(*nn)++] = neg ? -v : v;
			s = d;
			p += 2;
		} else if (p[0] == '%' && p[1] == '*') {
			size_t save = *nn;

			for (const char *t = s; t <= end; t++) {
				*nn = save;
				if (pat_match(p + 2, t, end, num, nn))
					return true;
			}
			return false;
		} else {
			if (s >= end || *s != *p)
				return false;
			s++;
			p++;
		}
	}
	return true;
}

/* @hay (@len bytes) contains @needle: returns where it starts, or NULL. */
static const char *find(const char *hay, size_t len, const char *needle)
{
	return memmem(hay, len, needle, strlen(needle));
}

static void copy_word(char *dst, size_t size, const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < size; i++)
		if (s[i] > ' ' && s[i] < 0x7f)
			dst[n++] = s[i];
	dst[n] = '\0';
}

static void event_init(struct klog_event *e, enum klog_kind kind)
{
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->queue = e->cpu = e->pid = -1;
}

static int clamp_int(int64_t v)
{
	return v < 0 || v > 1000000 ? -1 : (int)v;
}

static uint64_t clamp_u(int64_t v)
{
	return v < 0 ? 0 : (uint64_t)v;
}

/* Apply @map ('q' queue, 'c' cpu, 'p' pid, '1' n1, '2' n2, 'x' ignored) to matched numbers. */
static void apply(struct klog_event *e, const char *map, const int64_t *num, size_t nn)
{
	for (size_t i = 0; map[i] && i < nn; i++) {
		switch (map[i]) {
		case 'q': e->queue = clamp_int(num[i]); break;
		case 'c': e->cpu = clamp_int(num[i]); break;
		case 'p': e->pid = clamp_int(num[i]); break;
		case '1': e->n1 = clamp_u(num[i]); break;
		case '2': e->n2 = clamp_u(num[i]); break;
		default: break;
		}
	}
}

/*
 * The ENA driver's lines, matched after the device prefix. Sources, by the tag or version that
 * prints the exact text (older/newer generations print the same text unless listed apart):
 *  [up]  in-tree drivers/net/ethernet/amazon/ena/ena_netdev.c (4.9 .. 6.x)
 *  [2.11] amzn-drivers tag ena_linux_2.11.0, kernel/linux/ena/ena_netdev.c (the incident's
 *         2.11.0g), [2.17] ena_linux_2.17.0; [com] kernel/linux/common/ena_com/ena_com.c
 */
static const struct ena_pattern {
	const char *pat;
	enum klog_kind kind;
	const char *map;
	bool cont;
} ena_patterns[] = {
	/* ena_tx_timeout(): [up] since 5.19, [2.11] */
	{ "TX q %d is paused for too long (threshold %d). Time since last napi %d usec. "
	  "napi scheduled: %d", KLOG_ENA_TX_TIMEOUT, "q21x", false },
	/* ena_tx_timeout(): [2.17] adds the napi CPU and the time since the interrupt */
	{ "TX q %d is paused for too long (threshold %d). usecs since napi %d. napi scheduled: %d. "
	  "napi CPU: %d", KLOG_ENA_TX_TIMEOUT, "q21xc", false },
	{ "TX timeout on invalid queue %d", KLOG_ENA_TX_TIMEOUT, "x", false },	/* [up], [2.11] */
	{ "timeout was called, but no offending queue was found", KLOG_ENA_TX_TIMEOUT, "", false },
	/* ena_tx_timeout(): [up], [2.11], [2.17]: the NAPI poll is scheduled but never ran */
	{ "napi handler hasn't been called for a long time but is scheduled", KLOG_ENA_POLL_STARVED,
	  "", false },
	/* check_missing_comp_in_tx_queue(): [up] (5.x-6.x), FreeBSD's ena shares the text */
	{ "Found a Tx that wasn't completed on time, qid %d, index %d.", KLOG_ENA_TX_MISSED, "qx",
	  false },
	/* [2.11]: per missed completion */
	{ "TX hasn't completed, qid %d, index %d. %d msecs since last interrupt, %d msecs since "
	  "last napi execution, napi scheduled: %d", KLOG_ENA_TX_MISSED, "qxx2x", false },
	/* [2.17]: debug level, then a [1/2]/[2/2] notice pair per queue */
	{ "TX hasn't completed, qid: %d, index: %d, %d msecs since interrupt, %d msecs since napi, "
	  "napi scheduled: %d", KLOG_ENA_TX_MISSED, "qxx2x", false },
	{ "[1/2] %d new missed TX completions, qid: %d, %d msecs since interrupt, %d msecs since "
	  "napi, napi scheduled: %d", KLOG_ENA_TX_MISSED, "1qx2x", false },
	{ "[2/2] qid: %d, highest TX completion pending time (msec): %d, napi sched changes: %d, "
	  "napi CPU: %d", KLOG_ENA_TX_MISSED, "qxxc", true },
	/* threshold crossed -> reset: [2.11] and [up] since 5.19 */
	{ "Lost TX completions are above the threshold (%d > %d)", KLOG_ENA_TX_LOST, "12", false },
	/* [up] 4.9-5.18, amzn-drivers 1.x-2.6 */
	{ "The number of lost tx completions is above the threshold (%d > %d)", KLOG_ENA_TX_LOST,
	  "12", false },
	/* early in-tree (4.9) spelling */
	{ "The number of lost tx completion is above the threshold (%d > %d)", KLOG_ENA_TX_LOST,
	  "12", false },
	/* [2.17]: the qid moved into the line */
	{ "[1/2] Lost TX completions are above threshold (%d > %d), completion timeout: %d (msec), "
	  "%d msecs since interrupt, %d msecs since napi, qid: %d", KLOG_ENA_TX_LOST, "12xxxq",
	  false },
	/* [2.17]: the source passes (cpu, qid) to "qid: %d, napi CPU: %d": the first number is
	 * the CPU, the second the queue. Read as the arguments are, not as the labels say. */
	{ "[2/2] qid: %d, napi CPU: %d", KLOG_ENA_TX_LOST, "cq", true },
	/* check_for_rx_interrupt_queue() / check_missing_comp_in_tx_queue(): [up], [2.11] */
	{ "Potential MSIX issue on Tx side Queue = %d", KLOG_ENA_NO_INTERRUPT, "q", false },
	{ "Potential MSIX issue on Rx side Queue = %d", KLOG_ENA_NO_INTERRUPT, "q", false },
	/* check_for_missing_keep_alive(): [2.17] with the time, [up]/[2.11] "...timeout." */
	{ "Keep alive watchdog timeout, %d msecs since last keep alive", KLOG_ENA_KEEPALIVE, "1",
	  false },
	{ "Keep alive watchdog timeout", KLOG_ENA_KEEPALIVE, "", false },
	/* check_for_admin_com_state(): [up], [2.11], [2.17] */
	{ "ENA admin queue is not in running state", KLOG_ENA_ADMIN, "", false },
	/* ena_com_wait_and_process_admin_cq_interrupts(): [com], [up] ena_com.c */
	{ "The ena device didn't send a completion for the admin cmd %d", KLOG_ENA_ADMIN, "x",
	  false },
	{ "The ena device sent a completion but the driver didn't receive a MSI-X interrupt",
	  KLOG_ENA_ADMIN, "", false },
	/* ena_admin_device_request_reset(): [2.17], [up] 6.x */
	{ "The device has detected an unhealthy state, reset is requested", KLOG_ENA_DEVICE_REQUEST,
	  "", false },
	/* ena_timer_service() / ena_fw_reset_device(): [up], [2.11], [2.17] */
	{ "Trigger reset is on", KLOG_ENA_TRIGGER, "", false },
	/* ena_close() with the reset flag set: [up], [2.11], [2.17]; the dump follows */
	{ "Destroy failure, restarting device", KLOG_ENA_TRIGGER, "", false },
	/* ena_fw_reset_device(): [up] "...successfully", [2.11] "...successfully, Driver info:
	 * Elastic Network Adapter (ENA) v2.11.0g" (dev_err: "ena 0000:00:05.0: " prefix) */
	{ "Device reset completed successfully", KLOG_ENA_RESET_DONE, "", false },
	/* [2.17] (amzn-drivers 0d8debf): the status is the reset's return code */
	{ "Device reset completed, status: %d", KLOG_ENA_RESET_DONE, "1", false },
	/* ena_restore_device(): [up], [2.11]; ena_down(): "Device reset failed" [up], [2.11] */
	{ "Reset attempt failed. Can not reset the device", KLOG_ENA_RESET_FAILED, "", false },
	{ "Restore attempt failed", KLOG_ENA_RESET_FAILED, "", false },
	{ "Device reset failed", KLOG_ENA_RESET_FAILED, "", false },
};

/* "v2.11.0g" after "Driver info: " into @e->stat (the driver version). */
static void driver_version(struct klog_event *e, const char *s, const char *end)
{
	const char *info = find(s, (size_t)(end - s), "Driver info:");

	if (!info)
		return;
	for (const char *p = info; p + 1 < end; p++)
		if (p[0] == 'v' && p[-1] == ' ' && p[1] >= '0' && p[1] <= '9') {
			const char *q = p;

			while (q < end && *q > ' ' && *q < 0x7f)
				q++;
			copy_word(e->stat, sizeof(e->stat), p, (size_t)(q - p));
			return;
		}
}

static bool match_ena(const char *s, const char *end, struct klog_event *ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(ena_patterns); i++) {
		const struct ena_pattern *p = &ena_patterns[i];
		int64_t num[PAT_NUMS];
		size_t nn = 0;

		if (!pat_match(p->pat, s, end, num, &nn))
			continue;
		event_init(ret, p->kind);
		ret->cont = p->cont;
		apply(ret, p->map, num, nn);
		if (p->kind == KLOG_ENA_TX_MISSED && ret->n1 == 0 && !p->cont)
			ret->n1 = 1; /* the older drivers log one line per missed completion */
		if (p->kind == KLOG_ENA_RESET_DONE && nn > 0 && num[0] != 0) {
			ret->kind = KLOG_ENA_RESET_FAILED; /* "status: -5": the reset's -errno */
			ret->n1 = num[0] < 0 ? (uint64_t)-num[0] : (uint64_t)num[0];
		}
		if (p->kind == KLOG_ENA_RESET_DONE)
			driver_version(ret, s, end);
		return true;
	}
	return false;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.' || c == '@' || c == ':';
}

/* A PCI address "0000:00:05.0" (domain:bus:device.function) of exactly @n bytes. */
static bool is_pci(const char *s, size_t n)
{
	static const char shape[] = "hhhh:hh:hh.h";

	if (n != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool hex = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');

		if (shape[i] == 'h' ? !hex : s[i] != shape[i])
			return false;
	}
	return true;
}

struct devpfx {
	char drv[16], pci[16], ifname[16];
	const char *rest;
};

/* One word of name characters from @s, at most @max; returns its length (0: none). */
static size_t word_len(const char *s, const char *end, size_t max)
{
	size_t n = 0;

	while (s + n < end && n <= max && is_name_char(s[n]) && s[n] != ':')
		n++;
	return n > max ? 0 : n;
}

/*
 * The prefix dev_printk()/netdev_printk() put before a driver's text (drivers/base/core.c,
 * net/core/dev.c): "<driver> <bus id>: " for dev_*(), "<driver> <bus id> <ifname>: " for
 * netdev_*() / netif_*(). Returns true and fills @d when @s starts with one.
 */
static bool device_prefix(const char *s, const char *end, struct devpfx *d)
{
	size_t n = word_len(s, end, 15), m;
	const char *p;

	memset(d, 0, sizeof(*d));
	if (n == 0 || s + n + 13 > end || s[n] != ' ' || !is_pci(s + n + 1, 12))
		return false;
	copy_word(d->drv, sizeof(d->drv), s, n);
	copy_word(d->pci, sizeof(d->pci), s + n + 1, 12);
	p = s + n + 13;
	if (p + 1 < end && p[0] == ':' && p[1] == ' ') {
		d->rest = p + 2;
		return true;
	}
	if (p >= end || *p != ' ')
		return false;
	p++;
	m = word_len(p, end, 15);
	if (m == 0 || p + m + 1 >= end || p[m] != ':' || p[m + 1] != ' ')
		return false;
	copy_word(d->ifname, sizeof(d->ifname), p, m);
	d->rest = p + m + 2;
	return true;
}

/* A bare "eth0: " before the text (pastes that dropped the driver and bus id). */
static bool ifname_prefix(const char *s, const char *end, struct devpfx *d)
{
	size_t m = word_len(s, end, 15);

	memset(d, 0, sizeof(*d));
	if (m == 0 || s + m + 1 >= end || s[m] != ':' || s[m + 1] != ' ')
		return false;
	copy_word(d->ifname, sizeof(d->ifname), s, m);
	d->rest = s + m + 2;
	return true;
}

/* "name: value" with nothing after: one line of the statistics dump (ena_dump_stats_ex() in
 * [2.11] and [up] ena_ethtool.c, ena_dump_stats_to_log() in [2.17]: netif_err "%s: %llu"). */
static bool match_stat(const char *s, const char *end, struct klog_event *ret)
{
	size_t n = 0;
	uint64_t v;

	while (s + n < end && n < 32 &&
	       ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
		n++;
	if (n == 0 || n > 31 || s + n + 2 >= end || s[n] != ':' || s[n + 1] != ' ')
		return false;
	while (end > s && (end[-1] == ' ' || end[-1] == '\r'))
		end--;
	if (parse_u64_n(s + n + 2, (size_t)(end - s - n - 2), &v) < 0)
		return false;
	event_init(ret, KLOG_ENA_STAT);
	memcpy(ret->stat, s, n);
	ret->stat[n] = '\0';
	ret->n1 = v;
	return true;
}

/* "[comm:pid]" / "comm:pid" up to @stop: the comm may itself hold ':' and spaces. */
static void comm_pid(struct klog_event *e, const char *s, const char *stop)
{
	const char *colon = NULL;
	uint64_t pid;

	for (const char *p = s; p < stop; p++)
		if (*p == ':')
			colon = p;
	if (!colon)
		return;
	copy_word(e->comm, sizeof(e->comm), s, (size_t)(colon - s) < 16 ? (size_t)(colon - s) : 16);
	if (parse_u64_n(colon + 1, (size_t)(stop - colon - 1), &pid) == 0 && pid < 1u << 30)
		e->pid = (int)pid;
}

/*
 * @s starts with @word, maybe after one of the NULL-terminated @prefixes (the pr_fmt the kernel
 * prints before its own format string): returns where @word starts, or NULL. Never a search
 * inside the message: a kernel record quotes text others chose (the x86 segfault report prints
 * the crashing file's name, a USB device its product string), which is not the kernel's word.
 */
static const char *lead(const char *s, const char *end, const char *const *prefixes,
			const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; prefixes && prefixes[i]; i++) {
		size_t pl = strlen(prefixes[i]);

		if ((size_t)(end - s) >= pl && !memcmp(s, prefixes[i], pl)) {
			s += pl;
			break;
		}
	}
	return (size_t)(end - s) >= wl && !memcmp(s, word, wl) ? s : NULL;
}

/* "CPU%u: " (kernel/watchdog.c's buddy detector names the CPU that saw the lockup first) */
static const char *skip_cpu_tag(const char *s, const char *end)
{
	const char *p = s + 3;

	if (end - s < 6 || memcmp(s, "CPU", 3) != 0 || *p < '0' || *p > '9')
		return s;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return end - p >= 2 && p[0] == ':' && p[1] == ' ' ? p + 2 : s;
}

/* pr_fmt of kernel/watchdog.c (4.13+), of it and kernel/watchdog_hld.c before */
static const char *const watchdog_pfx[] = { "watchdog: ", "NMI watchdog: ", NULL };
/* the same, and panic()'s own prefix (hardlockup_panic before nmi_panic("Hard LOCKUP")) */
static const char *const hardlockup_pfx[] = { "watchdog: ", "NMI watchdog: ",
					       "Kernel panic - not syncing: ", NULL };
/* pr_fmt of kernel/rcu/tree.c (5.0+) */
static const char *const rcu_pfx[] = { "rcu: ", NULL };

/* "INFO: %s self-detected stall on CPU" / "INFO: %s detected stalls on CPUs/tasks": the RCU
 * flavour's name is one word */
static const char *rcu_stall(const char *s, const char *end)
{
	const char *p = lead(s, end, rcu_pfx, "INFO: "), *w;

	if (!p)
		return NULL;
	p += 6;
	w = p;
	while (p < end && *p > ' ' && *p < 0x7f)
		p++;
	if (p == w)
		return NULL;
	if (lead(p, end, NULL, " self-detected stall on CPU") ||
	    lead(p, end, NULL, " detected stalls on CPUs/tasks"))
		return p + 1;
	return NULL;
}

static bool match_lockups(const char *s, const char *end, struct klog_event *ret)
{
	int64_t num[PAT_NUMS];
	size_t nn = 0;
	const char *p;

	/* kernel/watchdog.c watchdog_timer_fn(): pr_emerg("BUG: soft lockup - CPU#%d stuck for
	 * %us! [%s:%d]"), with pr_fmt "watchdog: " (4.13+) or "NMI watchdog: " (4.x) before it */
	if ((p = lead(s, end, watchdog_pfx, "BUG: soft lockup - CPU#")) &&
	    pat_match("BUG: soft lockup - CPU#%d stuck for %ds! [", p, end, num, &nn)) {
		const char *open = memchr(p, '[', (size_t)(end - p)), *close;

		event_init(ret, KLOG_SOFT_LOCKUP);
		apply(ret, "c1", num, nn);
		close = open ? memchr(open, ']', (size_t)(end - open)) : NULL;
		if (open && close)
			comm_pid(ret, open + 1, close);
		return true;
	}
	/* kernel/watchdog_perf.c (watchdog_hld.c before 6.5), kernel/watchdog.c buddy detector:
	 * "Watchdog detected hard LOCKUP on cpu %d", also inside "Kernel panic - not syncing:" */
	if (((p = lead(s, end, hardlockup_pfx, "Watchdog detected hard LOCKUP on cpu ")) ||
	     (p = lead(skip_cpu_tag(lead(s, end, watchdog_pfx, ""), end), end, NULL,
		       "Watchdog detected hard LOCKUP on cpu "))) &&
	    pat_match("Watchdog detected hard LOCKUP on cpu %d", p, end, num, &nn)) {
		event_init(ret, KLOG_HARD_LOCKUP);
		apply(ret, "c", num, nn);
		return true;
	}
	/* kernel/hung_task.c check_hung_task(): "INFO: task %s:%d blocked for more than %ld
	 * seconds." */
	if ((p = lead(s, end, NULL, "INFO: task ")) && (p += 11) &&
	    pat_match("%* blocked for more than %d seconds", p, end, num, &nn)) {
		const char *b = find(p, (size_t)(end - p), " blocked for more than ");

		event_init(ret, KLOG_HUNG_TASK);
		apply(ret, "1", num, nn);
		comm_pid(ret, p, b);
		return true;
	}
	/* kernel/rcu/tree_stall.h: "INFO: %s self-detected stall on CPU" and "INFO: %s detected
	 * stalls on CPUs/tasks:" (pr_fmt "rcu: " since 5.0); 4.x appends "{ 3}" to the line */
	if ((p = rcu_stall(s, end))) {
		const char *brace = memchr(p, '{', (size_t)(end - p));

		event_init(ret, KLOG_RCU_STALL);
		if (brace && pat_match("{ %d", brace, end, num, &nn))
			apply(ret, "c", num, nn);
		return true;
	}
	return false;
}

/* net/sched/sch_generic.c dev_watchdog(): before 6.8 WARN_ONCE "NETDEV WATCHDOG: %s (%s):
 * transmit queue %u timed out" (+ " %u ms" since 5.18); since 6.8 netdev_crit "NETDEV
 * WATCHDOG: CPU: %d: transmit queue %u timed out %u ms" behind the device prefix. */
static bool match_watchdog(const char *s, const char *end, const struct devpfx *d,
			   struct klog_event *ret)
{
	const char *p = lead(s, end, NULL, "NETDEV WATCHDOG: ");
	int64_t num[PAT_NUMS];
	size_t nn = 0;

	if (!p)
		return false;
	p += 17;
	event_init(ret, KLOG_NETDEV_WATCHDOG);
	if (pat_match("CPU: %d: transmit queue %d timed out", p, end, num, &nn)) {
		apply(ret, "cq", num, nn);
		nn = 0;
		if (pat_match("%* timed out %d ms", p, end, num, &nn))
			apply(ret, "1", num, nn);
		if (d)
			memcpy(ret->ifname, d->ifname, sizeof(ret->ifname));
		return true;
	}
	if (pat_match("%* (%*): transmit queue %d timed out", p, end, num, &nn)) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));

		apply(ret, "q", num, nn);
		copy_word(ret->ifname, sizeof(ret->ifname), p, sp ? (size_t)(sp - p) : 0);
		nn = 0;
		if (pat_match("%* timed out %d ms", p, end, num, &nn))
			apply(ret, "1", num, nn);
		return true;
	}
	return false;
}

static void set_device(struct klog_event *e, const struct devpfx *d)
{
	if (!d)
		return;
	if (d->ifname[0] && !e->ifname[0])
		memcpy(e->ifname, d->ifname, sizeof(e->ifname));
	if (d->pci[0])
		memcpy(e->pci, d->pci, sizeof(e->pci));
}

/*
 * A counter name only the ENA driver prints (ena_ethtool.c's global, queue and admin-queue
 * strings): enough to read a bare "eth0: name: value" line as the start of its statistics dump
 * when nothing before it named the interface as ENA.
 */
static bool ena_stat_name(const char *s, const char *end)
{
	static const char *const names[] = {
		"queue_", "ena_admin_q_", "total_resets:", "tx_timeout:", "wd_expired:",
		"admin_q_pause:", "reset_fail:", "suspected_poll_starvation:", "missing_tx_cmpl:",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if ((size_t)(end - s) > strlen(names[i]) && !memcmp(s, names[i], strlen(names[i])))
			return true;
	return false;
}

static bool known_if(const char (*ifs)[16], size_t n, const char *ifname)
{
	for (size_t i = 0; i < n; i++)
		if (ifs[i][0] && streq(ifs[i], ifname))
			return true;
	return false;
}

int klog_parse_message(const char *msg, size_t len, const char (*ena_ifs)[16], size_t n_ifs,
		       struct klog_event *ret)
{
	const char *end = msg + (len > KLOG_LINE_MAX ? KLOG_LINE_MAX : len);
	struct klog_event e;
	struct devpfx d;

	while (end > msg && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	if (end <= msg)
		return 0;
	if (match_lockups(msg, end, &e)) {
		*ret = e;
		return 1;
	}
	if (device_prefix(msg, end, &d)) {
		if (match_watchdog(d.rest, end, &d, &e) ||
		    (streq(d.drv, "ena") && (match_ena(d.rest, end, &e) ||
					     match_stat(d.rest, end, &e)))) {
			set_device(&e, &d);
			*ret = e;
			return 1;
		}
		return 0;
	}
	if (match_watchdog(msg, end, NULL, &e) || match_ena(msg, end, &e)) {
		*ret = e;
		return 1;
	}
	if (ifname_prefix(msg, end, &d) &&
	    (match_ena(d.rest, end, &e) ||
	     ((known_if(ena_ifs, n_ifs, d.ifname) || ena_stat_name(d.rest, end)) &&
	      match_stat(d.rest, end, &e)))) {
		set_device(&e, &d);
		*ret = e;
		return 1;
	}
	return 0;
}
