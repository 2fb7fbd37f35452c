/* SPDX-License-Identifier: MIT */
#ifndef CZ_VIEW_RENDER_H
#define CZ_VIEW_RENDER_H

/*
 * The renderers of the node model (node/model.h) that `cpuzombie report` prints: the screen
 * (report.c), the JSON document (report_json.c), the terminal heatmap, the kernel-log section
 * (report_kernel.c). The SVG, the --html page and the flame graphs have headers of their own
 * (svg.h, html.h, flame.h). Every function here is pure over the model: it reads nothing else.
 */

#include <json-c/json.h>
#include <stdio.h>

#include "node/model.h"

/*
 * report_print_kernel - the "Kernel log" section: the events of the history window, oldest
 * first, each "HH:MM:SS what" (report_kernel.c). Prints nothing without a log.
 */
void report_print_kernel(const struct node_model *r, FILE *out);

/* report_kernel_json - the same as a JSON object (counts, lost, events), or NULL. */
json_object *report_kernel_json(const struct node_model *r);

/*
 * report_heatmap - pure: the terminal heatmap, cores down (grouped max when there are more than
 * REPORT_HEAT_ROWS), @cols time columns across the history window (each cell the highest
 * share in its span, so a burst is never averaged away). Returns 0 or -EIO.
 */
int report_heatmap(const struct node_model *r, unsigned cols, FILE *out);

/*
 * report_print - the screen: memcg, cores (+heatmap), NICs, conditions. Returns 0 or -EIO.
 */
int report_print(const struct node_model *r, FILE *out);

/*
 * report_json - the same as one JSON document. Returns a new object (caller puts it), or NULL
 * when out of memory.
 */
json_object *report_json(const struct node_model *r);

#endif
