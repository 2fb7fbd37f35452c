/* SPDX-License-Identifier: MIT */
/* Nothing of cpuzombie's left behind: see cleanup.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "remediator/cleanup.h"
#include "condition/conditions.h"
#include "kube/fleet_fetch.h"
#include "remediator/guard.h"
#include "base/kjson.h"
#include "kube/kube.h"
#include "remediator/leader.h"
#include "remediator/remediate_plan.h"

#define NODE_RETRIES 5		/* re-reads of a node changed under us (409) */

static bool ours(const char *key)
{
	return key && !strncmp(key, CLEANUP_PREFIX, strlen(CLEANUP_PREFIX));
}

/* Cordoned by us: our marker, and the node still unschedulable (a person may have lifted it). */
static bool our_cordon(json_object *node)
{
	json_object *u = kube_get(node, "spec.unschedulable");

	return kube_annotation(node, REMEDIATE_ANN_CORDONED) && u &&
	       json_object_is_type(u, json_type_boolean) && json_object_get_boolean(u);
}

/* The patch's "spec" object, made on first use. */
static json_object *spec_of(json_object *patch)
{
	json_object *spec = kube_get(patch, "spec");

	if (!spec) {
		spec = json_object_new_object();
		json_object_object_add(patch, "spec", spec);
	}
	return spec;
}

int cleanup_node_patch(json_object *node, bool keep_cordon, json_object **ret,
		       enum cleanup_cordon *ret_cordon)
{
	_cleanup_(json_object_putp) json_object *patch = json_object_new_object();
	json_object *md, *ann = NULL, *taints = kube_get_array(node, "spec.taints"), *keep = NULL;
	json_object *have = kube_get(node, "metadata.annotations");
	const char *rv = kube_get_str(node, "metadata.resourceVersion", NULL);
	bool cordon = our_cordon(node);
	int n = 0;

	*ret = NULL;
	*ret_cordon = CLEANUP_CORDON_NONE;
	if (!patch)
		return -ENOMEM;
	if (!rv || !*rv)
		return -EINVAL;
	md = json_object_new_object();
	json_object_object_add(patch, "metadata", md);
	json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
	if (cordon && !keep_cordon) {
		/* lifted in the same patch that removes the marker: never a cordon of nobody's */
		json_object_object_add(spec_of(patch), "unschedulable",
				       json_object_new_boolean(false));
		n++;
	}
	if (cordon)
		*ret_cordon = keep_cordon ? CLEANUP_CORDON_KEPT : CLEANUP_CORDON_LIFTED;
	if (have && json_object_is_type(have, json_type_object)) {
		json_object_object_foreach(have, k, v) {
			(void)v;
			if (!ours(k) || (cordon && keep_cordon && streq(k, REMEDIATE_ANN_CORDONED)))
				continue;
			if (!ann) {
				ann = json_object_new_object();
				json_object_object_add(md, "annotations", ann);
			}
			json_object_object_add(ann, k, NULL);	/* merge patch: null deletes */
			n++;
		}
	}
	for (size_t i = 0; taints && i < json_object_array_length(taints); i++)
		if (ours(kube_get_str(json_object_array_get_idx(taints, i), "key", NULL)))
			n++, keep = keep ? keep : json_object_new_array();
	if (keep) {
		for (size_t i = 0; i < json_object_array_length(taints); i++) {
			json_object *t = json_object_array_get_idx(taints, i);

			if (!ours(kube_get_str(t, "key", NULL)))
				json_object_array_add(keep, json_object_get(t));
		}
		/* a list is replaced whole */
		json_object_object_add(spec_of(patch), "taints", keep);
	}
	if (n > 0)
		*ret = TAKE_PTR(patch);
	return n;
}

struct run {
	struct kube_client *kc;
	struct cleanup_stats *st;
	char *err;
	size_t err_size;
	bool keep_cordons;
};

/* Counts the cordon the node's last patch lifted or kept; the kept ones by name. */
static void count_cordon(struct cleanup_stats *st, enum cleanup_cordon c, const char *name)
{
	size_t len = strlen(st->kept_names), size = sizeof(st->kept_names);

	if (c == CLEANUP_CORDON_LIFTED)
		st->uncordoned++;
	if (c != CLEANUP_CORDON_KEPT)
		return;
	st->kept++;
	if (strstr(st->kept_names, "..."))
		return;
	if (len + 2 + strlen(name) + 6 < size)
		snprintf(st->kept_names + len, size - len, "%s%s", len ? ", " : "", name);
	else
		snprintf(st->kept_names + len, size - len, "%s...", len ? ", " : "");
}

