/* SPDX-License-Identifier: MIT */
#ifndef CZ_INFORMER_H
#define CZ_INFORMER_H

/*
 * An informer: an in-memory cache of one kind of object (the nodes of a selector, the budget
 * Leases), kept the way client-go's reflector keeps one: one paged LIST, then WATCHes from the
 * list's resourceVersion (allowWatchBookmarks, timeoutSeconds), each reconnect resuming from the
 * last resourceVersion seen (an event's or a bookmark's). A 410 Gone, an event over the cap or a
 * line that is no event: LIST again. A watch that stalls (no byte within its time) is restarted.
 * Errors back off (capped exponential with jitter). Each object is trimmed (a callback) before
 * it is cached, so the cache holds what decisions read, not 5 KB a node. A thread of its own
 * does all of it; informer_each() reads the cache under its lock.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_client;
struct informer;

/* The object to cache for @obj (a new reference: @obj itself, or a trimmed copy), NULL: skip. */
typedef json_object *(*informer_trim_fn)(json_object *obj);

/* Called from the informer's thread, under the cache lock, after @name changed from @old to
 * @now (NULL: absent). After a relist it is called once with @name NULL: anything may have
 * changed. */
typedef void (*informer_change_fn)(const char *name, json_object *old, json_object *now,
				   void *userdata);

struct informer_opts {
	const char *path;		/* the list path: "/api/v1/nodes" */
	const char *what;		/* for logs: "nodes" */
	const char *selector;		/* label selector, "" or NULL: all */
	unsigned page;			/* LIST page size */
	unsigned watch_s;		/* timeoutSeconds of each WATCH (0: 300-600 at random, or
					 * $CZ_WATCH_TIMEOUT seconds) */
	informer_trim_fn trim;		/* NULL: cache objects whole */
	informer_change_fn change;	/* may be NULL */
	void *userdata;
};

struct informer_stats {
	unsigned lists;		/* LISTs completed (the first and every relist) */
	unsigned watches;	/* WATCH requests made */
	unsigned gone;		/* 410 Gone answers (each followed by a LIST) */
	unsigned stalls;	/* watches restarted for want of a byte */
	unsigned broken;	/* streams cut short, refused or unreadable */
	size_t events, items;
	uint64_t bytes;		/* watch body bytes */
};

/*
 * informer_list_once - the LIST alone, into a new informer's cache, with no thread and no
 * WATCH (`remediator --once`): @kc is borrowed. Returns 0 or -errno (logged).
 */
int informer_list_once(struct kube_client *kc, const struct informer_opts *o,
		       struct informer **ret);

/*
 * informer_start - a new informer owning @kc (freed with it, also on failure), its thread
 * started: it LISTs at once. Returns 0 or -errno.
 */
int informer_start(struct kube_client *kc, const struct informer_opts *o, struct informer **ret);

/*
 * informer_wait_synced - wait up to @timeout_ms for the first LIST. Returns 0 once it is in the
 * cache, else the -errno of the last failed LIST (-ETIMEDOUT when none finished).
 */
int informer_wait_synced(struct informer *inf, uint64_t timeout_ms);

/* informer_each - call @fn for each cached object under the cache lock; a negative return stops
 * and is returned. The objects are borrowed for the call. */
int informer_each(struct informer *inf, int (*fn)(json_object *obj, void *userdata),
		  void *userdata);

/* informer_stats - a copy of the counters. */
struct informer_stats informer_stats(struct informer *inf);

/* informer_free - stop the thread (within about a second), free the cache. Accepts NULL. */
void informer_free(struct informer *inf);

#endif
