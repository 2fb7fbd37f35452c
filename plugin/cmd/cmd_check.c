/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie check NAME`: run one check and speak NPD's protocol: one ASCII line on stdout,
 * exit 0 OK / 1 problem / 2 Unknown. Nothing here forks, and nothing blocks without a bound.
 */
#include <errno.h>

#include "node/check_run.h"
#include "node/checks.h"
#include "cmd/cmd.h"
#include "base/log.h"
#include "base/npd.h"

const char cmd_check_usage[] =
	"check memcg|cpu|ena|ena-allowance\n"
	"    Run one NPD custom-plugin check: one line on stdout; exit 0 OK, 1 problem,\n"
	"    2 unknown (we could not tell).\n";

struct check_opts {
	size_t max_output; /* --max-output, bytes of the line */
	int argc;	   /* the words after the options: the check's name */
	char **argv;
};

static int check_main(struct cz_ctx *ctx, const struct check_opts *o)
{
	struct npd_result res = { .status = NPD_UNKNOWN };
	const struct check_def *c;

	if (o->argc != 1) {
		npd_set(&res, NPD_UNKNOWN, "usage: cpuzombie check <memcg|cpu|ena|ena-allowance>");
		return npd_emit(&res, o->max_output, stdout);
	}
	c = checks_find(o->argv[0]);
	if (!c) {
		npd_set(&res, NPD_UNKNOWN, "unknown check '%.32s'", o->argv[0]);
		return npd_emit(&res, o->max_output, stdout);
	}
	/* as the agent runs it: a condition clears only after recover_after of OK checks */
	check_run(ctx, c, NULL, &res);
	log_debug("check %s: %s: %s", c->name, npd_status_name(res.status), res.msg);
	return npd_emit(&res, o->max_output, stdout);
}

int cmd_check(int argc, char **argv, struct cmd_env *env)
{
	struct check_opts o = { 0 };
	int r;

	env->npd_line = true; /* NPD shows only stdout: every failure is one line there too */
	r = cmd_args_common(env, argc, argv, cmd_check_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	o.max_output = env->max_output ? (size_t)env->max_output : NPD_DEFAULT_MAX_OUTPUT;
	return check_main(&env->ctx, &o);
}
