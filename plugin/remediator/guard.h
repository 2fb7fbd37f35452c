/* SPDX-License-Identifier: MIT */
#ifndef CZ_GUARD_H
#define CZ_GUARD_H

/*
 * The fleet guards of remediation, pure (remediate_plan.c decides with them; remediate.c and
 * remediator.c read what they need from the API server):
 *   - storm guard: more nodes of the selection True for one listed condition than
 *     remediation.max_unhealthy (a count or a percentage of the selection; only in a selection
 *     of at least max_unhealthy_min_nodes, EKS auto repair's "more than 20% of a group of more
 *     than 5") remediates nothing: a fleet-wide cause is not a node problem;
 *   - circuit breaker: at most remediation.breaker_max remediations started in any
 *     remediation.breaker_window; the next one trips the breaker instead, which stays tripped
 *     (annotation GUARD_ANN_TRIPPED on the Lease GUARD_LEASE in lease_namespace) until a person
 *     removes that annotation: `kubectl -n <lease_namespace> annotate lease cpuzombie-guard
 *     cpuzombie.io/breaker-tripped-`. Tripping moves the history into the annotation, so the
 *     count starts afresh after the reset;
 *   - pause: the annotation GUARD_ANN_PAUSE on a node (that node is left exactly as it is), or
 *     the ConfigMap GUARD_PAUSE_CM in lease_namespace (every node); both stop a drain between
 *     two rounds, and nothing is uncordoned while paused;
 *   - pacing: at least remediation.drain_gap between two remediations started anywhere in the
 *     cluster (draino's drain buffer), kept on the same Lease (GUARD_ANN_LAST);
 *   - maintenance window: remediation.window_days/window_start/window_end in window_timezone
 *     (kured's reboot window); outside it a remediation is only a dry-run;
 *   - protected pods: cpuzombie.io/protect "true", or the cluster autoscaler's
 *     cluster-autoscaler.kubernetes.io/safe-to-evict "false", blocks the drain of its node;
 *   - hand-off with medik8s NodeHealthCheck: its per-node Lease "node-<name>" in
 *     remediation.medik8s_lease_namespace (medik8s/common pkg/lease/manager.go: a Lease is
 *     valid while renewTime + leaseDurationSeconds is not past and renewTime not in the future;
 *     a holder takes over an invalid one with an update, bumping leaseTransitions), taken by
 *     cpuzombie before a cordon and deleted at the uncordon;
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

#define GUARD_ANN_PAUSE "cpuzombie.io/pause"		/* on a node: leave it as it is */
#define GUARD_PAUSE_CM "cpuzombie-pause"		/* ConfigMap in lease_namespace */
#define GUARD_LEASE "cpuzombie-guard"			/* breaker and pacing, lease_namespace */
#define GUARD_ANN_TRIPPED "cpuzombie.io/breaker-tripped"
#define GUARD_ANN_HISTORY "cpuzombie.io/remediations"	/* "<ms> <node>;..." in the window */
#define GUARD_ANN_LAST "cpuzombie.io/last-remediation"	/* "<ms> <node>" */
#define GUARD_ANN_PROTECT "cpuzombie.io/protect"
#define GUARD_ANN_SAFE_TO_EVICT "cluster-autoscaler.kubernetes.io/safe-to-evict"
#define GUARD_MEDIK8S_PREFIX "node-"			/* medik8s/common: "<kind>-<name>" */
#define GUARD_MEDIK8S_HOLDER "cpuzombie"		/* our holderIdentity there */
#define GUARD_MEDIK8S_SECONDS 3600			/* the hold we take; renewed at half */
#define GUARD_KURED_LOCK "weave.works/kured-node-lock"	/* kured: on its DaemonSet */
#define GUARD_HISTORY_MAX 64				/* entries kept (breaker_max <= this) */
#define GUARD_RESET_HINT "kubectl -n %s annotate lease " GUARD_LEASE " " GUARD_ANN_TRIPPED "-"

/* True nodes per listed condition among the nodes of the selection. */
struct guard_fleet {
	size_t covered;			/* nodes the selector covers */
	size_t true_n[CZ_LIST_MAX];	/* per remediation.conditions entry */
};

/* guard_fleet_add - pure: count @node into @f (a condition of @types True, any duration). */
void guard_fleet_add(struct guard_fleet *f, json_object *node, const struct cz_strlist *types);

/*
 * guard_unhealthy_limit - pure: the most True nodes @max_unhealthy ("3" or "20%", rounded
 * down) allows among @covered. Returns the count, or -EINVAL for a bad value.
 */
long guard_unhealthy_limit(const char *max_unhealthy, size_t covered);

/*
 * guard_storm - pure: the index (into @cfg->remediation.conditions) of the first condition True
 * on more nodes of @f than allowed, or -1 (none, or the selection is smaller than
 * max_unhealthy_min_nodes). With one, "<n> of <covered> nodes ... " is written into @why.
 */
int guard_storm(const struct guard_fleet *f, const struct cz_config *cfg, char *why, size_t size);

/* The breaker and pacing, as read from the guard Lease. */
struct guard_state {
	bool tripped;
	char tripped_why[256];		/* the annotation's value (sanitised, cut) */
	size_t recent;			/* remediations started within breaker_window */
	uint64_t last_ms;		/* the last start anywhere (0: none recorded) */
	char last_node[64];
};

/* guard_state_read - pure: @lease (NULL: there is none) at @now_ms with @window_ms. */
void guard_state_read(json_object *lease, uint64_t now_ms, uint64_t window_ms,
		      struct guard_state *ret);

