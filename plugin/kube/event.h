/* SPDX-License-Identifier: MIT */
#ifndef CZ_EVENT_H
#define CZ_EVENT_H

/*
 * core/v1 Events about our Node: what `kubectl describe node` shows. The body is built purely
 * (event_body); event_post sends it. The name is derived from node, reason and time, so a create
 * retried after a lost answer yields 409 AlreadyExists (counted as done), and a dry-run Event
 * timed at the start of its episode is posted once per episode.
 */

#include <json-c/json.h>
#include <stdint.h>

struct kube_client;

/* What an Event says. */
struct event_desc {
	const char *node;	/* Node name */
	const char *node_uid;	/* may be NULL */
	const char *type;	/* "Normal" or "Warning" */
	const char *reason;	/* "CpuzombieCordon" */
	const char *message;
	uint64_t when_ms;	/* first/lastTimestamp, and part of the name */
};

/* event_body - pure: the Event object for @d in namespace "default", source "cpuzombie". Returns
 * a new object (caller puts it) or NULL on allocation failure. */
json_object *event_body(const struct event_desc *d);

/*
 * event_post - create the Event for @d. Returns 0 (also on 409: a retry landed), -errno when no
 * answer came, or -EREMOTEIO on another HTTP status; a failure is logged (", ignoring": an Event
 * is never worth failing a cycle for, so callers usually ignore the result).
 */
int event_post(struct kube_client *kc, const struct event_desc *d);

#endif
