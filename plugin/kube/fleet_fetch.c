/* SPDX-License-Identifier: MIT */
/* Listing nodes and Leases for `cpuzombie fleet`: see fleet_fetch.h. */
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "kube/fleet_fetch.h"
#include "kube/fleet_pager.h"
#include "kube/kube.h"
#include "base/util.h"

#define FLEET_TIMEOUT_MS 30000	/* one page of 500 nodes is a few MB: allow a slow server */
#define CONTINUE_MAX 4096	/* a continue token longer than this is refused */

_printf_(3, 4) static int say(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return 0;
}

int fleet_fetch_open(const char *kubeconfig, struct kube_client **ret, char *err, size_t err_size)
{
	char path[4096] = "";
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
	struct stat st;
	int r;

	/* kubectl's order; of a $KUBECONFIG list we read the first file (no merging) */
	if (kubeconfig && *kubeconfig)
		snprintf(path, sizeof(path), "%s", kubeconfig);
	else if (env && *env)
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(env, ":"), env);
	else if (home && *home) {
		snprintf(path, sizeof(path), "%s/.kube/config", home);
		if (stat(path, &st) < 0)
			path[0] = '\0'; /* in-cluster */
	}
	r = kube_client_from_config(path, FLEET_TIMEOUT_MS, ret);	/* logs the reason */
	if (r < 0)
		say(err, err_size, "%s%s%s unusable",
		    *path ? "kubeconfig '" : "in-cluster configuration", path, *path ? "'" : "");
	return r;
}

void fleet_fetch_close(struct kube_client *kc)
{
	kube_client_free(kc);
}

/* Percent-encode @s (RFC 3986 unreserved bytes stay) onto @buf at *@off. */
static int encode(const char *s, char *buf, size_t size, size_t *off)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';

		if (*off + 4 >= size)
			return -E2BIG;
		if (plain) {
			buf[(*off)++] = (char)c;
		} else {
			buf[(*off)++] = '%';
			buf[(*off)++] = hex[c >> 4];
			buf[(*off)++] = hex[c & 15];
		}
	}
	buf[*off] = '\0';
	return 0;
}

static int add_param(char *buf, size_t size, size_t *off, const char *name, const char *value)
{
	int k = snprintf(buf + *off, size - *off, "%c%s=", strchr(buf, '?') ? '&' : '?', name);

	if (k < 0 || (size_t)k >= size - *off)
		return -E2BIG;
	*off += (size_t)k;
	return encode(value, buf, size, off);
}

int fleet_fetch_watch_path(const char *base, const char *selector, const char *rv,
			   unsigned timeout_s, char *buf, size_t size)
{
	size_t off;
	char t[16];
	int k = snprintf(buf, size, "%s?watch=1&allowWatchBookmarks=true", base);

	if (k < 0 || (size_t)k >= size)
		return -E2BIG;
	off = (size_t)k;
	snprintf(t, sizeof(t), "%u", timeout_s);
	k = add_param(buf, size, &off, "timeoutSeconds", t);
	if (k == 0)
		k = add_param(buf, size, &off, "resourceVersion", rv);
	if (k == 0 && selector && *selector)
		k = add_param(buf, size, &off, "labelSelector", selector);
	return k;
}

/* What an HTTP status means here; the server's words go into @err. */
static int http_error(const struct kube_response *resp, const char *what, char *err, size_t size)
{
	say(err, size, "cannot list %s: HTTP %ld%s%s", what, resp->status,
	    resp->message[0] ? ": " : "", resp->message);
	if (resp->status == 410)
		return -ESTALE;
	if (resp->status == 401 || resp->status == 403)
		return -EACCES;
	return -EREMOTEIO;
}

/* GET @path, then call @fn per item; the continue token (if any) into @cont, the number of
 * items into *@ret_n. */
