/* SPDX-License-Identifier: MIT */
#ifndef CZ_CMD_H
#define CZ_CMD_H

/*
 * The subcommands, one file each (cmd_X.c): parse what follows the subcommand word in
 * o->argc/argv (struct cmd_opts), call down into the layers, print. main.c dispatches to them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/cz.h"

#define CZ_GROUP_BY_MAX 6	/* fleet --group-by labels */
/* Where the image ships the static check binary that install-plugin hands to NPD's container. */
#define CZ_PLUGIN_BINARY "/opt/cpuzombie/bin/cpuzombie"

/* The options of the subcommands, as main.c parsed them (the checks never see these). */
struct cmd_opts {
	const struct cz_overrides *ov; /* the command line's overrides of the config file */
	const char *config_path; /* the file loaded, or NULL for the embedded defaults */
	size_t max_output;	 /* --max-output, bytes of the check line */
	bool once;		 /* agent/remediator --once */
	bool json;		 /* report/explain/fleet --json */
	const char *svg_path;	 /* report --svg FILE */
	const char *html_path;	 /* report --html FILE */
	const char *out_path;	 /* flame --out FILE, or NULL: stdout */
	const char *since, *until; /* report --since/--until TIME (base/timespec.h), or NULL */
	const char *selector;	 /* fleet -l/--selector: a label selector */
	const char *group_by[CZ_GROUP_BY_MAX]; /* fleet --group-by LABEL (repeatable) */
	size_t n_group_by;
	bool nodes;		 /* fleet --nodes: the nodes behind each line */
	bool watch;		 /* fleet --watch: live, from a LIST and a WATCH */
	uint64_t chunk_size;	 /* fleet --chunk-size: nodes per page (0 = 500) */
	const char *from;	 /* install-plugin --from FILE, or NULL: CZ_PLUGIN_BINARY */
	bool keep_cordons;	 /* cleanup --keep-cordons: our cordons stay, with their marker */
	int argc;		 /* positional arguments after the subcommand words */
	char **argv;
};

/* A subcommand: returns the process exit code (CZ_EXIT_*, or NPD's for `check`). */
typedef int (*cmd_fn)(struct cz_ctx *ctx, const struct cmd_opts *o);

/* `check NAME`: one NPD line on stdout, exit 0 OK, 1 problem, 2 unknown. */
int cmd_check(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `config check`: "configuration OK" or FILE:LINE errors, exit 2. */
int cmd_config(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `ena-diff BEFORE AFTER`: the ENA verdict of two saved `ethtool -S` texts. */
int cmd_ena_diff(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `explain FILE|- [--json]`: kernel log text into ENA resets, lockups and a timeline. */
int cmd_explain(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `agent [--once]`: the sampler loop and periodic work (full binary only). */
int cmd_agent(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `remediator [--once]`: the cluster's one remediator, leader elected (full binary only). */
int cmd_remediator(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `report [--json|--svg FILE]`: everything this node says, for a human. */
int cmd_report(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `fleet` (also `kubectl cpuzombie`): where the chain concentrates across the cluster (full
 * binary only). */
int cmd_fleet(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `flame BURST-ID [--out FILE]`: one burst's flame graph as an interactive SVG. */
int cmd_flame(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `top [--once]`: the node live, every second, from the run dir (or sampling inline). */
int cmd_top(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `cleanup`: remove our conditions, cpuzombie.io/ annotations and taints from all nodes, and
 * our Leases (the chart's uninstall hook; full binary only). */
int cmd_cleanup(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `install-plugin DEST_DIR [--from FILE]`: copy the static check binary to DEST_DIR/bin/cpuzombie
 * atomically, never through a symlink (the chart's init container; full binary only). */
int cmd_install_plugin(struct cz_ctx *ctx, const struct cmd_opts *o);
/* `own-state UID DIR`: chown DIR (itself, never through a symlink) to UID:UID, 1..65534 (the
 * chart's state-owner init container, for node containers that run as non-root; full binary
 * only). */
int cmd_own_state(struct cz_ctx *ctx, const struct cmd_opts *o);

#endif
