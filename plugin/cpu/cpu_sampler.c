/* SPDX-License-Identifier: MIT */
/*
 * The live sampler (cpu_sampler.h) that check cpu and the agent drive: the reads of /proc/stat,
 * threads and IRQs around the pure sampler (sampler.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/cpu_sampler.h"
#include "cpu/cpustat.h"
#include "cpu/sampler.h"
#include "host/irq.h"
#include "host/tasks.h"
#include "base/util.h"

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
