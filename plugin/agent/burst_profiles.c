/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/uio.h>
#include <time.h>

#include "agent/burst_profiles.h"
#include "agent/profiler.h"
#include "cpu/folded.h"
#include "cpu/sampler.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"

/* Measured, logged with the burst (-v): the peeks' thread CPU time (bench_latency_peek.py). */
struct peek_cost {
	uint64_t cpu_ns;
	unsigned peeks, writes;
	size_t bytes; /* the largest profile text formatted */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct burst_profiles {
	struct profiler *p;
	const char *run_dir;
	unsigned ncpu;
	size_t bytes;
	char *buf;		/* cpu.profile_bytes + 1 */
	char *tbuf;		/* the same for the sample times */
	char (*why)[64];	/* per CPU: why its last start failed, "" when it did not */
	char (*live)[64];	/* per CPU: the profile file written mid-burst, "" when none */
	uint64_t *peeked;	/* per CPU: samples in that file (rewritten only when it grew) */
	struct hot_frame *hot;	/* per CPU: its hottest frame */
	struct peek_cost *cost;	/* per CPU: what the mid-burst peeks of its run cost */
	bool warned;		/* the first failure is logged, later ones are in the burst log */
};

/* The one line about the events opened at start: how many CPUs have one, and why not the rest. */
static void burst_profiles_log_open(const struct profiler *p, unsigned ncpu, int r)
{
	unsigned missing = 0, first = ncpu;

	if (r < 0) {
		log_warning_errno(r, "Burst profiles unavailable: no perf event opened: %s (%m)",
				  profiler_strerror(r));
		return;
	}
	for (unsigned c = 0; c < ncpu; c++)
		if (profiler_cpu_error(p, c) < 0 && missing++ == 0)
			first = c;
	if (missing)
		log_notice("Burst profiles: perf events open on %d of %u CPUs; cpu%u and %u more "
			   "without: %s",
			   r, ncpu, first, missing - 1,
			   profiler_strerror(profiler_cpu_error(p, first)));
}

int burst_profiles_new(const struct cz_ctx *ctx, unsigned ncpu, struct profiler **shared,
		       struct burst_profiles **ret)
{
	const struct cz_config *cfg = &ctx->cfg;
	struct profiler_opts o = { .hz = (unsigned)cfg->cpu.profile_hz,
				   .max_ms = cfg->cpu.profile_max_ms };
	struct burst_profiles *bp;
	int r;

