/* SPDX-License-Identifier: MIT */
#ifndef CZ_CPUSTAT_H
#define CZ_CPUSTAT_H

/*
 * /proc/stat per-CPU rows -> per-core share of one metric between two readings.
 *
 * Row format (proc(5), fs/proc/stat.c): "cpuN user nice system idle iowait irq softirq steal
 * guest guest_nice", in USER_HZ ticks. Kernels before 2.6.11 stop after iowait/softirq, 2.6.24
 * added guest and 2.6.33 guest_nice; the kernel documents that fields may be appended, so a
 * row needs at least the first four and extra trailing fields are ignored. Offline CPUs have no
 * row at all (a hot-unplugged cpu5 leaves a gap between cpu4 and cpu6).
 *
 * Shares are computed the way sysstat's mpstat does (get_per_cpu_interval()): the interval is
 * the sum of user+nice+system+idle+iowait+irq+softirq+steal (guest and guest_nice are already
 * counted in user and nice), so cpuzombie's %sys compares like with like with `mpstat -P ALL`.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

/* Indices of the fields of a cpu row. */
enum cpustat_field {
	CPUSTAT_USER,
	CPUSTAT_NICE,
	CPUSTAT_SYSTEM,
	CPUSTAT_IDLE,
	CPUSTAT_IOWAIT,
	CPUSTAT_IRQ,
	CPUSTAT_SOFTIRQ,
	CPUSTAT_STEAL,
	CPUSTAT_GUEST,
	CPUSTAT_GUEST_NICE,
	_CPUSTAT_FIELDS,
};

/* Highest CPU number accepted (the kernel's NR_CPUS maximum is 8192). */
#define CPUSTAT_MAX_CPUS 8192

/* Bytes of /proc/stat to expect: ~150 bytes per CPU row plus the intr line (grows with IRQs). */
#define CPUSTAT_BUF_SIZE(ncpu) ((size_t)(ncpu) * 160 + 256 * 1024)

struct cpustat_core {
	bool present;	      /* a row for this CPU was in the reading */
	uint64_t f[_CPUSTAT_FIELDS]; /* missing trailing fields of old kernels are 0 */
};

/*
 * cpustat_parse - pure: parse the "cpuN" rows of a /proc/stat text @buf into @cores, indexed by
 * CPU number, for at most @max CPUs. Slots without a row are marked !present (offline CPUs).
 * The aggregate "cpu" row and every other line are ignored.
 * Returns the number of slots used (highest CPU number + 1), or -EINVAL when a cpu row is
 * malformed (short row, non-number, duplicate CPU, no cpu row at all), -E2BIG when a CPU number
 * is >= @max. @cores is untouched on failure.
 */
int cpustat_parse(const char *buf, struct cpustat_core *cores, size_t max);

/*
 * cpustat_possible_parse - pure: the CPU slots a host can have from the text of
 * /sys/devices/system/cpu/possible ("0-3", "0,2-5"): the highest CPU number + 1, at most
 * CPUSTAT_MAX_CPUS. Returns 0 when @text names no CPU.
 */
unsigned cpustat_possible_parse(const char *text);

/*
 * cpustat_share - pure: the share (0..100 percent) of metric @m on one CPU between readings
 * @prev and @cur. Writes *@ret_pct and returns 0; returns -ENODATA when either reading lacks
 * the CPU (offline, hot-plugged since), -ERANGE when the total went backwards (a counter reset:
 * no share can be computed for this interval) or did not move. Fields that individually go
 * backwards (iowait on some kernels) count as 0, as in mpstat.
 */
int cpustat_share(const struct cpustat_core *prev, const struct cpustat_core *cur,
		  enum cz_cpu_metric m, double *ret_pct);

/*
 * cpustat_metric_short - a short label for messages: "sys", "sys+irq", "busy".
 */
const char *cpustat_metric_short(enum cz_cpu_metric m);

#endif
