/* SPDX-License-Identifier: MIT */
#ifndef CZ_PERF_H
#define CZ_PERF_H

/*
 * The burst profiler's seam to perf_event_open(2): one sampling event per CPU on the software
 * cpu-clock (it works in VMs without a hardware PMU), all tasks on that CPU, kernel callchains;
 * samples are read straight out of the mmap()ed ring buffer. Opening a CPU-wide event needs
 * CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8) or kernel.perf_event_paranoid <= 0; using it
 * afterwards needs none (measured on 6.18 after every capability was dropped: mmap, the
 * ENABLE/DISABLE/RESET/PERIOD ioctls, read). So the agent opens one disabled event per CPU at
 * start (perf_cpu_open), maps and enables it at a burst's start (perf_cpu_start), unmaps and
 * disables it at its end (perf_cpu_stop).
 *
 * CPU hotplug: a CPU offline at open has no event (-ENODEV). When a CPU goes offline the
 * kernel takes its events out of the CPU's context for good (kernel/events/core.c
 * __perf_event_exit_context): the fd stays, enabling it succeeds, but it never runs again.
 * perf_cpu_times() tells: its time enabled grows, its time running does not.
 *
 * perf_sample_parse() is the pure part: one PERF_RECORD_SAMPLE of this event's layout
 * (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN, see
 * perf_event_open(2) "MMAP layout") into a struct; it takes any bytes (fuzzed). Sample times are
 * CLOCK_MONOTONIC (use_clockid), or perf's own clock on a kernel without it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kernel's default kernel.perf_event_max_stack is 127 frames. */
#define PERF_STACK_MAX 127

struct perf_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time_ns;    /* when it was taken (perf_cpu_monotonic: on which clock) */
	bool user;	     /* the CPU was in user mode (the callchain has a user context) */
	size_t nips;	     /* kernel frames, leaf first, context markers removed */
	uint64_t ips[PERF_STACK_MAX];
};

/*
 * perf_sample_parse - pure: the body of one PERF_RECORD_SAMPLE record (@rec, @len bytes, the
 * 8-byte perf_event_header included) into *@ret. Frames beyond PERF_STACK_MAX are dropped.
 * Returns 0, or -EINVAL when it is not a sample record or is shorter than it says.
 */
int perf_sample_parse(const void *rec, size_t len, struct perf_sample *ret);

struct perf_cpu;

/*
 * perf_cpu_open - a sampling event on CPU @cpu at @hz samples per second, opened disabled, with
 * a ring of @pages data pages (a power of two) to map at perf_cpu_start. Nothing is mapped or
 * sampled yet. Returns 0 and *@ret (close with perf_cpu_close), or -errno: -EACCES or -EPERM
 * without the privilege, -ENODEV / -EINVAL for an offline or absent CPU, -ENOENT / -ENOSYS
 * where the kernel has no perf events.
 */
int perf_cpu_open(int cpu, unsigned hz, unsigned pages, struct perf_cpu **ret);

/*
 * perf_cpu_start - map @p's ring and enable it (counts and ring start empty). No capability;
 * the ring's pages are locked memory, charged to the user (kernel.perf_event_mlock_kb per
 * online CPU, then RLIMIT_MEMLOCK). Returns 0, -EALREADY when started, -EPERM past those
 * limits, -ENOMEM.
 */
int perf_cpu_start(struct perf_cpu *p);

/* perf_cpu_stop - disable @p and unmap its ring (its samples not drained are lost); the event
 * stays open for the next perf_cpu_start. Safe on NULL or a stopped event. */
void perf_cpu_stop(struct perf_cpu *p);

/* perf_cpu_started - true between perf_cpu_start and perf_cpu_stop (false on NULL). */
bool perf_cpu_started(const struct perf_cpu *p);

/*
 * perf_cpu_set_hz - sample at @hz from now on (PERF_EVENT_IOC_PERIOD with the period in ns:
 * the kernel made the cpu-clock event's frequency a fixed period when it was opened). No
 * capability. Returns 0, -EINVAL (0 Hz, or more than kernel.perf_event_max_sample_rate).
 */
int perf_cpu_set_hz(struct perf_cpu *p, unsigned hz);

/*
 * perf_cpu_times - the ns @p has been enabled and running on its CPU (read(2) with
 * PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING). Enabled with nothing running: the CPU went
 * offline since the event was opened (above). Returns 0, or -errno from read.
 */
int perf_cpu_times(const struct perf_cpu *p, uint64_t *ret_enabled, uint64_t *ret_running);

/* A consumer of samples: called once per sample, in ring order. */
typedef void (*perf_sample_fn)(const struct perf_sample *s, void *userdata);

/*
 * perf_cpu_drain - pass every sample written since the last drain to @fn, then free that part of
 * the ring. Records that wrap the ring's end are copied once; others are parsed in place.
 * Returns the number of samples (0 when not started), or -EBADMSG when the ring is inconsistent
 * (it is then reset).
 */
int perf_cpu_drain(struct perf_cpu *p, perf_sample_fn fn, void *userdata);

/* perf_cpu_monotonic - true when @p's sample times are CLOCK_MONOTONIC (false on NULL). */
bool perf_cpu_monotonic(const struct perf_cpu *p);

/* perf_cpu_lost - samples the kernel reported lost (PERF_RECORD_LOST) so far. */
uint64_t perf_cpu_lost(const struct perf_cpu *p);

/* perf_cpu_close - stop, unmap and close; safe on NULL. */
void perf_cpu_close(struct perf_cpu *p);

#endif