	*ret = NULL;
	if (!cfg->cpu.profile)
		return 0;
	bp = calloc(1, sizeof(*bp));
	if (!bp)
		return -ENOMEM;
	bp->run_dir = cfg->paths.run;
	bp->ncpu = ncpu;
	bp->bytes = (size_t)cfg->cpu.profile_bytes;
	bp->buf = malloc(bp->bytes + 1);
	bp->tbuf = malloc(bp->bytes + 1);
	bp->why = calloc(ncpu, sizeof(*bp->why));
	bp->live = calloc(ncpu, sizeof(*bp->live));
	bp->peeked = calloc(ncpu, sizeof(*bp->peeked));
	bp->hot = calloc(ncpu, sizeof(*bp->hot));
	bp->cost = calloc(ncpu, sizeof(*bp->cost));
	r = 0;
	if (!bp->buf || !bp->tbuf || !bp->why || !bp->live || !bp->peeked || !bp->hot || !bp->cost)
		r = -ENOMEM;
	if (r == 0 && *shared) {
		/* a reload: the events opened at start, at the new rate (no capability needed) */
		r = profiler_set_opts(*shared, &o);
		if (r < 0)
			log_warning_errno(r, "Failed to set cpu.profile_hz %u on the open perf "
					  "events: %m, keeping the rate they had", o.hz);
		r = 0;
	} else if (r == 0) {
		r = profiler_new(&ctx->hf, ncpu, &o, shared);
		/* every CPU's event now, while the agent holds CAP_PERFMON; symbols now too
		 * (parsing them must not stall the sampler at a burst's start, and real
		 * addresses need CAP_SYSLOG). A failure of either is remembered and reported
		 * with each burst */
		if (r == 0)
			burst_profiles_log_open(*shared, ncpu, profiler_open(*shared));
		if (r == 0)
			(void)profiler_preload(*shared);
	}
	if (r < 0) {
		burst_profiles_free(bp);
		return r;
	}
	bp->p = *shared;
	*ret = bp;
	return 0;
}

void burst_profiles_free(struct burst_profiles *bp)
{
	if (!bp)
		return;
	/* the profiler is the caller's (shared): its events outlive a reload */
	for (unsigned c = 0; c < bp->ncpu; c++)
		if (profiler_running(bp->p, c))
			(void)profiler_stop(bp->p, c, false, NULL, 0);
	free(bp->buf);
	free(bp->tbuf);
	free(bp->why);
	free(bp->live);
	free(bp->peeked);
	free(bp->hot);
	free(bp->cost);
	free(bp);
}

/* "cpu-profile-<cpu>-<start_ms>.folded": its start, or false for any other name. */
static bool profile_start(const char *name, uint64_t *ret)
{
	const char *rest = startswith(name, HISTORY_PROFILE_PREFIX);
	const char *dash = rest ? strchr(rest, '-') : NULL;
	const char *dot = dash ? strchr(dash, '.') : NULL;

	return dot && streq(dot, ".folded") &&
	       parse_u64_n(dash + 1, (size_t)(dot - dash - 1), ret) == 0;
}

/* Removes @name (a ".folded" file) and the ".times" file beside it. */
static int unlink_profile(int dfd, const char *name)
{
	char times[80];

	if (history_profile_times(name, times, sizeof(times)) == 0)
		(void)unlinkat(dfd, times, 0);
	return unlinkat(dfd, name, 0);
}

/* Keeps the newest HISTORY_PROFILES_MAX profiles (and their times): their bursts rolled off the
 * log too. */
static void roll_off(const char *run_dir)
{
	uint64_t oldest;
	DIR *d = opendir(run_dir);
	struct dirent *e;
	size_t n = 0;
	char name[64];

	if (!d)
		return;
	for (;;) {
		n = 0;
		oldest = UINT64_MAX;
		rewinddir(d);
		while ((e = readdir(d)) != NULL) {
			uint64_t t;

			if (!profile_start(e->d_name, &t))
				continue;
			n++;
			if (t < oldest) {
				oldest = t;
				snprintf(name, sizeof(name), "%.63s", e->d_name);
			}
		}
		if (n <= HISTORY_PROFILES_MAX || oldest == UINT64_MAX)
			break;
		if (unlink_profile(dirfd(d), name) < 0)
			break;
	}
	closedir(d);
}

/* Removes the mid-burst file of @cpu (its run ended short, or the name moved). */
static void drop_live(struct burst_profiles *bp, unsigned cpu)
{
	char path[FILEIO_PATH_MAX];

	char times[80];

	if (bp->live[cpu][0] &&
	    snprintf(path, sizeof(path), "%s/%s", bp->run_dir, bp->live[cpu]) < (int)sizeof(path))
		(void)unlink(path);
	if (bp->live[cpu][0] &&
	    history_profile_times(bp->live[cpu], times, sizeof(times)) == 0 &&
	    snprintf(path, sizeof(path), "%s/%s", bp->run_dir, times) < (int)sizeof(path))
		(void)unlink(path);
	bp->live[cpu][0] = '\0';
	bp->peeked[cpu] = 0;
}

/* The lines of folded text (each ends with '\n'). */
static size_t count_lines(const char *text, size_t len)
{
	size_t n = 0;

	for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + len - p))) != NULL; p++)
		n++;
	return n;
}

/*
 * The sample times beside the profile @name (bp->buf, @len bytes), from bp->tbuf: written when
 * there are any, else an older file of that name removed (a strip must match its stacks).
 */
