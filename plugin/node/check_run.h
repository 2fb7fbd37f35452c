/* SPDX-License-Identifier: MIT */
#ifndef CZ_CHECK_RUN_H
#define CZ_CHECK_RUN_H

/*
 * One way to run a check and turn its verdict into its condition's (check_run.c): `check`
 * (NPD's line), the agent's cycle and the agent's trigger all call check_run(), so the three
 * say the same for the same node: the check's own word, then its condition's recover_after
 * (condition/recover_store.h) when it has a condition.
 */

#include <stdbool.h>
#include <stddef.h>

#include "check/cz.h"
#include "cpu/check_cpu.h"
#include "ena/check_ena.h"
#include "memcg/check_memcg.h"
#include "node/checks.h"
#include "node/model.h"

/*
 * What the checks of one agent cycle read, for that cycle's node model (node.h's node_take_*):
 * one struct the cycle owns and passes to check_run_conditions(), then to the model. Zero it
 * once; check_run_seen_begin() before each cycle, check_run_seen_free() after it.
 */
struct check_run_seen {
	struct memcg_seen memcg; /* check memcg's reading (node_take_memcg) */
	struct ena_seen ena;	 /* check ena's and ena-allowance's state (node_take_ena) */
	struct cpu_seen cpu;	 /* the kernel-event log check cpu read (node_take_kevents) */
	bool recovery_on;	 /* keep @recovery (the agent's metrics are on) */
	/* each condition's state as the run stepped it (node_take_recovery) */
	struct report_recovery recovery;
};

/* check_run_seen_begin - empty @s for a new cycle; @recovery_on: keep the conditions' states. */
void check_run_seen_begin(struct check_run_seen *s, bool recovery_on);

/* check_run_seen_free - free what @s still holds (what the model did not take) and empty it. */
void check_run_seen_free(struct check_run_seen *s);

/*
 * check_run - run check @c into @res, then, when it maps to a node condition, step that
 * condition's recover_after state in the state dir: a condition that was True stays True (@res
 * becomes NPD_PROBLEM with the recovering message) until the check has said OK for
 * recover_after. When that state cannot be used (no state dir, -ENOENT; unreadable; a full
 * disk) it is logged once as a warning and @res stays as the check said, whoever runs it. What
 * the check read goes to @seen (NULL: nowhere). Returns res->status.
 */
int check_run(struct cz_ctx *ctx, const struct check_def *c, struct check_run_seen *seen,
	      struct npd_result *res);

/*
 * check_run_conditions - check_run() for every check of the table that maps to a node condition
 * (memcg, cpu, ena), in table order, at most @max: names into @names, verdicts into @res.
 * Returns how many ran.
 */
size_t check_run_conditions(struct cz_ctx *ctx, struct check_run_seen *seen,
			    const char *names[], struct npd_result res[], size_t max);

#endif
