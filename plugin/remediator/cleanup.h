/* SPDX-License-Identifier: MIT */
#ifndef CZ_CLEANUP_H
#define CZ_CLEANUP_H

/*
 * `cpuzombie cleanup` (the chart's uninstall hook): nothing of cpuzombie's is left in the
 * cluster. From every node: our three condition types (removed, not set False; a strategic
 * merge "$patch: delete" by type, so KernelReady, NetworkingReady, Ready and every other type
 * stay), every annotation and taint whose key starts with "cpuzombie.io/" (a merge patch at
 * the resourceVersion read: a concurrent change is re-read, never overwritten). And the
 * Leases. A node cordoned by us (cpuzombie.io/cordoned and spec.unschedulable) is uncordoned in
 * that same patch, unless told to keep our cordons: then it stays cordoned with its marker, so
 * a person sees whose it was. A cordon without our marker is someone else's and stays. The
 * Leases: the budget slots (managed-by=cpuzombie) in remediation.lease_namespace and the
 * remediator's leader Lease in its namespace; then the hand-off locks we hold (medik8s'
 * Leases, our entries in kured's lock). Types, keys, Leases and locks of others are never
 * touched. cleanup_node_patch() is pure; cleanup_run() does the requests.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct kube_client;

#define CLEANUP_PREFIX "cpuzombie.io/"

/* What cleanup_node_patch() does with a cordon of ours. */
enum cleanup_cordon {
	CLEANUP_CORDON_NONE,	/* no cordon of ours (none, or someone else's) */
	CLEANUP_CORDON_LIFTED,	/* ours: uncordoned in the patch */
	CLEANUP_CORDON_KEPT,	/* ours, kept as asked: the marker stays */
};

/*
 * cleanup_node_patch - pure: the merge patch of nodes/NAME that removes @node's cpuzombie.io/
 * annotations and taints: {"metadata":{"resourceVersion":RV,"annotations":{K:null,...}},
 * "spec":{"taints":[the others]}} (taints only when one of ours is there). When the node is
 * cordoned by us (cpuzombie.io/cordoned present and spec.unschedulable true) the same patch
 * sets "spec":{"unschedulable":false}, unless @keep_cordon: then cpuzombie.io/cordoned is left
 * and the node stays cordoned. *@ret_cordon says which. Returns how many changes it makes
 * (annotations, taints, the uncordon; 0: *@ret NULL, nothing to do), or -EINVAL (no
 * resourceVersion: never an unconditional write) / -ENOMEM.
 */
int cleanup_node_patch(json_object *node, bool keep_cordon, json_object **ret,
		       enum cleanup_cordon *ret_cordon);

struct cleanup_stats {
	size_t nodes;		/* nodes listed */
	size_t conditions;	/* condition types removed */
	size_t marks;		/* annotations and taints removed */
	size_t leases;		/* Leases deleted */
	size_t locks;		/* hand-off locks released: medik8s' Leases, kured's lock */
	size_t uncordoned;	/* nodes cordoned by us, uncordoned */
	size_t kept;		/* nodes cordoned by us, kept so (keep_cordons) */
	char kept_names[256];	/* their names, ", "-separated, cut with "..." */
};

/*
 * cleanup_run - do it, with client @kc: nodes in pages (our cordons lifted, or kept when
 * @keep_cordons), then the Leases labelled managed-by=cpuzombie in @lease_ns and @leader_ns
 * and the Lease cpuzombie-remediator in @leader_ns.
 * Returns 0 (*@st counts what was removed), or -errno with a one-line reason in @err (what was
 * removed before the failure stays removed: running it again finishes the job).
 */
int cleanup_run(struct kube_client *kc, const char *lease_ns, const char *leader_ns,
		bool keep_cordons, struct cleanup_stats *st, char *err, size_t err_size);

/*
 * cleanup_handoffs - after cleanup_run: give back the hand-off locks cpuzombie holds, only
 * where it is the holder: medik8s' Leases node-<name> in @medik8s_ns ("" = off) whose
 * holderIdentity is ours (deleted at the resourceVersion read), and cpuzombie's entries in
 * kured's lock on DaemonSet @kured_ds ("NAMESPACE/NAME", "" = off; a merge patch at the
 * resourceVersion read, re-read on 409). Another holder's Lease or lock is never written; a
 * namespace or DaemonSet that does not exist is nothing to do. Adds to st->locks. Returns 0 or
 * -errno with a one-line reason in @err.
 */
int cleanup_handoffs(struct kube_client *kc, const char *medik8s_ns, const char *kured_ds,
		     struct cleanup_stats *st, char *err, size_t err_size);

#endif
