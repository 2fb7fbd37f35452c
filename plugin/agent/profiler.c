/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "agent/profiler.h"
#include "cpu/folded.h"
#include "host/kallsyms.h"
#include "host/perf.h"
#include "base/util.h"

/* 16 data pages (64 KiB) hold ~2 s of 99 Hz samples with 30-frame stacks: drained every 250 ms */
#define RING_PAGES 16
#define COMM_CACHE 256

/* An event that ran less than this in its first 100 ms enabled is dead (perf.h: hotplug) */
#define CHECK_AFTER_NS 100000000ull

struct core_profile {
	struct perf_cpu *pc;  /* the CPU's event, kept open between profiles; NULL: see err */
	int err;	      /* why pc is NULL (profiler_open's failure, -ESTALE once dead) */
	bool checked;	      /* this profile's event was seen running (or dead) */
	struct fold *fold;
	uint64_t start_ms;
	bool on;
};

struct comm_entry {
	uint32_t tid;
	char comm[17];
};

struct profiler {
	const struct hostfs *hf;
	struct profiler_opts o;
	unsigned ncpu, active;
	bool opened;	/* profiler_open ran: no event is opened later */
	struct core_profile *core;
	struct kallsyms ks;
	int ks_err;	/* 0 not loaded yet, 1 loaded, < 0 why it cannot be */
	uint64_t lost;
	struct comm_entry comm[COMM_CACHE];
};

int profiler_new(const struct hostfs *hf, unsigned ncpu, const struct profiler_opts *o,
		 struct profiler **ret)
{
	_cleanup_free_ struct profiler *p = NULL;

	if (!hf || ncpu == 0 || !o || o->hz == 0)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->core = calloc(ncpu, sizeof(*p->core));
	if (!p->core)
		return -ENOMEM;
	p->hf = hf;
	p->o = *o;
	if (p->o.max_active == 0 || p->o.max_active > PROFILER_ACTIVE_MAX)
		p->o.max_active = PROFILER_ACTIVE_MAX;
	p->ncpu = ncpu;
	*ret = TAKE_PTR(p);
	return 0;
}

/* Ends @c's profile; its event stays open (disabled, unmapped) for the next one. */
static void core_close(struct profiler *p, struct core_profile *c)
{
	perf_cpu_stop(c->pc);
	fold_free(c->fold);
	c->fold = NULL;
	if (c->on)
		p->active--;
	c->on = false;
}

/* Closes @c's event for good, keeping its lost count; @err says why (0: the profiler ends). */
static void core_forget(struct profiler *p, struct core_profile *c, int err)
{
	p->lost += perf_cpu_lost(c->pc);
	perf_cpu_close(c->pc);
	c->pc = NULL;
	c->err = err;
}

void profiler_free(struct profiler *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->ncpu; i++) {
		core_close(p, &p->core[i]);
		core_forget(p, &p->core[i], 0);
	}
	kallsyms_free(&p->ks);
	free(p->core);
	free(p);
}

int profiler_open(struct profiler *p)
{
	int first = 0, n = 0;

	p->opened = true;
	for (unsigned i = 0; i < p->ncpu; i++) {
		struct core_profile *c = &p->core[i];

		if (c->pc)
			continue;
		c->err = perf_cpu_open((int)i, p->o.hz, RING_PAGES, &c->pc);
		if (c->err < 0 && first == 0)
			first = c->err;
		n += c->err == 0;
	}
	return n > 0 ? n : first;
}

int profiler_set_opts(struct profiler *p, const struct profiler_opts *o)
{
	int first = 0;

	if (!o || o->hz == 0)
		return -EINVAL;
	for (unsigned i = 0; i < p->ncpu && o->hz != p->o.hz; i++) {
		int r = p->core[i].pc ? perf_cpu_set_hz(p->core[i].pc, o->hz) : 0;

		if (r < 0 && first == 0)
			first = r;
	}
	if (first < 0)
		return first; /* the old rate stays where it was set */
	p->o = *o;
	if (p->o.max_active == 0 || p->o.max_active > PROFILER_ACTIVE_MAX)
		p->o.max_active = PROFILER_ACTIVE_MAX;
	return 0;
}

int profiler_cpu_error(const struct profiler *p, unsigned cpu)
{
	return cpu < p->ncpu ? p->core[cpu].err : -ENODEV;
}

