/* SPDX-License-Identifier: MIT */
#ifndef CZ_SAMPLER_H
#define CZ_SAMPLER_H

/*
 * The sampler, pure: a series of /proc/stat readings in, each core's share of cpu.metric and
 * its bursts out. No I/O and no clock: the caller reads /proc/stat and passes its text with the
 * time it was taken. Two edges drive it: the agent's loop (agent/agent.c, every cpu.interval,
 * forever) and `check cpu`'s inline window when no agent runs (cpu/check_cpu.c, which also
 * adds the threads and NIC IRQs of a hot core). It sits in checks/, not agent/, because a check
 * uses it and checks never include the agent.
 *
 * Each reading is parsed (cpustat.h), compared with the previous one (cpustat_share: the
 * mpstat way) and the share fed to one burst tracker per core (burst.h). A reading that does
 * not parse is refused and leaves the series as it was: the next good reading is compared with
 * the last good one, so the skipped interval is folded into the next.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "cpu/burst.h"
#include "cpu/cpustat.h"

/* A core's share in a sample had no usable value (offline, counter reset, first reading). */
#define SAMPLER_NO_SHARE 255

struct sampler_params {
	enum cz_cpu_metric metric; /* cpu.metric */
	struct burst_params burst; /* cpu.threshold_pct, cpu.min_burst, cpu.interval */
};

/* A burst found on one core; times on the caller's clock (the t_ms it fed). */
struct sampler_burst {
	unsigned cpu;
	struct burst_run run;
};

struct sampler {
	unsigned ncpu;
	struct sampler_params p;
	bool have_prev;
	struct cpustat_core *prev, *cur; /* ncpu each: last good reading, scratch */
	struct burst_tracker *trk;	  /* ncpu */
	uint8_t *shares;		  /* ncpu: the last sample, 0..100 or SAMPLER_NO_SHARE */
	bool *watch;			  /* ncpu: hot now, or its run ended with the last sample */
	bool *started;			  /* ncpu: a run began with the last sample */
};

/*
 * sampler_init - set up *@s for @ncpu CPU slots (1..CPUSTAT_MAX_CPUS) with @p. Returns 0, or
 * -EINVAL (bad @ncpu, interval 0) / -ENOMEM; *@s is then zeroed (sampler_done is safe on it).
 */
int sampler_init(struct sampler *s, unsigned ncpu, const struct sampler_params *p);

/* sampler_done - free what sampler_init allocated and zero *@s; safe on a zeroed sampler. */
void sampler_done(struct sampler *s);

/*
 * sampler_feed - one /proc/stat reading @text taken at @t_ms (a monotonic clock, increasing;
 * a reading at or before the previous one only replaces the baseline). Updates the shares and
 * watch flags; bursts that ended with this reading go to @ret (at most @max, the return value
 * counts them all). The first reading only starts the series (no share yet). Returns the number
 * of bursts ended, or -EINVAL / -E2BIG from cpustat_parse (the reading is ignored then, the
 * series unchanged).
 */
int sampler_feed(struct sampler *s, uint64_t t_ms, const char *text, struct sampler_burst *ret,
		 size_t max);

/*
 * sampler_finish - end of the series: every run in progress ends; those that qualify go to
 * @ret as in sampler_feed (watch flags mark their cores). The next feed starts a new series
 * after the baseline. Returns the number of bursts.
 */
int sampler_finish(struct sampler *s, struct sampler_burst *ret, size_t max);

/*
 * sampler_active - runs in progress that already qualify as bursts (so a reader sees a burst
 * that has not ended yet), at most @max into @ret. Returns the count stored.
 */
size_t sampler_active(const struct sampler *s, struct sampler_burst *ret, size_t max);

#endif
