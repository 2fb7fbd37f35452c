/* SPDX-License-Identifier: MIT */
#ifndef CZ_REMEDIATE_H
#define CZ_REMEDIATE_H

/*
 * Remediation: cordon (and drain) this node when a listed condition has been True long enough,
 * and uncordon it after recovery, only ever under every guard of DESIGN.md:
 *   - a listed condition (remediation.conditions, whoever set it) True for remediation.for;
 *   - the node is not already unschedulable by someone else;
 *   - at most remediation.max_unavailable nodes (a number, or a percentage of all nodes, rounded
 *     down but at least 1) are held by cpuzombie at once, across the cluster: a node holds one of
 *     the Leases "cpuzombie-slot-0".."cpuzombie-slot-<N-1>" in remediation.lease_namespace, taken by
 *     create (409 = someone else has it) or by a resourceVersion-checked update of an expired
 *     slot whose holder is no longer cordoned by us, so two nodes can never take the last slot;
 *   - control-plane nodes are skipped unless remediation.allow_control_plane.
 * Drain = policy/v1 Evictions (DaemonSet and mirror pods skipped; pods with emptyDir only with
 * delete_emptydir_data; 429 from a PodDisruptionBudget retried with backoff until drain_timeout;
 * a plain DELETE only with allow_delete, and only when eviction itself is refused otherwise).
 * Every action is an Event on the node plus the annotations below. dry-run emits the Event
 * ("would ...") and changes nothing else.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"
#include "cluster/kube.h"

#define REMEDIATE_ANN_CORDONED "cpuzombie.io/cordoned"	/* present = cpuzombie cordoned it */
#define REMEDIATE_ANN_DRAINED "cpuzombie.io/drained"
#define REMEDIATE_ANN_ACTION "cpuzombie.io/last-action"
#define REMEDIATE_LEASE_PREFIX "cpuzombie-slot-"

enum remediate_action {
	REM_NONE,		/* nothing to do */
	REM_WAITING,		/* problem, but a guard holds (budget full, for not reached...) */
	REM_SKIPPED,		/* problem, but this node is not ours to touch */
	REM_DRY_RUN,		/* would have acted */
	REM_CORDONED,
	REM_DRAINED,
	REM_DRAIN_INCOMPLETE,	/* cordoned, drain timed out or blocked: retried next cycle */
	REM_UNCORDONED,
};

/* remediate_action_name - "none", "waiting", ... */
const char *remediate_action_name(enum remediate_action a);

/*
 * remediate_problem - pure: is a condition of @types True on @node for at least @for_ms at
 * @now_ms? Returns true and the first such type in *@ret_type (static to @node's lifetime);
 * *@ret_any_true tells whether any listed condition is True at all (may be NULL).
 */
bool remediate_problem(json_object *node, const struct cz_strlist *types, uint64_t for_ms,
		       uint64_t now_ms, const char **ret_type, bool *ret_any_true);

/*
 * remediate_recovered - pure: no listed condition is True or Unknown, and the last of their
 * transitions is at least @after_ms before @now_ms.
 */
bool remediate_recovered(json_object *node, const struct cz_strlist *types, uint64_t after_ms,
			 uint64_t now_ms);

/*
 * remediate_budget - pure: slots for @max_unavailable ("2" or "10%") among @total_nodes.
 * Returns the count (>= 1), or -EINVAL for a bad value.
 */
int remediate_budget(const char *max_unavailable, size_t total_nodes);

/* remediate_is_control_plane - pure: the node carries a control-plane or master role label. */
bool remediate_is_control_plane(json_object *node);

/*
 * remediate_cycle - one remediation decision for node @node_name, acting through @kc per
 * @cfg->remediation. Reads the node itself. Blocks at most about drain_timeout while draining.
 * Writes what happened into *@ret_action and a one-line description into @msg. Returns 0, or
 * -errno when the API could not be used (the reason is in @msg; nothing half-done is left
 * unrecorded: a cordon is annotated in the same PATCH that sets it).
 */
int remediate_cycle(struct kube_client *kc, const struct cz_config *cfg, const char *node_name,
		    uint64_t now_ms, enum remediate_action *ret_action, char *msg, size_t msg_size);

#endif