static void write_times(struct burst_profiles *bp, const char *name, ssize_t tlen)
{
	char times[80];
	int r;

	if (history_profile_times(name, times, sizeof(times)) < 0)
		return;
	if (tlen <= 0) {
		char path[FILEIO_PATH_MAX];

		if (snprintf(path, sizeof(path), "%s/%s", bp->run_dir, times) < (int)sizeof(path))
			(void)unlink(path);
		return;
	}
	r = fileio_write_atomic(bp->run_dir, times, &(struct iovec){ bp->tbuf, (size_t)tlen }, 1,
				0600, 0);
	if (r < 0)
		log_warning_errno(r, "Failed to write burst profile times '%s/%s': %m, ignoring",
				  bp->run_dir, times);
}

/* @cpu's sample times into bp->tbuf beside the folded text in bp->buf (@len bytes). */
static ssize_t format_times(struct burst_profiles *bp, unsigned cpu, ssize_t len)
{
	if (len <= 0)
		return 0;
	return profiler_times(bp->p, cpu, count_lines(bp->buf, (size_t)len), bp->tbuf,
			      bp->bytes + 1);
}

/* Writes @len bytes of folded stacks (and @tlen of times) as @ev's profile and names its
 * hottest function. */
static void keep(struct burst_profiles *bp, struct burst_event *ev, size_t len, ssize_t tlen)
{
	struct iovec iov = { bp->buf, len };
	struct hot_frame h;
	char name[sizeof(ev->profile)];
	int r;

	snprintf(name, sizeof(name), HISTORY_PROFILE_PREFIX "%u-%" PRIu64 ".folded", ev->cpu,
		 ev->start_ms);
	/* the file written mid-burst is this one, unless the clocks moved apart meanwhile */
	if (bp->live[ev->cpu][0] && !streq(bp->live[ev->cpu], name))
		drop_live(bp, ev->cpu);
	bp->live[ev->cpu][0] = '\0';
	bp->peeked[ev->cpu] = 0;
	r = fileio_write_atomic(bp->run_dir, name, &iov, 1, 0600, 0);
	if (r < 0) {
		log_warning_errno(r, "Failed to write burst profile '%s/%s': %m, ignoring",
				  bp->run_dir, name);
		snprintf(ev->why, sizeof(ev->why), "profile not written");
		return;
	}
	write_times(bp, name, tlen);
	snprintf(ev->profile, sizeof(ev->profile), "%s", name);
	if (folded_hot_frame(bp->buf, len, &h) == 0 && h.total > 0) {
		snprintf(ev->hot, sizeof(ev->hot), "%s", h.frame);
		ev->hot_pct = (unsigned)(h.samples * 100 / h.total);
	}
	roll_off(bp->run_dir);
}

static void finish_burst(struct burst_profiles *bp, struct burst_event *ev)
{
	ssize_t len, tlen;

	if (ev->cpu >= bp->ncpu)
		return;
	if (!profiler_running(bp->p, ev->cpu)) {
		snprintf(ev->why, sizeof(ev->why), "%s", bp->why[ev->cpu]);
		return;
	}
	if (bp->cost[ev->cpu].peeks) {
		const struct peek_cost *pc = &bp->cost[ev->cpu];

		log_debug("burst cpu%u: %u mid-burst profile peeks, %u written, %.3f ms CPU in all "
			  "(%.3f ms each), up to %zu bytes",
			  ev->cpu, pc->peeks, pc->writes, (double)pc->cpu_ns / 1e6,
			  (double)pc->cpu_ns / 1e6 / pc->peeks, pc->bytes);
	}
	bp->cost[ev->cpu] = (struct peek_cost){ 0 };
	/* everything the ring holds, the stacks and their times, then the profile ends */
	profiler_drain(bp->p, ev->cpu);
	len = profiler_peek(bp->p, ev->cpu, bp->buf, bp->bytes + 1);
	tlen = format_times(bp, ev->cpu, len);
	(void)profiler_stop(bp->p, ev->cpu, false, NULL, 0);
	if (len > 0)
		keep(bp, ev, (size_t)len, tlen);
	else if (len == 0 && profiler_cpu_error(bp->p, ev->cpu) < 0) /* its event died */
		snprintf(ev->why, sizeof(ev->why), "%s",
			 profiler_strerror(profiler_cpu_error(bp->p, ev->cpu)));
	else
		snprintf(ev->why, sizeof(ev->why), "%s",
			 len == 0 ? "no samples" : "profile too big");
}