static int load_symbols(struct profiler *p)
{
	ssize_t r;

	if (p->ks_err != 0)
		return p->ks_err;
	r = kallsyms_load(p->hf, &p->ks);
	/* all-zero addresses are a privilege problem, not a missing file */
	p->ks_err = r == -EPERM ? -EADDRNOTAVAIL : r < 0 ? (int)r : 1;
	return p->ks_err;
}

int profiler_preload(struct profiler *p)
{
	int r = load_symbols(p);

	return r < 0 ? r : 0;
}

/* @c's event, opened now when profiler_open never ran (each start tries again then). */
static int core_event(struct profiler *p, unsigned cpu, struct core_profile *c)
{
	if (c->pc)
		return 0;
	if (p->opened)
		return c->err < 0 ? c->err : -ENODEV;
	return perf_cpu_open((int)cpu, p->o.hz, RING_PAGES, &c->pc);
}

int profiler_start(struct profiler *p, unsigned cpu, uint64_t now_ms)
{
	struct core_profile *c;
	int r;

	if (cpu >= p->ncpu)
		return -ENODEV;
	c = &p->core[cpu];
	if (c->on)
		return 0;
	if (p->active >= p->o.max_active)
		return -EBUSY;
	/* the event first: without CAP_PERFMON there is nothing to symbolize, and that is the
	 * reason to report */
	r = core_event(p, cpu, c);
	if (r >= 0)
		r = load_symbols(p);
	if (r >= 0)
		r = fold_new(FOLD_STACKS_MAX, &c->fold);
	if (r >= 0 && perf_cpu_monotonic(c->pc)) /* times on another clock would not line up */
		r = fold_keep_times(c->fold, profiler_times_max(&p->o));
	if (r >= 0)
		r = perf_cpu_start(c->pc);
	if (r < 0) {
		fold_free(c->fold);
		c->fold = NULL;
		return r;
	}
	c->start_ms = now_ms;
	c->checked = false;
	c->on = true;
	if (p->active++ == 0) /* TIDs are reused: names are cached only while profiles run */
		memset(p->comm, 0, sizeof(p->comm));
	return 1;
}

/* The task's name: a small cache keyed by TID, filled from the host's /proc. */
static const char *comm_of(struct profiler *p, uint32_t pid, uint32_t tid)
{
	struct comm_entry *e = &p->comm[tid % COMM_CACHE];
	char rel[64], buf[64];
	ssize_t n;

	if (tid == 0)
		return pid == 0 ? "[host task]" : "[unknown]";
	if (e->tid == tid && e->comm[0])
		return e->comm;
	snprintf(rel, sizeof(rel), "%u/task/%u/comm", pid, tid);
	n = hostfs_read(p->hf, HOSTFS_PROC, rel, buf, sizeof(buf));
	if (n <= 0)
		return "[exited]";
	buf[strcspn(buf, "\n")] = '\0';
	buf[sizeof(e->comm) - 1] = '\0'; /* TASK_COMM_LEN: the kernel never writes more */
	e->tid = tid;
	memcpy(e->comm, buf, sizeof(e->comm));
	return e->comm;
}

struct drain_ctx {
	struct profiler *p;
	struct core_profile *c;
};

size_t profiler_times_max(const struct profiler_opts *o)
{
	/* the samples profile_max holds at profile_hz, twice over (the kernel's frequency mode
	 * overshoots while it tunes the period), and 1 Mi at most (8 MiB) */
	uint64_t n = (uint64_t)o->hz * (o->max_ms / 1000 + 1) * 2 + 1024;

	return n > (1u << 20) ? (1u << 20) : (size_t)n;
}

