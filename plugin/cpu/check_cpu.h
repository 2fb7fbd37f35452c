/* SPDX-License-Identifier: MIT */
#ifndef CZ_CHECK_CPU_H
#define CZ_CHECK_CPU_H

/*
 * The I/O edge of check cpu (check_cpu.c): the agent's run-dir files, or the live sampler
 * (cpu_sampler.h) inline when the agent is not there. cpu.h is the pure verdict; check_cpu()
 * itself is in the table of checks (node/checks.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/cz.h"
#include "cpu/history.h"

struct kevents; /* klog/kevents.h */

/*
 * What check cpu leaves for the agent's node model (check_seen's cpu, check/cz.h), so the metrics
 * do not read it again: the kernel-event log it read for the soft lockups (@set; @kev NULL when
 * there is no log, as report_load_kevents() leaves it). @set stays false when it did not read it
 * (or ran out of memory): the node model reads it then. The model takes @kev (node_take_kevents).
 */
struct cpu_seen {
	bool set;
	struct kevents *kev;
};

/* cpu_seen_free - free what @s holds and clear it. */
void cpu_seen_free(struct cpu_seen *s);

/* check_cpu - `check cpu`, the row of node/checks.c: a core saturated in cpu.lookback. */
int check_cpu(struct cz_ctx *ctx, const struct check_seen *cs, struct npd_result *res);

#endif
