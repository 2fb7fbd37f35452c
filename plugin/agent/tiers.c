/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "agent/tiers.h"
#include "base/log.h"
#include "base/util.h"

void agent_tiers_open(struct agent_tiers *at, const struct cz_ctx *ctx, unsigned ncpu)
{
	const struct {
		const char *file;
		uint64_t keep_ms, period_ms;
	} def[2] = {
		{ TIER_SECONDS_FILE, ctx->cfg.cpu.history_seconds_ms, 1000 },
		{ TIER_MINUTES_FILE, ctx->cfg.cpu.history_minutes_ms, 60000 },
	};

	for (int i = 0; i < 2; i++) {
		struct agent_tier *t = &at->t[i];
		int r;

		*t = (struct agent_tier){ .ring = { .fd = -1 } };
		if (def[i].keep_ms < def[i].period_ms)
			continue; /* off */
		t->row = malloc(ncpu);
		r = t->row ? tier_agg_init(&t->agg, ncpu, def[i].period_ms) : -ENOMEM;
		if (r >= 0)
			r = history_ring_open_file(ctx->cfg.paths.run, def[i].file, ncpu,
						   def[i].keep_ms, def[i].period_ms, &t->ring);
		if (r < 0) {
			log_warning_errno(r, "Failed to open history tier '%s/%s': %m, ignoring",
					  ctx->cfg.paths.run, def[i].file);
			tier_agg_free(&t->agg);
			free(t->row);
			*t = (struct agent_tier){ .ring = { .fd = -1 } };
			continue;
		}
		t->on = true;
	}
}

void agent_tiers_add(struct agent_tiers *at, uint64_t t_ms, const uint8_t *pct)
{
	for (int i = 0; i < 2; i++) {
		struct agent_tier *t = &at->t[i];
		uint64_t start;

		/* stamped at the period's end, like a fine sample (the share of the interval
		 * that ended at its time stamp): readers draw all tiers the same way */
		if (t->on && tier_agg_add(&t->agg, t_ms, pct, t->row, &start) == 1)
			(void)history_ring_add(&t->ring, start + t->agg.period_ms, t->row);
	}
}

void agent_tiers_flush(struct agent_tiers *at)
{
	for (int i = 0; i < 2; i++)
		if (at->t[i].on)
			(void)history_ring_flush(&at->t[i].ring);
}

void agent_tiers_close(struct agent_tiers *at)
{
	for (int i = 0; i < 2; i++) {
		struct agent_tier *t = &at->t[i];
		uint64_t start;

		if (!t->on)
			continue;
		if (tier_agg_flush(&t->agg, t->row, &start) == 1)
			(void)history_ring_add(&t->ring, start + t->agg.period_ms, t->row);
		history_ring_close(&t->ring);
		tier_agg_free(&t->agg);
		free(t->row);
		*t = (struct agent_tier){ .ring = { .fd = -1 } };
	}
}
