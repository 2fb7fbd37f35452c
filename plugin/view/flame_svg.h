/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLAME_SVG_H
#define CZ_FLAME_SVG_H

/*
 * `cpuzombie flame BURST-ID`: one burst's flame graph (flame.h) as a standalone interactive SVG,
 * laid out as flamegraph.pl lays it out (the root across the bottom, each frame as wide as its
 * samples, children in name order, frames under FLAME_SVG_MIN_PX left out), so it reads without
 * a script too. Its one script (no on* attribute: listeners added by the script) zooms into the
 * frame clicked (its subtree fills the width, its parents dimmed; "Reset zoom" goes back) and
 * searches ("Search", or Ctrl-F: a prompt for a substring; matching frames turn magenta and
 * "Matched:" says their share of the samples).
 *
 * Kinds are colours: kernel frames warm (red to yellow, by name), the task grey, "[user]" aqua,
 * the profiler's markers light grey; the hot frame (flame.h) has a thick purple outline.
 *
 * Structure for tools and tests: one <svg class="flamegraph" data-total="N"
 * data-hot="NAME">; each frame a <g class="f KIND[ hot]" data-s="S" data-n="N" data-d="D">
 * (S: the samples left of it in the root's span, N: its samples, D: its depth, 1 = the task)
 * holding <title>NAME (N samples, P%)</title>, a <rect> and a <text> label cut to fit with "..".
 */

#include <stdio.h>

#include "view/flame.h"

#define FLAME_SVG_W 1200     /* px of the frames' width */
#define FLAME_SVG_FRAME_H 16 /* px per frame row */
#define FLAME_SVG_MIN_PX 0.1 /* frames narrower than this are not drawn (flamegraph.pl's) */

/*
 * flame_svg_write - pure (writes only to @out): @fl as the SVG above, @title (outside text,
 * escaped) on top. Returns 0, -EINVAL for an empty flame, -EIO when @out failed.
 */
int flame_svg_write(const struct flame *fl, const char *title, FILE *out);

/*
 * flame_color - pure: the fill of a frame named @name of @kind as "#rrggbb" into @buf (8
 * bytes), the same the page's script computes. Returns @buf.
 */
char *flame_color(const char *name, enum flame_kind kind, char buf[8]);

/*
 * flame_label - pure: @name cut to fit @px (12 px type: 7 px a character, 3 px either side):
 * itself, its start and "..", or "" below 3 characters' room. Into @buf. Returns @buf.
 */
char *flame_label(const char *name, double px, char *buf, size_t size);

#endif