/*
 * guard_record_body - pure: the guard Lease (built on @old as read, keeping its metadata and
 * resourceVersion, or new) with a remediation of @node at @now_ms added to the history (entries
 * older than @window_ms dropped, at most GUARD_HISTORY_MAX kept) and as the last one. Returns a
 * new object or NULL.
 */
json_object *guard_record_body(json_object *old, const char *node, uint64_t now_ms,
			       uint64_t window_ms);

/*
 * guard_trip_body - pure: the guard Lease built on @old with the breaker tripped at @now_ms
 * (@why) and the history cleared. Returns a new object or NULL.
 */
json_object *guard_trip_body(json_object *old, uint64_t now_ms, const char *why);

/* guard_paused_node - pure: @node carries GUARD_ANN_PAUSE (any value but "false"). */
bool guard_paused_node(json_object *node);

/*
 * guard_window_open - pure: is local weekday @wday (0 = Sunday) at @minute of the day inside
 * the maintenance window of @cfg? No window_days and no start/end: always.
 */
bool guard_window_open(const struct cz_config *cfg, int wday, int minute);

/* guard_parse_hhmm - pure: "HH:MM" (00:00..24:00) as minutes of the day, or -EINVAL. */
int guard_parse_hhmm(const char *s);

/* guard_day_index - pure: "mon".."sun" (any case, or full names) as 0 = Sunday.., or -EINVAL. */
int guard_day_index(const char *s);

/*
 * guard_local - the weekday and minute of @now_ms in @zone (TZ database via the C library:
 * TZ is set once for the process, at the first call: call it before starting threads).
 * Returns 0 or -EINVAL (an unknown zone: /usr/share/zoneinfo/<zone> is missing).
 */
int guard_local(const char *zone, uint64_t now_ms, int *ret_wday, int *ret_minute);

/* guard_zone_ok - pure on the name, then: the zone exists in the TZ database. */
bool guard_zone_ok(const char *zone);

/*
 * guard_pod_protected - pure: @pod asks not to be evicted (GUARD_ANN_PROTECT "true", or
 * GUARD_ANN_SAFE_TO_EVICT "false").
 */
bool guard_pod_protected(json_object *pod);

/*
 * guard_medik8s_valid - pure: medik8s' isValidLease(): @lease has renewTime and
 * leaseDurationSeconds, renewTime is not after @now_ms and renewTime + duration is not before.
 */
bool guard_medik8s_valid(json_object *lease, uint64_t now_ms);

/*
 * guard_medik8s_body - pure: the Lease node-@node held by GUARD_MEDIK8S_HOLDER at @now_ms,
 * owned by the Node (@node_uid may be NULL), built on @old (as read: metadata and
 * resourceVersion kept, leaseTransitions bumped when the holder changes) or new. Returns a new
 * object or NULL.
 */
json_object *guard_medik8s_body(json_object *old, const char *node, const char *node_uid,
				uint64_t now_ms);

/*
 * guard_kured_locked - pure: kured's node lock @value (the annotation GUARD_KURED_LOCK, JSON as
 * kured's pkg/daemonsetlock writes it: {"nodeID", "metadata", "created" RFC 3339, "TTL" in ns,
 * 0 = none}, or its multi-lock {"maxOwners", "locks": [...]}) holds @node at @now_ms (created +
 * TTL not past). A value that cannot be read holds every node (kured's own lock, unreadable:
 * we cannot tell which node it is rebooting).
 */
bool guard_kured_locked(const char *value, const char *node, uint64_t now_ms);

/*
 * Taking kured's lock. cpuzombie writes its own entry the way kured's Acquire() does (nodeID,
 * created, TTL) plus "holder": GUARD_KURED_HOLDER, which tells our entry from kured's own on the
 * same node (Go's encoding/json ignores the unknown key when kured reads it). Its
 * metadata.unschedulable is true: kured, finding at its start-up a lock that names its node,
 * uncordons the node unless that is true (cmd/kured rebootAsRequired), and the cordon is ours.
 * The TTL (GUARD_KURED_TTL_MS) bounds a lock left behind by a cpuzombie that died; it is renewed
 * while cpuzombie holds the node.
 */
#define GUARD_KURED_HOLDER "cpuzombie"
#define GUARD_KURED_TTL_MS (3600ull * 1000)

enum guard_kured {
	GUARD_KURED_FREE,	/* no lock, expired, or room in the multi-lock (maxOwners) */
	GUARD_KURED_OURS,	/* cpuzombie's entry for @node */
	GUARD_KURED_HERE,	/* kured's own entry for @node: kured is rebooting it */
	GUARD_KURED_OTHER,	/* held for other nodes (or unreadable): one node at a time */
};

/*
 * guard_kured_state - pure: what kured's lock @value (NULL: no annotation) means for @node at
 * @now_ms; for OTHER, the holders ("n2" or "n2,n3", "unreadable") in @holder.
 */
enum guard_kured guard_kured_state(const char *value, const char *node, uint64_t now_ms,
				   char *holder, size_t size);

/*
 * guard_kured_take - pure: the annotation value with @node's lock taken by cpuzombie at @now_ms
 * (single lock: replaced; multi-lock: expired entries dropped when full, as kured's
 * canAcquireMultiple(), ours appended or renewed). NULL when the state is not FREE or OURS.
 */
char *guard_kured_take(const char *value, const char *node, uint64_t now_ms);

/*
 * guard_kured_release - pure: the annotation value without cpuzombie's entry for @node (NULL:
 * cpuzombie's entries for every node, `cpuzombie cleanup`). NULL
 * when there is none of ours (nothing to write: never someone else's lock); else a new string,
 * "" meaning "remove the annotation" (the single lock was ours).
 */
char *guard_kured_release(const char *value, const char *node);

#endif
