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

int cmd_check(struct cz_ctx *ctx, const struct cmd_opts *o)
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
