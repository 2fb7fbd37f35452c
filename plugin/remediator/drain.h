/* SPDX-License-Identifier: MIT */
#ifndef CZ_DRAIN_H
#define CZ_DRAIN_H

/*
 * Drain, the pure part: which pods must go and what an eviction's answer means. remediate.c does
 * the requests, in rounds: list the node's pods, evict each that must go (policy/v1 Eviction),
 * then wait with backoff and list again, until none is left or drain_timeout. DaemonSet pods
 * (recreated here anyway), mirror pods (the kubelet owns them) and finished pods stay; a pod with
 * emptyDir blocks the drain unless delete_emptydir_data; a 429 is a PodDisruptionBudget saying
 * "not now" (retried next round); a plain DELETE only with allow_delete, and only when the
 * eviction itself was refused otherwise.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"

enum drain_pod {
	DRAIN_POD_SKIP,		/* stays: DaemonSet, mirror or finished pod */
	DRAIN_POD_BLOCKED,	/* has emptyDir and remediation.delete_emptydir_data is false */
	DRAIN_POD_LEAVING,	/* already being deleted: wait for it */
	DRAIN_POD_EVICT,	/* must go */
};

/* drain_pod_disposition - pure: what to do with @pod (any shape tolerated). */
enum drain_pod drain_pod_disposition(json_object *pod, const struct cz_config *cfg);

enum drain_evicted {
	DRAIN_EVICTED,		/* evicted or already gone */
	DRAIN_RETRY,		/* 429: a PodDisruptionBudget forbids it now; try next round */
	DRAIN_DELETE,		/* refused otherwise, and allow_delete: DELETE it */
	DRAIN_EVICT_FAILED,	/* refused otherwise: the pod stays */
};

/* drain_eviction_outcome - pure: the meaning of HTTP @status to an Eviction POST. */
enum drain_evicted drain_eviction_outcome(long status, const struct cz_config *cfg);

enum drain_round {
	DRAIN_ROUND_DONE,	/* nothing left to evict */
	DRAIN_ROUND_BLOCKED,	/* emptyDir pods and no permission to delete their data */
	DRAIN_ROUND_AGAIN,	/* pods left: wait @backoff_ms and list again */
	DRAIN_ROUND_TIMED_OUT,	/* pods left and the next round would pass @deadline_ms */
	DRAIN_ROUND_FAILED,	/* an eviction was refused for good (403, 422, ...): stop now */
};

/*
 * drain_round_verdict - pure: after a round that left @left pods (and found @blocked blocked
 * ones, and had @failed evictions refused with an answer that waiting does not change: not a
 * 429) at @now_ms, with @backoff_ms to wait before the next, and @deadline_ms. A refusal ends
 * the drain at once: retrying a 403 until drain_timeout only holds the remediator up and, at
 * the end, would blame a PodDisruptionBudget.
 */
enum drain_round drain_round_verdict(int left, int blocked, int failed, uint64_t now_ms,
				     uint64_t backoff_ms, uint64_t deadline_ms);

/* drain_next_backoff - pure: the wait after @backoff_ms: doubled, at most 5 s. */
uint64_t drain_next_backoff(uint64_t backoff_ms);

/* drain_names_ok - pure: @ns and @name may go into a URL path and a JSON string unescaped (only
 * what the API server itself allows in names: never "", "..", '/', '"' or '?'). */
bool drain_names_ok(const char *ns, const char *name);

#endif
