/* SPDX-License-Identifier: MIT */
#ifndef CZ_LEASE_H
#define CZ_LEASE_H

/*
 * The cluster-wide remediation budget as coordination.k8s.io/v1 Leases "cpuzombie-slot-0" ..
 * "cpuzombie-slot-<N-1>" in remediation.lease_namespace, labelled managed-by=cpuzombie: a node
 * holds at most one. This is the pure model (which slot to take, the Lease body); remediate.c
 * does the requests. A slot is free when it does not exist (create: 409 = another node was
 * first), has no holder, or expired (renewTime + LEASE_SECONDS) with its holder no longer
 * cordoned by us; an update is conditional on the resourceVersion read, so two nodes never take
 * the same slot.
 */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define LEASE_PREFIX "cpuzombie-slot-"
#define LEASE_SECONDS 600

/* What the executor learned about slot i this cycle (rem_input.slots of remediate_plan.h). */
enum rem_slot_fact {
	REM_SLOT_UNKNOWN = 0,
	/* its expired holder is still cordoned by cpuzombie (or unreadable) */
	REM_SLOT_HOLDER_HELD,
	REM_SLOT_HOLDER_GONE,	/* its expired holder is not held any more: the slot may be taken */
	REM_SLOT_LOST,		/* our write answered 409 (another node was first) or failed */
};

#define LEASE_LABEL_SELECTOR "app.kubernetes.io%2Fmanaged-by%3Dcpuzombie"

enum lease_pick_kind {
	LEASE_OURS,		/* we already hold .slot: renew it */
	LEASE_TAKE,		/* .slot is free: take it */
	LEASE_CHECK_HOLDER,	/* .slot expired: is its holder still held by cpuzombie? */
	LEASE_FULL,		/* every slot is held */
};

struct lease_pick {
	enum lease_pick_kind kind;
	int slot;
	json_object *lease;	/* the slot's Lease as listed (borrowed) or NULL: none yet */
	const char *holder;	/* CHECK_HOLDER: the holder's node name (a valid name; borrowed) */
};

/*
 * lease_pick - pure: the slot node @me should take among @budget slots, given the listed Leases
 * @items (an array; entries of any shape are tolerated), @now_ms, and what was learned this
 * cycle: @facts[i] (enum rem_slot_fact above, @nfacts of them; missing = unknown).
 */
struct lease_pick lease_pick(json_object *items, int budget, const char *me, uint64_t now_ms,
			     const uint8_t *facts, size_t nfacts);

/*
 * lease_body - pure: the Lease @name held by @me, renewed at @now_ms (MicroTime); built on @old
 * (as listed: its metadata and resourceVersion are kept, so the update is conditional) or new.
 * acquireTime is kept while the holder stays the same. Returns a new object, or NULL (@old not
 * an object, or out of memory).
 */
json_object *lease_body(const char *name, const char *me, json_object *old, uint64_t now_ms);

/* lease_named - pure: the Lease called @name in @items, or NULL. Borrowed. */
json_object *lease_named(json_object *items, const char *name);

#endif
