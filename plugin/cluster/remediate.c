/* SPDX-License-Identifier: MIT */
/* Remediation under a cluster-wide budget: see remediate.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>

#include "cluster/remediate.h"
#include "base/util.h"

#define SMP "application/strategic-merge-patch+json"
#define LEASE_SECONDS 600

struct rem {
	struct kube_client *kc;
	const struct cz_config *cfg;
	const char *node;
	uint64_t now;
	char *msg;
	size_t msg_size;
};

_printf_(2, 3) static void say(struct rem *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, r->msg_size, fmt, ap);
	va_end(ap);
	kube_log(r->kc, "%s: %s", r->node, r->msg);
}

const char *remediate_action_name(enum remediate_action a)
{
	static const char *const names[] = { "none", "waiting", "skipped", "dry-run", "cordoned",
					     "drained", "drain-incomplete", "uncordoned" };

	return a < ARRAY_SIZE(names) ? names[a] : "?";
}

/* ---- pure decisions ------------------------------------------------------------------------ */

bool remediate_problem(json_object *node, const struct cz_strlist *types, uint64_t for_ms,
		       uint64_t now_ms, const char **ret_type, bool *ret_any_true)
{
	json_object *list = kube_get(node, "status.conditions");
	size_t n = list && json_object_is_type(list, json_type_array) ?
			   json_object_array_length(list) : 0;
	bool any = false, ok = false;

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		const char *type = kube_get_str(c, "type", "");
		uint64_t t;

		if (!config_strlist_has(types, type) || !streq(kube_get_str(c, "status", ""), "True"))
			continue;
		any = true;
		/* no or bad transition time: we cannot tell how long, so not long enough */
		if (kube_parse_time(kube_get_str(c, "lastTransitionTime", NULL), &t) < 0 ||
		    t > now_ms || now_ms - t < for_ms)
			continue;
		if (!ok && ret_type)
			*ret_type = type;
		ok = true;
	}
	if (ret_any_true)
		*ret_any_true = any;
	return ok;
}

bool remediate_recovered(json_object *node, const struct cz_strlist *types, uint64_t after_ms,
			 uint64_t now_ms)
{
	json_object *list = kube_get(node, "status.conditions");
	size_t n = list && json_object_is_type(list, json_type_array) ?
			   json_object_array_length(list) : 0;
	uint64_t last = 0;

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		uint64_t t;

		if (!config_strlist_has(types, kube_get_str(c, "type", "")))
			continue;
		if (!streq(kube_get_str(c, "status", ""), "False"))
			return false;
		if (kube_parse_time(kube_get_str(c, "lastTransitionTime", NULL), &t) < 0)
			return false;
		if (t > last)
			last = t;
	}
	return last <= now_ms && now_ms - last >= after_ms;
}

int remediate_budget(const char *max_unavailable, size_t total_nodes)
{
	char num[16];
	size_t len = strlen(max_unavailable);
	uint64_t v;

	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, max_unavailable, len + 1);
	if (num[len - 1] == '%') {
		num[len - 1] = '\0';
		if (parse_u64(num, &v) < 0 || v == 0 || v > 100)
			return -EINVAL;
		v = (uint64_t)total_nodes * v / 100;
		return v < 1 ? 1 : (int)(v > 100000 ? 100000 : v);
	}
	if (parse_u64(num, &v) < 0 || v == 0 || v > 100000)
		return -EINVAL;
	return (int)v;
}

bool remediate_is_control_plane(json_object *node)
{
	json_object *labels = kube_get(node, "metadata.labels"), *v;

	/* label keys contain dots: look them up directly, not through kube_get() */
	return labels && json_object_is_type(labels, json_type_object) &&
	       (json_object_object_get_ex(labels, "node-role.kubernetes.io/control-plane", &v) ||
		json_object_object_get_ex(labels, "node-role.kubernetes.io/master", &v));
}

/*
 * The array at @dotted in @o, or NULL when absent or of another type: json-c's array accessors
 * assert() on anything but an array, so an API answer of the wrong shape must never reach them.
 */
static json_object *get_array(json_object *o, const char *dotted)
{
	json_object *a = kube_get(o, dotted);

	return a && json_object_is_type(a, json_type_array) ? a : NULL;
}

