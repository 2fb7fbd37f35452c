/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/agent_periodic.h"
#include "checks/burst.h"
#include "checks/cpustat.h"
#include "host/irq.h"
#include "base/log.h"
#include "host/systemd.h"
#include "host/tasks.h"
#include "base/util.h"

#define SCAN_MS 1000		     /* thread rescans while a core is hot */
#define STAT_BUF_MAX (64u << 20)     /* /proc/stat never gets near this */

struct sampler {
	const struct hostfs *hf;
	int fd;
	char *buf;
	size_t bufsize;
	unsigned ncpu;
	struct cpustat_core *prev, *cur;
	bool have_prev;
	enum cz_cpu_metric metric;
	struct burst_params bp;
	struct burst_tracker *trk;
	uint8_t *shares;
	bool *watch, *ended;
	bool attribute;
	struct tasks_tracker tasks;
	uint64_t last_scan_ms;
	int64_t rt_offset; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ms */
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
static int read_stat(struct sampler *s)
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

static int sampler_alloc(struct sampler *s)
{
	s->prev = calloc(s->ncpu, sizeof(*s->prev));
	s->cur = calloc(s->ncpu, sizeof(*s->cur));
	s->trk = calloc(s->ncpu, sizeof(*s->trk));
	s->shares = malloc(s->ncpu);
	s->watch = calloc(s->ncpu, sizeof(*s->watch));
	s->ended = calloc(s->ncpu, sizeof(*s->ended));
	if (!s->prev || !s->cur || !s->trk || !s->shares || !s->watch || !s->ended)
		return -ENOMEM;
	memset(s->shares, HISTORY_NO_SAMPLE, s->ncpu);
	return s->attribute ? tasks_tracker_init(&s->tasks, s->ncpu) : 0;
}

int sampler_new(const struct cz_ctx *ctx, bool attribute, struct sampler **ret)
{
	struct sampler *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->hf = &ctx->hf;
	s->metric = ctx->cfg.cpu.metric;
	s->bp = (struct burst_params){ ctx->cfg.cpu.threshold_pct, ctx->cfg.cpu.min_burst_ms,
				       ctx->cfg.cpu.interval_ms };
	s->attribute = attribute;
	s->fd = hostfs_openat(&ctx->hf, HOSTFS_PROC, "stat", O_RDONLY | O_NOCTTY | O_NONBLOCK);
	s->ncpu = possible_cpus(&ctx->hf);
	if (s->ncpu == 0)
		s->ncpu = CPUSTAT_MAX_CPUS; /* no sysfs: take the highest row seen below */
	s->bufsize = CPUSTAT_BUF_SIZE(s->ncpu);
	s->buf = malloc(s->bufsize);
	r = s->fd < 0 ? s->fd : !s->buf ? -ENOMEM : read_stat(s);
	if (r >= 0) {
		s->cur = calloc(s->ncpu, sizeof(*s->cur));
		r = s->cur ? cpustat_parse(s->buf, s->cur, s->ncpu) : -ENOMEM;
		if (r > 0 && s->ncpu == CPUSTAT_MAX_CPUS)
			s->ncpu = (unsigned)r;
		free(s->cur);
		s->cur = NULL;
	}
	if (r >= 0)
		r = sampler_alloc(s);
	if (r >= 0)
		r = sampler_step(s, NULL, 0); /* the first reading: no share yet */
	if (r < 0) {
		sampler_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->attribute)
		tasks_tracker_free(&s->tasks);
	free(s->buf);
	free(s->prev);
	free(s->cur);
	free(s->trk);
	free(s->shares);
	free(s->watch);
	free(s->ended);
	free(s);
}

unsigned sampler_ncpu(const struct sampler *s)
{
	return s->ncpu;
}

const uint8_t *sampler_shares(const struct sampler *s)
{
	return s->shares;
}

/* Fills an event for a finished (or ongoing) run on @cpu; times to CLOCK_REALTIME. */
static void make_event(const struct sampler *s, unsigned cpu, const struct burst_run *run,
		       struct burst_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->cpu = cpu;
	ev->start_ms = (uint64_t)((int64_t)run->start_ms + s->rt_offset);
	ev->end_ms = (uint64_t)((int64_t)run->end_ms + s->rt_offset);
	ev->peak_pct = run->peak_pct;
	ev->mean_pct = burst_mean(run);
	ev->metric = s->metric;
}

/* Feeds every core's share into its tracker; marks runs that ended; returns bursts ended. */
static int feed_all(struct sampler *s, uint64_t mono, struct burst_event *ret, size_t max)
{
	int found = 0;

	for (unsigned c = 0; c < s->ncpu; c++) {
		struct burst_run run;
		bool was_active = s->trk[c].active;
		double pct = -1.0;

		if (s->have_prev && cpustat_share(&s->prev[c], &s->cur[c], s->metric, &pct) < 0)
			pct = -1.0;
		s->shares[c] = pct < 0 ? HISTORY_NO_SAMPLE : (uint8_t)(pct + 0.5);
		s->ended[c] = false;
		if (burst_feed(&s->trk[c], &s->bp, mono, pct, &run) == 1) {
			if ((size_t)found < max)
				make_event(s, c, &run, &ret[found]);
			found++;
			s->ended[c] = true;
		}
		if (s->attribute && s->trk[c].active && !was_active)
			tasks_reset_core(&s->tasks, c);
		/* watch the core while hot and once more as its run ends */
		s->watch[c] = s->trk[c].active || (was_active && !s->trk[c].active);
	}
	return found;
}

/* Thread attribution and IRQs for the events that just ended. */
static void complete_events(struct sampler *s, uint64_t mono, struct burst_event *ev, size_t n)
{
	bool any = false;

	for (unsigned c = 0; c < s->ncpu; c++)
		any |= s->watch[c];
	if (s->attribute && any &&
	    (n > 0 || !s->tasks.have_prev || mono - s->last_scan_ms >= SCAN_MS)) {
		(void)tasks_scan(&s->tasks, s->hf, s->watch);
		s->last_scan_ms = mono;
	} else if (s->attribute && !any) {
		tasks_forget(&s->tasks);
	}
	if (n > 0) {
		struct irq_map *maps = NULL;
		int nm = irq_map_all(s->hf, &maps);

		for (size_t i = 0; i < n; i++) {
			if (s->attribute)
				tasks_take(&s->tasks, ev[i].cpu, &ev[i]);
			if (nm > 0)
				irq_served_by(maps, (size_t)nm, ev[i].cpu, ev[i].irqs,
					      sizeof(ev[i].irqs));
		}
		free(maps);
	}
}

int sampler_step(struct sampler *s, struct burst_event *ret, size_t max)
{
	uint64_t mono = now_monotonic_ms();
	struct cpustat_core *tmp;
	int r, found;

	s->rt_offset = (int64_t)now_realtime_ms() - (int64_t)mono;
	r = read_stat(s);
	if (r >= 0)
		r = cpustat_parse(s->buf, s->cur, s->ncpu);
	if (r < 0)
		return r;
	found = feed_all(s, mono, ret, max);
	complete_events(s, mono, ret, (size_t)found < max ? (size_t)found : max);
	tmp = s->prev;
	s->prev = s->cur;
	s->cur = tmp;
	s->have_prev = true;
	return found;
}

int sampler_finish(struct sampler *s, struct burst_event *ret, size_t max)
{
	int found = 0;

	for (unsigned c = 0; c < s->ncpu; c++) {
		struct burst_run run;

		s->watch[c] = s->trk[c].active;
		if (burst_finish(&s->trk[c], &s->bp, &run) == 1) {
			if ((size_t)found < max)
				make_event(s, c, &run, &ret[found]);
			found++;
		}
	}
	complete_events(s, now_monotonic_ms(), ret, (size_t)found < max ? (size_t)found : max);
	return found;
}

size_t sampler_active(const struct sampler *s, struct burst_event *ret, size_t max)
{
	size_t n = 0;

	for (unsigned c = 0; c < s->ncpu && n < max; c++) {
		struct burst_run run;

		if (burst_current(&s->trk[c], &s->bp, &run) == 1)
			make_event(s, c, &run, &ret[n++]);
	}
	return n;
}

/* ---- the agent loop ---- */

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: wake the sleep */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

struct agent {
	struct cz_ctx *ctx;
	struct sampler *s;
	struct history_ring ring;
	bool ring_ok;
	uint64_t watchdog_ms;
	unsigned bad_samples;	/* consecutive failed samples, for rate-limited logging */
};

static void log_events(struct agent *a, const struct burst_event *ev, int n)
{
	for (int i = 0; i < n && i < HISTORY_ACTIVE_MAX; i++) {
		int r = burst_log_append(a->ctx->cfg.paths.run, &ev[i]);

		struct log_fields f = { LOG_MID_BURST, "cpu", (int)ev[i].cpu, NULL };

		if (r < 0)
			log_fields_full(LOG_PRIO_ERR, &f, "Failed to record burst on cpu%u: %s", ev[i].cpu,
				strerror(-r));
		else if (a->ctx->verbose || log_to_journal())
			log_fields_full(LOG_PRIO_NOTICE, &f, "burst cpu%u %.1fs peak %.0f%%%s%s", ev[i].cpu,
				(double)(ev[i].end_ms - ev[i].start_ms) / 1000.0, ev[i].peak_pct,
				ev[i].ntasks ? " top " : "", ev[i].ntasks ? ev[i].task[0].comm : "");
	}
}

static int write_heartbeat(struct agent *a, bool stopped)
{
	static struct heartbeat hb; /* ~40 KiB: static, and not cleared whole every 2 s */
	int r;

	/* every field heartbeat_format() reads is set here; active[] beyond nactive is unused */
	hb.pid = (int)getpid();
	hb.time_ms = now_realtime_ms();
	hb.interval_ms = a->ctx->cfg.cpu.interval_ms;
	hb.metric = a->ctx->cfg.cpu.metric;
	hb.ncpu = sampler_ncpu(a->s);
	hb.stopped = stopped;
	hb.nactive = stopped ? 0 : sampler_active(a->s, hb.active, HISTORY_ACTIVE_MAX);
	r = heartbeat_write(a->ctx->cfg.paths.run, &hb);
	if (r < 0)
		log_error_errno(r, "Failed to write heartbeat in '%s': %m", a->ctx->cfg.paths.run);
	return r;
}

/* One sample: step, record bursts, queue the ring slot. Returns bursts that ended. */
static int agent_sample(struct agent *a, struct burst_event *evs)
{
	int n = sampler_step(a->s, evs, HISTORY_ACTIVE_MAX);

	if (n < 0) {
		/* a bad /proc/stat can last: log the first failure, then every 2^k-th (4 Hz would
		 * otherwise write four lines a second into the journal) */
		unsigned k = ++a->bad_samples;

		if ((k & (k - 1)) == 0)
			log_warning_errno(n, "Failed to sample /proc/stat: %m, skipping (%u in a row)",
					  k);
		return 0;
	}
	if (a->bad_samples) {
		log_notice("sampling /proc/stat again after %u failures", a->bad_samples);
		a->bad_samples = 0;
	}
	log_events(a, evs, n);
	if (a->ring_ok)
		(void)history_ring_add(&a->ring, now_realtime_ms(), sampler_shares(a->s));
	return n;
}

static void sleep_until(uint64_t mono_ms)
{
	struct timespec ts = { .tv_sec = (time_t)(mono_ms / 1000),
			       .tv_nsec = (long)(mono_ms % 1000) * 1000000L };

	while (!stop_signal && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void agent_loop(struct agent *a, struct burst_event *evs)
{
	const struct cz_config *cfg = &a->ctx->cfg;
	uint64_t now = now_monotonic_ms(), start = now, deadline = now;
	uint64_t hb_every = HISTORY_HEARTBEAT_MS, next_hb = now, next_flush = now + 1000;

	if (a->watchdog_ms && a->watchdog_ms / 2 < hb_every)
		hb_every = a->watchdog_ms / 2 ? a->watchdog_ms / 2 : 1;
	while (!stop_signal) {
		deadline += cfg->cpu.interval_ms;
		sleep_until(deadline);
		if (stop_signal)
			break;
		if (agent_sample(a, evs) > 0)
			next_hb = 0; /* a burst ended: drop it from the heartbeat's active list now */
		now = now_monotonic_ms();
		if (now > deadline + cfg->cpu.interval_ms)
			deadline = now; /* we were stopped or starved: do not catch up in a burst */
		if (now >= next_flush && a->ring_ok) {
			(void)history_ring_flush(&a->ring);
			next_flush = now + 1000;
		}
		if (now >= next_hb) {
			if (write_heartbeat(a, false) == 0 && a->watchdog_ms)
				(void)systemd_notify("WATCHDOG=1");
			next_hb = now + hb_every;
		}
		if (a->ctx->once && now - start >= cfg->cpu.inline_window_ms)
			break;
	}
}

int agent_run(struct cz_ctx *ctx)
{
	_cleanup_free_ struct burst_event *evs = calloc(HISTORY_ACTIVE_MAX, sizeof(*evs));
	struct agent a = { .ctx = ctx, .ring = { .fd = -1 } };
	struct periodic *per = NULL;
	int r, n;

	if (!evs)
		return CZ_EXIT_ERROR;
	if (log_to_journal())
		log_set_sink(systemd_log_sink);
	r = sampler_new(ctx, ctx->cfg.cpu.attribute_tasks, &a.s);
	if (r < 0) {
		log_error_errno(r, "Failed to sample '%s/stat': %m", ctx->cfg.paths.proc);
		return CZ_EXIT_ERROR;
	}
	r = history_ring_open(ctx->cfg.paths.run, sampler_ncpu(a.s), ctx->cfg.cpu.history_ms,
			      ctx->cfg.cpu.interval_ms, &a.ring);
	a.ring_ok = r == 0;
	if (r < 0)
		log_warning_errno(r, "Failed to open history in '%s': %m, ignoring",
				  ctx->cfg.paths.run);
	if (write_heartbeat(&a, false) < 0) {
		sampler_free(a.s);
		history_ring_close(&a.ring);
		return CZ_EXIT_ERROR; /* without the run dir nobody can read what we find */
	}
	a.watchdog_ms = systemd_watchdog_usec() / 1000;
	stop_signal = 0;
	install_signals();
	(void)periodic_new(ctx, &per);
	if (per && !ctx->once && periodic_start(per) < 0)
		log_warning("Failed to start the periodic work, ignoring");
	(void)systemd_notify("READY=1");
	agent_loop(&a, evs);
	(void)systemd_notify("STOPPING=1");
	n = sampler_finish(a.s, evs, HISTORY_ACTIVE_MAX);
	log_events(&a, evs, n);
	if (per && ctx->once)
		(void)periodic_cycle(per); /* after the bursts are logged, so check cpu sees them */
	periodic_free(per);
	history_ring_close(&a.ring);
	/* --once leaves a fresh heartbeat (its bursts are in the log); a stopped agent does not */
	r = write_heartbeat(&a, !ctx->once);
	sampler_free(a.s);
	return r < 0 ? CZ_EXIT_ERROR : CZ_EXIT_OK;
}
