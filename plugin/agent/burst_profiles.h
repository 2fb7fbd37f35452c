/* SPDX-License-Identifier: MIT */
#ifndef CZ_BURST_PROFILES_H
#define CZ_BURST_PROFILES_H

/*
 * The agent's glue between the live sampler (cpu/cpu_sampler.h) and the profiler
 * (agent/profiler.h): a profile starts on a core when a run of hot samples starts there, ends
 * with the run, and is kept only when the run became a burst. A kept profile is written to the
 * run dir as "cpu-profile-<cpu>-<start_ms>.folded" (cpu/history.h), at most cpu.profile_bytes,
 * and the burst's log entry names it with its hottest kernel function; without one the entry
 * says why (no privilege, too many cores at once, no samples). The newest HISTORY_PROFILES_MAX
 * files are kept.
 */

#include <stddef.h>

#include "agent/profiler.h"
#include "cpu/cpu_sampler.h"
#include "check/cz.h"
#include "cpu/history.h"

struct burst_profiles;

/*
 * burst_profiles_new - for @ncpu CPUs under @ctx's config (cpu.profile*) and run dir; *@ret is
 * NULL when cpu.profile is off. The profiler is *@shared, the caller's for the process's life
 * (profiler_free): when NULL it is made now, with one disabled perf event per CPU opened and
 * kallsyms loaded (this needs CAP_PERFMON and CAP_SYSLOG, which the agent drops right after
 * its start: agent/privdrop.h); when set (a SIGHUP reload) it is kept, at the new
 * cpu.profile_hz. Logs which CPUs got no event, and why. Returns 0 or -ENOMEM.
 */
int burst_profiles_new(const struct cz_ctx *ctx, unsigned ncpu, struct profiler **shared,
		       struct burst_profiles **ret);

/* burst_profiles_free - stop every profile (the shared profiler stays); safe on NULL. */
void burst_profiles_free(struct burst_profiles *bp);

/*
 * burst_profiles_step - after each sampler step: start profiles on cores whose run just started,
 * drain the running ones, and for the @n bursts that just ended (@ev) write their profile and
 * fill profile/hot/hot_pct or why; drop the profiles of runs that ended short. Safe on NULL.
 */
void burst_profiles_step(struct burst_profiles *bp, const struct cpu_sampler *s,
			 struct burst_event *ev, size_t n);

/*
 * burst_profiles_peek - for @ev, a burst still going on (cpu and start_ms set): its profile so
 * far, written to the file its end will write (rewritten only when samples came in), and its
 * hottest kernel function into @ev's profile/hot/hot_pct; or why it has none. So a reader
 * mid-burst sees the same links as after it. Safe on NULL.
 */
void burst_profiles_peek(struct burst_profiles *bp, struct burst_event *ev);

#endif