/* One request; the HTTP status (or -errno). 200's body goes to *@ret when @ret is not NULL. */
static long send(struct run *r, const char *method, const char *path, const char *ctype,
		 json_object *body, json_object **ret)
{
	struct kube_response resp = { 0 };
	long status;
	int e = kube_json(r->kc, method, path, ctype, body, 0, &resp);

	status = e < 0 ? e : resp.status;
	if (e < 0 || (status != 200 && status != 404 && status != 409))
		snprintf(r->err, r->err_size, "%s %s: %s%ld%s%s", method, path,
			 e < 0 ? "error " : "HTTP ", e < 0 ? (long)-e : status,
			 *resp.message ? ": " : "", resp.message);
	if (ret && status == 200 && resp.body && json_object_is_type(resp.body, json_type_object))
		*ret = json_object_get(resp.body);
	kube_response_clear(&resp);
	return status;
}

/* Our conditions, then our annotations and taints, of one node (re-read after a 409). */
static int clean_node(json_object *node, void *userdata)
{
	struct run *r = userdata;
	const char *name = kube_get_str(node, "metadata.name", "");
	_cleanup_(json_object_putp) json_object *fresh = NULL;
	char path[400];
	int n;

	r->st->nodes++;
	if (!valid_name(name, 253))
		return 0; /* not a name we could put in a path: nothing of ours can be there */
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", name);
	{
		_cleanup_(json_object_putp) json_object *p = NULL;

		n = conditions_build_removal(node, NULL, NULL, &p, NULL);
		if (n < 0)
			return n;
		if (n > 0) {
			/* the node as it is after: its resourceVersion for the next patch */
			long s = send(r, "PATCH", path, "application/strategic-merge-patch+json", p,
				      &fresh);

			if (s != 200 && s != 404)
				return s < 0 ? (int)s : -EREMOTEIO;
			r->st->conditions += (size_t)n;
		}
	}
	path[strlen(path) - strlen("/status")] = '\0';
	for (unsigned i = 0; i < NODE_RETRIES; i++) {
		_cleanup_(json_object_putp) json_object *p = NULL;
		enum cleanup_cordon c;
		long s;

		n = cleanup_node_patch(fresh ? fresh : node, r->keep_cordons, &p, &c);
		if (n <= 0) {
			if (n == 0)
				count_cordon(r->st, c, name);
			return n;
		}
		s = send(r, "PATCH", path, "application/merge-patch+json", p, NULL);
		if (s == 200 || s == 404) {
			r->st->marks += s == 200 ? (size_t)n - (c == CLEANUP_CORDON_LIFTED) : 0;
			if (s == 200)
				count_cordon(r->st, c, name);
			return 0;
		}
		if (s != 409)
			return s < 0 ? (int)s : -EREMOTEIO;
		json_object_put(TAKE_PTR(fresh));
		n = kube_get_object(r->kc, path, "the node", &fresh);
		if (n < 0) {
			snprintf(r->err, r->err_size, "GET %s: failed (see the log)", path);
			return n;
		}
	}
	snprintf(r->err, r->err_size, "PATCH %s: changed under us %d times", path, NODE_RETRIES);
	return -EAGAIN;
}

static int delete_lease(struct run *r, const char *ns, const char *name)
{
	char path[400];
	long s;

	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns,
		 name);
	s = send(r, "DELETE", path, NULL, NULL, NULL);
	if (s == 200)
		r->st->leases++;
	return s == 200 || s == 404 ? 0 : s < 0 ? (int)s : -EREMOTEIO;
}

static int clean_lease(json_object *lease, void *userdata)
{
	struct run *r = userdata;
	const char *name = kube_get_str(lease, "metadata.name", "");
	const char *ns = kube_get_str(lease, "metadata.namespace", "");

	if (!valid_name(name, 253) || !valid_name(ns, 63))
		return 0;
	return delete_lease(r, ns, name);
}

int cleanup_run(struct kube_client *kc, const char *lease_ns, const char *leader_ns,
		bool keep_cordons, struct cleanup_stats *st, char *err, size_t err_size)
{
	struct run r = { kc, st, err, err_size, keep_cordons };
	int e;

	*st = (struct cleanup_stats){ 0 };
	*err = '\0';
	e = fleet_fetch_nodes(kc, NULL, 500, clean_node, &r, NULL, err, err_size);
	if (e < 0)
		return e;
	e = fleet_fetch_leases(kc, lease_ns, clean_lease, &r, err, err_size);
	if (e == 0 && !streq(lease_ns, leader_ns))
		e = fleet_fetch_leases(kc, leader_ns, clean_lease, &r, err, err_size);
	if (e == 0)
		e = delete_lease(&r, leader_ns, LEADER_LEASE);
	return e;
}