/* kube_get() splits on dots: annotation keys contain them, so look them up directly. */
static const char *annotation(json_object *node, const char *key)
{
	json_object *ann = kube_get(node, "metadata.annotations"), *v;

	if (!ann || !json_object_object_get_ex(ann, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* ---- API steps ----------------------------------------------------------------------------- */

static int get_node(struct rem *r, json_object **ret)
{
	struct kube_response resp = { 0 };
	char path[400];
	int e;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", r->node);
	e = kube_request(r->kc, "GET", path, NULL, NULL, 0, &resp);
	if (e == 0 && resp.status != 200) {
		say(r, "cannot read node: HTTP %ld: %s", resp.status, resp.message);
		e = -EREMOTEIO;
	} else if (e < 0) {
		say(r, "cannot read node: %s", resp.message);
	} else if (!json_object_is_type(resp.body, json_type_object)) {
		say(r, "cannot read node: the answer is not a JSON object");
		e = -EBADMSG;	/* never decide (cordon, uncordon) on what could not be read */
	} else {
		*ret = json_object_get(resp.body);
	}
	kube_response_clear(&resp);
	return e;
}

/* PATCH the node (not its status); @rv non-NULL makes it conditional (409 if changed). */
static int patch_node(struct rem *r, json_object *patch, const char *rv, long *ret_status)
{
	struct kube_response resp = { 0 };
	char path[400];
	int e;

	if (rv) {
		json_object *md = kube_get(patch, "metadata");

		if (!md) {
			md = json_object_new_object();
			json_object_object_add(patch, "metadata", md);
		}
		json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
	}
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", r->node);
	e = kube_json(r->kc, "PATCH", path, SMP, patch, 0, &resp);
	*ret_status = resp.status;
	if (e == 0 && resp.status != 200) {
		say(r, "PATCH node: HTTP %ld: %s", resp.status, resp.message);
		e = -EREMOTEIO;
	}
	kube_response_clear(&resp);
	return e;
}

static json_object *ann_patch(const char *const kv[], size_t n, int unschedulable)
{
	json_object *p = json_object_new_object(), *md = json_object_new_object();
	json_object *ann = json_object_new_object();

	for (size_t i = 0; i + 1 < n; i += 2)
		json_object_object_add(ann, kv[i], kv[i + 1] ? json_object_new_string(kv[i + 1]) :
							      NULL);
	json_object_object_add(md, "annotations", ann);
	json_object_object_add(p, "metadata", md);
	if (unschedulable >= 0) {
		json_object *spec = json_object_new_object();

		json_object_object_add(spec, "unschedulable",
				       unschedulable ? json_object_new_boolean(1) : NULL);
		json_object_object_add(p, "spec", spec);
	}
	return p;
}

static void event(struct rem *r, json_object *node, const char *type, const char *reason,
		  uint64_t when)
{
	kube_post_event(r->kc, r->node, kube_get_str(node, "metadata.uid", NULL), type, reason,
			r->msg, when);
}

static void problem_since(json_object *node, const char *type, uint64_t *ret)
{
	json_object *list = kube_get(node, "status.conditions");
	size_t n = list && json_object_is_type(list, json_type_array) ?
			   json_object_array_length(list) : 0;

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);

		if (streq(kube_get_str(c, "type", ""), type))
			kube_parse_time(kube_get_str(c, "lastTransitionTime", NULL), ret);
	}
}

/* ---- the budget: Leases cpuzombie-slot-N ----------------------------------------------------- */

static void lease_path(struct rem *r, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s",
		 r->cfg->remediation.lease_namespace, name ? "/" : "", name ? name : "");
}

/* LIST our slot Leases (one request, labelled). Returns the items array (owned by @resp). */
static int lease_list(struct rem *r, struct kube_response *resp, json_object **ret_items)
{
	char path[400];
	int e;

	lease_path(r, NULL, path, sizeof(path));
	strncat(path, "?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dcpuzombie",
		sizeof(path) - strlen(path) - 1);
	e = kube_request(r->kc, "GET", path, NULL, NULL, 0, resp);
	if (e == 0 && resp->status != 200) {
		say(r, "cannot list cpuzombie leases: HTTP %ld: %s", resp->status, resp->message);
		e = -EREMOTEIO;
	}
	if (e == 0 && !(*ret_items = get_array(resp->body, "items"))) {
		say(r, "cannot list cpuzombie leases: the answer has no list of items");
		e = -EBADMSG;
	}
	return e;
}

