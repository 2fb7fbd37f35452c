/* SPDX-License-Identifier: MIT */
#ifndef CZ_HTML_DATA_H
#define CZ_HTML_DATA_H

/*
 * The data block of the --html page (html.h): the bursts' flame graphs as one JSON object of
 * ASCII alone, which the page's script (flame_js.h) reads. Per burst, arrays by node in depth-
 * first order (children in name order, so a node's parent comes before it):
 *
 *   {"id" "CPU-START_MS", "cpu", "total" samples, "hot" (a name, -1 for none),
 *    "node" (each node's name), "up" (its index minus its parent's; 0 for the root),
 *    "kind" (enum flame_kind), "self" (samples whose stack ends there),
 *    "dt" (each sample's time, ms after the one before), "leaves" (the nodes samples end in,
 *    the most frequent first), "leaf" (each sample's, as an index into "leaves")}
 *
 * and "names" once for all of them (kernel function names repeat across bursts). The bursts
 * go in newest first until the block would pass @budget bytes; the others are left out (the
 * page says so and names `cpuzombie flame` for them), so the page stays bounded whatever the
 * run dir holds.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "view/html.h"

struct html_data;

/*
 * html_data_build - pure: the data of the @n bursts @b (those with a flame graph) within
 * @budget bytes into *@ret (html_data_free). Returns 0 or -ENOMEM.
 */
int html_data_build(const struct html_burst *b, size_t n, size_t budget, struct html_data **ret);

/* html_data_index - the index in "bursts" of @b[@i], or -1 when it is not in the block. */
int html_data_index(const struct html_data *d, size_t i);

/* html_data_write - the <script type="application/json" id="cz-data"> element to @out. */
void html_data_write(const struct html_data *d, FILE *out);

/* html_data_free - safe on NULL. */
void html_data_free(struct html_data *d);

#endif
