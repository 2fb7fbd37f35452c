/* SPDX-License-Identifier: MIT */
#ifndef CZ_AGENT_TIERS_H
#define CZ_AGENT_TIERS_H

/*
 * The agent's writer of the coarse history tiers (cpu/tier.h): every sample also goes into a
 * per-second and a per-minute max-per-core aggregate, and each finished period becomes one slot
 * of its ring file in the run dir (cpu-history-1s for cpu.history_seconds, cpu-history-1m for
 * cpu.history_minutes; 0 turns a tier off). A tier that cannot be opened is logged and left
 * out: the fine ring and the bursts do not depend on it.
 */

#include <stdbool.h>
#include <stdint.h>

#include "check/cz.h"
#include "cpu/history.h"
#include "cpu/tier.h"

struct agent_tier {
	bool on;
	struct tier_agg agg;
	struct history_ring ring;
	uint8_t *row;
};

struct agent_tiers {
	struct agent_tier t[2]; /* seconds, minutes */
};

/* agent_tiers_open - open (or continue) both tier files for @ncpu CPUs. Never fails. */
void agent_tiers_open(struct agent_tiers *at, const struct cz_ctx *ctx, unsigned ncpu);

/* agent_tiers_add - one sample (ncpu shares) at realtime @t_ms. */
void agent_tiers_add(struct agent_tiers *at, uint64_t t_ms, const uint8_t *pct);

/* agent_tiers_flush - write the queued slots (the agent does this every second). */
void agent_tiers_flush(struct agent_tiers *at);

/* agent_tiers_close - the unfinished periods are written, then the files closed. */
void agent_tiers_close(struct agent_tiers *at);

#endif