static json_object *lease_new(struct rem *r, const char *name, json_object *old)
{
	json_object *l = old ? json_object_get(old) : json_object_new_object();
	json_object *md = kube_get(l, "metadata"), *spec, *labels;
	char now[40];

	kube_time(r->now, true, now, sizeof(now));	/* MicroTime: six fractional digits */
	if (!md) {
		md = json_object_new_object();
		labels = json_object_new_object();
		json_object_object_add(l, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
		json_object_object_add(l, "kind", json_object_new_string("Lease"));
		json_object_object_add(md, "name", json_object_new_string(name));
		json_object_object_add(labels, "app.kubernetes.io/managed-by",
				       json_object_new_string("cpuzombie"));
		json_object_object_add(md, "labels", labels);
		json_object_object_add(l, "metadata", md);
	}
	spec = json_object_new_object();
	json_object_object_add(spec, "holderIdentity", json_object_new_string(r->node));
	json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(LEASE_SECONDS));
	json_object_object_add(spec, "acquireTime", json_object_new_string(
		old && streq(kube_get_str(old, "spec.holderIdentity", ""), r->node) ?
		kube_get_str(old, "spec.acquireTime", now) : now));
	json_object_object_add(spec, "renewTime", json_object_new_string(now));
	json_object_object_add(l, "spec", spec);
	return l;
}

/* PUT (update with the read resourceVersion) or POST (create). Returns the HTTP status or -errno. */
static long lease_write(struct rem *r, const char *name, json_object *old)
{
	_cleanup_(json_object_putp) json_object *l = lease_new(r, name, old);
	struct kube_response resp = { 0 };
	char path[400];
	long st;
	int e;

	lease_path(r, old ? name : NULL, path, sizeof(path));
	e = kube_json(r->kc, old ? "PUT" : "POST", path, "application/json", l, 0, &resp);
	st = e < 0 ? e : resp.status;
	kube_response_clear(&resp);
	return st;
}

/* May another node's slot be taken? Only when released, or expired with its node not held. */
static bool lease_free(struct rem *r, json_object *l)
{
	const char *holder = kube_get_str(l, "spec.holderIdentity", "");
	_cleanup_(json_object_putp) json_object *hn = NULL;
	struct kube_response resp = { 0 };
	uint64_t renew;
	char path[400];
	bool held;
	int e;

	if (!*holder)
		return true;
	if (!valid_name(holder, 253))
		return false;	/* not a node name: never put it in a URL; the slot stays taken */
	if (kube_parse_time(kube_get_str(l, "spec.renewTime", NULL), &renew) < 0 ||
	    renew + (uint64_t)LEASE_SECONDS * 1000 > r->now)
		return false;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", holder);
	e = kube_request(r->kc, "GET", path, NULL, NULL, 0, &resp);
	held = e < 0 || (resp.status != 200 && resp.status != 404) ||
	       (resp.status == 200 && annotation(resp.body, REMEDIATE_ANN_CORDONED));
	kube_response_clear(&resp);
	return !held;
}

static int total_nodes(struct rem *r, size_t *ret)
{
	struct kube_response resp = { 0 };
	json_object *items;
	int e = kube_request(r->kc, "GET", "/api/v1/nodes", NULL, NULL, 0, &resp);

	if (e == 0 && (resp.status != 200 || !(items = get_array(resp.body, "items"))))
		e = -EREMOTEIO;
	if (e == 0)
		*ret = json_object_array_length(items);
	kube_response_clear(&resp);
	return e;
}

static json_object *lease_named(json_object *items, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *l = json_object_array_get_idx(items, i);

		if (streq(kube_get_str(l, "metadata.name", ""), name))
			return l;
	}
	return NULL;
}

