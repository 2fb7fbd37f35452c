/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie check cpu`: was a core saturated (>= cpu.threshold_pct of cpu.metric for >=
 * cpu.min_burst) within cpu.lookback? The agent's run-dir files answer that; when its heartbeat
 * is stale or missing the check samples inline for cpu.inline_window and says so. It never
 * forks and never loads libsystemd or libcurl.
 *
 * Also the live sampler both this check and the agent drive (check_cpu.h): the reads of
 * /proc/stat, threads and IRQs around the pure sampler (sampler.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>

#include "cpu/check_cpu.h"
#include "cpu/cpu.h"
#include "cpu/lockups.h"
#include "base/state.h"
#include "cpu/sampler.h"
#include "host/hostid.h"
#include "host/irq.h"
#include "host/tasks.h"
#include "base/util.h"

#define EVENTS_MAX (HISTORY_EVENTS_MAX + HISTORY_ACTIVE_MAX)
#define SCAN_MS 1000		     /* thread rescans while a core is hot */
#define STAT_BUF_MAX (64u << 20)     /* /proc/stat never gets near this */

_Static_assert(SAMPLER_NO_SHARE == HISTORY_NO_SAMPLE, "the ring stores the sampler's shares");

struct cpu_sampler {
	const struct hostfs *hf;
	int fd;
	char *buf;
	size_t bufsize;
	struct sampler core;
	struct sampler_burst *found; /* HISTORY_ACTIVE_MAX */
	bool attribute;
	struct tasks_tracker tasks;
	uint64_t last_scan_ms;
	int64_t rt_offset; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ms */
	struct core_irqs *irqs; /* ncpu: the NIC IRQs of a core with a burst going on */
};

/* A bursting core's NIC IRQs, read when its run became a burst and every IRQS_REFRESH_MS. */
#define IRQS_REFRESH_MS 10000
struct core_irqs {
	uint64_t run_start_ms, read_ms; /* monotonic; read_ms 0: not read for this run */
	char names[sizeof(((struct burst_event *)0)->irqs)];
};

/* The number of CPU slots: the highest possible CPU + 1 (it never changes while running). */
static unsigned possible_cpus(const struct hostfs *hf)
{
	char text[256];
	uint64_t v, hi = 0;
	const char *p;

	if (hostfs_read(hf, HOSTFS_SYS, "devices/system/cpu/possible", text, sizeof(text)) <= 0)
		return 0;
	for (p = text; *p;) {
		size_t n = strspn(p, "0123456789");

		if (n > 0 && n < 6 && parse_u64_n(p, n, &v) == 0 && v > hi)
			hi = v;
		p += n ? n : 1;
	}
	return hi + 1 <= CPUSTAT_MAX_CPUS ? (unsigned)hi + 1 : CPUSTAT_MAX_CPUS;
}

/* Reads /proc/stat into s->buf, growing it when the file outgrew it. */
static int read_stat(struct cpu_sampler *s)
{
	for (;;) {
		ssize_t n = hostfs_pread_once(s->fd, s->buf, s->bufsize);
		char *nb;

		if (n != -EFBIG)
			return n < 0 ? (int)n : 0;
		if (s->bufsize >= STAT_BUF_MAX)
			return -EFBIG;
		nb = realloc(s->buf, s->bufsize * 2);
		if (!nb)
			return -ENOMEM;
		s->buf = nb;
		s->bufsize *= 2;
	}
}

/* The CPU slots: sysfs's possible CPUs (@ncpu), else the highest row of the first reading. */
static int count_cpus(struct cpu_sampler *s, unsigned ncpu, unsigned *ret)
{
	struct cpustat_core *cores;
	int r;

	if (ncpu > 0) {
		*ret = ncpu;
		return 0;
	}
	cores = calloc(CPUSTAT_MAX_CPUS, sizeof(*cores));
	r = cores ? cpustat_parse(s->buf, cores, CPUSTAT_MAX_CPUS) : -ENOMEM;
	free(cores);
	if (r < 0)
		return r;
	*ret = r > 0 ? (unsigned)r : 1;
	return 0;
}

int cpu_sampler_new(const struct cz_ctx *ctx, bool attribute, struct cpu_sampler **ret)
{
	struct cpu_sampler *s = calloc(1, sizeof(*s));
	struct sampler_params p;
	unsigned ncpu = 0;
	int r;

	if (!s)
		return -ENOMEM;
	s->hf = &ctx->hf;
	s->attribute = attribute;
	s->fd = hostfs_openat(&ctx->hf, HOSTFS_PROC, "stat", O_RDONLY | O_NOCTTY | O_NONBLOCK);
	ncpu = possible_cpus(&ctx->hf);
	s->bufsize = CPUSTAT_BUF_SIZE(ncpu ? ncpu : CPUSTAT_MAX_CPUS);
	s->buf = malloc(s->bufsize);
	s->found = calloc(HISTORY_ACTIVE_MAX, sizeof(*s->found));
	r = s->fd < 0 ? s->fd : !s->buf || !s->found ? -ENOMEM : read_stat(s);
	if (r >= 0)
		r = count_cpus(s, ncpu, &ncpu);
	if (r >= 0) {
		s->irqs = calloc(ncpu, sizeof(*s->irqs));
		if (!s->irqs)
			r = -ENOMEM;
	}
	p = (struct sampler_params){
		.metric = ctx->cfg.cpu.metric,
		.burst = { .threshold_pct = ctx->cfg.cpu.threshold_pct,
			   .min_burst_ms = ctx->cfg.cpu.min_burst_ms,
			   .interval_ms = ctx->cfg.cpu.interval_ms,
			   .hysteresis_pct = (double)ctx->cfg.cpu.hysteresis_pct,
			   .max_dip_ms = ctx->cfg.cpu.max_dip_ms },
	};
	if (r >= 0)
		r = sampler_init(&s->core, ncpu, &p);
	if (r >= 0 && attribute)
		r = tasks_tracker_init(&s->tasks, ncpu);
	if (r >= 0)
		r = cpu_sampler_step(s, NULL, 0); /* the first reading: no share yet */
	if (r < 0) {
		cpu_sampler_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void cpu_sampler_free(struct cpu_sampler *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->attribute)
		tasks_tracker_free(&s->tasks);
	sampler_done(&s->core);
	free(s->buf);
	free(s->found);
	free(s->irqs);
	free(s);
}

unsigned cpu_sampler_ncpu(const struct cpu_sampler *s)
{
	return s->core.ncpu;
}

const uint8_t *cpu_sampler_shares(const struct cpu_sampler *s)
{
	return s->core.shares;
}

/* A sampler burst (monotonic ms) as an event with CLOCK_REALTIME times. */
static void make_event(const struct cpu_sampler *s, const struct sampler_burst *b,
		       struct burst_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->cpu = b->cpu;
	ev->start_ms = (uint64_t)((int64_t)b->run.start_ms + s->rt_offset);
	ev->end_ms = (uint64_t)((int64_t)b->run.end_ms + s->rt_offset);
	ev->peak_pct = b->run.peak_pct;
	ev->mean_pct = burst_mean(&b->run);
	ev->metric = s->core.p.metric;
}

/* Thread attribution and IRQs for the @n events that just ended (already in @ev). */
static void complete_events(struct cpu_sampler *s, uint64_t mono, struct burst_event *ev,
			    size_t n)
{
	bool any = false;

	for (unsigned c = 0; c < s->core.ncpu; c++) {
		any |= s->core.watch[c];
		if (s->attribute && s->core.started[c])
			tasks_reset_core(&s->tasks, c);
	}
	if (s->attribute && any &&
	    (n > 0 || !s->tasks.have_prev || mono - s->last_scan_ms >= SCAN_MS)) {
		(void)tasks_scan(&s->tasks, s->hf, s->core.watch);
		s->last_scan_ms = mono;
	} else if (s->attribute && !any) {
		tasks_forget(&s->tasks);
	}
	if (n > 0) {
		struct irq_map *maps = NULL;
		int nm = irq_map_all(s->hf, &maps);

		for (size_t i = 0; i < n; i++) {
			if (s->attribute)
				ev[i].ntasks = tasks_take(&s->tasks, ev[i].cpu, ev[i].task,
							  HISTORY_TASKS_MAX, ev[i].stack,
							  sizeof(ev[i].stack));
			if (nm > 0)
				irq_served_by(maps, (size_t)nm, ev[i].cpu, ev[i].irqs,
					      sizeof(ev[i].irqs));
		}
		free(maps);
	}
}

/* Turns the sampler's @found bursts into events (at most @max) and completes them. */
static int deliver(struct cpu_sampler *s, uint64_t mono, int found, struct burst_event *ret,
		   size_t max)
{
	size_t n = (size_t)found < max ? (size_t)found : max;

	if (n > HISTORY_ACTIVE_MAX)
		n = HISTORY_ACTIVE_MAX;
	for (size_t i = 0; i < n; i++)
		make_event(s, &s->found[i], &ret[i]);
	complete_events(s, mono, ret, n);
	return found;
}

int cpu_sampler_step(struct cpu_sampler *s, struct burst_event *ret, size_t max)
{
	uint64_t mono = now_monotonic_ms();
	int r;

	s->rt_offset = (int64_t)now_realtime_ms() - (int64_t)mono;
	r = read_stat(s);
	if (r >= 0)
		r = sampler_feed(&s->core, mono, s->buf, s->found, HISTORY_ACTIVE_MAX);
	if (r < 0)
		return r;
	return deliver(s, mono, r, ret, max);
}

int cpu_sampler_finish(struct cpu_sampler *s, struct burst_event *ret, size_t max)
{
	int found = sampler_finish(&s->core, s->found, HISTORY_ACTIVE_MAX);

	return deliver(s, now_monotonic_ms(), found, ret, max);
}

/*
 * The NIC IRQs of the cores with a burst going on (@b, @n), into @ret: read once when a run
 * became a burst (one /proc/interrupts read for all such cores) and again every
 * IRQS_REFRESH_MS while it lasts (irqbalance may move them), so a reader mid-burst sees the
 * queue the core serves, as it will after the burst.
 */
static void active_irqs(struct cpu_sampler *s, const struct sampler_burst *b, size_t n,
			struct burst_event *ret)
{
	uint64_t mono = now_monotonic_ms();
	struct irq_map *maps = NULL;
	bool need = false;
	int nm = 0;

	for (size_t i = 0; i < n; i++) {
		struct core_irqs *ci = &s->irqs[b[i].cpu];

		if (ci->run_start_ms != b[i].run.start_ms || !ci->read_ms ||
		    mono - ci->read_ms >= IRQS_REFRESH_MS)
			need = true;
	}
	if (need)
		nm = irq_map_all(s->hf, &maps);
	for (size_t i = 0; i < n; i++) {
		struct core_irqs *ci = &s->irqs[b[i].cpu];

		if (need && (ci->run_start_ms != b[i].run.start_ms || !ci->read_ms ||
			     mono - ci->read_ms >= IRQS_REFRESH_MS)) {
			ci->names[0] = '\0';
			if (nm > 0)
				irq_served_by(maps, (size_t)nm, b[i].cpu, ci->names,
					      sizeof(ci->names));
			ci->run_start_ms = b[i].run.start_ms;
			ci->read_ms = mono ? mono : 1;
		}
		memcpy(ret[i].irqs, ci->names, sizeof(ret[i].irqs));
	}
	free(maps);
}

size_t cpu_sampler_active(struct cpu_sampler *s, struct burst_event *ret, size_t max)
{
	struct sampler_burst b[HISTORY_ACTIVE_MAX];
	size_t n = sampler_active(&s->core, b, max < HISTORY_ACTIVE_MAX ? max : HISTORY_ACTIVE_MAX);

	for (size_t i = 0; i < n; i++) {
		make_event(s, &b[i], &ret[i]);
		if (s->attribute) /* the tasks seen on that core so far */
			ret[i].ntasks = tasks_peek(&s->tasks, b[i].cpu, ret[i].task,
						   HISTORY_TASKS_MAX);
	}
	active_irqs(s, b, n, ret);
	return n;
}

const struct sampler *cpu_sampler_core(const struct cpu_sampler *s)
{
	return &s->core;
}

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
 * read is left in ctx->cpu_seen for the agent's node model. */
static size_t add_lockups(struct cz_ctx *ctx, struct burst_event *ev, size_t n, char *note,
			  size_t size)
{
	const struct cz_config *cfg = &ctx->cfg;
	_cleanup_free_ struct kevents *k = calloc(1, sizeof(*k));
	struct cpu_seen *seen = ctx->cpu_seen;
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

int check_cpu(struct cz_ctx *ctx, struct npd_result *res)
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
		n = add_lockups(ctx, ev, n, note, sizeof(note));
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
	n = add_lockups(ctx, ev, n, note, sizeof(note));
	return cpu_verdict(ev, n, cfg, note, res);
}
