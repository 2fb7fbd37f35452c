/* SPDX-License-Identifier: MIT */
#ifndef CZ_CPU_H
#define CZ_CPU_H

/*
 * The pure verdict of `check cpu`: bursts in (from the agent's log or the inline sampler,
 * sampler.h), one NPD line out. The I/O edge is check_cpu.c.
 */

#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/npd.h"
#include "cpu/history.h"

/*
 * cpu_verdict - @ev (@n bursts within the lookback, oldest first, ongoing ones included) to a
 * result: NPD_PROBLEM when any burst lasts at least min_burst, leading with the worst core
 * (longest burst, then most bursts): "cpu39 100% sys 6.2s x3/10m; serves eth0-Tx-Rx-5; top
 * kubelet 5.9s; also cpu3 x1"; @note (may be NULL or "") is appended (e.g. the inline window).
 * NPD_OK otherwise. Returns the status.
 */
int cpu_verdict(const struct burst_event *ev, size_t n, const struct cz_config *cfg,
		const char *note, struct npd_result *res);

#endif
