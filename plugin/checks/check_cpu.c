/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie check cpu`: was a core saturated (>= cpu.threshold_pct of cpu.metric for >=
 * cpu.min_burst) within cpu.lookback? The agent's run-dir files answer that; when its heartbeat
 * is stale or missing the check samples inline for cpu.inline_window and says so. It never
 * forks and never loads libsystemd or libcurl.
 */
#include <errno.h>
#include <time.h>

#include "agent/agent.h"
#include "checks/burst.h"
#include "checks/check_cpu.h"
#include "checks/cpustat.h"
#include "checks/cz.h"
#include "checks/kevents.h"
#include "base/state.h"
#include "base/util.h"

#define EVENTS_MAX (HISTORY_EVENTS_MAX + HISTORY_ACTIVE_MAX)

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
		npd_set(res, NPD_OK, "no core >= %.0f%% %s for >= %.1fs in %s", cfg->cpu.threshold_pct,
			cpustat_metric_short(cfg->cpu.metric), (double)cfg->cpu.min_burst_ms / 1000.0,
			dur);
		if (note && *note)
			npd_append(res, "%s", note);
		return res->status;
	}
	w = sum[0].longest;
	npd_set(res, NPD_PROBLEM, "cpu%u %.0f%% %s %.1fs x%zu/%s", w->cpu, w->peak_pct,
		cpustat_metric_short(w->metric), (double)ev_len(w) / 1000.0, sum[0].count, dur);
	nirq = w->irqs[0] ? 1 + (size_t)(strchr(w->irqs, ',') != NULL) : 0;
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(w->irqs, ","), w->irqs);
	if (nirq)
		npd_append(res, "serves %s%s", first, nirq > 1 ? " +more" : "");
	if (w->ntasks > 0)
		npd_append(res, "top %s %.1fs", w->task[0].comm, (double)w->task[0].stime_ms / 1000.0);
	for (size_t i = 1; i < ns && i < 4; i++)
		npd_append(res, "also cpu%u x%zu", sum[i].cpu, sum[i].count);
	if (note && *note)
		npd_append(res, "%s", note);
	return res->status;
}

/* Samples inline for cpu.inline_window; appends bursts (ended or still going) to @ev. */
static int sample_inline(struct cz_ctx *ctx, struct burst_event *ev, size_t max, size_t *n,
			 struct npd_result *res)
{
	const struct cz_config *cfg = &ctx->cfg;
	struct sampler *s = NULL;
	uint64_t start = now_monotonic_ms(), next = start;
	int r;

	r = sampler_new(ctx, cfg->cpu.attribute_tasks, &s);
	if (r < 0)
		return npd_unknown(res, r, "cannot sample '%s/stat'", cfg->paths.proc);
	while (next - start < cfg->cpu.inline_window_ms) {
		struct timespec ts;
		uint64_t now;

		next += cfg->cpu.interval_ms;
		now = now_monotonic_ms();
		if (next > now) {
			ts.tv_sec = (time_t)((next - now) / 1000);
			ts.tv_nsec = (long)((next - now) % 1000) * 1000000L;
			nanosleep(&ts, NULL);
		}
		r = sampler_step(s, ev + *n, max - *n);
		if (r > 0)
			*n += (size_t)r < max - *n ? (size_t)r : max - *n;
	}
	r = sampler_finish(s, ev + *n, max - *n);
	if (r > 0)
		*n += (size_t)r < max - *n ? (size_t)r : max - *n;
	sampler_free(s);
	return NPD_OK;
}

/* Soft lockups the kernel logged (the agent's kernel-event log) as bursts on their CPU. */
static size_t add_lockups(const struct cz_config *cfg, struct burst_event *ev, size_t n,
			  char *note, size_t size)
{
	_cleanup_free_ struct kevents *k = calloc(1, sizeof(*k));
	uint64_t now = now_realtime_ms();
	size_t added = 0;

	if (!k || state_read(cfg->paths.run, &kevents_state, k) != STATE_LOADED)
		return n;
	n = kevents_soft_lockups(k, now > cfg->cpu.lookback_ms ? now - cfg->cpu.lookback_ms : 0, ev,
				 n, EVENTS_MAX, &added);
	if (added)
		snprintf(note + strlen(note), size - strlen(note), "%s%zu soft lockup%s (kernel log)",
			 note[0] ? "; " : "", added, added == 1 ? "" : "s");
	return n;
}

/* Why the agent's files cannot be trusted, or NULL when they can. */
static const char *stale_reason(const struct cz_config *cfg, int hr, const struct heartbeat *hb,
				char *buf, size_t size)
{
	uint64_t now = now_realtime_ms(), limit = 3 * HISTORY_HEARTBEAT_MS;
	char d[32];

	if (4 * cfg->cpu.interval_ms > limit)
		limit = 4 * cfg->cpu.interval_ms;
	if (hr == -ENOENT)
		return "no sampler";
	if (hr < 0) {
		snprintf(buf, size, "sampler heartbeat unreadable (%s)", strerror(-hr));
		return buf;
	}
	if (hb->stopped)
		return "sampler stopped";
	if (hb->time_ms + limit < now) {
		snprintf(buf, size, "sampler stale %s",
			 format_duration((now - hb->time_ms) / 1000 * 1000, d, sizeof(d)));
		return buf;
	}
	if (hb->metric != cfg->cpu.metric || hb->interval_ms != cfg->cpu.interval_ms)
		return "sampler config differs";
	return NULL;
}

int check_cpu(struct cz_ctx *ctx, struct npd_result *res)
{
	_cleanup_free_ struct burst_event *ev = calloc(EVENTS_MAX, sizeof(*ev));
	_cleanup_free_ struct heartbeat *hb = calloc(1, sizeof(*hb));
	const struct cz_config *cfg = &ctx->cfg;
	char why[96], note[160] = "", d[32];
	const char *stale;
	size_t n = 0;
	int r;

	if (!ev || !hb)
		return npd_unknown(res, -ENOMEM, "check cpu");
	r = heartbeat_read(cfg->paths.run, hb);
	stale = stale_reason(cfg, r, hb, why, sizeof(why));
	if (!stale) {
		uint64_t now = now_realtime_ms();

		r = burst_log_read(cfg->paths.run, now > cfg->cpu.lookback_ms ?
							   now - cfg->cpu.lookback_ms : 0,
				   ev, HISTORY_EVENTS_MAX);
		if (r < 0)
			return npd_unknown(res, r, "cannot read burst log in '%s'", cfg->paths.run);
		n = (size_t)r;
		for (size_t i = 0; i < hb->nactive && n < EVENTS_MAX; i++) {
			size_t j; /* an ongoing run already logged as ended is the same burst */

			for (j = 0; j < (size_t)r; j++)
				if (ev[j].cpu == hb->active[i].cpu &&
				    ev[j].start_ms == hb->active[i].start_ms)
					break;
			if (j == (size_t)r)
				ev[n++] = hb->active[i];
		}
		n = add_lockups(cfg, ev, n, note, sizeof(note));
		return cpu_verdict(ev, n, cfg, note, res);
	}
	if (cfg->cpu.inline_window_ms == 0 || cfg->cpu.inline_window_ms < cfg->cpu.min_burst_ms)
		return npd_set(res, NPD_UNKNOWN, "%s and cpu.inline_window %s < cpu.min_burst: "
			       "cannot sample inline", stale,
			       format_duration(cfg->cpu.inline_window_ms, d, sizeof(d)));
	r = sample_inline(ctx, ev, EVENTS_MAX, &n, res);
	if (r != NPD_OK)
		return r;
	snprintf(note, sizeof(note), "inline %s: %s",
		 format_duration(cfg->cpu.inline_window_ms, d, sizeof(d)), stale);
	n = add_lockups(cfg, ev, n, note, sizeof(note));
	return cpu_verdict(ev, n, cfg, note, res);
}
