/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLEET_H
#define CZ_FLEET_H

/*
 * The fleet view, pure: Node objects (as the API server returns them) in, a ranked summary out.
 * For each of our conditions: how many nodes are True of how many report it; for each grouping
 * dimension (zone, instance type, OS image, kernel, container runtime, any --group-by label)
 * the value where the True nodes concentrate, dimensions ranked by how strongly that value
 * separates True from False nodes; the numbers carried in the messages, read back with
 * check/condmsg.h (leakers, busiest tasks, reset causes) with node counts; Ready; the nodes
 * held by cpuzombie's remediation and the Lease budget in use.
 *
 * Memory is per node a fixed record plus interned strings (a zone or an image is stored once),
 * so 10,000 nodes cost a few MB whatever the pages held. A node seen twice (a list restarted,
 * a misbehaving server) replaces its first record: nothing is counted twice.
 *
 * Separation score of a value v of a dimension, for a condition with T True and F False nodes
 * (Unknown and absent conditions are left out), T_v True and F_v False nodes having v:
 *     score = T_v / T - F_v / F
 * (Youden's J of "has v" as a test for True): the share of the True nodes that have it minus
 * the share of the False nodes that do. 1 when every True node and no False node has it; 0 when
 * it tells nothing, or every node has it; independent of how rare the condition is (12 True nodes
 * of 10,000, all in one zone of four, score 0.75 like 300 would). A dimension is as telling as its
 * best value; a value unique to each node (a host name) covers 1/T of the True nodes and scores
 * low.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FLEET_GROUP_BY_MAX 6		/* --group-by labels */
#define FLEET_DIMS_MAX (5 + FLEET_GROUP_BY_MAX)
#define FLEET_TOP_MAX 5			/* leakers, tasks, causes, values listed */

enum fleet_cond { FLEET_MEMCG, FLEET_CPU, FLEET_ENA, FLEET_NCOND };

/* A condition's status on a node. */
enum fleet_status { FLEET_ABSENT, FLEET_FALSE, FLEET_TRUE, FLEET_UNKNOWN };

struct fleet;

/*
 * fleet_new - an empty view grouping by the five built-in dimensions plus @group_by labels
 * (@n_group_by <= FLEET_GROUP_BY_MAX, each a label key; copied). @max_output: the
 * max_output_length our NPD configs cut messages at (besides NPD's default 80 and our 256).
 * Returns 0 or -EINVAL / -ENOMEM.
 */
int fleet_new(const char *const *group_by, size_t n_group_by, size_t max_output,
	      struct fleet **ret);

/* fleet_free - accepts NULL. */
void fleet_free(struct fleet *f);

/* fleet_reset - forget every node (a listing that starts over), keep the settings. */
void fleet_reset(struct fleet *f);

/*
 * fleet_add_node - take what matters from one Node object. A node without a name is counted as
 * skipped. Returns 0, or -ENOMEM.
 */
int fleet_add_node(struct fleet *f, json_object *node);

/*
 * fleet_set_leases - the Lease budget: @leases is the items of the Lease list (may be NULL with
 * @denied: the reason the list could not be read, e.g. "forbidden"), @now_ms to tell expired
 * slots, @budget the slots our local configuration allows (0 = unknown).
 */
void fleet_set_leases(struct fleet *f, json_object *const *leases, size_t n, uint64_t now_ms,
		      int budget, const char *denied);

/* fleet_node_count - nodes recorded. */
size_t fleet_node_count(const struct fleet *f);

/* What one dimension says about one condition. */
struct fleet_value {
	const char *value;		/* "" when the nodes lack it (printed as "(none)") */
	size_t t, n;			/* True nodes with the value, nodes reporting with it */
	double score;
};

struct fleet_dim {
	const char *name;		/* "zone", "osImage", or the --group-by label */
	struct fleet_value best;	/* the most telling value */
	struct fleet_value also[FLEET_TOP_MAX - 1]; /* other values holding True nodes */
	size_t n_also;
	double score;			/* best.score */
};

