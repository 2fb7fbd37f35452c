/* SPDX-License-Identifier: MIT */
/* Run a check and turn its verdict into its condition's (check_run.h). */
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "condition/conditions.h"
#include "condition/recover_store.h"
#include "node/check_run.h"

void check_run_seen_begin(struct check_run_seen *s, bool recovery_on)
{
	check_run_seen_free(s);
	s->recovery_on = recovery_on;
}

void check_run_seen_free(struct check_run_seen *s)
{
	ena_seen_free(&s->ena);
	cpu_seen_free(&s->cpu);
	s->memcg = (struct memcg_seen){ 0 };
	s->recovery_on = false;
	s->recovery.n = 0;
}

/* The condition's state as @c's run stepped it, for the cycle's metrics (node_take_recovery). */
static void keep_recovery(const struct cz_ctx *ctx, const struct cond_def *cond, const char *check,
			  struct report_recovery *rec)
{
	struct report_recover *c;

	if (rec->n >= REPORT_RECOVER_MAX)
		return;
	c = &rec->c[rec->n++];
	*c = (struct report_recover){ check, cond->type, 0, { 0 } };
	c->rc = recover_store_read(ctx->cfg.paths.state, check, &c->st);
}

int check_run(struct cz_ctx *ctx, const struct check_def *c, struct check_run_seen *seen,
	      struct npd_result *res)
{
	const struct cond_def *cond = conditions_for_check(c->name);
	struct check_seen cs = { 0 };
	int r;

	if (seen)
		cs = (struct check_seen){ &seen->memcg, &seen->ena, &seen->cpu };
	*res = (struct npd_result){ .status = NPD_UNKNOWN };
	c->run(ctx, seen ? &cs : NULL, res);
	if (!cond)
		return res->status;
	r = recover_store_apply(ctx->cfg.paths.state, c->name,
				conditions_recover_after(&ctx->cfg, c->name), now_realtime_ms(),
				res);
	if (r < 0)
		log_warning_errno(r,
				  "Failed to keep %s's recover_after state in '%s': %m, ignoring",
				  c->name, ctx->cfg.paths.state);
	if (seen && seen->recovery_on)
		keep_recovery(ctx, cond, c->name, &seen->recovery);
	return res->status;
}

size_t check_run_conditions(struct cz_ctx *ctx, struct check_run_seen *seen,
			    const char *names[], struct npd_result res[], size_t max)
{
	size_t n = 0;

	for (const struct check_def *c = checks_all(); c->name && n < max; c++) {
		if (!conditions_for_check(c->name))
			continue;
		check_run(ctx, c, seen, &res[n]);
		names[n++] = c->name;
	}
	return n;
}
