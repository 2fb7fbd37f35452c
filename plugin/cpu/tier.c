/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "cpu/history.h"
#include "cpu/tier.h"
#include "base/util.h"

int tier_agg_init(struct tier_agg *a, unsigned ncpu, uint64_t period_ms)
{
	if (ncpu == 0 || period_ms == 0)
		return -EINVAL;
	*a = (struct tier_agg){ .ncpu = ncpu, .period_ms = period_ms };
	a->max = malloc(ncpu);
	if (!a->max)
		return -ENOMEM;
	memset(a->max, HISTORY_NO_SAMPLE, ncpu);
	return 0;
}

void tier_agg_free(struct tier_agg *a)
{
	free(a->max);
	a->max = NULL;
}

static bool any(const struct tier_agg *a)
{
	for (unsigned c = 0; c < a->ncpu; c++)
		if (a->max[c] != HISTORY_NO_SAMPLE)
			return true;
	return false;
}

int tier_agg_flush(struct tier_agg *a, uint8_t *ret_row, uint64_t *ret_t_ms)
{
	if (a->bucket == 0 || !any(a))
		return 0;
	memcpy(ret_row, a->max, a->ncpu);
	*ret_t_ms = a->bucket * a->period_ms;
	memset(a->max, HISTORY_NO_SAMPLE, a->ncpu);
	return 1;
}

int tier_agg_add(struct tier_agg *a, uint64_t t_ms, const uint8_t *pct, uint8_t *ret_row,
		 uint64_t *ret_t_ms)
{
	uint64_t b = t_ms / a->period_ms;
	int out = 0;

	if (b < a->bucket) { /* the clock went back: what we had is of a time that did not happen */
		memset(a->max, HISTORY_NO_SAMPLE, a->ncpu);
		a->bucket = b;
	} else if (b > a->bucket) {
		out = tier_agg_flush(a, ret_row, ret_t_ms);
		a->bucket = b;
	}
	for (unsigned c = 0; c < a->ncpu; c++)
		if (pct[c] != HISTORY_NO_SAMPLE &&
		    (a->max[c] == HISTORY_NO_SAMPLE || pct[c] > a->max[c]))
			a->max[c] = pct[c];
	return out;
}

int tier_pick(const uint64_t oldest_ms[TIER_COUNT], uint64_t since_ms)
{
	int best = -ENODATA;

	for (int i = 0; i < TIER_COUNT; i++) {
		if (oldest_ms[i] == 0)
			continue;
		if (oldest_ms[i] <= since_ms)
			return i;
		/* none covers it (yet): the one reaching furthest back, the finer on a tie */
		if (best < 0 || oldest_ms[i] < oldest_ms[best])
			best = i;
	}
	return best;
}
