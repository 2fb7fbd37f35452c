/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLAME_JS_H
#define CZ_FLAME_JS_H

/*
 * The scripts the flame graphs carry (no network, no library, no eval):
 *
 * flame_svg_js   the standalone SVG's (flame_svg.h): zoom on click ("Reset zoom" back), search
 *                by prompt ("Search" or Ctrl-F), details on hover; it works on the frames the
 *                SVG holds (data-s/-n/-d), like flamegraph.pl's.
 * flame_page_js  the page's (html.h): reads the data block (<script type="application/json"
 *                id="cz-data">) with textContent and JSON.parse, and for each
 *                <div class="burst" data-i="K"> draws burst K's flame graph into its
 *                <svg class="flame"> (createElementNS, textContent: a name is never markup),
 *                zooms on click (button.reset back), searches as input.search is typed (frames
 *                highlighted; .matched says "Matched: N of T samples (P%)", N also in its
 *                data-samples), and where the burst has sample times draws the FlameScope strip
 *                into <svg class="strip"> (1 s columns, 20 ms rows, darker = more samples): a
 *                drag over its cells redraws the flame graph for that range only (.range says
 *                which, and its sample count in data-samples; button.whole goes back). No '<'
 *                and no '&' in it.
 */

extern const char flame_svg_js[];
extern const char flame_page_js[];

#endif
