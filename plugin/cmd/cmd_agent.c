/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie agent [--once]`: the long-running sampler (agent.h). Positional arguments are an
 * error; everything else comes from the config and the common options.
 */
#include "agent/agent.h"
#include "cmd/cmd.h"
#include "base/log.h"

const char cmd_agent_usage[] =
	"agent [--once]\n"
	"    Sample per-core CPU every cpu.interval into --run-dir (bursts, history, heartbeat)\n"
	"    until SIGTERM; --once: one cycle of cpu.inline_window, then exit.\n";

enum { OPT_ONCE = 256 };

int cmd_agent(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		CMD_COMMON_OPTIONS,
	};
	bool once = false;
	char **args;
	int r, n;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) == OPT_ONCE)
		once = true;
	r = cmd_args(env, r, argc, argv, cmd_agent_usage, &n, &args);
	if (r != CMD_RUN)
		return r;
	if (n > 0) {
		log_error("agent: unexpected argument '%s'", args[0]);
		return CZ_EXIT_ERROR;
	}
	const struct agent_opts ao = { .once = once, .ov = &env->ov,
				       .config_path = env->config_path };

	return agent_run(&env->ctx, &ao);
}
