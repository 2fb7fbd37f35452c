/* SPDX-License-Identifier: MIT */
#ifndef CZ_WATCH_H
#define CZ_WATCH_H

/*
 * A Kubernetes watch stream (GET ...?watch=1): the body is one JSON event per line,
 * {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR", "object": {...}}, streamed as the
 * server sends it. The parts are pure (a line splitter with a bounded buffer, one event's parse)
 * so the unit tests and the fuzz target call them without a server; watch_stream() is the I/O
 * edge. Protocol facts (the server's, as client-go's reflector relies on them): a BOOKMARK
 * carries only metadata.resourceVersion, the point to resume from; an ERROR carries a Status,
 * code 410 (Gone) when the asked resourceVersion is older than the server keeps, after which only
 * a new LIST can resume; the server ends a watch at its timeoutSeconds.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WATCH_EVENT_MAX (4u << 20)	/* one event line above 4 MiB is an error, then a relist */
#define WATCH_RV_MAX 64			/* a resourceVersion longer than this is refused */

struct kube_client;

enum watch_type { WATCH_ADDED, WATCH_MODIFIED, WATCH_DELETED, WATCH_BOOKMARK, WATCH_ERROR };

struct watch_event {
	enum watch_type type;
	json_object *object;		/* owned: the object (ERROR: the Status) */
	char rv[WATCH_RV_MAX];		/* object's metadata.resourceVersion ("" in an ERROR) */
	long code;			/* ERROR: Status.code (0 when absent) */
	char message[256];		/* ERROR: Status.message, control characters replaced */
};

/* watch_type_name - "ADDED", ... */
const char *watch_type_name(enum watch_type t);

/*
 * watch_event_parse - pure: one event line @line (@n bytes, no newline) into @ev. Every event
 * but an ERROR must carry an object with a valid-looking resourceVersion (digits, at most
 * WATCH_RV_MAX - 1); ADDED/MODIFIED/DELETED also metadata.name. Returns 0, or -EBADMSG with a
 * one-line reason in @err. @ev is cleared first; watch_event_clear() releases it.
 */
int watch_event_parse(const char *line, size_t n, struct watch_event *ev, char *err, size_t size);

/* watch_event_clear - release @ev's object and zero it. Accepts NULL. */
void watch_event_clear(struct watch_event *ev);

/* A line splitter over a stream's chunks, holding at most @max bytes of one unfinished line. */
struct watch_lines {
	char *buf;
	size_t n, cap, max;
};

/* Called once per complete non-empty line (@n bytes, no newline). A negative return stops. */
typedef int (*watch_line_fn)(const char *line, size_t n, void *userdata);

/* watch_lines_init - a splitter whose lines may be at most @max bytes (0: WATCH_EVENT_MAX). */
void watch_lines_init(struct watch_lines *w, size_t max);

/*
 * watch_lines_feed - pure: add @n bytes of the stream, calling @fn for each line they complete
 * ("\n" ends a line; a "\r" before it is dropped). Returns 0, -EMSGSIZE when a line grows past
 * the cap (the reason, naming the cap, in @err), -ENOMEM, or @fn's negative return.
 */
int watch_lines_feed(struct watch_lines *w, const char *data, size_t n, watch_line_fn fn,
		     void *userdata, char *err, size_t size);

/* watch_lines_pending - bytes of an unfinished line held (a stream that ended mid-event). */
size_t watch_lines_pending(const struct watch_lines *w);

/* watch_lines_done - free the buffer; the splitter can be initialised again. Accepts NULL. */
void watch_lines_done(struct watch_lines *w);

/* Called once per event (@ev owned by the caller: take its object with TAKE_PTR to keep it), and
 * with @ev NULL about once a second while the stream is open. A negative return stops. */
typedef int (*watch_event_fn)(struct watch_event *ev, void *userdata);

struct watch_stats {
	size_t events, bookmarks;
	uint64_t bytes;			/* body bytes received */
};

/*
 * watch_stream - GET @path (a list path with its query: watch=1, resourceVersion, ...) and call
 * @fn per event until the server ends the stream (returns 0), for at most @timeout_ms, and
 * never @stall_ms without a byte (-ETIMEDOUT: a stalled watch). Other returns: -ESTALE (HTTP
 * 410), -EACCES (401/403), -EREMOTEIO (another status), -EMSGSIZE (an event over @max_line
 * bytes), -EBADMSG (a line that is no event, or a stream that ended mid-line), the transport's
 * -errno (a reset stream: -EIO), or @fn's negative return; the reason in @err. @stats may be NULL.
 */
int watch_stream(struct kube_client *kc, const char *path, uint64_t timeout_ms, uint64_t stall_ms,
		 size_t max_line, watch_event_fn fn, void *userdata, struct watch_stats *stats,
		 char *err, size_t size);

#endif
