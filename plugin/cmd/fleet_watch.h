/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLEET_WATCH_H
#define CZ_FLEET_WATCH_H

/*
 * `cpuzombie fleet --watch`: the fleet view live. The nodes (of -l SELECTOR) and cpuzombie's
 * Leases come from two caches (remediator/informer.h: one LIST each, then WATCHes); the summary
 * is made again from the caches and redrawn after a change (at most once a second) and at a
 * new terminal size. On a terminal, as `top`: the alternate screen, the summary cut to its width
 * and height, q quits, SIGINT/SIGTERM restore the terminal. Not a terminal: the whole summary
 * again after each change, then a line "--". The guards' own reads (the pause ConfigMap, the
 * breaker Lease) are left to `fleet` without --watch.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "cmd/cmd.h"
#include "fleet/fleet.h"

#define DEFAULT_CHUNK 500	/* --chunk-size default: kubectl's */
#define CZ_GROUP_BY_MAX 6	/* --group-by labels */

/* The options of `fleet` (cmd_fleet), and the words after them. */
struct fleet_opts {
	const char *selector;	 /* -l/--selector: a label selector */
	const char *group_by[CZ_GROUP_BY_MAX]; /* --group-by LABEL (repeatable) */
	size_t n_group_by;
	bool nodes;		 /* --nodes: the nodes behind each line */
	uint64_t chunk_size;	 /* --chunk-size: nodes per page (0 = DEFAULT_CHUNK) */
	bool json;		 /* --json */
	bool watch;		 /* --watch: live, from a LIST and a WATCH */
	size_t max_output;	 /* --max-output: the longest message kept of a condition */
	int argc;
	char **argv;
};

/* fleet_watch - run the view on @f (empty, set up by the caller) until q or a signal. Returns
 * CZ_EXIT_OK, or CZ_EXIT_ERROR when the nodes could not be listed at all (logged). */
int fleet_watch(struct cz_ctx *ctx, const struct fleet_opts *o, struct fleet *f);

#endif
