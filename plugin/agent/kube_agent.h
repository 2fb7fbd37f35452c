/* SPDX-License-Identifier: MIT */
#ifndef CZ_KUBE_AGENT_H
#define CZ_KUBE_AGENT_H

/*
 * The agent's Kubernetes side, one call per agent.check_interval:
 *   1. agent.set_conditions: patch this node's conditions from the cycle's check results
 *      (conditions.h) and post an Event for every status flip;
 *   2. remediation.mode != off and agent.remediate: one remediation decision (remediate.h),
 *      acting on the node's conditions as they are now on the API server, whoever set them;
 *      with agent.remediate false `cpuzombie remediator` remediates (the chart: the agent then
 *      holds no right to cordon, evict or take a Lease), and the agent only hands a node the
 *      remediator drained to kured (remediation.reboot_sentinel, once per drain).
 * The agent loop (agent.c) owns timing; this owns the API client. Nothing here is used by checks.
 */

#include <stdbool.h>
#include <stddef.h>

#include "base/npd.h"
#include "check/cz.h"
#include "remediator/remediate_plan.h"

struct kube_agent;

/* kube_agent_remediates - does the agent remediate its own node (mode not off, agent.remediate)? */
bool kube_agent_remediates(const struct cz_config *cfg);

/* kube_agent_hands_off - does the agent write kured's sentinel for the remediator's drains? */
bool kube_agent_hands_off(const struct cz_config *cfg);

/*
 * kube_agent_new - a client from @cfg->kubernetes (kubeconfig or in-cluster), for node
 * @cfg->kubernetes.node_name. Returns 0, or -EINVAL (no node name, bad kubeconfig), -ENOENT (not
 * in a cluster), -ENOMEM; the reason is logged.
 * Nothing is allocated when both set_conditions is false and remediation is off: *@ret is NULL
 * and 0 is returned, and kube_agent_cycle(NULL, ...) is a no-op.
 */
int kube_agent_new(const struct cz_config *cfg, struct kube_agent **ret);

/* kube_agent_client - its API client, for other periodic work to share (NULL for NULL). */
struct kube_client *kube_agent_client(struct kube_agent *ka);

/*
 * kube_agent_set_once - a one-shot run (agent --once): no later cycle will come, so the
 * conditions' heartbeat is due at the first publish instead of at a jittered point of the
 * first agent.heartbeat. Accepts NULL.
 */
void kube_agent_set_once(struct kube_agent *ka);

/* kube_agent_free - accepts NULL. */
void kube_agent_free(struct kube_agent *ka);

/*
 * kube_agent_cycle - publish results and remediate once. @checks[i] names the check that produced
 * @res[i] ("memcg", "cpu", "ena"; others are ignored). Blocks up to about remediation.drain_timeout
 * while draining. Writes one line describing the cycle into @summary. Returns 0, or -errno when
 * the API server could not be used (logged).
 */
int kube_agent_cycle(struct kube_agent *ka, struct cz_ctx *ctx, const char *const checks[],
		     const struct npd_result res[], size_t n, char *summary, size_t summary_size);

/*
 * kube_agent_publish - the condition PATCH, its one entry point: kube_agent_cycle calls it each
 * check_interval, and agent/trigger.h for a condition whose evidence just appeared. With
 * agent.set_conditions only (0 for NULL or set_conditions off): reads this node when it is not
 * known (the start, after a 409 or a failed write: the PATCH's answer is the node otherwise),
 * removes our conditions whose <check>.condition is false (strategic-merge "$patch: delete" by
 * type: no other type is touched), and when a result says something the node does not have or
 * agent.heartbeat is due (condition/condwrite.h) patches one condition per enabled result in
 * @checks/@res (@n; only checks that ran: never a False before a check) and posts an Event per
 * status flip, aggregated (kube/event.h). One line into @out. Returns 0 or -errno (logged).
 */
int kube_agent_publish(struct kube_agent *ka, const char *const checks[],
		       const struct npd_result res[], size_t n, char *out, size_t size);

/* kube_agent_last_action - what remediation did in the last cycle. */
enum remediate_action kube_agent_last_action(const struct kube_agent *ka);

#endif
