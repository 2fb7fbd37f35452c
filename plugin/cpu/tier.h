/* SPDX-License-Identifier: MIT */
#ifndef CZ_TIER_H
#define CZ_TIER_H

/*
 * History tiers: a job that failed at 03:10 is looked at hours later, when the fine ring
 * (cpu.history, one sample per cpu.interval for 15 minutes) has long rolled over. Besides it the
 * agent keeps per-core MAXIMA per second (cpu.history_seconds, default 6 h) and per minute
 * (cpu.history_minutes, default 7 d), each in a fixed-size ring file of the same format as the
 * fine one (cpu/history.h), so `report --since/--until` can draw the window of the failure
 * from the finest tier that still covers it.
 *
 * A tier keeps maxima, not means: a 2 s burst at 100% must still show as a hot minute.
 *
 * tier_agg is the pure part: samples in, one max-per-core row out per completed period.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_SECONDS_FILE "cpu-history-1s"
#define TIER_MINUTES_FILE "cpu-history-1m"

struct tier_agg {
	unsigned ncpu;
	uint64_t period_ms;
	uint64_t bucket;    /* current period number (t_ms / period_ms); 0 = none yet */
	uint8_t *max;	    /* ncpu bytes: max share so far, HISTORY_NO_SAMPLE when none */
};

/* tier_agg_init - for @ncpu CPUs and periods of @period_ms. 0, -EINVAL or -ENOMEM. */
int tier_agg_init(struct tier_agg *a, unsigned ncpu, uint64_t period_ms);

/* tier_agg_free - safe on a zeroed struct. */
void tier_agg_free(struct tier_agg *a);

/*
 * tier_agg_add - add one sample (@pct: ncpu bytes, HISTORY_NO_SAMPLE for none) taken at @t_ms.
 * When it starts a new period, the finished one is copied to @ret_row (ncpu bytes) with its
 * start time in *@ret_t_ms and 1 is returned; otherwise 0. A sample older than the current
 * period (the clock stepped back) starts afresh: the unfinished period is dropped, 0 returned.
 */
int tier_agg_add(struct tier_agg *a, uint64_t t_ms, const uint8_t *pct, uint8_t *ret_row,
		 uint64_t *ret_t_ms);

/*
 * tier_agg_flush - the unfinished period, if any sample went into it (for a clean exit).
 * Returns 1 with the row and its start, or 0.
 */
int tier_agg_flush(struct tier_agg *a, uint8_t *ret_row, uint64_t *ret_t_ms);

/* The tiers a report can draw from, finest first. */
enum tier_id { TIER_FINE, TIER_SECONDS, TIER_MINUTES, TIER_COUNT };

/*
 * tier_pick - pure: the finest tier whose retained span covers [@since_ms, now], given each
 * tier's oldest retained sample (@oldest_ms[i], 0 when the tier has no data); when none covers
 * it, the one that reaches furthest back (the finer on a tie); -ENODATA when no tier has any.
 */
int tier_pick(const uint64_t oldest_ms[TIER_COUNT], uint64_t since_ms);

#endif
