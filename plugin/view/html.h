/* SPDX-License-Identifier: MIT */
#ifndef CZ_HTML_H
#define CZ_HTML_H

/*
 * `cpuzombie report --html FILE`: the burst you can look into, as one self-contained page (no
 * network, no external script, style or font):
 *
 *   - the verdict on top: the lines `report` prints (report_print), as text;
 *   - the per-core heatmap `report --svg` draws (svg.h), inline;
 *   - per burst, newest first: what it was (core, time, length, peak, top tasks, NIC queues,
 *     hot kernel function) and, where it has a recorded profile, its flame graph (flame.h),
 *     drawn by the page's script (flame_js.h: zoom, search with its share, kernel, user and task
 *     frames in their colours, the hot frame outlined) and, where the profile kept its samples'
 *     times, the FlameScope strip whose drag redraws the flame graph for that range.
 *
 * Hostile names stay text: every name is in the data block as a JSON string made of ASCII
 * alone ('<', '>', '&' and every non-ASCII character as \u escapes; U+FFFE, U+FFFF and the
 * bidi controls as the visible text "\u202e"), which the script reads with textContent and
 * puts into the DOM with textContent; the static text (verdict, headings) is escaped the same
 * way for markup (entities, hazards shown). The page is well-formed XML (XHTML namespace, the
 * heatmap's SVG namespace) and HTML5 alike: its script holds no '<' or '&', so it needs no
 * CDATA and reads the same under both parsers. A Content-Security-Policy meta allows that one
 * script by its SHA-256 hash (no 'unsafe-inline' for scripts: no on* attribute or injected
 * script can run), nothing from the network (default-src 'none'), and inline styles.
 *
 * The flame graphs' data is bounded (HTML_DATA_MAX): the newest bursts' profiles go in while
 * they fit, the others say so and name `cpuzombie flame BURST-ID`.
 *
 * Structure for tools and tests: <section id="verdict"><pre>, <section id="heatmap"> with the
 * SVG, <section id="bursts"> with one <div class="burst" id="burst-ID" data-i="K"> per burst
 * (ID: "CPU-START_MS", what `cpuzombie flame` takes; K: its entry in the data block's "bursts",
 * absent without a flame graph); in it input.search, button.reset, .matched, svg.flame,
 * .details, and with times svg.strip, button.whole, .range.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cpu/history.h"
#include "view/flame.h"

struct node_model;

/* One burst of the page: its flame graph, or why it has none. */
struct html_burst {
	const struct burst_event *ev;
	bool ongoing;
	const struct flame *fl; /* NULL: no flame graph (@why) */
	const char *why;
};

#define HTML_BURSTS_MAX 64 /* bursts on the page: the newest; older ones are counted */
/* Bytes of flame-graph data on the page (html_data.h): the newest bursts' profiles that fit;
 * with the heatmap and the text the page stays under 2 MiB. */
#define HTML_DATA_MAX (1536 * 1024)

/*
 * html_write - the page for @r (its heatmap over [@since_ms, @until_ms], both 0: svg_write's
 * window) and the @n bursts @b (newest first; at most HTML_BURSTS_MAX drawn) to @out. The
 * verdict is report_print()'s, which reads the bursts' profile files for its lines; the rest
 * writes only to @out. Returns 0, -ENOMEM or -EIO.
 */
int html_write(const struct node_model *r, uint64_t since_ms, uint64_t until_ms,
	       const struct html_burst *b, size_t n, FILE *out);

/*
 * html_text - @s as markup text to @out: & < > " ' as entities, newlines and tabs kept, other
 * control characters and textsafe_is_hazard()'s shown as \xNN / \uXXXX, bytes that are not
 * UTF-8 as U+FFFD. Pure.
 */
void html_text(FILE *out, const char *s, size_t len);

/*
 * html_json_str - @s (@len bytes) as a JSON string of ASCII alone (quotes included): '<', '>',
 * '&', controls and every non-ASCII character as \u escapes, textsafe_is_hazard()'s as the
 * visible text "\uXXXX", bytes that are not UTF-8 as U+FFFD. Pure.
 */
void html_json_str(FILE *out, const char *s, size_t len);

/* html_burst_id - "CPU-START_MS" of @ev into @buf. Returns @buf. */
char *html_burst_id(const struct burst_event *ev, char *buf, size_t size);

#endif