void burst_profiles_peek(struct burst_profiles *bp, struct burst_event *ev)
{
	struct hot_frame *h;
	char name[sizeof(ev->profile)];
	struct peek_cost *pc;
	uint64_t samples, t0;
	ssize_t len;
	int r;

	if (!bp || ev->cpu >= bp->ncpu)
		return;
	if (!profiler_running(bp->p, ev->cpu)) {
		snprintf(ev->why, sizeof(ev->why), "%s", bp->why[ev->cpu]);
		return;
	}
	h = &bp->hot[ev->cpu];
	snprintf(name, sizeof(name), HISTORY_PROFILE_PREFIX "%u-%" PRIu64 ".folded", ev->cpu,
		 ev->start_ms);
	if (bp->live[ev->cpu][0] && !streq(bp->live[ev->cpu], name))
		drop_live(bp, ev->cpu); /* another run on this core, or the clocks moved apart */
	/* the cost is one fold_format and one scan of its text, at most per heartbeat (2 s) and
	 * only when samples came in: bench_profile.py measures it */
	t0 = thread_cpu_ns();
	pc = &bp->cost[ev->cpu];
	pc->peeks++;
	samples = profiler_samples(bp->p, ev->cpu);
	if (samples > 0 && (!bp->live[ev->cpu][0] || samples != bp->peeked[ev->cpu])) {
		len = profiler_peek(bp->p, ev->cpu, bp->buf, bp->bytes + 1);
		r = len <= 0 ? -ENODATA : fileio_write_atomic(bp->run_dir, name,
				&(struct iovec){ bp->buf, (size_t)len }, 1, 0600, 0);
		if (r >= 0)
			write_times(bp, name, format_times(bp, ev->cpu, len));
		if (r >= 0 && (folded_hot_frame(bp->buf, (size_t)len, h) < 0 || h->total == 0))
			r = -EINVAL;
		pc->writes += r >= 0;
		if (len > 0 && (size_t)len > pc->bytes)
			pc->bytes = (size_t)len;
		pc->cpu_ns += thread_cpu_ns() - t0;
		if (r < 0) {
			drop_live(bp, ev->cpu);
			return;
		}
		snprintf(bp->live[ev->cpu], sizeof(bp->live[ev->cpu]), "%s", name);
		bp->peeked[ev->cpu] = samples;
	} else {
		pc->cpu_ns += thread_cpu_ns() - t0;
	}
	if (!bp->live[ev->cpu][0])
		return; /* no sample yet */
	snprintf(ev->profile, sizeof(ev->profile), "%s", name);
	snprintf(ev->hot, sizeof(ev->hot), "%s", h->frame);
	ev->hot_pct = (unsigned)(h->samples * 100 / h->total);
}

void burst_profiles_step(struct burst_profiles *bp, const struct cpu_sampler *s,
			 struct burst_event *ev, size_t n)
{
	const struct sampler *core;
	uint64_t now = now_monotonic_ms();

	if (!bp)
		return;
	core = cpu_sampler_core(s);
	for (unsigned c = 0; c < bp->ncpu && c < core->ncpu; c++) {
		int r;

		if (!core->started[c])
			continue;
		r = profiler_start(bp->p, c, now);
		if (r >= 0) {
			bp->why[c][0] = '\0';
			continue;
		}
		snprintf(bp->why[c], sizeof(bp->why[c]), "%s", profiler_strerror(r));
		if (!bp->warned && r != -EBUSY) {
			log_warning_errno(r, "Burst profiles unavailable: %s (%m)", bp->why[c]);
			bp->warned = true;
		}
	}
	profiler_tick(bp->p, now);
	for (size_t i = 0; i < n; i++)
		finish_burst(bp, &ev[i]);
	/* runs that ended without becoming a burst: their profiles are not wanted */
	for (unsigned c = 0; c < bp->ncpu && c < core->ncpu; c++)
		if (!core->trk[c].active && profiler_running(bp->p, c)) {
			(void)profiler_stop(bp->p, c, false, NULL, 0);
			drop_live(bp, c);
			bp->cost[c] = (struct peek_cost){ 0 };
		}
}
