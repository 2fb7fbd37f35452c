/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLEET_MODEL_H
#define CZ_FLEET_MODEL_H

/*
 * The inside of struct fleet, shared by fleet.c (recording nodes), fleet_rank.c (the summary),
 * fleet_print.c and fleet_json.c. Not for other users: they go through fleet.h.
 */

#include "fleet/fleet.h"

#define FLEET_VALUE_MAX 255	/* longer label values, images... are cut (a hostile node) */

/* One node, in a fixed record; strings are ids into the interner (0 = ""). */
struct fleet_node {
	uint32_t name;
	uint32_t dim[FLEET_DIMS_MAX];
	uint8_t st[FLEET_NCOND];	/* enum fleet_status */
	uint8_t ready;			/* enum fleet_status of Ready */
	bool held, drained, unschedulable;
	bool held_long;			/* annotated cpuzombie.io/held-long */
	bool parsed[FLEET_NCOND];	/* the message read back (condmsg.h) */
	uint32_t named[FLEET_NCOND];	/* leaker unit / top task / reset cause, or 0 */
	uint64_t num[FLEET_NCOND];	/* its restarts / top task ms / resets */
	uint64_t since_ms[FLEET_NCOND];	/* lastTransitionTime, 0 when absent or unreadable */
	bool has_counts;
	uint64_t dying;
	float ratio;
};

struct fleet {
	size_t max_output;
	const char *cond_type[FLEET_NCOND];	/* from condition/conditions.h's table */
	const char *dim_name[FLEET_DIMS_MAX];
	size_t n_dims;
	char *group_by[FLEET_GROUP_BY_MAX];

	/* interner: id -> string; strings live in blocks that never move */
	char **blocks;
	size_t n_blocks, block_used;
	const char **strs;
	size_t n_strs, cap_strs;
	uint32_t *hash;			/* open addressing: 0 empty, else id + 1 */
	size_t hash_cap;
	uint32_t *node_of;		/* per string id: node index + 1 when a node's name */

	struct fleet_node *nodes;
	size_t n_nodes, cap_nodes;
	size_t skipped, duplicates;

	bool leases_known;
	char leases_denied[160];
	uint32_t *holders;
	size_t n_holders, leases_expired;
	int budget;

	/* scratch for the summary, per string id */
	uint32_t *cnt_t, *cnt_n;
	uint64_t *cnt_max;
	size_t cnt_cap;
};

/* fleet_str - the string of id @id. */
static inline const char *fleet_str(const struct fleet *f, uint32_t id)
{
	return f->strs[id];
}

/* fleet_intern - the id of @len bytes at @s (cut to FLEET_VALUE_MAX); 0 for "". -ENOMEM. */
int fleet_intern(struct fleet *f, const char *s, size_t len, uint32_t *ret);

/* fleet_find_str - the id of @s if interned, else -1. */
long fleet_find_str(const struct fleet *f, const char *s);

/* The short names of the conditions' "top" lists: "leakers", "busiest tasks", "reset causes". */
extern const char *const fleet_top_kind[FLEET_NCOND];

#endif
