/* SPDX-License-Identifier: MIT */
#ifndef CZ_SVG_H
#define CZ_SVG_H

/*
 * `cpuzombie report --svg FILE`: a per-core heatmap, FlameScope-like: time across, cores down,
 * each cell shaded by the core's highest share in it (white 0% .. dark red 100%; grey: no
 * sample), with the bursts (outlined on their core's row) and the ENA resets (a line across all
 * rows) on the same time axis, a legend of the shades, and below it one zoom panel per burst.
 *
 * The overview spans the time that has data (the sampler's first sample to its last, so a
 * minute-old agent's minute fills the width instead of a speck at the right of the configured
 * ring), or the window the caller asks for (svg_write_span: `--since/--until`). Its ticks step
 * by 1 s .. 1 day, whichever gives at most ten across the span.
 *
 * A zoom panel (the SVG_ZOOM_MAX most recent bursts in the span, newest first) shows the burst's
 * core and SVG_ZOOM_NEIGHBOURS cores either side, from SVG_ZOOM_PAD_MS before it to as long
 * after, one column per sample (the sampler's full resolution; binned only past SVG_PLOT_W
 * samples), labelled with the burst's length, peak, mean, top tasks, the NIC queues its core
 * serves, the top task's kernel stack and the profiler hand-off.
 *
 * Readable for 2 or 192 cores: overview rows are 3..18 px high so the plot stays under ~900 px,
 * labels thin out on small rows, and equal neighbouring cells of a row are merged into one
 * rectangle (an idle 192-core hour is a few hundred elements, not 100,000).
 *
 * Structure for tools and tests: one <svg> element; the overview is <g id="overview"> whose
 * first <rect class="section"> is as high as the heatmap (title, rows, axis and legend), each
 * zoom panel a <g class="zoom" id="zoom-K" data-cpu="N" data-burst="I"> below it (I: the
 * overview marker id), newest first. In the overview: one
 * <g class="core" id="core-N" data-cpu="N"> per core, one <g class="marker burst" id="burst-I"
 * data-cpu="N"> per burst and one <g class="marker ena-reset" id="reset-I"> per reset drawn;
 * cells are <rect class="cell sN"> (N = share in tens of percent, 0..10) or class "cell none".
 * In a panel: <g class="zoom-core" data-cpu="N"> rows of <rect class="zcell sN"> and one
 * <rect class="zoom-box">.
 */

#include <stdint.h>
#include <stdio.h>

struct node_model;

#define SVG_PLOT_W 1200		/* px of the time axis */
#define SVG_PLOT_H_MAX 900	/* px the core rows aim to stay within */
#define SVG_COLS_MAX 600	/* overview time bins at most */
#define SVG_ZOOM_MAX 4		/* zoom panels at most: the most recent bursts */
#define SVG_ZOOM_NEIGHBOURS 2	/* cores shown either side of the burst's */
#define SVG_ZOOM_PAD_MS 5000	/* time shown before and after a burst */

/*
 * svg_span_auto - pure: the overview's window for @r: from one interval before the first
 * history sample to the last one (stretched to cover bursts going on past it, never past
 * r->now_ms); without history, the configured cpu.history ending at r->now_ms. Always
 * *@ret_to_ms > *@ret_from_ms.
 */
void svg_span_auto(const struct node_model *r, uint64_t *ret_from_ms, uint64_t *ret_to_ms);

/*
 * svg_write_span - pure (writes only to @out): the heatmap of @r over [@from_ms, @to_ms]
 * (CLOCK_REALTIME ms; both 0: svg_span_auto) for r->ncpu cores, then the zoom panels of the
 * bursts in that window. Returns 0, -EINVAL when @to_ms <= @from_ms, -ENODATA when there are no
 * cores to draw, -ENOMEM or -EIO.
 */
int svg_write_span(const struct node_model *r, uint64_t from_ms, uint64_t to_ms, FILE *out);

/* svg_write - svg_write_span over svg_span_auto's window. */
int svg_write(const struct node_model *r, FILE *out);

#endif
