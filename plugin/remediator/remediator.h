/* SPDX-License-Identifier: MIT */
#ifndef CZ_REMEDIATOR_H
#define CZ_REMEDIATOR_H

/*
 * `cpuzombie remediator`: the one place that holds remediation's rights (nodes patch, pods/
 * eviction, the budget Leases), so that a node agent only reports on its own node. Each cycle,
 * if this replica is the leader (leader.h: Lease LEADER_LEASE in remediation.leader_namespace,
 * kept by a thread of its own that renews it every LEADER_RENEW_MS, also while a drain blocks):
 * take the budget Leases' holders and the nodes (remediation.node_selector) from two caches
 * (informer.h: one LIST each, then WATCHes), and run the per-node remediation (remediate.h:
 * every guard, the budget, drain, uncordon) for each node that needs one (remediator_node_due).
 * A cycle runs every agent.check_interval (the time-based rules: `for`, uncordon_after, the
 * window, Leases expiring) and soon after a change of a node or Lease a decision reads
 * (remediator_wait). A replica that is not the leader does nothing and says who is. The kured
 * reboot sentinel is a file on the node: the remediator never writes it (the node's agent hands
 * the drained node to kured, agent/kube_agent.h).
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

struct remediator;

/* Where a cycle's nodes and Leases come from. */
enum remediator_source {
	REMEDIATOR_WATCH,	/* the caches: one LIST each, then WATCHes (the default) */
	REMEDIATOR_LIST,	/* one LIST each into a cache per cycle, no watch (--once) */
	REMEDIATOR_POLL,	/* a paged LIST of every node each cycle, no cache (to compare) */
};

/* remediator_set_source - where the next cycles read nodes and Leases from. */
void remediator_set_source(struct remediator *rm, enum remediator_source source);

/*
 * remediator_wait - wait up to @ms for a change that calls for a cycle before the next
 * agent.check_interval (REMEDIATOR_WATCH; a cycle for a change at most once a second). Returns
 * true when one is due.
 */
bool remediator_wait(struct remediator *rm, uint64_t ms);

struct remediator_watch_stats {
	unsigned lists, watches, gone, stalls, broken;
	size_t events, nodes;
};

/* remediator_watch_stats - the caches' counters (both summed; nodes: nodes cached). Returns
 * false when the caches are not running. */
bool remediator_watch_stats(struct remediator *rm, struct remediator_watch_stats *ret);

/*
 * remediator_node_trim / remediator_lease_trim - pure: the part of a node (name, uid,
 * resourceVersion, labels, annotations, spec, conditions without their heartbeat time) or a
 * budget Lease (name, resourceVersion, holder) that the caches keep. A new object, or NULL when
 * out of memory.
 */
json_object *remediator_node_trim(json_object *node);
json_object *remediator_lease_trim(json_object *lease);

/*
 * remediator_new - API clients from @cfg->kubernetes, the leader identity @identity (a valid
 * name: $POD_NAME or the host name) and the leader Lease's namespace (remediation.
 * leader_namespace, else the service account's namespace, else "cpuzombie"); starts the leader
 * thread. @cfg is copied. Returns 0 or -errno (logged).
 */
int remediator_new(const struct cz_config *cfg, const char *identity, struct remediator **ret);

/*
 * remediator_free - stop the leader thread; with @release, hand the leader Lease back (holder
 * "", as client-go's ReleaseOnCancel) so the next replica need not wait for it to expire.
 * Accepts NULL.
 */
void remediator_free(struct remediator *rm, bool release);

/*
 * remediator_cycle - one cycle (above). Writes one line into @summary: the leader and what
 * each due node's remediation did, or who leads instead. Blocks up to about drain_timeout per
 * draining node. Returns 0, or the first -errno of the cycle (the leader Lease or a list could
 * not be read, a node's remediation failed; logged); not leading is not an error.
 */
int remediator_cycle(struct remediator *rm, char *summary, size_t summary_size);

/* remediator_identity / remediator_namespace - as chosen by remediator_new(). */
const char *remediator_identity(const struct remediator *rm);
const char *remediator_namespace(const struct remediator *rm);

/*
 * remediator_node_due - pure: does @node need a remediation cycle? Yes when a condition of
 * @cfg->remediation.conditions is True on it (for any time: the plan judges `for`), when it
 * carries cpuzombie's cordon annotation (it may be due an uncordon) or its clock's
 * REMEDIATE_ANN_TRUE_SINCE (to be removed once nothing is True), or when its name is among
 * the @nholders budget Lease holders @holders.
 */
bool remediator_node_due(json_object *node, const struct cz_config *cfg,
			 const char *const *holders, size_t nholders);

/*
 * remediator_default_namespace - pure: the namespace named by a service account directory's
 * "namespace" file content @text (NULL: none), trimmed, if it is a valid name; else
 * "cpuzombie". Written into @buf (@size bytes).
 */
const char *remediator_default_namespace(const char *text, char *buf, size_t size);

#endif
