/* SPDX-License-Identifier: MIT */
#ifndef CZ_LOCKUPS_H
#define CZ_LOCKUPS_H

/*
 * The kernel's soft-lockup reports (klog/kevents.h, kept by the agent's kmsg follower) read as
 * bursts: the watchdog saw a CPU stuck in the kernel, which is what the sampler measures as a
 * 100% system-time run. The check counts them with the sampler's bursts, so a burst the sampler
 * missed (the agent was not running, or was starved itself) is still found. Pure.
 */

#include <stddef.h>
#include <stdint.h>

#include "cpu/history.h"
#include "klog/kevents.h"

/*
 * kevents_soft_lockups - pure: append to @ev (@n used of @max) one burst per soft lockup in
 * @k that ended at or after @since_ms: on its CPU, lasting the seconds the kernel says it was
 * stuck, 100% (the watchdog thread could not run at all), the task it names. A lockup that
 * overlaps a burst the sampler recorded on the same CPU is that burst: not added. Returns the
 * new count; *@ret_added (may be NULL) the number added.
 */
size_t kevents_soft_lockups(const struct kevents *k, uint64_t since_ms, struct burst_event *ev,
			    size_t n, size_t max, size_t *ret_added);

#endif
