/* SPDX-License-Identifier: MIT */
#ifndef CZ_KUBE_H
#define CZ_KUBE_H

/*
 * The HTTP transport to the Kubernetes API server, on libcurl (linked directly: only the agent's
 * binary links this file) and json-c. TLS is always verified (insecure-skip-tls-verify only when
 * the kubeconfig says so, with a warning); every request has a timeout; 5xx, 429 and connection
 * errors are retried with capped exponential backoff and full jitter; credentials come from
 * credentials.h before every request (a rotated token is picked up; an exec plugin's answer is
 * refreshed after a 401). Retries are logged (log.h); callers decide what an HTTP error means.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kjson.h"
#include "kube/kubeconfig.h"

#define KUBE_MAX_BODY (16u << 20)	/* a response body above 16 MiB is an error */

struct kube_client;

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
 * success; on failure @auth is untouched). @timeout_ms bounds every attempt and an exec plugin's
 * run; @max_attempts (>= 1) bounds retries. Returns 0 or -ENOMEM.
 */
int kube_client_new(struct kube_auth *auth, uint64_t timeout_ms, unsigned max_attempts,
		    struct kube_client **ret);

/*
 * kube_client_from_config - kube_client_new() on @kubeconfig_path, or on the in-cluster config
 * when @kubeconfig_path is "" (the service-account directory is $CZ_SERVICEACCOUNT_DIR when set,
 * else the standard one). Returns as kube_client_new() plus kubeconfig errors (logged).
 */
int kube_client_from_config(const char *kubeconfig_path, uint64_t timeout_ms,
			    struct kube_client **ret);

/* kube_client_free - close and free. Accepts NULL. */
void kube_client_free(struct kube_client *kc);

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

/* kube_json - kube_request() with a json-c body (serialized compactly) or NULL. Same returns. */
int kube_json(struct kube_client *kc, const char *method, const char *path,
	      const char *content_type, json_object *body, unsigned flags,
	      struct kube_response *resp);

/*
 * kube_get_object - GET @path and insist on a JSON object with HTTP 200 (a node, a list): returns
 * 0 and a new reference in *@ret, or -errno (-EREMOTEIO another status, -EBADMSG not a JSON
 * object: never decide on what could not be read), logged as "Failed to read @what: ...".
 */
int kube_get_object(struct kube_client *kc, const char *path, const char *what, json_object **ret);

/* Called with each piece of a streamed 200 body as it arrives, and with @n 0 (@data NULL) about
 * once a second meanwhile, so that a quiet stream can be ended. A negative return stops. */
typedef int (*kube_stream_fn)(const char *data, size_t n, void *userdata);

/*
 * kube_stream - one GET of @path (no retry: the caller knows where to resume) whose 200 body goes
 * to @fn piece by piece as it arrives, for at most @timeout_ms and never @stall_ms without a byte.
 * Returns 0 when the server ended the answer (@resp->status; a non-200 answer's Status in
 * @resp->body and @resp->message), -ETIMEDOUT (the time is up or the stream stalled), the
 * transport's -errno (a stream cut short: -EIO), or @fn's negative return.
 */
int kube_stream(struct kube_client *kc, const char *path, uint64_t timeout_ms, uint64_t stall_ms,
		kube_stream_fn fn, void *userdata, struct kube_response *resp);

#endif
