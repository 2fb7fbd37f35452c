/* SPDX-License-Identifier: MIT */
#ifndef CZ_KLOG_INCIDENT_H
#define CZ_KLOG_INCIDENT_H

/*
 * From kernel-log events (klog.h) to what happened: ENA resets grouped per device with their
 * cause, queue and outcome, the statistics dump printed at each reset read into the same
 * counter verdict as `ethtool -S` (ena.h), and the lockup that starved the queue linked to it.
 * Pure: events in, an incident out.
 *
 * Grouping: the ENA driver names the device on every line ("ena <pci> <if>: " or, for dev_err
 * lines such as the reset's completion, "ena <pci>: "); the lines of one device from its first
 * symptom to "Device reset completed"/"failed" are one reset. The first reset-causing line is
 * the cause (once the driver sets its reset flag it stops checking, so later lines are
 * consequences). A lockup is linked to a reset when it names the CPU the driver says serves
 * the queue's NAPI, else when it is within KLOG_LINK_US of the reset in the same clock, else
 * (a paste without comparable times) when it is the only lockup.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ena/ena.h"
#include "klog/klog.h"

#define KLOG_EVENTS_MAX 50000	     /* events kept from one paste; more are counted, not kept */
#define KLOG_EVENTS_RESERVE 5000 /* of those, kept for all but statistics and missed-Tx lines */
#define KLOG_RESETS_MAX 32
#define KLOG_LINK_US (120 * 1000000LL) /* a lockup this close to a reset may have caused it */

/* A paste's events, in order. */
struct klog_log {
	size_t n, cap;
	struct klog_event *ev;
	size_t dropped;		/* events beyond KLOG_EVENTS_MAX */
};

/*
 * klog_log_add - append a copy of @e. The last KLOG_EVENTS_RESERVE places are kept for events
 * other than statistics and missed-Tx lines, so a flood of those cannot hide the reset that
 * follows it. Returns 0, -E2BIG when full (counted in dropped) or -ENOMEM.
 */
int klog_log_add(struct klog_log *l, const struct klog_event *e);

/* klog_log_free - free and zero @l. NULL-safe. */
void klog_log_free(struct klog_log *l);

enum klog_outcome {
	KLOG_OUTCOME_NOT_LOGGED = 0,
	KLOG_OUTCOME_COMPLETED,
	KLOG_OUTCOME_FAILED,
};

struct klog_reset {
	char ifname[16], pci[16];
	char version[32];		/* driver version from "Driver info: ... v2.11.0g", or "" */
	bool is_reset;			/* false: only missed completions (a risk, no reset) */
	enum klog_kind cause;		/* first reset-causing kind; KLOG_NONE: not in the log */
	bool poll_starved;		/* "napi handler hasn't been called ... but is scheduled" */
	int queue, cpu;			/* -1 when the log does not say */
	uint64_t napi_us;		/* longest time since the queue's NAPI ran, as logged */
	uint64_t lost, threshold;	/* lost Tx completions above the threshold */
	uint64_t missed;		/* missed Tx completions logged */
	enum klog_outcome outcome;
	size_t first, last;		/* indices of its first and last event */
	ssize_t lockup;			/* index of the linked lockup event, or -1 */
	int lockup_cpu;			/* its CPU (RCU stalls name it on the next line) */
	size_t n_stats;			/* statistics lines of the dump at this reset */
	bool has_verdict;		/* the dump went through ena_diff() */
	bool since_load; /* the verdict's baseline is zero (first dump of the paste) */
	struct ena_verdict verdict;
};

struct klog_incident {
	size_t n_resets;		/* resets and risks, in order */
	struct klog_reset resets[KLOG_RESETS_MAX];
	size_t dropped_resets;		/* beyond KLOG_RESETS_MAX */
	size_t n_lockups; /* soft/hard lockups, RCU stalls, hung tasks, NETDEV WATCHDOG */
};

/*
 * klog_analyze - group @l into resets, read each statistics dump through ena_diff() with the
 * counter lists @lists (the dump before it of the same interface is the baseline, else zero:
 * counts since the driver loaded), link lockups. Fills *@ret (large: keep it off the stack);
 * returns 0 or -ENOMEM.
 */
int klog_analyze(const struct klog_log *l, const struct ena_lists *lists,
		 struct klog_incident *ret);

/* klog_reset_reason - the counter name the out-of-tree driver would count this cause under
 * ("suspected_poll_starvation", "missing_tx_cmpl", ...), "" when the log does not say. */
const char *klog_reset_reason(const struct klog_reset *r);

/* klog_reset_cause - a short phrase for the cause ("poll starvation", "lost Tx completions
 * 156 > 128", ...) into @buf. Returns @buf. */
char *klog_reset_cause(const struct klog_reset *r, char *buf, size_t size);

/*
 * klog_reset_chain - the linked story of one reset, cause first: "cpu3 soft lockup 23s
 * (kubelet) -> eth0 q0 Tx not completed -> lost Tx completions 156 > 128 -> reset
 * (completed)". Returns @buf (always NUL-terminated, cut at @size).
 */
char *klog_reset_chain(const struct klog_log *l, const struct klog_reset *r, char *buf,
		       size_t size);

/* klog_event_describe - one event as a phrase for a timeline. Returns @buf. */
char *klog_event_describe(const struct klog_event *e, char *buf, size_t size);

/* klog_is_lockup - soft/hard lockup, RCU stall, hung task or NETDEV WATCHDOG (not cont). */
bool klog_is_lockup(const struct klog_event *e);

#endif
