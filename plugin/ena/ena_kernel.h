/* SPDX-License-Identifier: MIT */
#ifndef CZ_ENA_KERNEL_H
#define CZ_ENA_KERNEL_H

/*
 * ENA resets the kernel logged (the agent's kernel-event log, kevents.h), per device, for
 * `check ena`. The upstream driver has no reset-reason counters and a driver reload zeroes
 * every counter; the log says what happened either way. Counters stay the primary source where
 * they exist: per device, the check counts max(counter resets, logged resets) within the window
 * (both see the same resets, each may miss some: never added, so one reset is never counted
 * twice), and takes the cause from the counters when they name one.
 */

#include <stddef.h>
#include <stdint.h>

#include "ena/ena.h"
#include "klog/kevents.h"

struct ena_kreset {
	char ifname[16], pci[16];
	uint64_t resets;		/* within the window */
	uint64_t last_ms;		/* wall time of the last one */
	bool failed;			/* the last one failed */
	char cause[ENA_CAUSE_MAX];	/* "poll starvation q5 (cpu3 soft lockup 23s kubelet)" */
};

struct ena_kernel {
	size_t n;
	struct ena_kreset dev[ENA_STATE_MAX_IFACES];
};

/*
 * ena_kernel_resets - pure: the resets logged in @k that began within @window_ms before
 * @now_ms, grouped per device. Fills *@ret; returns 0 or -ENOMEM.
 */
int ena_kernel_resets(const struct kevents *k, uint64_t now_ms, uint64_t window_ms,
		      struct ena_kernel *ret);

/*
 * ena_kernel_find - the entry for a device with PCI address @pci (preferred) or interface
 * @ifname (either may be "" or NULL), or NULL.
 */
struct ena_kreset *ena_kernel_find(struct ena_kernel *kr, const char *pci, const char *ifname);

/*
 * ena_kernel_load - the I/O edge: read the run dir's kernel-event log (no lock, nothing
 * written) and ena_kernel_resets() it. No log yet (no agent, or agent.kmsg off): 0 with
 * ret->n = 0. Returns 0 or -errno.
 */
int ena_kernel_load(const char *run_dir, uint64_t now_ms, uint64_t window_ms,
		    struct ena_kernel *ret);

#endif
