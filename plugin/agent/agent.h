/* SPDX-License-Identifier: MIT */
#ifndef CZ_AGENT_H
#define CZ_AGENT_H

/*
 * The sampler and `cpuzombie agent`.
 *
 * The sampler keeps /proc/stat open and re-reads it (hostfs_pread_all) every cpu.interval,
 * turns two readings into each core's share of cpu.metric (cpustat.h), feeds one burst tracker
 * per core (burst.h), rescans threads while a core is hot (tasks.h) and, when a burst ends,
 * completes it with the NIC IRQs that core serves (irq.h). `check cpu` uses the same sampler
 * for its inline window when no agent is running.
 *
 * The agent loop adds the run-dir files (history.h): the per-core ring, the burst log and the
 * heartbeat; sd_notify READY/WATCHDOG under systemd; a clean exit on SIGTERM/SIGINT; and
 * the work every agent.check_interval (agent_periodic.h), in a thread of its own.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checks/cz.h"
#include "checks/history.h"

struct sampler;

/*
 * sampler_new - open /proc/stat under ctx's host root and take the first reading. With
 * @attribute, threads are scanned while a core is hot. Returns 0 and *@ret (free with
 * sampler_free) or -errno (-ENOENT no /proc/stat, -EINVAL unparsable).
 */
int sampler_new(const struct cz_ctx *ctx, bool attribute, struct sampler **ret);

/* sampler_free - close and free; safe on NULL. */
void sampler_free(struct sampler *s);

/*
 * sampler_step - take one reading now. Bursts that ended with it are written to @ret (at most
 * @max; CLOCK_REALTIME times, tasks and IRQs filled in) and counted in the return value;
 * -errno when /proc/stat could not be read or parsed (the interval is skipped, the series goes
 * on at the next good reading).
 */
int sampler_step(struct sampler *s, struct burst_event *ret, size_t max);

/* sampler_finish - end every run; bursts that qualify go to @ret as in sampler_step. */
int sampler_finish(struct sampler *s, struct burst_event *ret, size_t max);

/*
 * sampler_active - runs in progress that already qualify as bursts (cpu, times, peak, mean),
 * at most @max. Returns the count.
 */
size_t sampler_active(const struct sampler *s, struct burst_event *ret, size_t max);

/* sampler_ncpu - the number of CPU slots; sampler_shares - the last sample, one byte per CPU
 * (0..100, HISTORY_NO_SAMPLE), valid until the next step. */
unsigned sampler_ncpu(const struct sampler *s);
const uint8_t *sampler_shares(const struct sampler *s);


/*
 * agent_run - the loop until SIGTERM/SIGINT, or with ctx->once for cpu.inline_window (one
 * check cycle). Logs its own errors to stderr. Returns a CZ_EXIT_* code.
 */
int agent_run(struct cz_ctx *ctx);

#endif
