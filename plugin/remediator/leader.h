/* SPDX-License-Identifier: MIT */
#ifndef CZ_LEADER_H
#define CZ_LEADER_H

/*
 * Leader election of `cpuzombie remediator`, pure: one coordination.k8s.io/v1 Lease
 * LEADER_LEASE in remediation.leader_namespace says which replica acts (a rollout runs two for
 * a while; only the holder may cordon, drain or take budget slots). The holder renews it every
 * LEADER_RENEW_MS; a Lease not renewed within its leaseDurationSeconds may be taken over. Every
 * write is conditional: a create answered 409, or an update at the resourceVersion read answered
 * 409, means another replica was first, and this one follows. remediator.c does the requests.
 * Expiry is judged from the Lease's renewTime by this replica's clock (nodes' clocks are kept
 * in step by NTP; a holder whose clock runs behind by more than the lease duration could be
 * taken over early, and the budget Leases still bound what two leaders could do).
 */

#include <json-c/json.h>
#include <stdint.h>

#define LEADER_LEASE "cpuzombie-remediator"
#define LEADER_SECONDS 30			/* leaseDurationSeconds */
#define LEADER_RENEW_MS 10000			/* a third of it */

enum leader_verdict {
	LEADER_CREATE,		/* no Lease: create it (409 = another replica was first) */
	LEADER_RENEW,		/* we hold it: update it (409 = it changed under us: follow) */
	LEADER_TAKE,		/* released or expired: update it at its resourceVersion */
	LEADER_FOLLOW,		/* another replica holds it and renewed it in time */
};

struct leader_decision {
	enum leader_verdict verdict;
	const char *holder;	/* FOLLOW: who leads (borrowed from the Lease; "" if unreadable) */
	uint64_t until_ms;	/* FOLLOW: when its hold ends unless renewed (0: cannot tell) */
};

/*
 * leader_decide - pure: what replica @me does about the leader Lease @lease as read (NULL:
 * there is none) at @now_ms. A holder whose renewTime (else acquireTime) cannot be read is
 * followed, never overthrown: a hold not provably over is a hold (delete the Lease to end it).
 * leaseDurationSeconds missing or not positive counts as LEADER_SECONDS.
 */
struct leader_decision leader_decide(json_object *lease, const char *me, uint64_t now_ms);

/*
 * leader_body - pure: the leader Lease held by @me ("" = released) at @now_ms, built on @old
 * (as read: its metadata and resourceVersion are kept, so the update is conditional) or new.
 * acquireTime is kept and leaseTransitions counted as client-go does. Returns a new object or
 * NULL (@old not an object, or out of memory).
 */
json_object *leader_body(const char *me, json_object *old, uint64_t now_ms);

/* leader_verdict_name - "create", "renew", "take", "follow". */
const char *leader_verdict_name(enum leader_verdict v);

#endif
