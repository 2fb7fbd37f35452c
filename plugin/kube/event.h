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
#include <stddef.h>
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

/* event_name - the name event_body gives @d's Event, into @buf of @size (>= 320). */
void event_name(const struct event_desc *d, char *buf, size_t size);

/*
 * Aggregation, as client-go's EventCorrelator does it (tools/record): an Event that repeats one
 * already posted about the same object (same type, reason and message) within
 * EVENT_SERIES_WINDOW_MS of its last occurrence is not created again: the Event posted first
 * is PATCHed, its count raised and its lastTimestamp moved. A condition that flaps thus makes
 * one Event per status and message while it flaps, whose count says how often. The cache is
 * the caller's (one per API client), EVENT_SERIES_MAX series, the least recent one replaced.
 */
#define EVENT_SERIES_MAX 16
#define EVENT_SERIES_WINDOW_MS (10 * 60 * 1000ull)

struct event_series {
	uint64_t key;		/* event_key of its Events; 0: unused */
	char name[320];		/* the Event's metadata.name */
	uint64_t first_ms;	/* firstTimestamp */
	uint64_t last_ms;	/* lastTimestamp */
	unsigned count;
};

struct event_cache {
	struct event_series s[EVENT_SERIES_MAX];
};

/* event_key - pure: a non-zero hash of what makes @d the same Event (object, type, reason,
 * message). */
uint64_t event_key(const struct event_desc *d);

/*
 * event_correlate - pure: the series of @c that @d repeats (same key, @d->when_ms within
 * EVENT_SERIES_WINDOW_MS after its last occurrence and not before it), or NULL: @d is new.
 */
struct event_series *event_correlate(struct event_cache *c, const struct event_desc *d);

/*
 * event_remember - pure: @d was posted as Event @name (a new series: count 1), or counted on
 * @s (count + 1, lastTimestamp @d->when_ms) when @s is not NULL.
 */
void event_remember(struct event_cache *c, struct event_series *s, const struct event_desc *d,
		    const char *name);

/*
 * event_count_patch - pure: the strategic merge patch that counts @d on series @s: {"count":
 * @s->count + 1, "lastTimestamp": @d->when_ms}. Returns a new object or NULL (no memory).
 */
json_object *event_count_patch(const struct event_series *s, const struct event_desc *d);

/*
 * event_record - post @d through @c: a repeat PATCHes its series' Event (a 404: the Event
 * expired on the server, and a new one is created), anything else is created (event_post).
 * Returns as event_post; failures are logged ", ignoring".
 */
int event_record(struct kube_client *kc, struct event_cache *c, const struct event_desc *d);

/*
 * event_post - create the Event for @d. Returns 0 (also on 409: a retry landed), -errno when no
 * answer came, or -EREMOTEIO on another HTTP status; a failure is logged (", ignoring": an Event
 * is never worth failing a cycle for, so callers usually ignore the result).
 */
int event_post(struct kube_client *kc, const struct event_desc *d);

#endif