/* Take (or renew) one slot. Returns its index, or -1 with *@ret_err 0 (budget full) or -errno. */
static int lease_acquire(struct rem *r, int *ret_err)
{
	struct kube_response resp = { 0 };
	json_object *items;
	size_t nodes = 0;
	char name[64];
	int budget, e, got = -1;

	*ret_err = 0;
	if (strchr(r->cfg->remediation.max_unavailable, '%') && (e = total_nodes(r, &nodes)) < 0) {
		say(r, "cannot count nodes for max_unavailable %s", r->cfg->remediation.max_unavailable);
		*ret_err = e;
		return -1;
	}
	budget = remediate_budget(r->cfg->remediation.max_unavailable, nodes);
	if (budget < 0 || (e = lease_list(r, &resp, &items)) < 0) {
		*ret_err = budget < 0 ? budget : e;
		kube_response_clear(&resp);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {	/* already ours? */
		json_object *l = json_object_array_get_idx(items, i);
		const char *n = kube_get_str(l, "metadata.name", "");

		if (streq(kube_get_str(l, "spec.holderIdentity", ""), r->node) &&
		    startswith(n, REMEDIATE_LEASE_PREFIX)) {
			lease_write(r, n, l);	/* renew; a 409 here only means a stale renewTime */
			uint64_t idx = 0;

			parse_u64(n + strlen(REMEDIATE_LEASE_PREFIX), &idx);
			got = (int)(idx < 100000 ? idx : 0);
			break;
		}
	}
	for (int i = 0; got < 0 && i < budget; i++) {
		json_object *l;
		long st;

		snprintf(name, sizeof(name), REMEDIATE_LEASE_PREFIX "%d", i);
		l = lease_named(items, name);
		if (l && !lease_free(r, l))
			continue;
		st = lease_write(r, name, l);	/* create, or update at the read resourceVersion */
		if (st == 200 || st == 201)
			got = i;
		else if (st < 0 && st != -EREMOTEIO)
			*ret_err = (int)st;
		/* 409: another node took it first (or our retried create landed: seen next cycle) */
	}
	if (got < 0 && *ret_err == 0)
		say(r, "remediation budget full: all %d cpuzombie slots (max_unavailable %s) are held",
		    budget, r->cfg->remediation.max_unavailable);
	kube_response_clear(&resp);
	return got;
}

static void lease_release(struct rem *r)
{
	struct kube_response resp = { 0 }, dresp = { 0 };
	json_object *items;
	char path[400], body[200];

	if (lease_list(r, &resp, &items) < 0) {
		kube_response_clear(&resp);
		return;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *l = json_object_array_get_idx(items, i);

		if (!streq(kube_get_str(l, "spec.holderIdentity", ""), r->node))
			continue;
		lease_path(r, kube_get_str(l, "metadata.name", ""), path, sizeof(path));
		snprintf(body, sizeof(body), "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
			 "\"preconditions\":{\"resourceVersion\":\"%s\"}}",
			 kube_get_str(l, "metadata.resourceVersion", ""));
		kube_request(r->kc, "DELETE", path, "application/json", body, 0, &dresp);
		kube_response_clear(&dresp);
	}
	kube_response_clear(&resp);
}

/* ---- drain --------------------------------------------------------------------------------- */

static bool has_emptydir(json_object *pod)
{
	json_object *vols = get_array(pod, "spec.volumes");

	for (size_t i = 0; vols && i < json_object_array_length(vols); i++)
		if (kube_get(json_object_array_get_idx(vols, i), "emptyDir"))
			return true;
	return false;
}

static bool skip_pod(json_object *pod)
{
	json_object *refs = get_array(pod, "metadata.ownerReferences");
	const char *phase = kube_get_str(pod, "status.phase", "");

	if (annotation(pod, "kubernetes.io/config.mirror"))
		return true;	/* a static pod's mirror: the kubelet owns it */
	if (streq(phase, "Succeeded") || streq(phase, "Failed"))
		return true;	/* finished: nothing to move */
	for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
		json_object *o = json_object_array_get_idx(refs, i), *c = kube_get(o, "controller");

		if (c && json_object_get_boolean(c) && streq(kube_get_str(o, "kind", ""), "DaemonSet"))
			return true;	/* would be recreated on this node anyway */
	}
	return false;
}

