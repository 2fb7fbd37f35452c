/* SPDX-License-Identifier: MIT */
/* Drain, the pure part: see drain.h. What kubectl drain skips: k8s.io/kubectl/pkg/drain. */
#include "base/util.h"
#include "remediator/drain.h"
#include "base/kjson.h"

static bool has_emptydir(json_object *pod)
{
	json_object *vols = kube_get_array(pod, "spec.volumes");

	for (size_t i = 0; vols && i < json_object_array_length(vols); i++)
		if (kube_get(json_object_array_get_idx(vols, i), "emptyDir"))
			return true;
	return false;
}

static bool daemonset_pod(json_object *pod)
{
	json_object *refs = kube_get_array(pod, "metadata.ownerReferences");

	for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
		json_object *o = json_object_array_get_idx(refs, i), *c = kube_get(o, "controller");

		if (c && json_object_get_boolean(c) &&
		    streq(kube_get_str(o, "kind", ""), "DaemonSet"))
			return true;	/* would be recreated on this node anyway */
	}
	return false;
}

enum drain_pod drain_pod_disposition(json_object *pod, const struct cz_config *cfg)
{
	const char *phase = kube_get_str(pod, "status.phase", "");

	if (kube_annotation(pod, "kubernetes.io/config.mirror"))
		return DRAIN_POD_SKIP;	/* a static pod's mirror: the kubelet owns it */
	if (streq(phase, "Succeeded") || streq(phase, "Failed"))
		return DRAIN_POD_SKIP;	/* finished: nothing to move */
	if (daemonset_pod(pod))
		return DRAIN_POD_SKIP;
	if (has_emptydir(pod) && !cfg->remediation.delete_emptydir_data)
		return DRAIN_POD_BLOCKED;
	if (kube_get(pod, "metadata.deletionTimestamp"))
		return DRAIN_POD_LEAVING;
	return DRAIN_POD_EVICT;
}

enum drain_evicted drain_eviction_outcome(long status, const struct cz_config *cfg)
{
	if (status == 200 || status == 201 || status == 404)
		return DRAIN_EVICTED;
	if (status == 429)
		return DRAIN_RETRY;
	return cfg->remediation.allow_delete ? DRAIN_DELETE : DRAIN_EVICT_FAILED;
}

enum drain_round drain_round_verdict(int left, int blocked, int failed, uint64_t now_ms,
				     uint64_t backoff_ms, uint64_t deadline_ms)
{
	if (failed)
		return DRAIN_ROUND_FAILED;
	if (blocked)
		return DRAIN_ROUND_BLOCKED;
	if (left == 0)
		return DRAIN_ROUND_DONE;
	return now_ms + backoff_ms > deadline_ms ? DRAIN_ROUND_TIMED_OUT : DRAIN_ROUND_AGAIN;
}

uint64_t drain_next_backoff(uint64_t backoff_ms)
{
	return backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
}

bool drain_names_ok(const char *ns, const char *name)
{
	return valid_name(ns, 253) && valid_name(name, 253);
}
