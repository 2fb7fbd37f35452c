/* SPDX-License-Identifier: MIT */
/* The remediation budget's Leases, pure: see lease.h. Field names: coordination.k8s.io/v1. */
#include "base/util.h"
#include "base/kjson.h"
#include "remediator/lease.h"

json_object *lease_named(json_object *items, const char *name)
{
	size_t n = items && json_object_is_type(items, json_type_array) ?
			   json_object_array_length(items) : 0;

	for (size_t i = 0; i < n; i++) {
		json_object *l = json_object_array_get_idx(items, i);

		if (streq(kube_get_str(l, "metadata.name", ""), name))
			return l;
	}
	return NULL;
}

/* The slot @me already holds, or -1. */
static int held_slot(json_object *items, const char *me, json_object **ret)
{
	size_t n = items && json_object_is_type(items, json_type_array) ?
			   json_object_array_length(items) : 0;

	for (size_t i = 0; i < n; i++) {
		json_object *l = json_object_array_get_idx(items, i);
		const char *name = kube_get_str(l, "metadata.name", "");
		uint64_t idx = 0;

		if (!streq(kube_get_str(l, "spec.holderIdentity", ""), me) ||
		    !startswith(name, LEASE_PREFIX))
			continue;
		*ret = l;
		(void)parse_u64(name + strlen(LEASE_PREFIX), &idx);
		return (int)(idx < 100000 ? idx : 0);
	}
	return -1;
}

struct lease_pick lease_pick(json_object *items, int budget, const char *me, uint64_t now_ms,
			     const uint8_t *facts, size_t nfacts)
{
	json_object *mine = NULL;
	int s = held_slot(items, me, &mine);

	if (s >= 0)
		return (struct lease_pick){ LEASE_OURS, s, mine, NULL };
	for (int i = 0; i < budget; i++) {
		uint8_t fact = (size_t)i < nfacts ? facts[i] : REM_SLOT_UNKNOWN;
		char name[64];
		json_object *l;
		const char *holder;
		uint64_t renew;

		if (fact == REM_SLOT_LOST)
			continue;
		snprintf(name, sizeof(name), LEASE_PREFIX "%d", i);
		l = lease_named(items, name);
		holder = kube_get_str(l, "spec.holderIdentity", "");
		if (!l || !*holder)
			return (struct lease_pick){ LEASE_TAKE, i, l, NULL };
		if (!valid_name(holder, 253))
			continue; /* not a node name: never put it in a URL; the slot stays taken */
		if (kube_parse_time(kube_get_str(l, "spec.renewTime", NULL), &renew) < 0 ||
		    renew + (uint64_t)LEASE_SECONDS * 1000 > now_ms)
			continue;	/* live (or unreadable: not provably expired) */
		if (fact == REM_SLOT_UNKNOWN)
			return (struct lease_pick){ LEASE_CHECK_HOLDER, i, l, holder };
		if (fact == REM_SLOT_HOLDER_GONE)
			return (struct lease_pick){ LEASE_TAKE, i, l, NULL };
	}
	return (struct lease_pick){ LEASE_FULL, -1, NULL, NULL };
}

json_object *lease_body(const char *name, const char *me, json_object *old, uint64_t now_ms)
{
	json_object *l = NULL, *md, *spec, *labels;
	char now[40];
	const char *acquired;

	if (old && !json_object_is_type(old, json_type_object))
		return NULL;	/* json-c asserts on adding a key to anything else */
	/* a copy: should the update be refused (409), the listed Lease still names its holder */
	if (old ? json_object_deep_copy(old, &l, NULL) < 0 : !(l = json_object_new_object()))
		return NULL;
	md = kube_get(l, "metadata");
	if (md && !json_object_is_type(md, json_type_object)) {
		json_object_put(l);
		return NULL;
	}
	kube_time(now_ms, true, now, sizeof(now));	/* MicroTime: six fractional digits */
	if (!md) {
		md = json_object_new_object();
		labels = json_object_new_object();
		json_object_object_add(l, "apiVersion",
				       json_object_new_string("coordination.k8s.io/v1"));
		json_object_object_add(l, "kind", json_object_new_string("Lease"));
		json_object_object_add(md, "name", json_object_new_string(name));
		json_object_object_add(labels, "app.kubernetes.io/managed-by",
				       json_object_new_string("cpuzombie"));
		json_object_object_add(md, "labels", labels);
		json_object_object_add(l, "metadata", md);
	}
	acquired = old && streq(kube_get_str(old, "spec.holderIdentity", ""), me) ?
			   kube_get_str(old, "spec.acquireTime", now) : now;
	spec = json_object_new_object();
	json_object_object_add(spec, "holderIdentity", json_object_new_string(me));
	json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(LEASE_SECONDS));
	json_object_object_add(spec, "acquireTime", json_object_new_string(acquired));
	json_object_object_add(spec, "renewTime", json_object_new_string(now));
	json_object_object_add(l, "spec", spec);	/* replaces (and frees) the old spec */
	return l;
}
