/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie agent [--once]`: the long-running sampler (agent.h). Positional arguments are an
 * error; everything else comes from the config and the common options.
 */
#include "agent/agent.h"
#include "cmd/cmd.h"
#include "base/log.h"

int cmd_agent(struct cz_ctx *ctx)
{
	if (ctx->argc > 0) {
		log_error("agent: unexpected argument '%s'", ctx->argv[0]);
		return CZ_EXIT_ERROR;
	}
	return agent_run(ctx);
}
