/* SPDX-License-Identifier: MIT */
#ifndef CZ_CONDITIONS_H
#define CZ_CONDITIONS_H

/*
 * Node conditions from check results (docs/design.md, "Node conditions"): one condition type
 * per check, status True = problem, False = OK, Unknown = we could not tell (reason as NPD does:
 * the False reason). conditions_build_patch() is pure: node JSON + results in, strategic-merge
 * patch of nodes/status out.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/npd.h"

struct cond_def {
	const char *check;		/* "memcg" */
	const char *type;		/* "MemcgZombieLeak" */
	const char *reason_true;	/* "ZombieMemcgsHigh" */
	const char *reason_false;	/* "ZombieMemcgsNormal" */
};

/* conditions_for_check - the condition of check @check, or NULL (ena-allowance is an event). */
const struct cond_def *conditions_for_check(const char *check);

/* conditions_nth - our @i-th condition type (0, 1, 2), or NULL past the last. */
const struct cond_def *conditions_nth(size_t i);

/* conditions_reason - the reason a condition of @d with status @s carries. */
const char *conditions_reason(const struct cond_def *d, enum npd_status s);

/* A result to publish. */
struct cond_input {
	const struct cond_def *def;
	enum npd_status status;
	const char *message;
};

/* What changed, for Events. */
struct cond_change {
	const struct cond_def *def;
	const char *old_status;		/* "True", "False", "Unknown" or "" when new; static */
	const char *new_status;
};

/*
 * conditions_build_patch - the body of a strategic merge PATCH of nodes/NAME/status that sets one
 * condition per input: {"status":{"conditions":[...]}} (merged by type, so other conditions stay).
 * lastHeartbeatTime is @now; lastTransitionTime is kept from @node's condition of the same type
 * unless its status differs (then @now). @node is the Node as read (may be NULL: all new).
 * @changes (capacity @n, may be NULL) receives the status flips, *@ret_nchanges their count.
 * Returns 0 and a new object in *@ret_patch (caller puts it), or -EINVAL (bad input) / -ENOMEM.
 */
int conditions_build_patch(json_object *node, const struct cond_input in[], size_t n,
			   uint64_t now_ms, json_object **ret_patch, struct cond_change *changes,
			   size_t *ret_nchanges);

struct cz_config;

/* conditions_recover_after - <check>.recover_after of @cfg in ms (0 for a check without one). */
uint64_t conditions_recover_after(const struct cz_config *cfg, const char *check);

/* conditions_enabled - <check>.condition of @cfg (true for a check without the key). */
bool conditions_enabled(const struct cz_config *cfg, const char *check);

/*
 * conditions_build_removal - the body of a strategic merge PATCH of nodes/NAME/status that
 * removes from @node (as read) each of our condition types for which @keep(@cfg, check) is
 * false and that the node has: {"status":{"conditions":[{"type":T,"$patch":"delete"},...]}}.
 * Merged by type: no other condition is touched (KernelReady, NetworkingReady, Ready stay).
 * @keep NULL removes every type of ours (cleanup). Returns how many types it removes (0: no
 * patch, *@ret_patch NULL) with the types' names in @ret_types (capacity 3, may be NULL), or
 * -ENOMEM.
 */
int conditions_build_removal(json_object *node, const struct cz_config *cfg,
			     bool (*keep)(const struct cz_config *cfg, const char *check),
			     json_object **ret_patch, const char *ret_types[]);

/* conditions_status_name - "False", "True" or "Unknown" for an NPD status. */
const char *conditions_status_name(enum npd_status s);

#endif
