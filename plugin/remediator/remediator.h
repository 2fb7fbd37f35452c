/* SPDX-License-Identifier: MIT */
#ifndef CZ_REMEDIATOR_H
#define CZ_REMEDIATOR_H

/*
 * `cpuzombie remediator`: the one place that holds remediation's rights (nodes patch, pods/
 * eviction, the budget Leases), so that a node agent only reports on its own node. Each cycle,
 * if this replica is the leader (leader.h: Lease LEADER_LEASE in remediation.leader_namespace,
 * kept by a thread of its own that renews it every LEADER_RENEW_MS, also while a drain blocks):
 * list the budget Leases' holders, list the nodes (paged, remediation.node_selector), and run
 * the per-node remediation (remediate.h: every guard, the budget, drain, uncordon) for each node
 * that needs one (remediator_node_due). A replica that is not the leader does nothing and says
 * who is. The kured reboot sentinel is a file on the node: the remediator never writes it (the
 * node's agent hands the drained node to kured, agent/kube_agent.h).
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/config.h"

struct remediator;

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
 * carries cpuzombie's cordon annotation (it may be due an uncordon), or when its name is among
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
