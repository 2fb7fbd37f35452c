/* SPDX-License-Identifier: MIT */
/* The remediator's leader Lease, pure: see leader.h. Field names: coordination.k8s.io/v1. */
#include "base/util.h"
#include "base/kjson.h"
#include "remediator/leader.h"

const char *leader_verdict_name(enum leader_verdict v)
{
	static const char *const names[] = { "create", "renew", "take", "follow" };

	return v < ARRAY_SIZE(names) ? names[v] : "?";
}

static int64_t duration_s(json_object *lease)
{
	json_object *spec = kube_get(lease, "spec"), *d = NULL;
	int64_t v;

	if (!spec || !json_object_is_type(spec, json_type_object) ||
	    !json_object_object_get_ex(spec, "leaseDurationSeconds", &d) ||
	    !json_object_is_type(d, json_type_int))
		return LEADER_SECONDS;
	v = json_object_get_int64(d);
	return v > 0 && v <= 86400 ? v : LEADER_SECONDS;
}

struct leader_decision leader_decide(json_object *lease, const char *me, uint64_t now_ms)
{
	const char *holder, *t;
	uint64_t renew, until;

	if (!lease)
		return (struct leader_decision){ LEADER_CREATE, NULL, 0 };
	holder = kube_get_str(lease, "spec.holderIdentity", "");
	if (!*holder)
		return (struct leader_decision){ LEADER_TAKE, NULL, 0 };	/* released */
	if (streq(holder, me))
		return (struct leader_decision){ LEADER_RENEW, NULL, 0 };
	t = kube_get_str(lease, "spec.renewTime", NULL);
	if (!t)
		t = kube_get_str(lease, "spec.acquireTime", NULL);
	if (kube_parse_time(t, &renew) < 0)
		return (struct leader_decision){ LEADER_FOLLOW, holder, 0 };
	until = renew + (uint64_t)duration_s(lease) * 1000;
	if (until <= now_ms)
		return (struct leader_decision){ LEADER_TAKE, NULL, 0 };
	return (struct leader_decision){ LEADER_FOLLOW, holder, until };
}

json_object *leader_body(const char *me, json_object *old, uint64_t now_ms)
{
	json_object *l, *md, *spec, *labels, *tr = NULL;
	const char *prev = old ? kube_get_str(old, "spec.holderIdentity", "") : "";
	int64_t transitions = 0;
	char now[40];

	if (old && !json_object_is_type(old, json_type_object))
		return NULL;	/* json-c asserts on adding a key to anything else */
	md = old ? kube_get(old, "metadata") : NULL;
	if (md && !json_object_is_type(md, json_type_object))
		return NULL;
	l = old ? json_object_get(old) : json_object_new_object();
	if (!l)
		return NULL;
	kube_time(now_ms, true, now, sizeof(now));	/* MicroTime: six fractional digits */
	if (!md) {
		md = json_object_new_object();
		labels = json_object_new_object();
		json_object_object_add(l, "apiVersion",
				       json_object_new_string("coordination.k8s.io/v1"));
		json_object_object_add(l, "kind", json_object_new_string("Lease"));
		json_object_object_add(md, "name", json_object_new_string(LEADER_LEASE));
		/* not managed-by=cpuzombie: that label selects the budget slots (lease.h) */
		json_object_object_add(labels, "app.kubernetes.io/name",
				       json_object_new_string("cpuzombie"));
		json_object_object_add(labels, "app.kubernetes.io/component",
				       json_object_new_string("remediator"));
		json_object_object_add(md, "labels", labels);
		json_object_object_add(l, "metadata", md);
	}
	if (old && json_object_object_get_ex(kube_get(old, "spec"), "leaseTransitions", &tr) &&
	    json_object_is_type(tr, json_type_int))
		transitions = json_object_get_int64(tr);
	if (*me && *prev && !streq(prev, me))
		transitions++;
	spec = json_object_new_object();
	json_object_object_add(spec, "holderIdentity", json_object_new_string(me));
	/* released: 1 s, as client-go's ReleaseOnCancel, so the next replica need not wait */
	json_object_object_add(spec, "leaseDurationSeconds",
			       json_object_new_int(*me ? LEADER_SECONDS : 1));
	json_object_object_add(spec, "acquireTime", json_object_new_string(
		old && *me && streq(prev, me) ? kube_get_str(old, "spec.acquireTime", now) : now));
	json_object_object_add(spec, "renewTime", json_object_new_string(now));
	json_object_object_add(spec, "leaseTransitions", json_object_new_int64(transitions));
	json_object_object_add(l, "spec", spec);	/* replaces (and frees) the old spec */
	return l;
}