/* A sample's time after the profile's start, in ms (kept only on the monotonic clock). */
static uint32_t sample_ms(const struct core_profile *c, const struct perf_sample *s)
{
	uint64_t ms = s->time_ns / 1000000;

	if (ms < c->start_ms)
		return 0;
	ms -= c->start_ms;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

static void on_sample(const struct perf_sample *s, void *userdata)
{
	struct drain_ctx *d = userdata;
	const char *frames[PERF_STACK_MAX + 1];
	size_t n = 0;

	for (size_t i = s->nips; i-- > 0;) { /* perf gives the leaf first; folded is root first */
		const char *name = kallsyms_lookup(&d->p->ks, s->ips[i], NULL);

		frames[n++] = name ? name : "[unknown]";
	}
	if (n == 0)
		frames[n++] = s->user ? "[user]" : "[unknown]";
	/* -ENOMEM: dropped */
	(void)fold_add_at(d->c->fold, comm_of(d->p, s->pid, s->tid), frames, n, sample_ms(d->c, s));
}

/* Whether @c's event, enabled for a while, ever ran: one whose CPU went offline since it was
 * opened never runs again (perf.h), and only CAP_PERFMON could open another. */
static void check_alive(struct profiler *p, struct core_profile *c)
{
	uint64_t enabled, running;

	if (c->checked || perf_cpu_times(c->pc, &enabled, &running) < 0 ||
	    enabled < CHECK_AFTER_NS)
		return;
	c->checked = true;
	if (running == 0) {
		perf_cpu_stop(c->pc);
		core_forget(p, c, -ESTALE);
	}
}

void profiler_tick(struct profiler *p, uint64_t now_ms)
{
	for (unsigned i = 0; i < p->ncpu; i++) {
		struct core_profile *c = &p->core[i];
		struct drain_ctx d = { p, c };

		if (!c->on || !perf_cpu_started(c->pc))
			continue;
		(void)perf_cpu_drain(c->pc, on_sample, &d); /* -EBADMSG: the ring was reset */
		check_alive(p, c);
		if (c->pc && now_ms - c->start_ms >= p->o.max_ms)
			perf_cpu_stop(c->pc); /* keep what it has; the burst may go on but we stop
					       * paying for it */
	}
}

bool profiler_running(const struct profiler *p, unsigned cpu)
{
	return cpu < p->ncpu && p->core[cpu].on;
}

ssize_t profiler_stop(struct profiler *p, unsigned cpu, bool keep, char *buf, size_t size)
{
	struct core_profile *c;
	ssize_t r = 0;

	if (cpu >= p->ncpu || !p->core[cpu].on)
		return -ENOENT;
	c = &p->core[cpu];
	if (keep)
		profiler_drain(p, cpu);
	if (keep && fold_samples(c->fold) > 0)
		r = fold_format(c->fold, buf, size);
	core_close(p, c);
	return r;
}

void profiler_drain(struct profiler *p, unsigned cpu)
{
	struct core_profile *c = cpu < p->ncpu ? &p->core[cpu] : NULL;
	struct drain_ctx d = { p, c };

	if (c && c->on && perf_cpu_started(c->pc))
		(void)perf_cpu_drain(c->pc, on_sample, &d);
}

ssize_t profiler_times(const struct profiler *p, unsigned cpu, size_t lines, char *buf,
		       size_t size)
{
	if (cpu >= p->ncpu || !p->core[cpu].on)
		return -ENOENT;
	return fold_format_times(p->core[cpu].fold, lines, buf, size);
}

uint64_t profiler_samples(const struct profiler *p, unsigned cpu)
{
	return cpu < p->ncpu && p->core[cpu].on ? fold_samples(p->core[cpu].fold) : 0;
}

ssize_t profiler_peek(const struct profiler *p, unsigned cpu, char *buf, size_t size)
{
	const struct core_profile *c;

	if (cpu >= p->ncpu || !p->core[cpu].on)
		return -ENOENT;
	c = &p->core[cpu];
	/* what the last tick drained: the agent ticks every sample, so this is at most one
	 * cpu.interval behind the ring */
	return fold_samples(c->fold) > 0 ? fold_format(c->fold, buf, size) : 0;
}

uint64_t profiler_lost(const struct profiler *p)
{
	uint64_t lost = p->lost;

	for (unsigned i = 0; i < p->ncpu; i++)
		lost += perf_cpu_lost(p->core[i].pc);
	return lost;
}

const char *profiler_strerror(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return "no CAP_PERFMON (CAP_SYS_ADMIN before 5.8)";
	case -EADDRNOTAVAIL:
		return "kallsyms hidden: needs CAP_SYSLOG or kernel.kptr_restrict=0";
	case -EBUSY:
		return "other cores already profiled";
	case -ENOENT:
	case -ENOSYS:
	case -EOPNOTSUPP:
		return "no perf events or kallsyms on this kernel";
	case -ENODEV:
	case -EINVAL:
		return "CPU offline when the agent opened its perf events";
	case -ESTALE:
		return "CPU went offline since start: perf event gone";
	case -EMFILE:
	case -ENFILE:
	case -ENOMEM:
		return "out of resources";
	default:
		return "profiling failed";
	}
}
