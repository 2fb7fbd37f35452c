/* SPDX-License-Identifier: MIT */
/* The pure verdict of `check cpu` (cpu.h): group bursts by core, lead with the worst. */
#include <string.h>

#include "cpu/cpu.h"
#include "check/condmsg.h"
#include "cpu/cpustat.h"
#include "base/util.h"

struct core_sum {
	unsigned cpu;
	size_t count;
	const struct burst_event *longest;
};

static uint64_t ev_len(const struct burst_event *e)
{
	return e->end_ms - e->start_ms;
}

/* Groups bursts by core; returns the number of cores, worst first. */
static size_t summarize(const struct burst_event *ev, size_t n, uint64_t min_ms,
			struct core_sum *sum, size_t max)
{
	size_t ns = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (ev_len(&ev[i]) < min_ms)
			continue;
		for (j = 0; j < ns && sum[j].cpu != ev[i].cpu; j++)
			;
		if (j == ns) {
			if (ns == max)
				continue;
			sum[ns++] = (struct core_sum){ ev[i].cpu, 0, &ev[i] };
		}
		sum[j].count++;
		if (ev_len(&ev[i]) >= ev_len(sum[j].longest))
			sum[j].longest = &ev[i];
	}
	for (size_t i = 1; i < ns; i++) /* insertion sort: longest burst, then most bursts */
		for (size_t k = i; k > 0; k--) {
			uint64_t a = ev_len(sum[k].longest), b = ev_len(sum[k - 1].longest);
			struct core_sum t;

			if (a < b || (a == b && sum[k].count <= sum[k - 1].count))
				break;
			t = sum[k];
			sum[k] = sum[k - 1];
			sum[k - 1] = t;
		}
	return ns;
}

int cpu_verdict(const struct burst_event *ev, size_t n, const struct cz_config *cfg,
		const char *note, struct npd_result *res)
{
	struct core_sum sum[64];
	char dur[32], first[64];
	const struct burst_event *w;
	size_t ns, nirq;
	/* a recorded burst qualified with half an interval of slack (burst.h) */
	uint64_t min_ms = cfg->cpu.min_burst_ms > cfg->cpu.interval_ms / 2 ?
				  cfg->cpu.min_burst_ms - cfg->cpu.interval_ms / 2 : 0;

	format_duration(cfg->cpu.lookback_ms, dur, sizeof(dur));
	ns = summarize(ev, n, min_ms, sum, ARRAY_SIZE(sum));
	if (ns == 0) {
		npd_set(res, NPD_OK, "no core >= %.0f%% %s for >= %.1fs in %s",
			cfg->cpu.threshold_pct, cpustat_metric_short(cfg->cpu.metric),
			(double)cfg->cpu.min_burst_ms / 1000.0, dur);
		if (note && *note)
			npd_append(res, "%s", note);
		return res->status;
	}
	w = sum[0].longest;
	condmsg_cpu_head(res, w->cpu, w->peak_pct, cpustat_metric_short(w->metric), ev_len(w),
			 sum[0].count, dur);
	nirq = w->irqs[0] ? 1 + (size_t)(strchr(w->irqs, ',') != NULL) : 0;
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(w->irqs, ","), w->irqs);
	if (nirq)
		condmsg_cpu_serves(res, first, nirq > 1);
	/* with the kernel function the burst's profile spent most samples in (agent/profiler.h):
	 * "top kubelet 3.0s in memcg_numa_stat_show 74%" */
	if (w->ntasks > 0)
		condmsg_cpu_top(res, w->task[0].comm, w->task[0].stime_ms, w->hot, w->hot_pct);
	for (size_t i = 1; i < ns && i < 4; i++)
		npd_append(res, "also cpu%u x%zu", sum[i].cpu, sum[i].count);
	if (note && *note)
		npd_append(res, "%s", note);
	return res->status;
}
