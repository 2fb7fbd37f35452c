/* SPDX-License-Identifier: MIT */
#ifndef CZ_CPU_SAMPLER_H
#define CZ_CPU_SAMPLER_H

/*
 * The live sampler that check cpu (inline) and the agent drive (cpu_sampler.c). It keeps
 * /proc/stat open under the host root and re-reads it (hostfs_pread_once) at each step, feeds
 * the pure sampler (sampler.h) with the monotonic time, rescans threads while a core is hot
 * (host/tasks.h) and, when a burst ends, completes it with the NIC IRQs that core serves
 * (host/irq.h), its times in CLOCK_REALTIME for the run-dir files (history.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/cz.h"
#include "cpu/history.h"

struct cpu_sampler;

/*
 * cpu_sampler_new - open /proc/stat under ctx's host root and take the first reading. With
 * @attribute, threads are scanned while a core is hot. Returns 0 and *@ret (free with
 * cpu_sampler_free) or -errno (-ENOENT no /proc/stat, -EINVAL unparsable).
 */
int cpu_sampler_new(const struct cz_ctx *ctx, bool attribute, struct cpu_sampler **ret);

/* cpu_sampler_free - close and free; safe on NULL. */
void cpu_sampler_free(struct cpu_sampler *s);

/*
 * cpu_sampler_step - take one reading now. Bursts that ended with it are written to @ret (at
 * most @max; CLOCK_REALTIME times, tasks and IRQs filled in) and counted in the return value;
 * -errno when /proc/stat could not be read or parsed (the interval is skipped, the series goes
 * on at the next good reading).
 */
int cpu_sampler_step(struct cpu_sampler *s, struct burst_event *ret, size_t max);

/* cpu_sampler_finish - end every run; bursts that qualify go to @ret as in cpu_sampler_step. */
int cpu_sampler_finish(struct cpu_sampler *s, struct burst_event *ret, size_t max);

/*
 * cpu_sampler_active - runs in progress that already qualify as bursts (cpu, times, peak,
 * mean, the tasks seen so far and the NIC IRQs the core serves), at most @max. Returns the
 * count.
 */
size_t cpu_sampler_active(struct cpu_sampler *s, struct burst_event *ret, size_t max);

/*
 * cpu_sampler_core - the pure sampler inside, read-only: per core, whether a run started with
 * the last step (started[]) and whether one is in progress (trk[].active). The agent starts and
 * ends burst profiles on these.
 */
struct sampler;
const struct sampler *cpu_sampler_core(const struct cpu_sampler *s);

/* cpu_sampler_ncpu - the number of CPU slots. */
unsigned cpu_sampler_ncpu(const struct cpu_sampler *s);

/* cpu_sampler_shares - the last sample, one byte per CPU (0..100, HISTORY_NO_SAMPLE), valid
 * until the next step. */
const uint8_t *cpu_sampler_shares(const struct cpu_sampler *s);

#endif
