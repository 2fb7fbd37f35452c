/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie remediator [--once]`: the cluster's one remediator (remediator/remediator.h), a
 * Deployment of its own in the chart, so that node agents hold no remediation rights. Every
 * agent.check_interval one cycle; --once: one cycle, its summary line on stdout, then exit.
 * The leader identity is $POD_NAME, else the host name. SIGTERM/SIGINT: stop and hand the
 * leader Lease back.
 */
#include <errno.h>
#include <unistd.h>

#include "agent/signals.h"
#include "base/log.h"
#include "base/util.h"
#include "remediator/remediator.h"
#include "cmd/cmd.h"

const char cmd_remediator_usage[] =
	"remediator [--once]\n"
	"    The cluster's one remediator (the chart's Deployment): every agent.check_interval,\n"
	"    if it holds the leader Lease, cordon/drain/uncordon the nodes whose listed\n"
	"    conditions are True, under the budget; node agents then only report.\n"
	"    --once: one cycle, its summary on stdout, then exit.\n";

enum { OPT_ONCE = 256 };

/* The options of `remediator` (cmd_remediator), and the words after them. */
struct remediator_opts {
	bool once;		 /* --once: one cycle, its summary on stdout */
	int argc;
	char **argv;
};

static int identity(char *buf, size_t size)
{
	const char *pod = getenv("POD_NAME");

	if (pod && valid_name(pod, 253)) {
		snprintf(buf, size, "%s", pod);
		return 0;
	}
	if (gethostname(buf, size) < 0)
		return log_error_errno(errno, "Failed to get the host name: %m");
	buf[size - 1] = '\0';
	if (!valid_name(buf, 253))
		return log_error_errno(EINVAL, "No leader identity: set $POD_NAME");
	return 0;
}

static int remediator_main(struct cz_ctx *ctx, const struct remediator_opts *o)
{
	struct remediator *rm = NULL;
	char me[254], summary[4096];
	int r;

	if (o->argc > 0) {
		log_error("remediator: unexpected argument '%s'", o->argv[0]);
		return CZ_EXIT_ERROR;
	}
	if (ctx->cfg.remediation.mode == CZ_REMEDIATE_OFF) {
		log_error("remediator: remediation.mode is off: nothing to do");
		return CZ_EXIT_ERROR;
	}
	if (identity(me, sizeof(me)) < 0 || remediator_new(&ctx->cfg, me, &rm) < 0)
		return CZ_EXIT_ERROR;
	log_info("remediator %s: mode %s, leader Lease %s/cpuzombie-remediator", me,
		 config_mode_name(ctx->cfg.remediation.mode), remediator_namespace(rm));
	/* CZ_REMEDIATOR_POLL=1: a LIST of every node each cycle, kept to measure against */
	remediator_set_source(rm, o->once ? REMEDIATOR_LIST :
			      streq(getenv("CZ_REMEDIATOR_POLL") ?: "", "1") ? REMEDIATOR_POLL :
			      REMEDIATOR_WATCH);
	if (o->once) {
		r = remediator_cycle(rm, summary, sizeof(summary));
		printf("%s\n", summary);
		remediator_free(rm, false); /* held for its duration: cron runs stay one leader */
		return r < 0 ? CZ_EXIT_ERROR : CZ_EXIT_OK;
	}
	agent_signals_install();
	while (!agent_signals_stop()) {
		uint64_t next = now_monotonic_ms() + ctx->cfg.agent.check_interval_ms;

		r = remediator_cycle(rm, summary, sizeof(summary));
		if (r < 0)
			log_warning("%s", summary);
		else
			log_info("%s", summary);
		while (!agent_signals_stop() && now_monotonic_ms() < next) {
			if (agent_signals_take_reload())
				log_notice("remediator: SIGHUP: restart the remediator to apply a "
					   "changed configuration");
			if (remediator_wait(rm, 200))
				break;	/* a node changed: decide now */
		}
	}
	remediator_free(rm, true);
	log_info("remediator %s: stopped, leader Lease released", me);
	return CZ_EXIT_OK;
}

int cmd_remediator(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		CMD_COMMON_OPTIONS,
	};
	struct remediator_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) > 0) {
		switch (r) {
		case OPT_ONCE: o.once = true; break;
		}
	}
	r = cmd_args(env, r, argc, argv, cmd_remediator_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return remediator_main(&env->ctx, &o);
}
