/* SPDX-License-Identifier: MIT */
#ifndef CZ_PODS_PUBLISH_H
#define CZ_PODS_PUBLISH_H

/*
 * The agent's half of memcg/pods.h: every UNITS_PUBLISH_MS, when it knows its node
 * (kubernetes.node_name / $NODE_NAME) and an API server (kubernetes.kubeconfig, else in
 * cluster), it lists this node's pods (GET /api/v1/pods?fieldSelector=spec.nodeName=NODE: RBAC
 * list pods, chart value agent.podNames) and publishes UID -> namespace/name in the run dir, so
 * `check memcg` in NPD's container names the pod whose cgroup holds the dying memcgs.
 */

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"

struct kube_client;

struct pods_publisher {
	uint64_t next_ms;		/* monotonic: next publication due (0: now) */
	struct kube_client *shared;	/* the Kubernetes side's client, when there is one */
	struct kube_client *kc;		/* else our own, made on first use */
	bool no_client;			/* it could not be made: no more attempts */
	int last_rc;			/* of the last attempt, to log changes only */
};

/*
 * pods_publish_due - list and publish when due and the node name is known. Returns 1 when it
 * published, 0 when not due or not configured, -errno when the API call or the write failed
 * (logged when the outcome changed).
 */
int pods_publish_due(struct pods_publisher *p, const struct cz_config *cfg, uint64_t mono_ms,
		     uint64_t now_ms);

/* pods_publisher_clear - free the client. */
void pods_publisher_clear(struct pods_publisher *p);

#endif