/* A name read back from messages, with the nodes that carry it. */
struct fleet_count {
	const char *name;
	size_t nodes;
	uint64_t max; /* max restarts (leakers), longest ms (tasks), resets (causes) */
};

struct fleet_cond_summary {
	const char *type;		/* "MemcgZombieLeak" */
	size_t t, f, unknown, absent;	/* node counts by status */
	size_t not_ready;		/* True nodes whose Ready is not True */
	struct fleet_dim dims[FLEET_DIMS_MAX];	/* ranked, most telling first */
	size_t n_dims;
	struct fleet_count top[FLEET_TOP_MAX];	/* leakers / tasks / causes, most nodes first */
	size_t n_top;
	size_t unparsed;		/* True nodes whose message we could not read */
	uint64_t first_true_ms;		/* earliest and latest lastTransitionTime of the True */
	uint64_t last_true_ms;		/* nodes (ms since the epoch; 0 when none readable) */
	/* memcg: dying counts over True nodes */
	uint64_t dying_median, dying_max;
	double ratio_median;
};

struct fleet_summary {
	size_t nodes, skipped, duplicates;
	size_t ready_true, ready_false, ready_unknown;
	size_t unschedulable;
	struct fleet_cond_summary cond[FLEET_NCOND];
	int order[FLEET_NCOND];		/* conditions, most True nodes first */
	size_t held;			/* nodes annotated cpuzombie.io/cordoned */
	size_t drained;			/* ... and cpuzombie.io/drained */
	/* ... and cpuzombie.io/held-long (past uncordon_after + drain_timeout, still True) */
	size_t held_long;
	bool leases_known;
	char leases_denied[160];	/* why the Leases could not be read, or "" */
	size_t leases_held, leases_expired;
	int budget;
};

/*
 * fleet_summarize - compute the summary. Strings point into @f (valid until the next change of
 * @f). Returns 0 or -ENOMEM.
 */
int fleet_summarize(struct fleet *f, struct fleet_summary *ret);

/* Called with each node name behind a line (--nodes), in listing order. */
typedef void (*fleet_name_fn)(const char *name, void *userdata);

/*
 * fleet_nodes_where - the nodes with @cond True whose dimension @dim (its name, as in struct
 * fleet_dim) has @value ("" = the nodes lacking it). Nothing when @dim or @value is unknown.
 */
void fleet_nodes_where(const struct fleet *f, enum fleet_cond cond, const char *dim,
		       const char *value, fleet_name_fn fn, void *userdata);

/* fleet_nodes_named - the nodes with @cond True whose message names @name (leaker, task,
 * cause). */
void fleet_nodes_named(const struct fleet *f, enum fleet_cond cond, const char *name,
		       fleet_name_fn fn, void *userdata);

/* fleet_nodes_held - the nodes annotated cpuzombie.io/cordoned. */
void fleet_nodes_held(const struct fleet *f, fleet_name_fn fn, void *userdata);

/* fleet_nodes_held_long - of those, the ones annotated cpuzombie.io/held-long. */
void fleet_nodes_held_long(const struct fleet *f, fleet_name_fn fn, void *userdata);

/* fleet_lease_holders - the holders of the unexpired Leases given to fleet_set_leases(). */
void fleet_lease_holders(const struct fleet *f, fleet_name_fn fn, void *userdata);

/*
 * fleet_print - the summary as text for a human, most telling first; with @nodes, the names
 * behind each line. Every string from the cluster is printed with bytes outside printable ASCII
 * replaced by '?'.
 */
void fleet_print(struct fleet *f, const struct fleet_summary *s, bool nodes, FILE *out);

/* fleet_json - the same content as one JSON object (fleet_json.c); NULL on -ENOMEM. */
json_object *fleet_json(struct fleet *f, const struct fleet_summary *s, bool nodes);

#endif
