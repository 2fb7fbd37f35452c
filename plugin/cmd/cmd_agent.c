/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie agent [--once]`: the long-running sampler (agent.h). Positional arguments are an
 * error; everything else comes from the config and the common options.
 */
#include "agent/agent.h"
#include "cmd/cmd.h"
#include "base/log.h"

int cmd_agent(struct cz_ctx *ctx, const struct cmd_opts *o)
{
	if (o->argc > 0) {
		log_error("agent: unexpected argument '%s'", o->argv[0]);
		return CZ_EXIT_ERROR;
	}
	const struct agent_opts ao = { .once = o->once,
				       .ov = o->ov,
				       .config_path = o->config_path };

	return agent_run(ctx, &ao);
}
