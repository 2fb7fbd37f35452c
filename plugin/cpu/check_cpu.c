/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie check cpu`: was a core saturated (>= cpu.threshold_pct of cpu.metric for >=
 * cpu.min_burst) within cpu.lookback? The agent's run-dir files answer that; when its heartbeat
 * is stale or missing the check samples inline for cpu.inline_window and says so. It never
 * forks and never loads libsystemd or libcurl. The live sampler it drives inline is
 * cpu_sampler.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>

#include "cpu/check_cpu.h"
#include "cpu/cpu.h"
#include "cpu/cpu_sampler.h"
#include "cpu/lockups.h"
#include "base/state.h"
#include "host/hostid.h"
#include "base/util.h"

#define EVENTS_MAX (HISTORY_EVENTS_MAX + HISTORY_ACTIVE_MAX)

/* Samples inline for cpu.inline_window; appends bursts (ended or still going) to @ev. */
static int sample_inline(struct cz_ctx *ctx, struct burst_event *ev, size_t max, size_t *n,
			 struct npd_result *res)
{
	const struct cz_config *cfg = &ctx->cfg;
	struct cpu_sampler *s = NULL;
	uint64_t start = now_monotonic_ms(), next = start;
	int r;

	r = cpu_sampler_new(ctx, cfg->cpu.attribute_tasks, &s);
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
		r = cpu_sampler_step(s, ev + *n, max - *n);
		if (r > 0)
			*n += (size_t)r < max - *n ? (size_t)r : max - *n;
	}
	r = cpu_sampler_finish(s, ev + *n, max - *n);
	if (r > 0)
		*n += (size_t)r < max - *n ? (size_t)r : max - *n;
	cpu_sampler_free(s);
	return NPD_OK;
}

void cpu_seen_free(struct cpu_seen *s)
{
	free(s->kev);
	*s = (struct cpu_seen){ 0 };
}

/* Soft lockups the kernel logged (the agent's kernel-event log) as bursts on their CPU; the log
 * read is left in @seen (NULL: nobody wants it) for the agent's node model. */
static size_t add_lockups(struct cz_ctx *ctx, struct cpu_seen *seen, struct burst_event *ev,
			  size_t n, char *note, size_t size)
{
	const struct cz_config *cfg = &ctx->cfg;
	_cleanup_free_ struct kevents *k = calloc(1, sizeof(*k));
	uint64_t now = now_realtime_ms();
	size_t added = 0;
	int rc = k ? kevents_state_read(cfg->paths.run, &kevents_state, k) : -ENOMEM;

	if (seen && rc != -ENOMEM) { /* (out of memory: the model tries again) */
		cpu_seen_free(seen);
		seen->set = true;
	}
	if (rc != STATE_LOADED)
		return n;
	n = kevents_soft_lockups(k, now > cfg->cpu.lookback_ms ? now - cfg->cpu.lookback_ms : 0, ev,
				 n, EVENTS_MAX, &added);
	if (added)
		snprintf(note + strlen(note), size - strlen(note),
			 "%s%zu soft lockup%s (kernel log)", note[0] ? "; " : "", added,
			 added == 1 ? "" : "s");
	if (seen) {
		seen->kev = k; /* moved */
		k = NULL;
	}
	return n;
}

/*
 * Is the agent that wrote @hb gone where its stamp cannot say so? Judged by what it recorded of
 * itself (host/hostid.h): another boot (a run dir that outlived a reboot, a restored VM), or a
 * stamp ahead of @now (the clock stepped back) with no such pid in --proc-root (its getpid()
 * means nothing in NPD's container, hostPID: false). A heartbeat stamped in the past is judged
 * by its age, whoever wrote it: `agent --once` and an agent killed a moment ago leave complete
 * files, trusted until the heartbeat goes stale. NULL when it may live, or when the heartbeat
 * (of an older agent) or the proc root cannot tell.
 */
static const char *gone_reason(const struct cz_ctx *ctx, const struct heartbeat *hb, uint64_t now,
			       char *buf, size_t size)
{
	char boot[40];

	if (hb->boot_id[0] && hostid_boot_id(&ctx->hf, boot, sizeof(boot)) == 0 &&
	    !streq(boot, hb->boot_id))
		return "sampler from another boot";
	if (hb->time_ms > now && hb->host_pid > 0 &&
	    hostid_pid_exists(&ctx->hf, hb->host_pid) == 0) {
		snprintf(buf, size, "sampler gone (pid %d)", hb->host_pid);
		return buf;
	}
	return NULL;
}

/* Why the agent's files cannot be trusted, or NULL when they can. */
static const char *stale_reason(const struct cz_ctx *ctx, int hr, const struct heartbeat *hb,
				char *buf, size_t size)
{
	const struct cz_config *cfg = &ctx->cfg;
	uint64_t now = now_realtime_ms(), limit = 3 * HISTORY_HEARTBEAT_MS;
	const char *gone;
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
	/* a stamp from the future is damage (a clock stepped back, a hand-written file): it must
	 * not keep the check from sampling until the clock catches up */
	if (hb->time_ms > now + HISTORY_FUTURE_SLACK_MS)
		return "sampler heartbeat from the future";
	gone = gone_reason(ctx, hb, now, buf, size);
	if (gone)
		return gone;
	if (hb->time_ms + limit < now) {
		snprintf(buf, size, "sampler stale %s",
			 format_duration((now - hb->time_ms) / 1000 * 1000, d, sizeof(d)));
		return buf;
	}
	if (hb->metric != cfg->cpu.metric || hb->interval_ms != cfg->cpu.interval_ms)
		return "sampler config differs";
	return NULL;
}

/*
 * The bursts the sampler logged since lookback into @ev (EVENTS_MAX places), *@n of them.
 * @no_access_ok (the inline path): a log we may not read (EACCES, EPERM: a check run as a user
 * the agent's run dir is closed to) is no bursts, said in @why; damage is still Unknown.
 */
static int recent_bursts(const struct cz_config *cfg, struct burst_event *ev, size_t *n,
			 struct npd_result *res, bool no_access_ok, char *why, size_t why_size)
{
	uint64_t now = now_realtime_ms();
	int r = burst_log_read(cfg->paths.run, now > cfg->cpu.lookback_ms ?
					       now - cfg->cpu.lookback_ms : 0,
			       ev, HISTORY_EVENTS_MAX);

	if (no_access_ok && (r == -EACCES || r == -EPERM)) {
		size_t l = strlen(why);

		snprintf(why + l, why_size - l, "; burst log unreadable (%s)", strerror(-r));
		*n = 0;
		return NPD_OK;
	}
	if (r < 0)
		return npd_unknown(res, r, "cannot read burst log in '%s'", cfg->paths.run);
	*n = (size_t)r;
	return NPD_OK;
}

int check_cpu(struct cz_ctx *ctx, const struct check_seen *cs, struct npd_result *res)
{
	_cleanup_free_ struct burst_event *ev = calloc(EVENTS_MAX, sizeof(*ev));
	_cleanup_free_ struct heartbeat *hb = calloc(1, sizeof(*hb));
	const struct cz_config *cfg = &ctx->cfg;
	char why[96], note[160] = "", d[32], unread[64] = "";
	const char *stale;
	size_t n = 0, ongoing = 0;
	int r;

	if (!ev || !hb)
		return npd_unknown(res, -ENOMEM, "check cpu");
	r = heartbeat_read(cfg->paths.run, hb);
	stale = stale_reason(ctx, r, hb, why, sizeof(why));
	if (!stale) {
		r = recent_bursts(cfg, ev, &n, res, false, NULL, 0);
		if (r != NPD_OK)
			return r;
		r = (int)n;
		for (size_t i = 0; i < hb->nactive && n < EVENTS_MAX; i++) {
			size_t j; /* an ongoing run already logged as ended is the same burst */

			if (hb->active[i].end_ms > now_realtime_ms() + HISTORY_FUTURE_SLACK_MS)
				continue; /* damage, as in the burst log */
			for (j = 0; j < (size_t)r; j++)
				if (ev[j].cpu == hb->active[i].cpu &&
				    ev[j].start_ms == hb->active[i].start_ms)
					break;
			if (j == (size_t)r) {
				ev[n++] = hb->active[i];
				ongoing++;
			}
		}
		if (ongoing) /* the links above are the ones known so far */
			snprintf(note, sizeof(note), "burst ongoing");
		n = add_lockups(ctx, cs ? cs->cpu : NULL, ev, n, note, sizeof(note));
		return cpu_verdict(ev, n, cfg, note, res);
	}
	if (cfg->cpu.inline_window_ms == 0 || cfg->cpu.inline_window_ms < cfg->cpu.min_burst_ms)
		return npd_set(res, NPD_UNKNOWN, "%s and cpu.inline_window %s < cpu.min_burst: "
			       "cannot sample inline", stale,
			       format_duration(cfg->cpu.inline_window_ms, d, sizeof(d)));
	/* a burst the sampler logged inside lookback is a problem whether or not it still runs
	 * (a stopped or crashed agent must not make the check forget it) */
	r = recent_bursts(cfg, ev, &n, res, true, unread, sizeof(unread));
	if (r != NPD_OK)
		return r;
	r = sample_inline(ctx, ev, EVENTS_MAX, &n, res);
	if (r != NPD_OK)
		return r;
	snprintf(note, sizeof(note), "inline %s: %s%s",
		 format_duration(cfg->cpu.inline_window_ms, d, sizeof(d)), stale, unread);
	n = add_lockups(ctx, cs ? cs->cpu : NULL, ev, n, note, sizeof(note));
	return cpu_verdict(ev, n, cfg, note, res);
}
