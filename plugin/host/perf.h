/* SPDX-License-Identifier: MIT */
#ifndef CZ_PERF_H
#define CZ_PERF_H

/*
 * The burst profiler's seam to perf_event_open(2): one sampling event per CPU on the software
 * cpu-clock (it works in VMs without a hardware PMU), all tasks on that CPU, kernel callchains;
 * samples are read straight out of the mmap()ed ring buffer. Needs CAP_PERFMON (CAP_SYS_ADMIN
 * before Linux 5.8) or kernel.perf_event_paranoid <= 0 for a CPU-wide event.
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
 * perf_cpu_open - start sampling CPU @cpu at @hz samples per second into a ring of @pages data
 * pages (a power of two). Returns 0 and *@ret (close with perf_cpu_close), or -errno: -EACCES or
 * -EPERM without the privilege, -ENODEV / -EINVAL for an offline or absent CPU, -ENOENT / -ENOSYS
 * where the kernel has no perf events.
 */
int perf_cpu_open(int cpu, unsigned hz, unsigned pages, struct perf_cpu **ret);

/* A consumer of samples: called once per sample, in ring order. */
typedef void (*perf_sample_fn)(const struct perf_sample *s, void *userdata);

/*
 * perf_cpu_drain - pass every sample written since the last drain to @fn, then free that part of
 * the ring. Records that wrap the ring's end are copied once; others are parsed in place.
 * Returns the number of samples, or -EBADMSG when the ring is inconsistent (it is then reset).
 */
int perf_cpu_drain(struct perf_cpu *p, perf_sample_fn fn, void *userdata);

/* perf_cpu_monotonic - true when @p's sample times are CLOCK_MONOTONIC (false on NULL). */
bool perf_cpu_monotonic(const struct perf_cpu *p);

/* perf_cpu_lost - samples the kernel reported lost (PERF_RECORD_LOST) so far. */
uint64_t perf_cpu_lost(const struct perf_cpu *p);

/* perf_cpu_close - stop and unmap; safe on NULL. */
void perf_cpu_close(struct perf_cpu *p);

#endif
