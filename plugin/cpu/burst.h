/* SPDX-License-Identifier: MIT */
#ifndef CZ_BURST_H
#define CZ_BURST_H

/*
 * Pure burst detection over one core's sample series (docs/design.md "Bursts").
 *
 * A sample is the share of the metric over the interval that ended at its time stamp. A burst
 * is a run of consecutive samples at or above threshold_pct whose intervals together last at
 * least min_burst: it starts where the first hot interval began (the previous sample's time)
 * and ends where the last hot interval ended. Lengths come from the sampler's own clock; to
 * absorb timer jitter (a 250 ms sleep that woke 1 ms early) a run qualifies when it is within
 * half an interval of min_burst, so with 250 ms / 2 s exactly 8 hot samples make a burst and 7
 * never do. An unusable sample (CPU offline, counters reset: pct < 0) ends a run; its time
 * still starts the next interval. The very first sample only starts the series.
 *
 * Hysteresis: a burst, once entered, survives a brief dip. On a noisy node (a crash-looping unit
 * beside the burst is the incident's own picture) single samples of a 96% burst fall to 85%, and
 * without this a 6 s burst fell apart into runs shorter than min_burst. A run ends when a sample
 * falls below threshold_pct - hysteresis_pct, or when the share has stayed under threshold_pct
 * for longer than max_dip_ms (with the same half-interval slack). Dips inside a run count toward
 * its length and mean; dips at its end do not (the run ends with its last hot sample). With
 * hysteresis_pct or max_dip_ms 0 every sample under the threshold ends the run.
 *
 * A dip's depth is judged over at least one nominal interval: a sample whose own interval is
 * shorter (the sampler woke late, then on time) is taken together with the sample before it for
 * the rest of the interval. The scheduler's slices do not shrink with the interval: on a loaded
 * 6.x kernel a core busy with one task still runs others for 50 ms a second (the fair server),
 * 80% of a 250 ms sample but 67% of a 150 ms one: judged alone, a short sample ends bursts that
 * a sampler on time keeps.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct burst_params {
	double threshold_pct;  /* cpu.threshold_pct */
	uint64_t min_burst_ms; /* cpu.min_burst */
	uint64_t interval_ms;  /* cpu.interval: the nominal spacing of samples */
	double hysteresis_pct; /* cpu.hysteresis_pct: how far under the threshold a dip may go */
	uint64_t max_dip_ms;   /* cpu.max_dip: how long the share may stay under the threshold */
};

/* A run of hot samples on one core (finished, or still going). */
struct burst_run {
	uint64_t start_ms; /* start of the first hot interval */
	uint64_t end_ms;   /* end of the last hot interval */
	double peak_pct;
	double sum_pct;	   /* time-weighted: sum of pct * interval_ms */
	uint32_t samples;
};

/* Per-core detector state; zero-initialise (or burst_tracker_reset) before the first sample. */
struct burst_tracker {
	bool active;	   /* inside a run of hot samples */
	bool have_prev;	   /* the previous sample time is known */
	uint64_t prev_ms;  /* time of the previous sample */
	struct burst_run run;
	double dip_sum;	   /* the dip in progress: sum of pct * interval, not yet in run */
	uint32_t dip_samples;
	double prev_pct; /* the previous sample's share (a short dip is judged with it) */
};

/* burst_tracker_reset - forget everything (e.g. the CPU went offline). */
void burst_tracker_reset(struct burst_tracker *t);

/*
 * burst_feed - pure: feed one sample taken at @t_ms with share @pct (a negative @pct means "no
 * sample": offline or unusable interval). Time stamps must increase; a sample at or before the
 * previous one is ignored. Returns 1 and writes *@ret_run when this sample ended a qualifying
 * burst, 0 otherwise (*@ret_run untouched).
 */
int burst_feed(struct burst_tracker *t, const struct burst_params *p, uint64_t t_ms, double pct,
	       struct burst_run *ret_run);

/*
 * burst_finish - pure: end of the series (the sampler stops or an inline window ends). Returns
 * 1 and writes *@ret_run when an active run qualifies as a burst, else 0. Resets the tracker.
 */
int burst_finish(struct burst_tracker *t, const struct burst_params *p, struct burst_run *ret_run);

/*
 * burst_current - pure: the run in progress if it already qualifies (so a check sees a burst
 * that has not ended yet). Returns 1 and writes *@ret_run, else 0.
 */
int burst_current(const struct burst_tracker *t, const struct burst_params *p,
		  struct burst_run *ret_run);

/* burst_qualifies - true when @r lasts long enough to be a burst under @p. */
bool burst_qualifies(const struct burst_run *r, const struct burst_params *p);

/* burst_mean - time-weighted mean share of @r (0 when empty). */
double burst_mean(const struct burst_run *r);

/*
 * burst_detect - pure: every burst in a whole series (@t_ms[i], @pct[i]), in order, at most
 * @max into @ret. Returns the number found (bursts past @max are counted but not stored), or
 * -EINVAL for bad parameters.
 */
int burst_detect(const uint64_t *t_ms, const double *pct, size_t n, const struct burst_params *p,
		 struct burst_run *ret, size_t max);

#endif
