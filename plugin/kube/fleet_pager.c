/* SPDX-License-Identifier: MIT */
/* The bounds of a paged node list: see fleet_pager.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/fleet_pager.h"

void fleet_pager_init(struct fleet_pager *p, unsigned limit)
{
	*p = (struct fleet_pager){ .limit = limit };
	p->pages_max = FLEET_NODES_MAX / (limit ? limit : FLEET_NODES_MAX) + FLEET_PAGES_SLACK;
}

void fleet_pager_done(struct fleet_pager *p)
{
	if (!p)
		return;
	free(p->seen);
	fleet_pager_init(p, p->limit);
}

/* FNV-1a, never 0 (0 marks an empty slot). */
static uint64_t token_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ? h : 1;
}

/* Adds @h; 1 when it was there already, 0 when added, -ENOMEM. */
static int seen_add(struct fleet_pager *p, uint64_t h)
{
	size_t i;

	if ((p->n_seen + 1) * 2 > p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		uint64_t *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (size_t k = 0; k < p->cap; k++) {
			if (!p->seen[k])
				continue;
			for (i = p->seen[k] & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = p->seen[k];
		}
		free(p->seen);
		p->seen = t;
		p->cap = cap;
	}
	for (i = h & (p->cap - 1); p->seen[i]; i = (i + 1) & (p->cap - 1))
		if (p->seen[i] == h)
			return 1;
	p->seen[i] = h;
	p->n_seen++;
	return 0;
}

int fleet_pager_next(struct fleet_pager *p, const char *cont, size_t n, char *err, size_t size)
{
	int r;

	p->pages++;
	p->items += n;
	if (p->items > FLEET_NODES_MAX) {
		snprintf(err, size, "the server sent more than %d nodes (%zu in %u pages): stopped",
			 FLEET_NODES_MAX, p->items, p->pages);
		return -E2BIG;
	}
	if (!cont || !*cont)
		return 0;
	if (p->pages >= p->pages_max) {
		snprintf(err, size, "the server kept sending pages (%u pages of at most %u for %zu "
			 "nodes): stopped", p->pages, p->limit, p->items);
		return -E2BIG;
	}
	r = seen_add(p, token_hash(cont));
	if (r < 0) {
		snprintf(err, size, "out of memory");
		return r;
	}
	if (r > 0) {
		snprintf(err, size, "the server repeated a continue token (page %u ended with one "
			 "handed out before): stopped", p->pages);
		return -ELOOP;
	}
	return 1;
}
