/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie check NAME`: run one check and speak NPD's protocol: one ASCII line on stdout,
 * exit 0 OK / 1 problem / 2 Unknown. Nothing here forks, and nothing blocks without a bound.
 */
#include <errno.h>

#include "node/checks.h"
#include "cmd/cmd.h"
#include "base/log.h"
#include "base/npd.h"
#include "base/util.h"
#include "condition/conditions.h"
#include "condition/recover_store.h"

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
	c->run(ctx, &res);
	/* a condition clears only after recover_after of OK checks (condition/recover.h) */
	if (conditions_for_check(c->name)) {
		int r = recover_store_apply(ctx->cfg.paths.state, c->name,
					    conditions_recover_after(&ctx->cfg, c->name),
					    now_realtime_ms(), &res);

		if (r < 0)
			log_warning_errno(r,
					  "Failed to keep %s's recover_after state: %m, ignoring",
					  c->name);
	}
	log_debug("check %s: %s: %s", c->name, npd_status_name(res.status), res.msg);
	return npd_emit(&res, o->max_output, stdout);
}
