/* SPDX-License-Identifier: MIT */
#ifndef CZ_CMD_H
#define CZ_CMD_H

/*
 * The subcommands, one file each (cmd_X.c): parse what follows the subcommand word in
 * ctx->argc/argv, call down into the layers, print. main.c dispatches to them.
 */

#include "check/cz.h"

/* A subcommand: returns the process exit code (CZ_EXIT_*, or NPD's for `check`). */
typedef int (*cmd_fn)(struct cz_ctx *ctx);

/* `check NAME`: one NPD line on stdout, exit 0 OK, 1 problem, 2 unknown. */
int cmd_check(struct cz_ctx *ctx);
/* `config check`: "configuration OK" or FILE:LINE errors, exit 2. */
int cmd_config(struct cz_ctx *ctx);
/* `ena-diff BEFORE AFTER`: the ENA verdict of two saved `ethtool -S` texts. */
int cmd_ena_diff(struct cz_ctx *ctx);
/* `explain FILE|- [--json]`: kernel log text into ENA resets, lockups and a timeline. */
int cmd_explain(struct cz_ctx *ctx);
/* `agent [--once]`: the sampler loop and periodic work (full binary only). */
int cmd_agent(struct cz_ctx *ctx);
/* `remediator [--once]`: the cluster's one remediator, leader elected (full binary only). */
int cmd_remediator(struct cz_ctx *ctx);
/* `report [--json|--svg FILE]`: everything this node says, for a human. */
int cmd_report(struct cz_ctx *ctx);
/* `fleet` (also `kubectl cpuzombie`): where the chain concentrates across the cluster (full
 * binary only). */
int cmd_fleet(struct cz_ctx *ctx);

#endif
