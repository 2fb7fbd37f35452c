/* SPDX-License-Identifier: MIT */
#ifndef CZ_CHECKS_H
#define CZ_CHECKS_H

/*
 * The table of checks `cpuzombie check NAME` runs, which the report and the agent's conditions
 * walk too. It lives above the domains (each check is its domain's edge: cpu/check_cpu.h,
 * memcg/check_memcg.h, ena/check_ena.h) so that no domain names another.
 */

#include "check/cz.h"

/*
 * A check: reads through ctx->hf, writes its verdict into @res and returns res->status. Leaves
 * what it read where @seen points (NULL, or a NULL member: nowhere; check/cz.h). Never prints
 * to stdout (main prints the line); may print diagnostics to stderr when ctx->verbose. Run
 * through check_run() (node/check_run.h), which adds the condition's recover_after.
 */
typedef int (*check_fn)(struct cz_ctx *ctx, const struct check_seen *seen,
			struct npd_result *res);

struct check_def {
	const char *name;
	check_fn run;
	const char *summary;
};

/* checks_find - the check called @name, or NULL. */
const struct check_def *checks_find(const char *name);

/* checks_all - the table of every check, terminated by an entry whose name is NULL. */
const struct check_def *checks_all(void);

#endif
