/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLEET_PAGER_H
#define CZ_FLEET_PAGER_H

/*
 * The bounds of a paged node list (`cpuzombie fleet`), pure: after each page, whether to ask for
 * the next one. A real API server hands out each continue token once and ends the list; a broken
 * or hostile one may repeat a token (the client would page for ever) or keep inventing pages
 * (the fleet view would grow without bound). The pager stops at a token seen before in this
 * listing, at more than FLEET_NODES_MAX nodes, and at more pages than that many nodes can fill
 * at the asked page size (plus FLEET_PAGES_SLACK short ones).
 */

#include <stddef.h>
#include <stdint.h>

#define FLEET_NODES_MAX 100000	/* GKE's largest clusters hold 65,000 nodes */
#define FLEET_PAGES_SLACK 10

struct fleet_pager {
	unsigned limit;		/* the page size asked (0: one unpaged list) */
	unsigned pages, pages_max;
	size_t items;
	uint64_t *seen;		/* hashes of the tokens handed out (open addressing, 0 empty) */
	size_t n_seen, cap;
};

/* fleet_pager_init - a pager for a listing in pages of @limit. */
void fleet_pager_init(struct fleet_pager *p, unsigned limit);

/* fleet_pager_done - free what the pager holds; it can be initialised again. Accepts NULL. */
void fleet_pager_done(struct fleet_pager *p);

/*
 * fleet_pager_next - account for a page of @n items whose continue token is @cont ("" or NULL:
 * the last page). Returns 1 to ask for the next page with @cont, 0 when the list is complete, or
 * -ELOOP (@cont was handed out before in this listing), -E2BIG (past the node or page cap),
 * -ENOMEM, with a one-line reason in @err.
 */
int fleet_pager_next(struct fleet_pager *p, const char *cont, size_t n, char *err, size_t size);

#endif
