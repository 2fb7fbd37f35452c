/* SPDX-License-Identifier: MIT */
#ifndef CZ_SVG_H
#define CZ_SVG_H

/*
 * `cpuzombie report --svg FILE`: a per-core heatmap over the history window, FlameScope-like:
 * time across, cores down, each cell shaded by the core's share (white 0% .. red 100%; grey: no
 * sample), with the bursts (outlined on their core's row) and the ENA resets (a line across all
 * rows) on the same time axis. Each marker's <title> carries the profiler hand-off.
 *
 * Readable for 2 or 192 cores: rows are 3..18 px high so the plot stays under ~900 px, labels
 * thin out on small rows, and equal neighbouring cells of a row are merged into one rectangle
 * (an idle 192-core hour is a few hundred elements, not 100,000).
 *
 * Structure for tools and tests: one <g class="core" id="core-N" data-cpu="N"> per core, one
 * <g class="marker burst" id="burst-I" data-cpu="N"> per burst and one
 * <g class="marker ena-reset" id="reset-I"> per reset drawn; cells are <rect class="cell sN">
 * (N = share in tens of percent, 0..10) or class "cell none".
 */

#include <stdio.h>

struct report;

#define SVG_PLOT_W 1200		/* px of the time axis */
#define SVG_PLOT_H_MAX 900	/* px the core rows aim to stay within */
#define SVG_COLS_MAX 600	/* time bins at most */

/*
 * svg_write - pure (writes only to @out): the heatmap of @r's history window (cfg cpu.history
 * ending at r->now_ms) for r->ncpu cores. Returns 0, -ENODATA when there are no cores to draw,
 * -ENOMEM or -EIO.
 */
int svg_write(const struct report *r, FILE *out);

#endif