static int one_page(struct kube_client *kc, const char *path, const char *what, fleet_item_fn fn,
		    void *userdata, char *cont, size_t cont_size, struct fleet_fetch_stats *stats,
		    size_t *ret_n, char *err, size_t err_size)
{
	struct kube_response resp = { 0 };
	json_object *items, *md, *c;
	size_t n;
	int r;

	r = kube_request(kc, "GET", path, NULL, NULL, 0, &resp);
	if (r < 0) {
		say(err, err_size, "cannot list %s: %s", what,
		    resp.message[0] ? resp.message : strerror(-r));
		goto out;
	}
	if (resp.status != 200) {
		r = http_error(&resp, what, err, err_size);
		goto out;
	}
	if (!resp.body || !json_object_object_get_ex(resp.body, "items", &items) ||
	    !json_object_is_type(items, json_type_array)) {
		say(err, err_size, "cannot list %s: the answer has no list of items", what);
		r = -EBADMSG;
		goto out;
	}
	cont[0] = '\0';
	if (json_object_object_get_ex(resp.body, "metadata", &md) &&
	    json_object_object_get_ex(md, "continue", &c) &&
	    json_object_is_type(c, json_type_string))
		snprintf(cont, cont_size, "%s", json_object_get_string(c));
	/* every page of a list is one snapshot: the first page's resourceVersion is the list's */
	if (stats && !stats->pages)
		snprintf(stats->rv, sizeof(stats->rv), "%s",
			 kube_get_str(resp.body, "metadata.resourceVersion", ""));
	if (strlen(cont) + 1 >= cont_size) {
		say(err, err_size, "cannot list %s: the continue token is too long", what);
		r = -EBADMSG;
		goto out;
	}
	n = json_object_array_length(items);
	*ret_n = n;
	if (stats) {
		stats->pages++;
		stats->items += n;
	}
	for (size_t i = 0; i < n && r >= 0; i++)
		r = fn(json_object_array_get_idx(items, i), userdata);
out:
	kube_response_clear(&resp);
	return r < 0 ? r : 0;
}

int fleet_fetch_nodes(struct kube_client *kc, const char *selector, unsigned limit,
		      fleet_item_fn fn, void *userdata, struct fleet_fetch_stats *stats, char *err,
		      size_t err_size)
{
	return fleet_fetch_list(kc, "/api/v1/nodes", "nodes", selector, limit, fn, userdata, stats,
				err, err_size);
}

int fleet_fetch_list(struct kube_client *kc, const char *base, const char *what,
		     const char *selector, unsigned limit, fleet_item_fn fn, void *userdata,
		     struct fleet_fetch_stats *stats, char *err, size_t err_size)
{
	char cont[CONTINUE_MAX] = "", path[CONTINUE_MAX * 3 + 2048], why[160];
	struct fleet_pager pager;
	int r;

	fleet_pager_init(&pager, limit);
	do {
		size_t off = 0, n = 0;
		char lim[24];

		off = (size_t)snprintf(path, sizeof(path), "%s", base);
		snprintf(lim, sizeof(lim), "%u", limit);
		r = limit ? add_param(path, sizeof(path), &off, "limit", lim) : 0;
		if (r == 0 && selector && *selector)
			r = add_param(path, sizeof(path), &off, "labelSelector", selector);
		if (r == 0 && cont[0])
			r = add_param(path, sizeof(path), &off, "continue", cont);
		if (r < 0) {
			say(err, err_size, "cannot list %s: the label selector is too long", what);
			break;
		}
		r = one_page(kc, path, what, fn, userdata, cont, sizeof(cont), stats, &n, err,
			     err_size);
		if (r < 0)
			break;
		/* a repeated token or endless pages: stop (fleet_pager.h) */
		r = fleet_pager_next(&pager, cont, n, why, sizeof(why));
		if (r < 0)
			say(err, err_size, "cannot list %s: %s", what, why);
	} while (r > 0);
	fleet_pager_done(&pager);
	return r < 0 ? r : 0;
}

int fleet_fetch_leases(struct kube_client *kc, const char *ns, fleet_item_fn fn, void *userdata,
		       char *err, size_t err_size)
{
	char path[512], cont[CONTINUE_MAX];
	size_t off, n;
	int r;

	if (!valid_name(ns, 63)) {
		say(err, err_size, "cannot list leases: bad namespace '%.64s'", ns);
		return -EINVAL;
	}
	off = (size_t)snprintf(path, sizeof(path),
			       "/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns);
	r = add_param(path, sizeof(path), &off, "labelSelector",
		      "app.kubernetes.io/managed-by=cpuzombie");
	if (r < 0)
		return r;
	/* a handful of slots (max_unavailable): one page */
	return one_page(kc, path, "leases", fn, userdata, cont, sizeof(cont), NULL, &n, err,
			err_size);
}
