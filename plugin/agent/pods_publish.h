/* SPDX-License-Identifier: MIT */
#ifndef CZ_PODS_PUBLISH_H
#define CZ_PODS_PUBLISH_H

/*
 * The agent's half of memcg/pods.h: every UNITS_PUBLISH_MS it lists the kubelet's pod log
 * directories (paths.pod_logs, /var/log/pods/NAMESPACE_NAME_UID; the chart mounts the host's
 * read-only, chart value agent.podNames) and publishes UID -> namespace/name in the run dir, so
 * `check memcg` in NPD's container names the pod whose cgroup holds the dying memcgs. What the
 * node itself has: no API call, no RBAC grant (no `list pods`, on the node or cluster-wide).
 * The directory names only are read, never a log.
 */

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"

#define PODS_DIRS_MAX 10000	/* directories read at most; the kubelet runs up to 110 pods */

struct pods_publisher {
	uint64_t next_ms;		/* monotonic: next publication due (0: now) */
	int last_rc;			/* of the last attempt, to log changes only */
};

/*
 * pods_publish_due - list and publish when due and paths.pod_logs is set. Returns 1 when it
 * published, 0 when not due, not configured or the directory does not exist (no kubelet on
 * this host: nothing is logged), -errno when the directory could not be read or
 * the write failed (logged when the outcome changed).
 */
int pods_publish_due(struct pods_publisher *p, const struct cz_config *cfg, uint64_t mono_ms,
		     uint64_t now_ms);

/* pods_publisher_clear - nothing is held; kept for the agent's teardown. */
void pods_publisher_clear(struct pods_publisher *p);

#endif
