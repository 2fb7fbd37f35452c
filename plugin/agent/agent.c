/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/signals.h"
#include "agent/agent_periodic.h"
#include "agent/burst_profiles.h"
#include "agent/tiers.h"
#include "agent/trigger.h"
#include "agent/kmsg_follow.h"
#include "agent/census_bpf.h"
#include "agent/privdrop.h"
#include "agent/profiler.h"
#include "cpu/cpu_sampler.h"
#include "cpu/sampler.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/state.h"
#include "host/hostid.h"
#include "host/systemd.h"
#include "base/util.h"

struct agent {
	struct cz_ctx *ctx;
	const struct agent_opts *ao;
	struct cpu_sampler *s;
	struct burst_profiles *prof; /* NULL: cpu.profile off */
	struct agent_tiers tiers;
	struct history_ring ring;
	bool ring_ok;
	uint64_t watchdog_ms;
	unsigned bad_samples;	/* consecutive failed samples, for rate-limited logging */
	struct kmsg_follow *kf;	/* the kernel log (agent.kmsg), NULL when off */
	struct periodic *per;	/* the periodic thread, NULL when it has nothing to do */
	struct trigger trig;	/* conditions to patch now (trigger.h) */
	struct cz_config *next;	/* SIGHUP: the configuration loaded, to apply after this run */
	struct hostfs next_hf;
	bool reload;
	int host_pid;		/* ours on the host (hostid.h), 0 = unknown */
	char boot_id[40];	/* "" = unknown */
};

static void log_events(struct agent *a, const struct burst_event *ev, int n)
{
	for (int i = 0; i < n && i < HISTORY_ACTIVE_MAX; i++) {
		int r = burst_log_append(a->ctx->cfg.paths.run, &ev[i]);

		struct log_fields f = { LOG_MID_BURST, "cpu", (int)ev[i].cpu, NULL };

		if (r < 0)
			log_fields_full(LOG_PRIO_ERR, &f, "Failed to record burst on cpu%u: %s",
					ev[i].cpu, strerror(-r));
		else if (a->ctx->verbose || log_to_journal())
			log_fields_full(LOG_PRIO_NOTICE, &f, "burst cpu%u %.1fs peak %.0f%%%s%s",
					ev[i].cpu, (double)(ev[i].end_ms - ev[i].start_ms) / 1000.0,
					ev[i].peak_pct, ev[i].ntasks ? " top " : "",
					ev[i].ntasks ? ev[i].task[0].comm : "");
	}
}

static int write_heartbeat(struct agent *a, bool stopped)
{
	static struct heartbeat hb; /* ~40 KiB: static, and not cleared whole every 2 s */
	int r;

	/* every field heartbeat_format() reads is set here; active[] beyond nactive is unused */
	hb.pid = (int)getpid();
	hb.host_pid = a->host_pid;
	memcpy(hb.boot_id, a->boot_id, sizeof(hb.boot_id));
	hb.time_ms = now_realtime_ms();
	hb.interval_ms = a->ctx->cfg.cpu.interval_ms;
	hb.metric = a->ctx->cfg.cpu.metric;
	hb.ncpu = cpu_sampler_ncpu(a->s);
	hb.stopped = stopped;
	hb.nactive = stopped ? 0 : cpu_sampler_active(a->s, hb.active, HISTORY_ACTIVE_MAX);
	for (size_t i = 0; i < hb.nactive; i++) /* the profile so far: its hot kernel function */
		burst_profiles_peek(a->prof, &hb.active[i]);
	r = heartbeat_write(a->ctx->cfg.paths.run, &hb);
	if (r < 0)
		log_error_errno(r, "Failed to write heartbeat in '%s': %m", a->ctx->cfg.paths.run);
	return r;
}

/* One sample: step, record bursts, queue the ring slot. Returns bursts that ended. */
static int agent_sample(struct agent *a, struct burst_event *evs)
{
	int n = cpu_sampler_step(a->s, evs, HISTORY_ACTIVE_MAX);

	if (n < 0) {
		/* a bad /proc/stat can last: log the first failure, then every 2^k-th (4 Hz would
		 * otherwise write four lines a second into the journal) */
		unsigned k = ++a->bad_samples;

		if ((k & (k - 1)) == 0)
			log_warning_errno(
				n, "Failed to sample /proc/stat: %m, skipping (%u in a row)", k);
		return 0;
	}
	if (a->bad_samples) {
		log_notice("sampling /proc/stat again after %u failures", a->bad_samples);
		a->bad_samples = 0;
	}
	burst_profiles_step(a->prof, a->s, evs, (size_t)n);
	log_events(a, evs, n);
	if (a->ring_ok)
		(void)history_ring_add(&a->ring, now_realtime_ms(), cpu_sampler_shares(a->s));
	agent_tiers_add(&a->tiers, now_realtime_ms(), cpu_sampler_shares(a->s));
	return n;
}

