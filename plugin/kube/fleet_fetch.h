/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLEET_FETCH_H
#define CZ_FLEET_FETCH_H

/*
 * The I/O edge of `cpuzombie fleet`: open a client the way kubectl would (--kubeconfig, else
 * $KUBECONFIG, else ~/.kube/config, else in-cluster), list nodes page by page (limit/continue,
 * an optional label selector) handing each node to a callback, and list cpuzombie's remediation
 * Leases. Everything else about the fleet view is pure (fleet/fleet.h). This is the one file
 * that uses the cluster layer's transport for it.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct kube_client;

/*
 * fleet_fetch_open - a client for @kubeconfig ("" = $KUBECONFIG's first file, else
 * ~/.kube/config when it exists, else the in-cluster service account). Returns 0, or -errno with
 * a one-line reason in @err.
 */
int fleet_fetch_open(const char *kubeconfig, struct kube_client **ret, char *err, size_t err_size);

/* fleet_fetch_close - free a client. Accepts NULL. */
void fleet_fetch_close(struct kube_client *kc);

/* Called once per listed object (borrowed: valid during the call). A negative return stops. */
typedef int (*fleet_item_fn)(json_object *item, void *userdata);

struct fleet_fetch_stats {
	unsigned pages;
	size_t items;
	char rv[64];		/* the list's metadata.resourceVersion ("" when none) */
};

/*
 * fleet_fetch_nodes - GET /api/v1/nodes in pages of @limit (0: one unpaged list), with
 * @selector (a label selector, may be NULL), calling @fn for each node in order. Returns 0, or:
 * -ESTALE when the server says the continue token expired (410: the caller starts over), -EACCES
 * (401/403), -EREMOTEIO (another HTTP status), -EBADMSG (an answer without a list), -ELOOP (the
 * server repeated a continue token) or -E2BIG (it kept sending pages past fleet_pager.h's caps),
 * the transport's -errno, or @fn's negative return. The reason is in @err. @stats may be NULL.
 */
int fleet_fetch_nodes(struct kube_client *kc, const char *selector, unsigned limit,
		      fleet_item_fn fn, void *userdata, struct fleet_fetch_stats *stats, char *err,
		      size_t err_size);

/*
 * fleet_fetch_list - fleet_fetch_nodes() for any list path @base ("/api/v1/nodes",
 * "/apis/coordination.k8s.io/v1/namespaces/x/leases"), named @what in @err.
 */
int fleet_fetch_list(struct kube_client *kc, const char *base, const char *what,
		     const char *selector, unsigned limit, fleet_item_fn fn, void *userdata,
		     struct fleet_fetch_stats *stats, char *err, size_t err_size);

/*
 * fleet_fetch_watch_path - the WATCH of list path @base from resourceVersion @rv, with bookmarks,
 * @timeout_s (timeoutSeconds) and @selector (may be NULL), into @buf. Returns 0 or -E2BIG.
 */
int fleet_fetch_watch_path(const char *base, const char *selector, const char *rv,
			   unsigned timeout_s, char *buf, size_t size);

/*
 * fleet_fetch_leases - the Leases labelled app.kubernetes.io/managed-by=cpuzombie in namespace
 * @ns, @fn called for each. Returns as fleet_fetch_nodes() (-EACCES when RBAC denies it).
 */
int fleet_fetch_leases(struct kube_client *kc, const char *ns, fleet_item_fn fn, void *userdata,
		       char *err, size_t err_size);

#endif