/* One eviction attempt: 1 = done (evicted or gone), 0 = try again later (429), -errno = failed. */
static int evict(struct rem *r, json_object *pod)
{
	const char *ns = kube_get_str(pod, "metadata.namespace", "default");
	const char *name = kube_get_str(pod, "metadata.name", "");
	struct kube_response resp = { 0 };
	char path[600], body[600];
	int e;

	/* both go into a URL path and a JSON string unescaped: only what the API server itself
	 * allows in names (DNS labels and subdomains), never "", "..", '/', '"' or '?' */
	if (!valid_name(ns, 253) || !valid_name(name, 253))
		return -EINVAL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
	snprintf(body, sizeof(body), "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}}", name, ns);
	e = kube_request(r->kc, "POST", path, "application/json", body, KUBE_NO_RETRY_429, &resp);
	if (e == 0 && (resp.status == 200 || resp.status == 201 || resp.status == 404))
		e = 1;
	else if (e == 0 && resp.status == 429)
		e = 0;
	else if (e == 0 && r->cfg->remediation.allow_delete) {
		kube_log(r->kc, "%s: eviction of %s/%s refused (HTTP %ld: %s): deleting it "
			 "(remediation.allow_delete)", r->node, ns, name, resp.status, resp.message);
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
		e = kube_request(r->kc, "DELETE", path, NULL, NULL, 0, &resp);
		e = e < 0 ? e : (resp.status == 200 || resp.status == 404) ? 1 : -EREMOTEIO;
	} else if (e == 0) {
		kube_log(r->kc, "%s: eviction of %s/%s failed: HTTP %ld: %s", r->node, ns, name,
			 resp.status, resp.message);
		e = -EREMOTEIO;
	}
	kube_response_clear(&resp);
	return e;
}

static int list_pods(struct rem *r, struct kube_response *resp, json_object **ret_items)
{
	char path[400];
	int e;

	snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", r->node);
	e = kube_request(r->kc, "GET", path, NULL, NULL, 0, resp);
	if (e == 0 && (resp->status != 200 || !(*ret_items = get_array(resp->body, "items")))) {
		say(r, "cannot list the node's pods: HTTP %ld%s", resp->status,
		    resp->status == 200 ? ", no list of items" : "");
		e = -EREMOTEIO;
	}
	return e;
}

/* Evict every pod that must go, waiting out PDBs, until done or @deadline. Returns pods left. */
static int evict_all(struct rem *r, uint64_t deadline, int *ret_err)
{
	uint64_t backoff = 1000;

	for (;;) {
		struct kube_response resp = { 0 };
		json_object *items = NULL;
		int left = 0, blocked = 0;

		*ret_err = list_pods(r, &resp, &items);
		if (*ret_err < 0) {
			kube_response_clear(&resp);
			return -1;
		}
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			json_object *p = json_object_array_get_idx(items, i);

			if (skip_pod(p))
				continue;
			if (has_emptydir(p) && !r->cfg->remediation.delete_emptydir_data) {
				blocked++;
				continue;
			}
			if (kube_get(p, "metadata.deletionTimestamp") || evict(r, p) != 1)
				left++;
		}
		kube_response_clear(&resp);
		if (blocked) {
			say(r, "drain blocked: %d pod(s) use emptyDir and "
			    "remediation.delete_emptydir_data is false", blocked);
			return blocked;
		}
		if (left == 0)
			return 0;
		if (now_monotonic_ms() + backoff > deadline) {
			say(r, "drain timed out: %d pod(s) still on the node (PodDisruptionBudget?)",
			    left);
			return left;
		}
		usleep((useconds_t)(backoff * 1000));
		backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
	}
}

