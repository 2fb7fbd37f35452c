/* SPDX-License-Identifier: MIT */
#ifndef CZ_REMEDIATE_H
#define CZ_REMEDIATE_H

/*
 * Remediation, the executor: reads this node, asks the pure plan (remediate_plan.h: every guard
 * and decision is there) for the next steps, carries them out against the API server (Leases of
 * lease.h, evictions of drain.h, node PATCHes, Events), feeds what they found back into the
 * plan's input and asks again, until the plan is final. Every action is an Event on the node plus
 * our annotations; a cordon is annotated in the same PATCH that sets it, so nothing half-done is
 * left unrecorded.
 */

#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "kube/kube.h"
#include "remediator/remediate_plan.h"

/*
 * remediate_cycle - one remediation decision for node @node_name, acting through @kc per
 * @cfg->remediation. Blocks at most about drain_timeout while draining. Writes what happened
 * into *@ret_action and a one-line summary into @summary. Returns 0, or -errno when the API could
 * not be used (logged).
 */
int remediate_cycle(struct kube_client *kc, const struct cz_config *cfg, const char *node_name,
		    uint64_t now_ms, enum remediate_action *ret_action, char *summary,
		    size_t summary_size);

/*
 * remediate_cycle_fleet - remediate_cycle() with the storm guard's count of the selection
 * @fleet already made by the caller (the remediator lists every node anyway); NULL: counted
 * here (a node list) when a new remediation is due.
 */
int remediate_cycle_fleet(struct kube_client *kc, const struct cz_config *cfg,
			  const char *node_name, uint64_t now_ms, const struct guard_fleet *fleet,
			  enum remediate_action *ret_action, char *summary, size_t summary_size);

#endif
