/* SPDX-License-Identifier: MIT */
/* The pure sampler: /proc/stat readings -> per-core shares -> bursts (sampler.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/sampler.h"

int sampler_init(struct sampler *s, unsigned ncpu, const struct sampler_params *p)
{
	memset(s, 0, sizeof(*s));
	if (ncpu == 0 || ncpu > CPUSTAT_MAX_CPUS || !p || p->burst.interval_ms == 0)
		return -EINVAL;
	s->ncpu = ncpu;
	s->p = *p;
	s->prev = calloc(ncpu, sizeof(*s->prev));
	s->cur = calloc(ncpu, sizeof(*s->cur));
	s->trk = calloc(ncpu, sizeof(*s->trk));
	s->shares = malloc(ncpu);
	s->watch = calloc(ncpu, sizeof(*s->watch));
	s->started = calloc(ncpu, sizeof(*s->started));
	if (!s->prev || !s->cur || !s->trk || !s->shares || !s->watch || !s->started) {
		sampler_done(s);
		return -ENOMEM;
	}
	memset(s->shares, SAMPLER_NO_SHARE, ncpu);
	return 0;
}

void sampler_done(struct sampler *s)
{
	free(s->prev);
	free(s->cur);
	free(s->trk);
	free(s->shares);
	free(s->watch);
	free(s->started);
	memset(s, 0, sizeof(*s));
}

/* Feeds every core's share of prev -> cur into its tracker; returns bursts ended. */
static int feed_all(struct sampler *s, uint64_t t_ms, struct sampler_burst *ret, size_t max)
{
	int found = 0;

	for (unsigned c = 0; c < s->ncpu; c++) {
		struct burst_run run;
		bool was_active = s->trk[c].active;
		double pct = -1.0;

		if (s->have_prev && cpustat_share(&s->prev[c], &s->cur[c], s->p.metric, &pct) < 0)
			pct = -1.0;
		s->shares[c] = pct < 0 ? SAMPLER_NO_SHARE : (uint8_t)(pct + 0.5);
		if (burst_feed(&s->trk[c], &s->p.burst, t_ms, pct, &run) == 1) {
			if ((size_t)found < max)
				ret[found] = (struct sampler_burst){ c, run };
			found++;
		}
		s->started[c] = s->trk[c].active && !was_active;
		/* watch the core while hot and once more as its run ends */
		s->watch[c] = s->trk[c].active || was_active;
	}
	return found;
}

int sampler_feed(struct sampler *s, uint64_t t_ms, const char *text, struct sampler_burst *ret,
		 size_t max)
{
	struct cpustat_core *tmp;
	int r, found;

	r = cpustat_parse(text, s->cur, s->ncpu);
	if (r < 0)
		return r;
	found = feed_all(s, t_ms, ret, max);
	tmp = s->prev;
	s->prev = s->cur;
	s->cur = tmp;
	s->have_prev = true;
	return found;
}

int sampler_finish(struct sampler *s, struct sampler_burst *ret, size_t max)
{
	int found = 0;

	for (unsigned c = 0; c < s->ncpu; c++) {
		struct burst_run run;

		s->watch[c] = s->trk[c].active;
		s->started[c] = false;
		if (burst_finish(&s->trk[c], &s->p.burst, &run) == 1) {
			if ((size_t)found < max)
				ret[found] = (struct sampler_burst){ c, run };
			found++;
		}
	}
	return found;
}

size_t sampler_active(const struct sampler *s, struct sampler_burst *ret, size_t max)
{
	size_t n = 0;

	for (unsigned c = 0; c < s->ncpu && n < max; c++) {
		struct burst_run run;

		if (burst_current(&s->trk[c], &s->p.burst, &run) == 1)
			ret[n++] = (struct sampler_burst){ c, run };
	}
	return n;
}
