/* SPDX-License-Identifier: MIT */
#ifndef CZ_CONDWRITE_H
#define CZ_CONDWRITE_H

/*
 * When the agent writes its node's conditions (docs/design.md, "Writing on change or
 * heartbeat"): a condition is written when its status or reason differs from what the node
 * has, else once per heartbeat (agent.heartbeat), as kubelet writes node status and NPD's
 * exporter its conditions. A message that alone changed (a count in it) is carried by the
 * next write, as NPD's custom plugins do with enable_message_change_based_condition_update
 * false (the shipped NPD configs): a busy node's dying-memcg count moves every cycle. The
 * first heartbeat after the start falls at start + jitter, a point of the first heartbeat
 * chosen at random by the caller, so agents started together spread their writes over it.
 * Pure: no clock, no randomness, no I/O; the caller reads the node and sends the PATCH.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "condition/conditions.h"

#define CONDWRITE_MAX 3		/* our condition types (conditions.h) */

/* What the node has of one condition type, as far as the agent knows. */
struct condwrite_slot {
	const struct cond_def *def;	/* NULL: unused slot */
	bool known;			/* the node has it; @said is what it says */
	uint64_t said;			/* condwrite_hash of its status and reason */
	uint64_t due_ms;		/* its next heartbeat write (the caller's clock) */
};

struct condwrite {
	uint64_t heartbeat_ms;		/* > 0 */
	uint64_t first_ms;		/* the first heartbeat: start + jitter */
	struct condwrite_slot slot[CONDWRITE_MAX];
};

/*
 * condwrite_init - a fresh schedule started at @start_ms, agent.heartbeat @heartbeat_ms
 * (0 is taken as 1 ms), first heartbeat at @start_ms + (@seed % @heartbeat_ms): @seed is the
 * caller's random number (a fixed @seed of 0 makes the first heartbeat due at once, for a
 * one-shot run). Nothing is known of the node until condwrite_learn.
 */
void condwrite_init(struct condwrite *w, uint64_t heartbeat_ms, uint64_t start_ms,
		    uint64_t seed);

/* condwrite_jitter - the offset of the first heartbeat after the start that @seed chooses. */
uint64_t condwrite_jitter(uint64_t heartbeat_ms, uint64_t seed);

/*
 * condwrite_hash - pure: a 64-bit FNV-1a of @status and @reason (NULL as ""), each followed
 * by a NUL, so that ("a", "bc") and ("ab", "c") differ.
 */
uint64_t condwrite_hash(const char *status, const char *reason);

/*
 * condwrite_learn - what @node (as read, or as a PATCH answered it; NULL: nothing) says of
 * each of our condition types replaces what was known. A slot keeps its due time, so a
 * re-read does not move the heartbeat; a slot never scheduled gets the first heartbeat.
 */
void condwrite_learn(struct condwrite *w, json_object *node);

/*
 * condwrite_decide - which of @in (@n results, each of a condition type of ours) to write at
 * @now_ms: bit i of the result is set when @in[i]'s status or reason is not the node's (a
 * change: *@ret_changed gets the same bit) or its heartbeat is due. 0: nothing to write.
 * A write carries every @in (one PATCH either way): the caller writes all of them when the
 * result is not 0. Results beyond 32 or without a def are ignored.
 */
uint32_t condwrite_decide(const struct condwrite *w, const struct cond_input in[], size_t n,
			  uint64_t now_ms, uint32_t *ret_changed);

/*
 * condwrite_written - @in (@n) were written at @now_ms (the PATCH answered 200): each is
 * known to say what it said, and its next heartbeat is @now_ms + heartbeat.
 */
void condwrite_written(struct condwrite *w, const struct cond_input in[], size_t n,
		       uint64_t now_ms);

/*
 * condwrite_next_due - the earliest heartbeat among the slots of @in (@n), for a log line;
 * UINT64_MAX when none.
 */
uint64_t condwrite_next_due(const struct condwrite *w, const struct cond_input in[], size_t n);

#endif
