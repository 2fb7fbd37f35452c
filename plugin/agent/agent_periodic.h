/* SPDX-License-Identifier: MIT */
#ifndef CZ_AGENT_PERIODIC_H
#define CZ_AGENT_PERIODIC_H

/*
 * The agent's work every agent.check_interval: run the checks that map to node conditions, hand
 * their results to the Kubernetes side (kube_agent.h: conditions, events, remediation) when it
 * is configured, run the memcg read-latency canary (rate-limited by memcg.latency_canary), and
 * write the Prometheus textfile (agent.metrics_textfile) when it is configured. Check results
 * that change are logged (journald fields CHECK=, see log.h).
 *
 * It runs in a thread of its own, so a slow API server or a drain that waits out a
 * PodDisruptionBudget for minutes never stalls the sampler (a gap in the history, a stale
 * heartbeat, a missed systemd watchdog). The checks only read the host and the run dir, and
 * keep their state in the state dir under its locks, exactly as when NPD runs them.
 */

#include <stdbool.h>

#include "check/cz.h"

struct periodic;

/*
 * periodic_new - set up the Kubernetes client when agent.set_conditions or a remediation mode
 * asks for it. A client that cannot be set up is logged and left out (the sampler keeps
 * running). *@ret is NULL when there is nothing to do every interval (no Kubernetes work and no
 * metrics textfile). @once: `agent --once` (its cycle runs in the caller's thread, and reports
 * a failure to set Kubernetes up in its exit code). Returns 0 or -ENOMEM.
 */
int periodic_new(struct cz_ctx *ctx, bool once, struct periodic **ret);

/*
 * periodic_cycle - one cycle now, in the caller's thread (agent --once: the Kubernetes summary
 * line goes to stdout). Returns 0, or -errno when Kubernetes could not be set up, the API server
 * could not be used, or the metrics could not be written.
 */
int periodic_cycle(struct periodic *p);

/* periodic_start - run periodic_cycle every agent.check_interval in a thread. Returns 0/-errno. */
int periodic_start(struct periodic *p);

/*
 * periodic_kick - from the sampler's thread: publish the conditions of @what (agent/trigger.h)
 * now, in the periodic thread, between its cycles. Non-blocking (a cycle in progress finishes
 * first). A no-op without a started thread or without agent.set_conditions.
 */
void periodic_kick(struct periodic *p, unsigned what);

/*
 * periodic_free - stop the thread (waiting at most a few seconds for a cycle in progress: a
 * drain interrupted here is resumed safely by the next agent, which finds its Lease and
 * annotation) and free. Accepts NULL.
 */
void periodic_free(struct periodic *p);

#endif
