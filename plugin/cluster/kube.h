/* SPDX-License-Identifier: MIT */
#ifndef CZ_KUBE_H
#define CZ_KUBE_H

/*
 * A small Kubernetes API client on libcurl (dlopen()ed on first use, see curl_dl.h) and json-c.
 * TLS is always verified (insecure-skip-tls-verify only when the kubeconfig says so, with a
 * warning); every request has a timeout; 5xx, 429 and connection errors are retried with capped
 * exponential backoff and full jitter; a bearer token file is re-read before every request (so a
 * rotated service-account token is picked up); exec credential plugins are run when no cached
 * credential is valid, and again after a 401.
 *
 * Diagnostics (retries, warnings) go to the client's log stream (stderr unless set), one line
 * each, prefixed "cpuzombie: kube: ". Callers decide what an HTTP error means.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster/kubeconfig.h"
#include "base/util.h"

#define KUBE_MAX_BODY (16u << 20)	/* a response body above 16 MiB is an error */
#define KUBE_JSON_DEPTH 64

struct kube_client;

/* _cleanup_(json_object_putp) json_object *o = ...; */
static inline void json_object_putp(json_object **o)
{
	if (*o)
		json_object_put(*o);
}

struct kube_response {
	long status;			/* HTTP status of the final attempt */
	json_object *body;		/* parsed JSON body or NULL; owned by the response */
	char message[256];		/* Status.message when the body is a Status, else "" */
	unsigned attempts;		/* how many attempts were made */
};

/* kube_response_clear - release @r's body and zero it. Accepts NULL. */
void kube_response_clear(struct kube_response *r);

/* Request flags. */
enum {
	KUBE_NO_RETRY_429 = 1 << 0,	/* the caller handles 429 (evictions blocked by a PDB) */
};

/*
 * kube_client_new - a client for @auth (ownership of its contents moves to the client on
 * success; on failure @auth is untouched). @timeout_ms bounds every attempt; @max_attempts (>= 1)
 * bounds retries. Loads libcurl. Returns 0, or -ENOMEM / -ELIBACC (libcurl missing) with @err set.
 */
int kube_client_new(struct kube_auth *auth, uint64_t timeout_ms, unsigned max_attempts,
		    struct kube_client **ret, char *err, size_t err_size);

/*
 * kube_client_from_config - kube_client_new() on @kubeconfig_path, or on the in-cluster config
 * when @kubeconfig_path is "" (the service-account directory is $CZ_SERVICEACCOUNT_DIR when set,
 * else the standard one). Returns as kube_client_new() plus kubeconfig errors.
 */
int kube_client_from_config(const char *kubeconfig_path, uint64_t timeout_ms,
			    struct kube_client **ret, char *err, size_t err_size);

/* kube_client_free - close and free. Accepts NULL. */
void kube_client_free(struct kube_client *kc);

/* kube_client_set_log - where diagnostics go (NULL = nowhere). Default stderr. */
void kube_client_set_log(struct kube_client *kc, FILE *log);

/* kube_client_set_backoff - base and cap of the retry backoff in ms (defaults 200 and 5000). */
void kube_client_set_backoff(struct kube_client *kc, uint64_t base_ms, uint64_t cap_ms);

/*
 * kube_request - one API call: @method ("GET", "POST", ...), @path ("/api/v1/nodes/x"), optional
 * @body with @content_type. Retries 5xx, 429 (unless KUBE_NO_RETRY_429) and connection errors up
 * to the attempt bound. Returns 0 when a response was received (any HTTP status: look at
 * @resp->status) or -errno when none was (-ETIMEDOUT, -ECONNREFUSED, -EPROTO for TLS failures,
 * -EIO otherwise; -EACCES when no credential could be obtained); the reason is in @resp->message.
 * @resp must be zeroed or cleared; it is cleared first.
 */
int kube_request(struct kube_client *kc, const char *method, const char *path,
		 const char *content_type, const char *body, unsigned flags,
		 struct kube_response *resp);

/*
 * kube_json - kube_request() with a json-c body (serialized compactly) or NULL. Same returns.
 */
int kube_json(struct kube_client *kc, const char *method, const char *path,
	      const char *content_type, json_object *body, unsigned flags,
	      struct kube_response *resp);

/* Helpers over json-c for the object shapes we read. Return NULL / @def when absent. */
json_object *kube_get(json_object *o, const char *dotted);
const char *kube_get_str(json_object *o, const char *dotted, const char *def);

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
 * kube_post_event - create a core/v1 Event about Node @node_name (uid @node_uid, may be NULL) in
 * namespace "default", source component "cpuzombie", with a name derived from node, reason and
 * @now_ms, so a retried create after a lost answer yields 409 AlreadyExists (counted as done).
 * @type is "Normal" or "Warning". Returns 0, -errno, or -EREMOTEIO on an HTTP error (logged).
 */
int kube_post_event(struct kube_client *kc, const char *node_name, const char *node_uid,
		    const char *type, const char *reason, const char *message, uint64_t now_ms);

/* kube_log - write one "cpuzombie: kube: ..." line to the client's log stream. */
void kube_log(struct kube_client *kc, const char *fmt, ...) _printf_(2, 3);

#endif
