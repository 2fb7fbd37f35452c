/* SPDX-License-Identifier: MIT */
/* Pure burst detection over one core's sample series (burst.h). */
#include <errno.h>
#include <string.h>

#include "cpu/burst.h"

void burst_tracker_reset(struct burst_tracker *t)
{
	memset(t, 0, sizeof(*t));
}

bool burst_qualifies(const struct burst_run *r, const struct burst_params *p)
{
	uint64_t len = r->end_ms - r->start_ms;

	return r->samples > 0 && 2 * len + p->interval_ms >= 2 * p->min_burst_ms;
}

double burst_mean(const struct burst_run *r)
{
	uint64_t len = r->end_ms - r->start_ms;

	return len > 0 ? r->sum_pct / (double)len : 0.0;
}

/* Ends the active run; returns 1 with *ret_run when it qualifies. */
static int close_run(struct burst_tracker *t, const struct burst_params *p,
		     struct burst_run *ret_run)
{
	int r = 0;

	if (t->active && burst_qualifies(&t->run, p)) {
		*ret_run = t->run;
		r = 1;
	}
	t->active = false;
	memset(&t->run, 0, sizeof(t->run));
	t->dip_sum = 0.0;
	t->dip_samples = 0;
	return r;
}

/*
 * The share of the sample taken at @t_ms over at least one nominal interval: a shorter sample's
 * own share weighed with the previous sample's for the rest of the interval (burst.h).
 */
static double nominal_share(const struct burst_tracker *t, const struct burst_params *p,
			    uint64_t t_ms, double pct)
{
	uint64_t dt = t_ms - t->prev_ms;

	if (dt >= p->interval_ms)
		return pct;
	return (pct * (double)dt + t->prev_pct * (double)(p->interval_ms - dt)) /
	       (double)p->interval_ms;
}

/* A sample under the threshold that the active run survives (see burst.h, "Hysteresis"). */
static bool is_dip(const struct burst_tracker *t, const struct burst_params *p, uint64_t t_ms,
		   double pct)
{
	return t->active && p->hysteresis_pct > 0.0 && p->max_dip_ms > 0 &&
	       nominal_share(t, p, t_ms, pct) >= p->threshold_pct - p->hysteresis_pct &&
	       2 * (t_ms - t->run.end_ms) <= 2 * p->max_dip_ms + p->interval_ms;
}

int burst_feed(struct burst_tracker *t, const struct burst_params *p, uint64_t t_ms, double pct,
	       struct burst_run *ret_run)
{
	uint64_t start;
	int r = 0;

	if (t->have_prev && t_ms <= t->prev_ms)
		return 0;
	start = t->prev_ms;
	if (t->have_prev && pct >= 0.0 && pct < p->threshold_pct && is_dip(t, p, t_ms, pct)) {
		t->dip_sum += pct * (double)(t_ms - start);
		t->dip_samples++;
		t->prev_ms = t_ms;
		t->prev_pct = pct;
		return 0;
	}
	if (pct < 0.0 || !t->have_prev || pct < p->threshold_pct) {
		/* the first sample has no known start: it only opens the series */
		r = close_run(t, p, ret_run);
		t->have_prev = true;
		t->prev_ms = t_ms;
		t->prev_pct = pct < 0.0 ? 0.0 : pct;
		return r;
	}
	if (!t->active) {
		t->active = true;
		t->run.start_ms = start;
	}
	/* a dip followed by a hot sample was part of the run after all */
	t->run.sum_pct += t->dip_sum;
	t->run.samples += t->dip_samples;
	t->dip_sum = 0.0;
	t->dip_samples = 0;
	t->run.end_ms = t_ms;
	t->run.samples++;
	t->run.sum_pct += pct * (double)(t_ms - start);
	if (pct > t->run.peak_pct)
		t->run.peak_pct = pct;
	t->prev_ms = t_ms;
	t->prev_pct = pct;
	return 0;
}

int burst_finish(struct burst_tracker *t, const struct burst_params *p, struct burst_run *ret_run)
{
	int r = close_run(t, p, ret_run);

	burst_tracker_reset(t);
	return r;
}

int burst_current(const struct burst_tracker *t, const struct burst_params *p,
		  struct burst_run *ret_run)
{
	if (!t->active || !burst_qualifies(&t->run, p))
		return 0;
	*ret_run = t->run;
	return 1;
}

int burst_detect(const uint64_t *t_ms, const double *pct, size_t n, const struct burst_params *p,
		 struct burst_run *ret, size_t max)
{
	struct burst_tracker t = { 0 };
	struct burst_run run;
	int found = 0;

	if ((n > 0 && (!t_ms || !pct)) || !p || p->interval_ms == 0 || (max > 0 && !ret))
		return -EINVAL;
	for (size_t i = 0; i <= n; i++) {
		int r = i < n ? burst_feed(&t, p, t_ms[i], pct[i], &run)
			      : burst_finish(&t, p, &run);

		if (r == 1) {
			if ((size_t)found < max)
				ret[found] = run;
			if (found < INT32_MAX)
				found++;
		}
	}
	return found;
}
