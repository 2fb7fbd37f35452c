/* SPDX-License-Identifier: MIT */
#ifndef CZ_AGENT_H
#define CZ_AGENT_H

/*
 * `cpuzombie agent`: drives the sampler (cpu/check_cpu.h, the live edge of the pure
 * cpu/sampler.h, which `check cpu` also drives for its inline window) every cpu.interval.
 *
 * The agent loop adds the run-dir files (history.h): the per-core ring, the burst log and the
 * heartbeat; sd_notify READY/WATCHDOG under systemd; a clean exit on SIGTERM/SIGINT; and
 * the work every agent.check_interval (agent_periodic.h), in a thread of its own.
 */

#include <stdbool.h>

#include "base/config.h"
#include "check/cz.h"
#include "cpu/history.h"

/* What the agent knows beyond the checks' context: how it was started. */
struct agent_opts {
	bool once;			/* --once: one check cycle */
	const struct cz_overrides *ov;	/* the command line's overrides, applied again on SIGHUP */
	const char *config_path;	/* the file loaded, or NULL for the embedded defaults */
};

/*
 * agent_run - the loop until SIGTERM/SIGINT, or with @ao->once for cpu.inline_window (one
 * check cycle). Logs its own errors to stderr. Returns a CZ_EXIT_* code.
 */
int agent_run(struct cz_ctx *ctx, const struct agent_opts *ao);

#endif
