/* SPDX-License-Identifier: MIT */
#ifndef CZ_PROFILER_H
#define CZ_PROFILER_H

/*
 * Burst profiles: what the kernel was doing on a saturated core. The agent starts a profile when
 * a core's share first crosses cpu.threshold_pct (profiler_start), drains it on every sample
 * (profiler_tick), and ends it with the burst (profiler_stop: the folded stacks, or nothing when
 * the run never became a burst). A profile also stops sampling at cpu.profile_max, keeping what
 * it has. At most PROFILER_ACTIVE_MAX cores are profiled at once.
 *
 * Each sample's time is kept too (at most profiler_times_max), for the sub-second view of the
 * burst (profiler_times).
 *
 * Each sample's kernel callchain is symbolized with /proc/kallsyms (host/kallsyms.h, loaded by
 * profiler_preload or on the first start) and counted under the task's name
 * (/proc/PID/task/TID/comm through the host roots; "[user]" when the core was in user mode).
 * Privileges: CAP_PERFMON (CAP_SYS_ADMIN before 5.8) to open the CPU-wide events, CAP_SYSLOG
 * or kernel.kptr_restrict=0 for real addresses; both only while profiler_open and
 * profiler_preload run (the agent drops them then: agent/privdrop.h). Each CPU's event is
 * opened disabled and stays open; a profile maps its ring and enables it (no capability), its
 * end disables and unmaps it. Cost: one fd and one kernel perf_event per CPU for the agent's
 * life (96 fds at 96 CPUs), the rings (68 KiB each, locked) only while profiles run. Without
 * them profiler_start() says why (profiler_strerror) and the burst is recorded without a
 * profile: a CPU offline at profiler_open has no event; one that went offline later has a dead
 * event, found by the first tick 100 ms into a profile (host/perf.h), closed, and reported as
 * -ESTALE from then on.
 *
 * perf reports task IDs in the agent's PID namespace: in a container without hostPID, tasks of
 * the host show as PID 0 and are named "[host task]" (their kernel frames are still right).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/hostfs.h"

#define PROFILER_ACTIVE_MAX 4

struct profiler_opts {
	unsigned hz;	   /* cpu.profile_hz */
	uint64_t max_ms;   /* cpu.profile_max */
	unsigned max_active; /* cores profiled at once; 0: PROFILER_ACTIVE_MAX */
};

struct profiler;

/*
 * profiler_new - a profiler for @ncpu CPUs reading task names and kallsyms through @hf (which
 * must outlive it). Opens nothing yet. Returns 0 or -ENOMEM / -EINVAL.
 */
int profiler_new(const struct hostfs *hf, unsigned ncpu, const struct profiler_opts *o,
		 struct profiler **ret);

/*
 * profiler_preload - load kallsyms now (the agent does this at start): parsing ~5 MiB of
 * /proc/kallsyms takes tens of ms of CPU, which must not stall the sampler at the start of a
 * burst, the one moment its samples matter most. Returns 0, or the error later
 * profiler_start() calls will return (remembered).
 */
int profiler_preload(struct profiler *p);

/*
 * profiler_open - open every CPU's event now, disabled (needs CAP_PERFMON now, never later).
 * From then on a CPU without an event stays without one: profiler_start returns why (the open's
 * error, e.g. -ENODEV for a CPU offline now). Without profiler_open, profiler_start opens the
 * CPU's event itself (and each start tries again). Returns the number of CPUs with an event, or
 * the first CPU's error when none has one.
 */
int profiler_open(struct profiler *p);

/*
 * profiler_set_opts - a reload's options: the open events sample at the new hz (no capability;
 * host/perf.h perf_cpu_set_hz), profiles started from now on use the new max_ms and max_active.
 * Returns 0, or -errno (-EINVAL: hz 0 or above the kernel's limit) with the old options kept.
 */
int profiler_set_opts(struct profiler *p, const struct profiler_opts *o);

