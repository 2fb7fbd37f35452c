/* SPDX-License-Identifier: MIT */
#ifndef CZ_REPORT_WINDOW_H
#define CZ_REPORT_WINDOW_H

/*
 * `report --since/--until`: the report's history and bursts for a chosen window instead of the
 * last cpu.lookback. The history comes from the finest tier that still covers the window
 * (cpu/tier.h): the fine ring for the last minutes, per-second maxima for hours, per-minute
 * maxima for days. A job that failed at 03:10 can be looked at at 10:00.
 */

#include <stdint.h>

#include "node/model.h"

/*
 * report_load_window - replace @r's history with the finest tier of @run_dir covering
 * [@since_ms, @until_ms] (trimmed to it), and keep only the bursts that overlap the window.
 * Sets r->hist_tier, r->hist_interval_ms, r->until_ms. Returns 0 (also when no tier has data:
 * r->hist_rc says -ENOENT), or -ENOMEM.
 */
int report_load_window(struct node_model *r, const char *run_dir, uint64_t since_ms,
		       uint64_t until_ms);

/* report_tier_name - "per-sample", "per-second maxima", "per-minute maxima". */
const char *report_tier_name(int tier);

#endif
