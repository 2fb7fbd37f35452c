/* SPDX-License-Identifier: MIT */
#ifndef CZ_RECLAIMER_H
#define CZ_RECLAIMER_H

/*
 * remediation.reclaim, the agent's I/O edge (the plan and its guards: memcg/reclaim.h). Each
 * agent cycle folds the memcg check's status into the reclaim state; when the plan says so it
 * counts the dying memcgs, records the attempt (before the write: a crash never repeats it
 * sooner than reclaim_interval), writes 1 to <proc>/sys/vm/drop_caches or the byte count to
 * <cgroup v2 subtree>/memory.reclaim, waits for the kernel to free what it can (at most
 * RECLAIM_SETTLE_MS), counts again, and says how many went: a log line, an Event on the node
 * (when the agent has an API client) and the state the metrics read.
 *
 * memory.reclaim's target is the subtree that holds the zombies (memcg_where, from cgroup.stat
 * counts), and the amount its memory.stat inactive_file: the zombies' pages are never touched
 * again, so they age onto the inactive list; asking for all of it frees them without forcing
 * the live workloads' hot pages out first (proactive reclaim scans every memcg in the subtree,
 * dying ones included). Plus a bounded share of its active_file, a few KiB per zombie
 * (reclaim_active_allowance): the pages a zombie read that others touched again are active.
 */

#include <stddef.h>

#include "agent/census_publish.h"
#include "check/cz.h"

#define RECLAIM_SETTLE_MS 5000	/* how long to wait for the kernel to free the memcgs */

struct kube_client;

/*
 * reclaimer_cycle - fold this cycle's memcg check @status into the state and act on the plan.
 * @kc (may be NULL) posts the Event; @census (may be NULL) is re-run after a reclaim, so that
 * the run dir shows what is left, and its top group is named in the Event. Writes a one-line
 * summary into @out. Returns 1 when it reclaimed or dry-ran, 0 when the plan said no, -errno
 * when the state could not be kept (then it did nothing) or the write was refused.
 */
int reclaimer_cycle(struct cz_ctx *ctx, int status, struct kube_client *kc,
		    struct census_publisher *census, char *out, size_t size);

#endif
