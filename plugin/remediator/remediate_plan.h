/* SPDX-License-Identifier: MIT */
#ifndef CZ_REMEDIATE_PLAN_H
#define CZ_REMEDIATE_PLAN_H

/*
 * Remediation as a pure plan: (this node, its conditions, our slot Leases, the config, now, and
 * what earlier steps of this cycle found) -> the next steps. No I/O: remediate.c carries the
 * steps out, feeds what they found back into the input, and plans again until the plan is final.
 * Every guard of docs/design.md ("Remediation guards") lives here, so each is table-tested
 * (tests/unit/test_remediate_plan.c):
 *   - a listed condition (remediation.conditions, whoever set it) True for remediation.for, by
 *     the remediator's own clock: from when the remediator first saw one True (its annotation
 *     REMEDIATE_ANN_TRUE_SINCE, written the first cycle it sees one True without it, removed
 *     once none is), never from the lastTransitionTime the node writes (remediate_clock);
 *   - the node is not already unschedulable by someone else (then it is never touched, and
 *     never uncordoned: we uncordon only what we cordoned, after uncordon_after of recovery,
 *     timed by the same clock: REMEDIATE_ANN_RECOVERED_SINCE, when it first saw every listed
 *     condition False on a node it holds);
 *   - at most remediation.max_unavailable nodes (a number, or a percentage of all nodes, rounded
 *     down but at least 1) are held by cpuzombie at once, across the cluster: a node holds one of
 *     the Leases "cpuzombie-slot-0".."cpuzombie-slot-<N-1>" (lease.h), taken by create (409 =
 *     someone else has it) or by a resourceVersion-checked update of an expired slot whose holder
 *     is no longer cordoned by us, so two nodes can never take the last slot;
 *   - control-plane nodes are skipped unless remediation.allow_control_plane;
 *   - a drain that times out or is blocked leaves the node cordoned and is retried next cycle;
 *     the kured reboot sentinel is written only after a complete drain;
 *   - a protected pod holds a drain at most drain_timeout from the cordon: then the slot is
 *     given back (annotation REMEDIATE_ANN_GAVE_BACK, an Event) and the node stays cordoned,
 *     untouched, until its conditions recover; a slot still held after that (its release
 *     failed) is released again each cycle;
 *   - a node held past uncordon_after + drain_timeout from its cordon with a listed condition
 *     still True is reported (a Warning Event, once per cordon, and the annotation
 *     REMEDIATE_ANN_HELD_LONG until the uncordon), not silently held.
 * dry-run evaluates the same guards read-only (pause, storm, breaker, window, drain gap,
 * kured's and medik8s' locks, protected pods), says which would hold and why, or "would
 * cordon/drain", in one Event per episode, and changes nothing else but the clock's annotation
 * (without it dry-run could not tell `for` either).
 * The fleet guards (guard.h) hold before any slot is taken: a paused node (annotation) is left
 * as it is; a cluster-wide pause holds every action, uncordons included; the storm guard and a
 * tripped breaker hold new cordons and drains (uncordons of recovered nodes go on); outside the
 * maintenance window a new remediation is a dry-run; drain_gap spaces remediations out; the
 * breaker_max+1st remediation in breaker_window trips the breaker instead of starting. Each
 * remediation is recorded on the guard Lease (conditional update) before its cordon.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "remediator/guard.h"
#include "remediator/lease.h"

#define REMEDIATE_ANN_CORDONED "cpuzombie.io/cordoned"	/* present = cpuzombie cordoned it */
#define REMEDIATE_ANN_DRAINED "cpuzombie.io/drained"
#define REMEDIATE_ANN_ACTION "cpuzombie.io/last-action"
/* present = a protected pod held the drain past drain_timeout: the slot was given back */
#define REMEDIATE_ANN_GAVE_BACK "cpuzombie.io/slot-given-back"
/* the remediator's own clock (RFC 3339, whole seconds): when it first saw a listed condition
 * True (present while one is), and, on a node it cordoned, every listed condition False */
#define REMEDIATE_ANN_TRUE_SINCE "cpuzombie.io/true-since"
#define REMEDIATE_ANN_RECOVERED_SINCE "cpuzombie.io/recovered-since"
/* present = held past uncordon_after + drain_timeout with a listed condition True (the time
 * the CpuzombieHeldLong Event was first posted); removed at the uncordon */
#define REMEDIATE_ANN_HELD_LONG "cpuzombie.io/held-long"
#define REMEDIATE_PLAN_MAX 6				/* steps in one plan */

/* What a cycle amounted to. */
enum remediate_action {
	REM_NONE,		/* nothing to do */
	REM_WAITING,		/* problem, but a guard holds (budget full, for not reached...) */
	REM_SKIPPED,		/* problem, but this node is not ours to touch */
	REM_DRY_RUN,		/* would have acted */
	REM_CORDONED,
	REM_DRAINED,
	REM_DRAIN_INCOMPLETE,	/* cordoned, drain timed out or blocked: retried next cycle */
	REM_UNCORDONED,
	REM_PAUSED,		/* a person paused it: this node (annotation) or all (ConfigMap) */
	REM_HELD,		/* problem, but a fleet guard holds: storm, breaker, drain gap */
};