static void write_sentinel(struct rem *r)
{
	const char *path = r->cfg->remediation.reboot_sentinel;
	int fd;

	if (!*path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		kube_log(r->kc, "Failed to write reboot sentinel '%s': %s", path, strerror(errno));
	else
		close(fd);
}

static int drain(struct rem *r, json_object *node, enum remediate_action *act)
{
	uint64_t deadline = now_monotonic_ms() + r->cfg->remediation.drain_timeout_ms;
	char ts[40];
	const char *kv[4];
	long st;
	int e, left;

	left = evict_all(r, deadline, &e);
	if (left != 0) {
		if (left > 0)
			event(r, node, "Warning", "CpuzombieDrainIncomplete", r->now);
		*act = REM_DRAIN_INCOMPLETE;
		return e;
	}
	kube_time(r->now, false, ts, sizeof(ts));
	kv[0] = REMEDIATE_ANN_DRAINED, kv[1] = ts, kv[2] = REMEDIATE_ANN_ACTION, kv[3] = "drain";
	_cleanup_(json_object_putp) json_object *p = ann_patch(kv, 4, -1);
	e = patch_node(r, p, NULL, &st);
	if (e < 0) {
		*act = REM_DRAIN_INCOMPLETE;
		return e;
	}
	say(r, "drained by cpuzombie (policy/v1 evictions)%s", *r->cfg->remediation.reboot_sentinel ?
	    "; reboot sentinel written for kured" : "");
	event(r, node, "Warning", "CpuzombieDrain", r->now);
	write_sentinel(r);
	*act = REM_DRAINED;
	return 0;
}

/* ---- the decision -------------------------------------------------------------------------- */

/* After a failed cordon PATCH: does the node carry exactly our cordon anyway? */
static bool cordon_landed(struct rem *r, const char *why)
{
	_cleanup_(json_object_putp) json_object *n = NULL;
	json_object *u;
	const char *a;

	if (get_node(r, &n) < 0)
		return false;
	a = annotation(n, REMEDIATE_ANN_CORDONED);
	u = kube_get(n, "spec.unschedulable");
	return a && streq(a, why) && u && json_object_get_boolean(u);
}

static int do_cordon(struct rem *r, json_object *node, const char *type,
		     enum remediate_action *act)
{
	char ts[40], why[200];
	const char *kv[6];
	long st;
	int slot, e;

	if (r->cfg->remediation.mode == CZ_REMEDIATE_DRY_RUN) {
		uint64_t since = 0;

		say(r, "dry-run: would %s: %s True for %llus", r->cfg->remediation.mode ==
		    CZ_REMEDIATE_DRAIN ? "cordon and drain" : "cordon", type,
		    (unsigned long long)(r->cfg->remediation.for_ms / 1000));
		snprintf(r->msg, r->msg_size, "dry-run: would %s: %s has been True for at least %s",
			 r->cfg->remediation.mode == CZ_REMEDIATE_DRAIN ? "drain" : "cordon", type,
			 format_duration(r->cfg->remediation.for_ms, ts, sizeof(ts)));
		problem_since(node, type, &since);
		event(r, node, "Normal", "CpuzombieDryRun", since);	/* once per episode */
		*act = REM_DRY_RUN;
		return 0;
	}
	slot = lease_acquire(r, &e);
	if (slot < 0) {
		*act = REM_WAITING;
		return e;
	}
	kube_time(r->now, false, ts, sizeof(ts));
	snprintf(why, sizeof(why), "%s %s True for over %llus (slot %d)", ts, type,
		 (unsigned long long)(r->cfg->remediation.for_ms / 1000), slot);
	kv[0] = REMEDIATE_ANN_CORDONED, kv[1] = why;
	kv[2] = REMEDIATE_ANN_ACTION, kv[3] = "cordon";
	_cleanup_(json_object_putp) json_object *p = ann_patch(kv, 4, 1);
	e = patch_node(r, p, kube_get_str(node, "metadata.resourceVersion", NULL), &st);
	if (e < 0 && cordon_landed(r, why))
		e = 0;	/* the answer was lost and the retry saw 409: our own write had landed */
	if (e < 0) {
		lease_release(r);	/* not cordoned (e.g. 409: changed under us): give the slot back */
		*act = REM_WAITING;
		return e;
	}
	say(r, "cordoned by cpuzombie: %s", why);
	event(r, node, "Warning", "CpuzombieCordon", r->now);
	*act = REM_CORDONED;
	return 0;
}

static int do_uncordon(struct rem *r, json_object *node, bool by_someone_else,
		       enum remediate_action *act)
{
	const char *kv[] = { REMEDIATE_ANN_CORDONED, NULL, REMEDIATE_ANN_DRAINED, NULL,
			     REMEDIATE_ANN_ACTION, by_someone_else ? "released" : "uncordon" };
	_cleanup_(json_object_putp) json_object *p = ann_patch(kv, 6, by_someone_else ? -1 : 0);
	long st;
	int e;

	e = patch_node(r, p, kube_get_str(node, "metadata.resourceVersion", NULL), &st);
	if (e < 0) {
		*act = REM_WAITING;
		return e;
	}
	lease_release(r);
	if (by_someone_else) {
		say(r, "someone else uncordoned the node: cpuzombie forgets it and frees its slot");
		*act = REM_NONE;
	} else {
		say(r, "uncordoned by cpuzombie: conditions False for %llus",
		    (unsigned long long)(r->cfg->remediation.uncordon_after_ms / 1000));
		event(r, node, "Normal", "CpuzombieUncordon", r->now);
		*act = REM_UNCORDONED;
	}
	return 0;
}

static int ours(struct rem *r, json_object *node, enum remediate_action *act)
{
	const struct cz_config *cfg = r->cfg;
	json_object *u = kube_get(node, "spec.unschedulable");
	int e, slot;

	if (!u || !json_object_get_boolean(u))
		return do_uncordon(r, node, true, act);
	if (remediate_recovered(node, &cfg->remediation.conditions,
				cfg->remediation.uncordon_after_ms, r->now))
		return do_uncordon(r, node, false, act);
	slot = lease_acquire(r, &e);	/* renew (or re-take) the slot while we hold the node */
	if (slot < 0)
		kube_log(r->kc, "%s: cannot renew the cpuzombie lease, ignoring", r->node);
	if (cfg->remediation.mode == CZ_REMEDIATE_DRAIN && !annotation(node, REMEDIATE_ANN_DRAINED))
		return drain(r, node, act);
	snprintf(r->msg, r->msg_size, "held by cpuzombie, waiting for recovery");
	*act = REM_WAITING;
	return 0;
}

int remediate_cycle(struct kube_client *kc, const struct cz_config *cfg, const char *node_name,
		    uint64_t now_ms, enum remediate_action *ret_action, char *msg, size_t msg_size)
{
	struct rem r = { kc, cfg, node_name, now_ms, msg, msg_size };
	_cleanup_(json_object_putp) json_object *node = NULL;
	enum remediate_action act = REM_NONE;
	const char *type = NULL;
	json_object *u;
	int e;

	snprintf(msg, msg_size, "remediation off");
	*ret_action = REM_NONE;
	if (cfg->remediation.mode == CZ_REMEDIATE_OFF)
		return 0;
	e = get_node(&r, &node);
	if (e < 0)
		return e;
	if (annotation(node, REMEDIATE_ANN_CORDONED) && cfg->remediation.mode != CZ_REMEDIATE_DRY_RUN)
		e = ours(&r, node, &act);
	else if (!remediate_problem(node, &cfg->remediation.conditions, cfg->remediation.for_ms,
				    now_ms, &type, NULL))
		snprintf(msg, msg_size, "no listed condition True for %llus",
			 (unsigned long long)(cfg->remediation.for_ms / 1000));
	else if ((u = kube_get(node, "spec.unschedulable")) && json_object_get_boolean(u)) {
		snprintf(msg, msg_size, "%s True, but the node is already unschedulable by someone "
			 "else: not touching it", type);
		act = REM_SKIPPED;
	} else if (remediate_is_control_plane(node) && !cfg->remediation.allow_control_plane) {
		snprintf(msg, msg_size, "%s True, but this is a control-plane node "
			 "(remediation.allow_control_plane is false)", type);
		act = REM_SKIPPED;
	} else {
		e = do_cordon(&r, node, type, &act);
		if (e == 0 && act == REM_CORDONED && cfg->remediation.mode == CZ_REMEDIATE_DRAIN) {
			json_object_put(node);
			node = NULL;
			e = get_node(&r, &node);
			if (e == 0)
				e = drain(&r, node, &act);
		}
	}
	*ret_action = act;
	return e;
}
