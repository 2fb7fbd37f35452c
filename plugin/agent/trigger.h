/* SPDX-License-Identifier: MIT */
#ifndef CZ_TRIGGER_H
#define CZ_TRIGGER_H

/*
 * Condition latency: with agent.set_conditions the agent patches a condition when
 * its evidence appears, not at the next agent.check_interval. The sampler's loop (agent.c)
 * notes what happened (trigger_note): a run on some core became a burst (it crossed
 * cpu.min_burst: CPUCoreSaturation), the kernel log recorded an event (an ENA reset, a soft
 * lockup: ENADeviceReset, CPUCoreSaturation). It takes what is due (trigger_take) and hands
 * it to the periodic thread (agent_periodic.h: periodic_kick), which owns the API client and
 * runs trigger_publish(): the check of that condition, as NPD would run it (it reads the
 * heartbeat the loop has just rewritten), and the node-status PATCH of kube_agent_publish().
 *
 * Rate limit: at most one PATCH per condition per TRIGGER_GAP_MS. A note inside the gap is
 * kept pending and taken when the gap is over, so a burst that starts 1 s after the last PATCH
 * still reaches the API server within the gap, never at the next check_interval.
 */

#include <stddef.h>
#include <stdint.h>

#include "check/cz.h"

struct kube_agent;

#define TRIGGER_GAP_MS 5000

enum {
	TRIGGER_CPU = 1u << 0, /* check cpu: CPUCoreSaturation */
	TRIGGER_ENA = 1u << 1, /* check ena: ENADeviceReset */
	TRIGGER_ALL = TRIGGER_CPU | TRIGGER_ENA,
};

struct trigger {
	unsigned pending;
	uint64_t last_ms[2]; /* when each was last taken (monotonic), 0 = never */
};

/* trigger_note - pure: @what (TRIGGER_* bits) happened; it becomes pending. */
void trigger_note(struct trigger *t, unsigned what);

/*
 * trigger_take - pure: the pending bits whose last take is at least TRIGGER_GAP_MS before
 * @now_ms (or that were never taken); they are cleared and stamped @now_ms. Bits still inside
 * their gap stay pending. Returns the bits taken (0: nothing due).
 */
unsigned trigger_take(struct trigger *t, uint64_t now_ms);

#define TRIGGER_CHECKS_MAX 2 /* the checks a trigger runs: cpu, ena */

/*
 * trigger_run_checks - run the checks of @what (TRIGGER_* bits) through check_run()
 * (node/check_run.h: the same verdict `check` and the agent's cycle give), at most
 * TRIGGER_CHECKS_MAX: names into @names, verdicts into @res. Returns how many ran.
 */
size_t trigger_run_checks(struct cz_ctx *ctx, unsigned what, const char *names[],
			  struct npd_result res[]);

/*
 * trigger_publish - in the thread that owns @ka: run the checks of @what and patch their
 * conditions (kube_agent_publish). One line of what was done into @out. Returns 0 or -errno
 * (logged by the PATCH); 0 and nothing done when @ka is NULL or agent.set_conditions is off.
 */
int trigger_publish(struct cz_ctx *ctx, struct kube_agent *ka, unsigned what, char *out,
		    size_t size);

#endif