/* remediate_action_name - "none", "waiting", ... */
const char *remediate_action_name(enum remediate_action a);

/* One step for the executor. */
enum rem_op {
	REM_OP_LIST_LEASES,	/* fetch our slot Leases (+ the node count for a percentage) */
	REM_OP_READ_HOLDER,	/* fetch the node holding expired slot .slot: is it still ours? */
	REM_OP_TAKE_SLOT,	/* create slot .slot, or update it at the resourceVersion read */
	REM_OP_RENEW_SLOT,	/* renew our slot .slot (a failure only means a stale renewTime) */
	REM_OP_CORDON, /* PATCH unschedulable + our annotations at the node's resourceVersion */
	REM_OP_UNCORDON,	/* PATCH: unschedulable and our annotations removed */
	REM_OP_FORGET,		/* PATCH: our annotations removed, unschedulable left as it is */
	REM_OP_RELEASE_SLOTS,	/* DELETE every slot we hold */
	REM_OP_DRAIN,		/* evict the node's pods until done or drain_timeout (drain.h) */
	REM_OP_MARK_DRAINED,	/* PATCH: the drained annotation */
	REM_OP_SENTINEL,	/* create remediation.reboot_sentinel for kured */
	REM_OP_EVENT, /* post Event .event_type/.reason with the plan's message at .when_ms */
	REM_OP_READ_GUARDS,	/* GET the pause ConfigMap (and the guard Lease, breaker/gap on) */
	REM_OP_COUNT_FLEET,	/* list the selection's nodes: True per condition (storm guard) */
	REM_OP_RECORD,		/* conditional write of the guard Lease: this remediation starts */
	REM_OP_TRIP,		/* conditional write of the guard Lease: the breaker trips */
	REM_OP_HANDOFF,		/* take medik8s' Lease node-<name> (medik8s_lease_namespace) */
	REM_OP_KURED_LOCK,	/* take kured's node lock on its DaemonSet (kured_daemonset) */
	REM_OP_PEEK_HANDOFF,	/* dry-run: read medik8s' Lease node-<name>, take nothing */
	REM_OP_PEEK_PODS,	/* dry-run: list the node's pods: would a protected one block? */
	REM_OP_GIVE_BACK,	/* PATCH: the given-back annotation (a RELEASE_SLOTS follows) */
	REM_OP_CLOCK,		/* PATCH: our clock's annotations as remediate_clock() wants them */
	REM_OP_MARK_HELD_LONG,	/* PATCH: the held-long annotation */
	REM_OP_FIND_SLOT,	/* list our slot Leases (no node count): do we hold one still? */
};

struct rem_step {
	enum rem_op op;
	int slot;			/* TAKE/RENEW/READ_HOLDER/CORDON */
	const char *event_type;		/* EVENT: "Normal" or "Warning" */
	const char *reason;		/* EVENT */
	uint64_t when_ms;		/* EVENT */
	const char *cond_type;		/* CORDON: the condition that was True (borrowed) */
	uint64_t true_since_ms;		/* CLOCK: REMEDIATE_ANN_TRUE_SINCE (0: removed) */
	uint64_t recovered_since_ms;	/* CLOCK: REMEDIATE_ANN_RECOVERED_SINCE (0: removed) */
};

/* Outcome of a step whose result the plan needs. */
enum rem_outcome {
	REM_NOT_TRIED = 0,
	REM_DONE,
	REM_FAILED,
	REM_TIMED_OUT,		/* DRAIN: pods still there at drain_timeout (PDBs) */
	REM_BLOCKED,		/* DRAIN: pods with emptyDir and delete_emptydir_data false */
	REM_PROTECTED,		/* DRAIN: a protected pod (guard_pod_protected): nothing evicted */
	REM_PAUSED_MID,		/* DRAIN: paused between two rounds: stopped where it was */
};

struct rem_input {
	const struct cz_config *cfg;
	const char *node_name;
	json_object *node;		/* the Node as read this cycle; required */
	uint64_t now_ms;
	/* filled by the executor as the plan asks */
	bool leases_read;
	json_object *leases;		/* items of the slot Lease list (NULL when that failed) */
	int leases_err;			/* -errno when listing (or counting nodes) failed */
	size_t nodes_total;		/* for a percentage max_unavailable */
	uint8_t *slots;			/* enum rem_slot_fact per slot, nslots of them */
	size_t nslots;
	int slot_held;			/* the slot we took or renewed this cycle, -1 none */
	bool slot_tried;		/* a renewal or take was attempted this cycle */
	enum rem_outcome cordon, drain, mark_drained;
	int drain_left;			/* pods left (TIMED_OUT) or blocked (BLOCKED) */
	int err;			/* -errno of the failed step, for the plan's return */
	/* the fleet guards (guard.h) */
	bool guards_read;
	int guards_err;			/* -errno: the pause ConfigMap or guard Lease unreadable */
	bool cluster_paused;
	enum guard_kured kured;		/* kured's node lock as read (kured_daemonset) */
	const char *kured_holder;	/* OTHER, or take BLOCKED: whose (borrowed) */
	enum rem_outcome kured_take;	/* BLOCKED: someone else was first */
	struct guard_state guard;	/* the breaker and pacing, from the guard Lease */
	bool fleet_read;		/* with fleet NULL: it could not be counted */
	const struct guard_fleet *fleet;
	bool window_closed;		/* outside the maintenance window now */
	enum rem_outcome record, trip;
	enum rem_outcome handoff;	/* BLOCKED: another remediator holds the node */
	const char *handoff_holder;	/* BLOCKED: who (borrowed) */
	const char *drain_pod;		/* PROTECTED: "ns/name" of the pod (borrowed) */
	bool pods_peeked;		/* dry-run: PEEK_PODS done (drain PROTECTED: one is) */
	enum rem_outcome clock;		/* CLOCK: our annotations written as wanted */
	enum rem_outcome slot_found;	/* FIND_SLOT: DONE we hold one, FAILED unreadable,
					 * BLOCKED none held */
};