/* Runs that qualify as bursts now: when this changes, the heartbeat is rewritten at once so a
 * reader (check cpu, report) sees a burst that is still going on without waiting for it. */
static size_t count_active(const struct cpu_sampler *s)
{
	const struct sampler *core = cpu_sampler_core(s);
	struct burst_run run;
	size_t n = 0;

	for (unsigned c = 0; c < core->ncpu; c++)
		n += burst_current(&core->trk[c], &core->p.burst, &run) == 1;
	return n;
}

static void sleep_until(uint64_t mono_ms)
{
	struct timespec ts = { .tv_sec = (time_t)(mono_ms / 1000),
			       .tv_nsec = (long)(mono_ms % 1000) * 1000000L };

	while (!agent_signals_stop() &&
	       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void agent_loop(struct agent *a, struct burst_event *evs)
{
	const struct cz_config *cfg = &a->ctx->cfg;
	uint64_t now = now_monotonic_ms(), start = now, deadline = now;
	uint64_t hb_every = HISTORY_HEARTBEAT_MS, next_hb = now, next_flush = now + 1000;
	size_t active = 0, nact;

	if (a->watchdog_ms && a->watchdog_ms / 2 < hb_every)
		hb_every = a->watchdog_ms / 2 ? a->watchdog_ms / 2 : 1;
	while (!agent_signals_stop()) {
		deadline += cfg->cpu.interval_ms;
		sleep_until(deadline);
		if (agent_signals_stop())
			break;
		if (agent_signals_take_reload() &&
		    agent_reload_prepare(a->ao, a->next, &a->next_hf) == 0) {
			a->reload = true; /* run again with it, from agent_run() */
			break;
		}
		if (agent_sample(a, evs) > 0)
			next_hb =
				0; /* a burst ended: drop it from the heartbeat's active list now */
		nact = count_active(a->s);
		if (nact != active)
			next_hb = 0; /* a run just became a burst: show it now */
		if (nact > active)
			trigger_note(&a->trig, TRIGGER_CPU); /* it crossed cpu.min_burst */
		active = nact;
		/* non-blocking; logs its own trouble once. An ENA reset or a soft lockup it
		 * recorded is evidence for a condition now */
		if (kmsg_follow_poll(a->kf) > 0)
			trigger_note(&a->trig, TRIGGER_ALL);
		now = now_monotonic_ms();
		if (now > deadline + cfg->cpu.interval_ms)
			deadline = now; /* we were stopped or starved: do not catch up in a burst */
		if (now >= next_flush) {
			if (a->ring_ok)
				(void)history_ring_flush(&a->ring);
			agent_tiers_flush(&a->tiers);
			next_flush = now + 1000;
		}
		if (now >= next_hb) {
			if (write_heartbeat(a, false) == 0 && a->watchdog_ms)
				(void)systemd_notify("WATCHDOG=1");
			next_hb = now + hb_every;
		}
		/* after the heartbeat: the check the periodic thread runs reads this burst there */
		if (a->trig.pending)
			periodic_kick(a->per, trigger_take(&a->trig, now));
		if (a->ao->once && now - start >= cfg->cpu.inline_window_ms)
			break;
	}
}

/* What the agent's first run sets up with its capabilities, for the process's life. */
struct agent_start {
	struct profiler *prof; /* every CPU's perf event and kallsyms (NULL: cpu.profile off) */
	bool dropped;	       /* the capabilities nothing later needs are gone */
};

/*
 * Keeps only the capabilities later work needs (agent/privdrop.h), for good, and says so in
 * one line. Before any thread exists: capabilities are per thread, and a thread started
 * earlier would keep them.
 */
static void drop_capabilities(const struct cz_ctx *ctx)
{
	struct caps_state before, after;
	char line[1024];
	uint64_t keep;
	int r;

	r = caps_read(&before);
	if (r < 0) {
		log_warning_errno(r, "Failed to read our capabilities: %m, keeping them");
		return;
	}
	if (before.prm == 0 && before.amb == 0)
		return; /* nothing to drop (not uid 0, or started without any) */
	keep = privdrop_keep(&ctx->cfg, startswith(census_bpf_build(), "bpf") != NULL, before.prm);
	r = caps_drop(keep, &after);
	if (privdrop_format(&before, &after, keep, r, line, sizeof(line)) < 0)
		snprintf(line, sizeof(line), "capabilities: dropped (too many to name)");
	if (r < 0)
		log_warning("%s", line);
	else
		log_info("%s", line);
}

/* One run of the agent with ctx's configuration, until a signal ends it or asks for a reload. */
static int agent_run_once(struct cz_ctx *ctx, const struct agent_opts *ao, struct agent_start *st,
			  struct cz_config *next, bool *ret_reload)
{
	_cleanup_free_ struct burst_event *evs = calloc(HISTORY_ACTIVE_MAX, sizeof(*evs));
	struct agent a = { .ctx = ctx, .ao = ao, .ring = { .fd = -1 }, .next = next };
	struct periodic *per = NULL;
	int r, n, pr = 0;

	*ret_reload = false;

	if (!evs)
		return CZ_EXIT_ERROR;
	if (log_to_journal())
		log_set_sink(systemd_log_sink);
	r = cpu_sampler_new(ctx, ctx->cfg.cpu.attribute_tasks, &a.s);
	if (r < 0) {
		log_error_errno(r, "Failed to sample '%s/stat': %m", ctx->cfg.paths.proc);
		return CZ_EXIT_ERROR;
	}
	r = history_ring_open(ctx->cfg.paths.run, cpu_sampler_ncpu(a.s), ctx->cfg.cpu.history_ms,
			      ctx->cfg.cpu.interval_ms, &a.ring);
	a.ring_ok = r == 0;
	agent_tiers_open(&a.tiers, ctx, cpu_sampler_ncpu(a.s));
	if (burst_profiles_new(ctx, cpu_sampler_ncpu(a.s), &st->prof, &a.prof) < 0)
		log_warning("Burst profiles off: out of memory");
	if (r < 0)
		log_warning_errno(r, "Failed to open history in '%s': %m, ignoring",
				  ctx->cfg.paths.run);
	(void)burst_log_claim(ctx->cfg.paths.run); /* a FIFO or junk at cpu-bursts: aside now */
	/* what the check judges our liveness by: pid and boot as the host's /proc says them */
	if (hostid_self_pid(&ctx->hf, &a.host_pid) < 0)
		a.host_pid = 0;
	if (hostid_boot_id(&ctx->hf, a.boot_id, sizeof(a.boot_id)) < 0)
		a.boot_id[0] = '\0';
	if (write_heartbeat(&a, false) < 0) {
		burst_profiles_free(a.prof);
		cpu_sampler_free(a.s);
		agent_tiers_close(&a.tiers);
		history_ring_close(&a.ring);
		return CZ_EXIT_ERROR; /* without the run dir nobody can read what we find */
	}
	a.watchdog_ms = systemd_watchdog_usec() / 1000;
	r = kmsg_follow_open(ctx, &a.kf);
	if (r < 0)
		log_warning_errno(r, "Failed to follow the kernel log '%s': %m, ignoring",
				  ctx->cfg.agent.kmsg);
	(void)periodic_new(ctx, ao->once, &per);
	/* the events, kallsyms and the kernel log are open: the rest needs less */
	if (!st->dropped) {
		drop_capabilities(ctx);
		st->dropped = true;
	}
	if (per && !ao->once && periodic_start(per) < 0)
		log_warning("Failed to start the periodic work, ignoring");
	a.per = per;
	(void)systemd_notify("READY=1");
	agent_loop(&a, evs);
	a.per = NULL;
	(void)systemd_notify("STOPPING=1");
	n = cpu_sampler_finish(a.s, evs, HISTORY_ACTIVE_MAX);
	burst_profiles_step(a.prof, a.s, evs, (size_t)n);
	log_events(&a, evs, n);
	(void)kmsg_follow_poll(a.kf);
	kmsg_follow_free(a.kf); /* saved: the checks below see what it read */
	if (per && ao->once)
		pr = periodic_cycle(per); /* after the bursts are logged, so check cpu sees them */
	periodic_free(per);
	burst_profiles_free(a.prof);
	agent_tiers_close(&a.tiers);
	history_ring_close(&a.ring);
	/* --once leaves a fresh heartbeat (its bursts are in the log); a stopped agent does not,
	 * and one that reloads is not stopped */
	r = write_heartbeat(&a, !ao->once && !a.reload);
	cpu_sampler_free(a.s);
	*ret_reload = a.reload;
	if (a.reload)
		agent_reload_apply(ctx, ao, next, &a.next_hf);
	return r < 0 || pr < 0 ? CZ_EXIT_ERROR : CZ_EXIT_OK; /* --once: its cycle's failure too */
}

/*
 * The heap of a process that lives for months. glibc raises its mmap threshold to the size of
 * the largest mmap'ed block freed so far (up to 32 MiB): after the kallsyms read buffer (~5 MiB)
 * is freed, libbpf's parse of the kernel's BTF at the first census (two 5.5 MiB blocks) lands in
 * the periodic thread's arena instead, where free() leaves it resident: 11 of the 27 MiB of idle
 * RSS measured on a 6.18 kernel. A fixed threshold keeps each block above 128 KiB an mmap of its
 * own, given back by free(); the cost is a page fault per page of those rare large blocks.
 */
static void heap_for_daemon(void)
{
#ifdef M_MMAP_THRESHOLD
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024); /* any of these turns the adjusting off */
	(void)mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif
}

/*
 * The run dir is one agent's: two agents on one dir flipped the heartbeat's pid, interleaved the
 * history ring and logged every burst twice. "agent.lock" there is flock()ed (O_CLOEXEC: no
 * child inherits it) for the agent's life, --once too, and holds the holder's host pid for the
 * message of the next one, which exits 2.
 */
static int claim_run_dir(struct cz_ctx *ctx, struct state_lock *ret)
{
	const char *dir = ctx->cfg.paths.run;
	char buf[32] = "";
	int r = state_trylock(dir, "agent", ret), pid;

	if (r == -EWOULDBLOCK) {
		char path[FILEIO_PATH_MAX];
		ssize_t n = -1;
		uint64_t v;

		if (snprintf(path, sizeof(path), "%s/agent.lock", dir) < (int)sizeof(path))
			n = fileio_read_at(AT_FDCWD, path, FILEIO_OURS, buf, sizeof(buf));
		if (n > 0 && buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		if (n <= 0 || parse_u64(buf, &v) < 0 || v == 0 || v > INT32_MAX)
			snprintf(buf, sizeof(buf), "?");
		log_error("Failed to start: run dir '%s' in use by pid %s", dir, buf);
		return -EWOULDBLOCK;
	}
	if (r < 0)
		return log_error_errno(r, "Failed to lock run dir '%s': %m", dir);
	if (hostid_self_pid(&ctx->hf, &pid) < 0)
		pid = (int)getpid(); /* no procfs at --proc-root: the pid we know */
	snprintf(buf, sizeof(buf), "%d\n", pid);
	if (ftruncate(ret->fd, 0) < 0 || pwrite(ret->fd, buf, strlen(buf), 0) < 0)
		log_warning_errno(
			errno, "Failed to write our pid into '%s/agent.lock': %m, ignoring", dir);
	return 0;
}

int agent_run(struct cz_ctx *ctx, const struct agent_opts *ao)
{
	_cleanup_free_ struct cz_config *next = malloc(sizeof(*next));
	struct state_lock lock = { -1 }, moved;
	struct agent_start st = { 0 };
	char locked[sizeof(ctx->cfg.paths.run)];
	bool reload = true;
	int r = CZ_EXIT_ERROR;

	if (!next || claim_run_dir(ctx, &lock) < 0)
		return CZ_EXIT_ERROR;
	snprintf(locked, sizeof(locked), "%s", ctx->cfg.paths.run);
	heap_for_daemon();
	agent_signals_install();
	while (reload) {
		r = agent_run_once(ctx, ao, &st, next, &reload);
		if (!reload || streq(locked, ctx->cfg.paths.run))
			continue;
		/* a reload moved the run dir: that one is ours before this one is let go */
		if (claim_run_dir(ctx, &moved) < 0) {
			r = CZ_EXIT_ERROR;
			break;
		}
		state_unlock(&lock);
		lock = moved;
		snprintf(locked, sizeof(locked), "%s", ctx->cfg.paths.run);
	}
	state_unlock(&lock);
	profiler_free(st.prof);
	return r;
}