/*
 * profiler_cpu_error - why @cpu has no usable event: 0 when it has one (or profiler_open never
 * ran), the open's -errno, -ESTALE when it died (its CPU went offline since), -ENODEV beyond
 * ncpu. For a burst's reason when its profile has no sample.
 */
int profiler_cpu_error(const struct profiler *p, unsigned cpu);

/* profiler_free - stop everything and close the events; safe on NULL. */
void profiler_free(struct profiler *p);

/*
 * profiler_start - start profiling @cpu at @now_ms. Returns 1 when it started, 0 when it was
 * already running, or -errno: -EBUSY (max_active cores already profiled), -EACCES /
 * -EPERM (no CAP_PERFMON when the event was opened; -EPERM also: the ring's locked memory over
 * the limits, host/perf.h), -ENOENT (kallsyms unreadable) or -EADDRNOTAVAIL (kallsyms addresses
 * hidden: kptr_restrict without CAP_SYSLOG), -ENODEV (no such CPU, or offline at
 * profiler_open), -ESTALE (its CPU went offline since profiler_open), -ENOSYS (no perf events).
 * A failure to load kallsyms is remembered: later starts fail at once with the same error.
 */
int profiler_start(struct profiler *p, unsigned cpu, uint64_t now_ms);

/* profiler_tick - drain every running profile; stop sampling those running for max_ms. */
void profiler_tick(struct profiler *p, uint64_t now_ms);

/* profiler_running - true while @cpu has a profile (sampling or stopped at the cap). */
bool profiler_running(const struct profiler *p, unsigned cpu);

/*
 * profiler_stop - end @cpu's profile. With @keep, its folded stacks (cpu/folded.h), within
 * @size bytes, go to @buf and their length is returned (0 when it got no sample); without, the
 * profile is thrown away and 0 returned. -ENOENT when @cpu had no profile; -ENOBUFS when @size is
 * too small for even a truncation line.
 */
ssize_t profiler_stop(struct profiler *p, unsigned cpu, bool keep, char *buf, size_t size);

/* profiler_samples - the samples @cpu's profile holds so far (0 without a profile). */
uint64_t profiler_samples(const struct profiler *p, unsigned cpu);

/*
 * profiler_peek - @cpu's profile so far (as drained by the last profiler_tick), folded into
 * @buf within @size bytes as profiler_stop() would, without stopping it: the length, 0 when it
 * has no sample yet, -ENOENT when @cpu has no profile, -ENOBUFS as profiler_stop().
 */
ssize_t profiler_peek(const struct profiler *p, unsigned cpu, char *buf, size_t size);

/*
 * profiler_drain - take the samples in @cpu's ring now (as profiler_tick does), so that a
 * profiler_peek() and profiler_times() before profiler_stop() see all of them.
 */
void profiler_drain(struct profiler *p, unsigned cpu);

/*
 * profiler_times - the time of each sample of @cpu's profile so far, as the ".times" text
 * (cpu/folded.h: fold_format_times) beside the folded text profiler_peek() just wrote with
 * @lines lines: the length, 0 when no time was kept, -ENOENT when @cpu has no profile,
 * -ENOBUFS when it does not fit in @size. Times are ms after profiler_start()'s @now_ms on the
 * monotonic clock; a kernel whose perf cannot use that clock (before 4.1) keeps none.
 */
ssize_t profiler_times(const struct profiler *p, unsigned cpu, size_t lines, char *buf,
		       size_t size);

/* profiler_times_max - the sample times a profile keeps under @o: enough for its cap. */
size_t profiler_times_max(const struct profiler_opts *o);

/* profiler_lost - samples the kernel dropped across all profiles so far. */
uint64_t profiler_lost(const struct profiler *p);

/*
 * profiler_strerror - a few words for a profiler_start() error, for the burst's "profile: -"
 * reason ("no CAP_PERFMON", "kallsyms hidden: needs CAP_SYSLOG or kptr_restrict=0", ...).
 */
const char *profiler_strerror(int err);

#endif