struct rem_plan {
	enum remediate_action action;
	struct rem_step steps[REMEDIATE_PLAN_MAX];
	size_t n;
	bool again;			/* carry the steps out, update the input, plan again */
	int ret;			/* when final: what the cycle returns (0 or -errno) */
	bool notable;			/* worth a log line: an action, a refusal, a full budget */
	char msg[480];			/* one line: what is happening and why */
};

/*
 * remediate_plan - pure: the next steps for @in. Always fills *@out (n may be 0). Final when
 * @out->again is false.
 */
void remediate_plan(const struct rem_input *in, struct rem_plan *out);

/* The remediator's own clock on a node (remediate_clock). */
struct rem_clock {
	uint64_t true_since_ms;		/* a listed condition True: since when (0: none True) */
	uint64_t recovered_since_ms;	/* ours, none True or Unknown: since when seen (0: not) */
	bool write;			/* the node's annotations say otherwise: write these */
};

/*
 * remediate_clock - pure: the remediator's clock on @node at @now_ms, from its listed
 * conditions @types as they are now and our annotations REMEDIATE_ANN_TRUE_SINCE and (@ours: a
 * node we cordoned) REMEDIATE_ANN_RECOVERED_SINCE. A time is kept while its state lasts; a
 * missing, unreadable or future one is @now_ms cut to the second (what the annotation can
 * hold); one whose state ended is 0 (removed). lastTransitionTime is never read: the node
 * writes it. Always fills *@ret.
 */
void remediate_clock(json_object *node, const struct cz_strlist *types, bool ours,
		     uint64_t now_ms, struct rem_clock *ret);

/*
 * remediate_problem - pure: is a condition of @types True on @node, and has one been True
 * (by the remediator's clock, @since_ms: remediate_clock's true_since_ms, 0 unknown) for at
 * least @for_ms at @now_ms? Returns true and the first True type in *@ret_type (borrowed from
 * @node); *@ret_any_true tells whether any listed condition is True at all (may be NULL).
 */
bool remediate_problem(json_object *node, const struct cz_strlist *types, uint64_t since_ms,
		       uint64_t for_ms, uint64_t now_ms, const char **ret_type, bool *ret_any_true);

/*
 * remediate_recovered - pure: no listed condition is True or Unknown, and they have been so
 * (by the remediator's clock, @since_ms: remediate_clock's recovered_since_ms, 0 unknown) for
 * at least @after_ms at @now_ms.
 */
bool remediate_recovered(json_object *node, const struct cz_strlist *types, uint64_t since_ms,
			 uint64_t after_ms, uint64_t now_ms);

/* remediate_holds_slot - pure: does a Lease of @items (a list's items) name @me its holder? */
bool remediate_holds_slot(json_object *items, const char *me);

/*
 * remediate_budget - pure: slots for @max_unavailable ("2" or "10%") among @total_nodes.
 * Returns the count (>= 1), or -EINVAL for a bad value.
 */
int remediate_budget(const char *max_unavailable, size_t total_nodes);

/* remediate_is_control_plane - pure: the node carries a control-plane or master role label. */
bool remediate_is_control_plane(json_object *node);

/*
 * remediate_cordon_reason - pure: the value of our cordoned annotation for a cordon at @now_ms
 * because @type was True for @for_ms, holding @slot. Returns @buf.
 */
char *remediate_cordon_reason(uint64_t now_ms, const char *type, uint64_t for_ms, int slot,
			      char *buf, size_t size);

/*
 * remediate_node_patch - pure: a strategic-merge patch of the node setting the annotations
 * @kv[0]=@kv[1], ... (@n strings; a NULL value deletes the key), and spec.unschedulable true
 * (@unschedulable 1), deleted (0) or untouched (-1); with @rv non-NULL, metadata.resourceVersion
 * (the PATCH then fails with 409 when the node changed). Returns a new object or NULL.
 */
json_object *remediate_node_patch(const char *const kv[], size_t n, int unschedulable,
				  const char *rv);

#endif
