/* SPDX-License-Identifier: MIT */
#ifndef CZ_AGENT_SIGNALS_H
#define CZ_AGENT_SIGNALS_H

/*
 * The agent's signals, as daemons have them:
 *   SIGTERM, SIGINT   stop cleanly (bursts in progress recorded, heartbeat "stopped 1").
 *   SIGHUP            re-read the configuration file (and apply the command-line options again);
 *                     a file that does not load is logged and the running configuration kept.
 *   SIGPIPE           ignored: a closed stderr or stdout (`agent -v 2>&1 | head -1`) is a write
 *                     error, handled where it happens, never the end of the sampler.
 *   SIGUSR1, SIGUSR2  ignored (no meaning yet; their default action would kill the agent).
 * The handlers only set flags; the loop reads them between samples.
 */

#include <stdbool.h>

#include "agent/agent.h"
#include "check/cz.h"

/* agent_signals_install - the dispositions above; clears any earlier request. */
void agent_signals_install(void);

/* agent_signals_stop - the signal that asked the agent to stop, or 0. */
int agent_signals_stop(void);

/* agent_signals_take_reload - true once for each SIGHUP batch since the last call. */
bool agent_signals_take_reload(void);

/*
 * agent_reload_prepare - load the configuration again (the file and the command line's overrides
 * of @ao, config_load_effective) into *@next and open its host roots into *@hf, without touching
 * the running context (its sampler and periodic thread are still using it). On failure logs what
 * was wrong and that the old configuration stays, and
 * returns -errno; on success the caller stops its work and calls agent_reload_apply().
 */
int agent_reload_prepare(const struct agent_opts *ao, struct cz_config *next, struct hostfs *hf);

/* agent_reload_apply - make *@next and *@hf the context's (closing the old roots); logs it. */
void agent_reload_apply(struct cz_ctx *ctx, const struct agent_opts *ao,
			const struct cz_config *next, struct hostfs *hf);

#endif
