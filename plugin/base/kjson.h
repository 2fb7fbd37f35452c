/* SPDX-License-Identifier: MIT */
#ifndef CZ_KJSON_H
#define CZ_KJSON_H

/*
 * The pure JSON model of the Kubernetes objects we read and write, on json-c: dotted lookups
 * that tolerate any shape (a field of the wrong type counts as absent), label and annotation
 * lookups (their keys contain dots), RFC 3339 times, and a bounded parser for response bodies.
 * No I/O and no libcurl: the report, the condition patch and the remediation plan use it, and so
 * do the fuzzers.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KUBE_JSON_DEPTH 64	/* deeper documents are refused */

/* _cleanup_(json_object_putp) json_object *o = ...; */
static inline void json_object_putp(json_object **o)
{
	if (*o)
		json_object_put(*o);
}

/* kube_get - the value at @dotted ("status.conditions") in @o, or NULL when any step is absent or
 * not an object. The result is borrowed from @o. */
json_object *kube_get(json_object *o, const char *dotted);

/* kube_get_str - the string at @dotted, or @def when absent or not a string. Borrowed. */
const char *kube_get_str(json_object *o, const char *dotted, const char *def);

/* kube_get_array - the array at @dotted, or NULL when absent or of another type (json-c's array
 * accessors assert() on anything but an array, so a wrong-shaped answer must never reach them). */
json_object *kube_get_array(json_object *o, const char *dotted);

/* kube_get_bool - true only when the value at @dotted is the JSON boolean true. */
bool kube_get_bool(json_object *o, const char *dotted);

/* kube_annotation - the string annotation @key of object @o (keys contain dots, so not through
 * kube_get()), or NULL. Borrowed. */
const char *kube_annotation(json_object *o, const char *key);

/* kube_has_label - whether object @o carries label @key (any value). */
bool kube_has_label(json_object *o, const char *key);

/* kube_condition - the element of @node's status.conditions whose type is @type, or NULL. */
json_object *kube_condition(json_object *node, const char *type);

/*
 * kube_time - RFC 3339 UTC time of @ms_since_epoch into @buf: "2024-01-01T00:00:00Z", or with
 * @micro true exactly six fractional digits (a MicroTime, as Leases require). Returns @buf.
 */
char *kube_time(uint64_t ms_since_epoch, bool micro, char *buf, size_t size);

/*
 * kube_parse_time - parse an RFC 3339 UTC time ("...Z", optional fraction) into ms since the
 * epoch. Returns 0 or -EINVAL; *@ret_ms untouched on failure.
 */
int kube_parse_time(const char *s, uint64_t *ret_ms);

/*
 * kube_parse_body - parse @len bytes of @text as one JSON document at most KUBE_JSON_DEPTH deep.
 * Returns a new object (the caller puts it) or NULL when the text is not exactly that.
 */
json_object *kube_parse_body(const char *text, size_t len);

/*
 * kube_status_message - Status.message of @body when it is a Status, else "", into @buf with
 * every control character replaced by a space: the server's words end up inside one-line logs and
 * summaries. Returns @buf.
 */
char *kube_status_message(json_object *body, char *buf, size_t size);

/*
 * kube_token_ok - whether @tok (@len bytes) may become an Authorization header: not empty, and
 * no control character (CR or LF would start a header of their own) and no byte 0x7f.
 */
bool kube_token_ok(const char *tok, size_t len);

#endif