/* medik8s' Leases node-* in @ns held by us: deleted at their resourceVersion (one page: a
 * Lease exists only while a node is remediated). */
static int release_medik8s(struct run *r, const char *ns)
{
	_cleanup_(json_object_putp) json_object *list = NULL;
	json_object *items;
	char path[400];
	long s;

	if (!valid_name(ns, 63))
		return 0;
	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases?limit=500",
		 ns);
	s = send(r, "GET", path, NULL, NULL, &list);
	if (s == 404)
		return 0;	/* no such namespace: no medik8s, nothing of ours */
	if (s != 200)
		return s < 0 ? (int)s : -EREMOTEIO;
	items = kube_get_array(list, "items");
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		json_object *l = json_object_array_get_idx(items, i);
		const char *name = kube_get_str(l, "metadata.name", "");
		_cleanup_(json_object_putp) json_object *opt = NULL;
		json_object *pre;

		if (strncmp(name, GUARD_MEDIK8S_PREFIX, strlen(GUARD_MEDIK8S_PREFIX)) != 0 ||
		    !valid_name(name, 253) ||
		    !streq(kube_get_str(l, "spec.holderIdentity", ""), GUARD_MEDIK8S_HOLDER))
			continue;
		opt = json_object_new_object();
		pre = json_object_new_object();
		json_object_object_add(opt, "kind", json_object_new_string("DeleteOptions"));
		json_object_object_add(opt, "apiVersion", json_object_new_string("v1"));
		json_object_object_add(pre, "resourceVersion", json_object_new_string(
			kube_get_str(l, "metadata.resourceVersion", "")));
		json_object_object_add(opt, "preconditions", pre);
		snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
			 ns, name);
		s = send(r, "DELETE", path, "application/json", opt, NULL);
		if (s == 200)
			r->st->locks++;
		else if (s != 404 && s != 409)	/* 409: taken over since: theirs now */
			return s < 0 ? (int)s : -EREMOTEIO;
	}
	return 0;
}

/* Our entries in kured's lock on DaemonSet @ds ("NAMESPACE/NAME"). */
static int release_kured(struct run *r, const char *ds)
{
	const char *sl = strchr(ds, '/');
	char path[400];

	if (!sl)
		return 0;
	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%.*s/daemonsets/%s",
		 (int)(sl - ds), ds, sl + 1);
	for (unsigned i = 0; i < NODE_RETRIES; i++) {
		_cleanup_(json_object_putp) json_object *d = NULL, *p = NULL;
		_cleanup_free_ char *v = NULL;
		json_object *md, *ann;
		long s = send(r, "GET", path, NULL, NULL, &d);

		if (s == 404)
			return 0;
		if (s != 200)
			return s < 0 ? (int)s : -EREMOTEIO;
		v = guard_kured_release(kube_annotation(d, GUARD_KURED_LOCK), NULL);
		if (!v)
			return 0;	/* none of ours: someone else's lock is never written */
		p = json_object_new_object();
		md = json_object_new_object();
		ann = json_object_new_object();
		json_object_object_add(md, "resourceVersion", json_object_new_string(
			kube_get_str(d, "metadata.resourceVersion", "")));
		json_object_object_add(ann, GUARD_KURED_LOCK,
				       *v ? json_object_new_string(v) : NULL);
		json_object_object_add(md, "annotations", ann);
		json_object_object_add(p, "metadata", md);
		s = send(r, "PATCH", path, "application/merge-patch+json", p, NULL);
		if (s == 200) {
			r->st->locks++;
			return 0;
		}
		if (s != 409)
			return s < 0 ? (int)s : -EREMOTEIO;
	}
	snprintf(r->err, r->err_size, "PATCH %s: changed under us %d times", path, NODE_RETRIES);
	return -EAGAIN;
}

int cleanup_handoffs(struct kube_client *kc, const char *medik8s_ns, const char *kured_ds,
		     struct cleanup_stats *st, char *err, size_t err_size)
{
	struct run r = { kc, st, err, err_size, false };
	int e = 0;

	*err = '\0';
	if (medik8s_ns && *medik8s_ns)
		e = release_medik8s(&r, medik8s_ns);
	if (e == 0 && kured_ds && *kured_ds)
		e = release_kured(&r, kured_ds);
	return e;
}
