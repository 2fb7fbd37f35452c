/* SPDX-License-Identifier: MIT */
/* Remediation, the executor: see remediate.h. Decisions are in remediate_plan.c. */
#include <errno.h>
#include <fcntl.h>

#include "base/log.h"
#include "base/util.h"
#include "remediator/drain.h"
#include "kube/event.h"
#include "kube/fleet_fetch.h"
#include "remediator/guard.h"
#include "remediator/lease.h"
#include "remediator/remediate.h"

#define SMP "application/strategic-merge-patch+json"
#define MAX_ROUNDS 256		/* plans per cycle: each round learns one fact or takes a step */

#define log_kube(prio, ...) \
	log_fields_full((prio), &(struct log_fields){ LOG_MID_KUBE, NULL, -1, NULL }, __VA_ARGS__)

struct rem {
	struct kube_client *kc;
	const struct cz_config *cfg;
	struct rem_input in;
	json_object *leases_body;	/* owns in.leases */
	json_object *guard_lease;	/* the guard Lease as read (NULL: none) */
	json_object *node_now;		/* the node as our clock's PATCH answered (owns in.node) */
	struct guard_fleet fleet;	/* counted here when the caller gave none */
	char drain_pod[320];
	char handoff_holder[128];
	char kured_holder[128];
};

static void medik8s_release(struct rem *r);
static void medik8s_renew(struct rem *r);
static void kured_release(struct rem *r);
static void kured_renew(struct rem *r);

static void node_path(const struct rem *r, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "/api/v1/nodes/%s", name);
}

static void lease_path(const struct rem *r, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s",
		 r->cfg->remediation.lease_namespace, name ? "/" : "", name ? name : "");
}

static int get_node(struct rem *r, json_object **ret)
{
	char path[400], what[320];

	node_path(r, r->in.node_name, path, sizeof(path));
	snprintf(what, sizeof(what), "node %s", r->in.node_name);
	return kube_get_object(r->kc, path, what, ret);
}

/* PATCH our node (not its status) with @patch; the node as answered into *@ret when not NULL.
 * Returns 0 or -errno (logged). */
static int patch_node_as(struct rem *r, json_object *patch, json_object **ret)
{
	struct kube_response resp = { 0 };
	char path[400];
	int e;

	if (!patch)
		return -ENOMEM;
	node_path(r, r->in.node_name, path, sizeof(path));
	e = kube_json(r->kc, "PATCH", path, SMP, patch, 0, &resp);
	if (e == 0 && resp.status != 200)
		e = log_error_errno(EREMOTEIO, "PATCH node %s: HTTP %ld: %s", r->in.node_name,
				    resp.status, resp.message);
	else if (e < 0)
		log_error_errno(e, "PATCH node %s: %s", r->in.node_name, resp.message);
	if (e == 0 && ret && resp.body && json_object_is_type(resp.body, json_type_object) &&
	    streq(kube_get_str(resp.body, "metadata.name", ""), r->in.node_name))
		*ret = json_object_get(resp.body);
	kube_response_clear(&resp);
	return e;
}

static int patch_node(struct rem *r, json_object *patch)
{
	return patch_node_as(r, patch, NULL);
}

static const char *node_rv(const struct rem *r)
{
	return kube_get_str(r->in.node, "metadata.resourceVersion", NULL);
}

/* ---- Leases -------------------------------------------------------------------------------- */

/* GET a JSON list and its items array. Returns 0 (the body in *@ret_body) or -errno (logged). */
static int get_list(struct rem *r, const char *path, const char *what, json_object **ret_body,
		    json_object **ret_items)
{
	_cleanup_(json_object_putp) json_object *body = NULL;
	int e = kube_get_object(r->kc, path, what, &body);

	if (e < 0)
		return e;
	*ret_items = kube_get_array(body, "items");
	if (!*ret_items)
		return log_error_errno(EBADMSG,
				       "Failed to read %s: the answer has no list of items", what);
	*ret_body = TAKE_PTR(body);
	return 0;
}

static int list_leases(struct rem *r, json_object **ret_body, json_object **ret_items)
{
	char path[400];

	lease_path(r, NULL, path, sizeof(path));
	strncat(path, "?labelSelector=" LEASE_LABEL_SELECTOR, sizeof(path) - strlen(path) - 1);
	return get_list(r, path, "the cpuzombie leases", ret_body, ret_items);
}

static void step_list_leases(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *nodes = NULL;
	json_object *items = NULL;
	int e = 0, budget;

	r->in.leases_read = true;
	if (strchr(r->cfg->remediation.max_unavailable, '%')) {
		e = get_list(r, "/api/v1/nodes", "the node list (max_unavailable is a percentage)",
			     &nodes, &items);
		if (e == 0)
			r->in.nodes_total = json_object_array_length(items);
	}
	if (e == 0)
		e = list_leases(r, &r->leases_body, &r->in.leases);
	if (e < 0) {
		r->in.leases = NULL;
		r->in.leases_err = e;
		return;
	}
	budget = remediate_budget(r->cfg->remediation.max_unavailable, r->in.nodes_total);
	if (budget > 0 && !(r->in.slots = calloc((size_t)budget, 1)))
		return;		/* without facts every expired slot just stays unknown */
	r->in.nslots = budget > 0 ? (size_t)budget : 0;
}

/* Is the node holding an expired slot still cordoned by us? Unreadable counts as held. */
static void step_read_holder(struct rem *r, int slot)
{
	struct kube_response resp = { 0 };
	char name[64], path[400];
	const char *holder;
	bool held;

	snprintf(name, sizeof(name), LEASE_PREFIX "%d", slot);
	holder = kube_get_str(lease_named(r->in.leases, name), "spec.holderIdentity", "");
	if (!valid_name(holder, 253) || (size_t)slot >= r->in.nslots)
		return;
	node_path(r, holder, path, sizeof(path));
	held = kube_request(r->kc, "GET", path, NULL, NULL, 0, &resp) < 0 ||
	       (resp.status != 200 && resp.status != 404) ||
	       (resp.status == 200 && kube_annotation(resp.body, REMEDIATE_ANN_CORDONED));
	kube_response_clear(&resp);
	r->in.slots[slot] = held ? REM_SLOT_HOLDER_HELD : REM_SLOT_HOLDER_GONE;
}

/* Create slot @slot, or update it at the resourceVersion listed. Returns HTTP status or -errno. */
static long write_slot(struct rem *r, int slot)
{
	char name[64], path[400];
	json_object *old;
	_cleanup_(json_object_putp) json_object *l = NULL;
	struct kube_response resp = { 0 };
	long st;
	int e;

	snprintf(name, sizeof(name), LEASE_PREFIX "%d", slot);
	old = lease_named(r->in.leases, name);
	l = lease_body(name, r->in.node_name, old, r->in.now_ms);
	if (!l)
		return -ENOMEM;
	lease_path(r, old ? name : NULL, path, sizeof(path));
	e = kube_json(r->kc, old ? "PUT" : "POST", path, "application/json", l, 0, &resp);
	st = e < 0 ? e : resp.status;
	kube_response_clear(&resp);
	return st;
}

static void step_take_slot(struct rem *r, int slot, bool renew)
{
	long st = write_slot(r, slot);

	r->in.slot_tried = true;
	if (renew) {
		medik8s_renew(r);
		kured_renew(r);
	}
	if (renew || st == 200 || st == 201) {
		r->in.slot_held = slot;	/* a failed renewal only means a stale renewTime */
		return;
	}
	/* 409: another node took it first (or our retried create landed: seen next cycle) */
	if ((size_t)slot < r->in.nslots)
		r->in.slots[slot] = REM_SLOT_LOST;
	if (st < 0 && st != -EREMOTEIO)
		r->in.err = (int)st;
}

static void step_release_slots(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *body = NULL;
	json_object *items;
	char path[400], pre[200];

	medik8s_release(r);
	kured_release(r);
	if (list_leases(r, &body, &items) < 0)
		return;
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *l = json_object_array_get_idx(items, i);
		struct kube_response resp = { 0 };
		const char *name = kube_get_str(l, "metadata.name", "");

		if (!streq(kube_get_str(l, "spec.holderIdentity", ""), r->in.node_name) ||
		    !valid_name(name, 253))
			continue;
		lease_path(r, name, path, sizeof(path));
		snprintf(pre, sizeof(pre), "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
			 "\"preconditions\":{\"resourceVersion\":\"%.100s\"}}",
			 kube_get_str(l, "metadata.resourceVersion", ""));
		(void)kube_request(r->kc, "DELETE", path, "application/json", pre, 0, &resp);
		kube_response_clear(&resp);
	}
}

/* ---- the node ------------------------------------------------------------------------------ */

/* After a failed cordon PATCH: does the node carry exactly our cordon anyway? */
static bool cordon_landed(struct rem *r, const char *why)
{
	_cleanup_(json_object_putp) json_object *n = NULL;
	const char *a;

	if (get_node(r, &n) < 0)
		return false;
	a = kube_annotation(n, REMEDIATE_ANN_CORDONED);
	return a && streq(a, why) && kube_get_bool(n, "spec.unschedulable");
}

static void step_cordon(struct rem *r, const struct rem_step *s)
{
	char why[200];
	const char *kv[4] = { REMEDIATE_ANN_CORDONED, why, REMEDIATE_ANN_ACTION, "cordon" };
	_cleanup_(json_object_putp) json_object *p = NULL;
	int e;

	remediate_cordon_reason(r->in.now_ms, s->cond_type, r->cfg->remediation.for_ms, s->slot,
				why, sizeof(why));
	p = remediate_node_patch(kv, 4, 1, node_rv(r));
	e = patch_node(r, p);
	if (e < 0 && cordon_landed(r, why))
		e = 0;	/* the answer was lost and the retry saw 409: our own write had landed */
	r->in.cordon = e < 0 ? REM_FAILED : REM_DONE;
	if (e < 0)
		r->in.err = e;
}

/* The uncordon (@ours) or the forget: our marks go; the forget keeps our clock's
 * REMEDIATE_ANN_TRUE_SINCE (a condition still True is still True since then). */
static int step_uncordon(struct rem *r, bool ours)
{
	const char *kv[] = { REMEDIATE_ANN_CORDONED, NULL, REMEDIATE_ANN_DRAINED, NULL,
			     REMEDIATE_ANN_GAVE_BACK, NULL, REMEDIATE_ANN_HELD_LONG, NULL,
			     REMEDIATE_ANN_RECOVERED_SINCE, NULL,
			     REMEDIATE_ANN_ACTION, ours ? "uncordon" : "released",
			     REMEDIATE_ANN_TRUE_SINCE, NULL };
	_cleanup_(json_object_putp) json_object *p = remediate_node_patch(kv, ours ? 14 : 12,
									  ours ? 0 : -1,
									  node_rv(r));

	return patch_node(r, p);
}

/* Our clock's annotations as the plan wants them (0: removed). On success the node as answered
 * becomes the cycle's (its resourceVersion is the one a cordon must name next). */
static void step_clock(struct rem *r, const struct rem_step *s)
{
	char a[40], b[40];
	const char *kv[4] = {
		REMEDIATE_ANN_TRUE_SINCE,
		s->true_since_ms ? kube_time(s->true_since_ms, false, a, sizeof(a)) : NULL,
		REMEDIATE_ANN_RECOVERED_SINCE,
		s->recovered_since_ms ? kube_time(s->recovered_since_ms, false, b, sizeof(b)) : NULL
	};
	_cleanup_(json_object_putp) json_object *p = remediate_node_patch(kv, 4, -1, NULL);
	json_object *now = NULL;
	int e = patch_node_as(r, p, &now);

	r->in.clock = e < 0 ? REM_FAILED : REM_DONE;
	if (e < 0) {
		r->in.err = e;
		return;
	}
	if (now) {
		json_object_put(r->node_now);
		r->node_now = now;
		r->in.node = now;
	}
}

/* Held past uncordon_after + drain_timeout: say so on the node (a failure is logged; the next
 * cycle plans it again). */
static void step_mark_held_long(struct rem *r)
{
	char ts[40];
	const char *kv[2] = { REMEDIATE_ANN_HELD_LONG,
			      kube_time(r->in.now_ms, false, ts, sizeof(ts)) };
	_cleanup_(json_object_putp) json_object *p = remediate_node_patch(kv, 2, -1, NULL);

	(void)patch_node(r, p);
}

/* Does a budget Lease still name this node (the slot was given back)? */
static void step_find_slot(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *body = NULL;
	json_object *items;
	int e = list_leases(r, &body, &items);

	if (e < 0) {
		r->in.slot_found = REM_FAILED;
		r->in.err = e;
		return;
	}
	r->in.slot_found = remediate_holds_slot(items, r->in.node_name) ? REM_DONE : REM_BLOCKED;
}

static void step_mark_drained(struct rem *r)
{
	char ts[40];
	const char *kv[4] = { REMEDIATE_ANN_DRAINED, kube_time(r->in.now_ms, false, ts, sizeof(ts)),
			      REMEDIATE_ANN_ACTION, "drain" };
	_cleanup_(json_object_putp) json_object *p = remediate_node_patch(kv, 4, -1, NULL);
	int e = patch_node(r, p);

	r->in.mark_drained = e < 0 ? REM_FAILED : REM_DONE;
	if (e < 0)
		r->in.err = e;
}

/* A protected pod held the drain past drain_timeout: say so on the node, whose slot the plan
 * releases next (a failure is logged; the next cycle plans the same again). */
static void step_give_back(struct rem *r)
{
	char ts[40];
	const char *kv[4] = { REMEDIATE_ANN_GAVE_BACK,
			      kube_time(r->in.now_ms, false, ts, sizeof(ts)),
			      REMEDIATE_ANN_ACTION, "slot given back" };
	_cleanup_(json_object_putp) json_object *p = remediate_node_patch(kv, 4, -1, NULL);

	(void)patch_node(r, p);
}

static void step_sentinel(struct rem *r)
{
	const char *path = r->cfg->remediation.reboot_sentinel;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);

	if (fd < 0)
		log_error_errno(errno, "Failed to write reboot sentinel '%s': %m", path);
	else
		close(fd);
}

static void step_event(struct rem *r, const struct rem_step *s, const char *msg)
{
	struct event_desc d = { r->in.node_name, kube_get_str(r->in.node, "metadata.uid", NULL),
				s->event_type, s->reason, msg, s->when_ms };

	(void)event_post(r->kc, &d);
}

/* ---- the fleet guards ---------------------------------------------------------------------- */

static bool guard_lease_used(const struct cz_config *cfg)
{
	return cfg->remediation.breaker_max || cfg->remediation.drain_gap_ms;
}

/* GET @path: 1 = there (body in *@ret, may be NULL), 0 = 404, -errno otherwise (logged). */
static int get_maybe(struct rem *r, const char *path, json_object **ret)
{
	struct kube_response resp = { 0 };
	int e = kube_request(r->kc, "GET", path, NULL, NULL, 0, &resp);

	if (e == 0 && resp.status == 404)
		e = 0;
	else if (e == 0 && resp.status == 200)
		e = 1;
	else if (e == 0)
		e = log_error_errno(EREMOTEIO, "Failed to read %s: HTTP %ld: %s", path, resp.status,
				    resp.message);
	else
		log_error_errno(e, "Failed to read %s: %s", path, resp.message);
	if (e == 1 && ret)
		*ret = json_object_get(resp.body);
	kube_response_clear(&resp);
	return e;
}

/* Is everything paused? 1 yes, 0 no, -errno (unreadable: the caller holds). */
static int cluster_paused(struct rem *r)
{
	char path[400];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/" GUARD_PAUSE_CM,
		 r->cfg->remediation.lease_namespace);
	return get_maybe(r, path, NULL);
}

/* kured's DaemonSet (kured_daemonset "NAMESPACE/NAME"): false when off. */
static bool kured_path(const struct rem *r, char *buf, size_t size)
{
	const char *k = r->cfg->remediation.kured_daemonset, *sl = strchr(k, '/');

	if (!*k || !sl)
		return false;
	snprintf(buf, size, "/apis/apps/v1/namespaces/%.*s/daemonsets/%s", (int)(sl - k), k,
		 sl + 1);
	return true;
}

/* GET kured's DaemonSet: 1 there (in *@ret), 0 off or no such DaemonSet, -errno (logged). */
static int kured_get(struct rem *r, json_object **ret)
{
	char path[400];

	if (!kured_path(r, path, sizeof(path)))
		return 0;
	return get_maybe(r, path, ret);
}

/* Read kured's node lock into in.kured: 0, or -errno (unreadable: the caller holds). */
static int kured_lock(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *ds = NULL;
	int e = kured_get(r, &ds);

	r->in.kured = GUARD_KURED_FREE;
	if (e <= 0)
		return e;
	r->in.kured = guard_kured_state(kube_annotation(ds, GUARD_KURED_LOCK), r->in.node_name,
					r->in.now_ms, r->kured_holder, sizeof(r->kured_holder));
	r->in.kured_holder = r->kured_holder;
	return 0;
}

/*
 * Write kured's lock annotation on @ds as read (@value NULL: remove it), at its
 * resourceVersion, as kured's own Update() does: the HTTP status (409: someone wrote it since
 * we read) or -errno.
 */
static long kured_write(struct rem *r, json_object *ds, const char *value)
{
	_cleanup_(json_object_putp) json_object *p = json_object_new_object();
	json_object *m = json_object_new_object(), *a = json_object_new_object();
	struct kube_response resp = { 0 };
	char path[400];
	long st;
	int e;

	if (!kured_path(r, path, sizeof(path)))
		return -EINVAL;
	json_object_object_add(m, "resourceVersion", json_object_new_string(
		kube_get_str(ds, "metadata.resourceVersion", "")));
	json_object_object_add(a, GUARD_KURED_LOCK, value ? json_object_new_string(value) : NULL);
	json_object_object_add(m, "annotations", a);
	json_object_object_add(p, "metadata", m);
	e = kube_json(r->kc, "PATCH", path, "application/merge-patch+json", p, 0, &resp);
	st = e < 0 ? e : resp.status;
	if (st != 200 && st != 409)
		log_kube(LOG_PRIO_ERR, "Failed to write kured's node lock on %s: %ld: %s",
			 r->cfg->remediation.kured_daemonset, st, resp.message);
	kube_response_clear(&resp);
	return st;
}

/*
 * Take kured's lock for this node before the cordon, as kured's Acquire() does: a live lock of
 * another node blocks us (kured reboots one node at a time: neither of us acts on a second
 * node meanwhile); a free or expired one is written at the resourceVersion read, so kured and
 * cpuzombie can never both win it. No DaemonSet (404): no kured, nothing to hand off.
 */
static void step_kured_lock(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *ds = NULL;
	_cleanup_free_ char *v = NULL;
	int e = kured_get(r, &ds);
	long st;

	if (e < 0) {
		r->in.kured_take = REM_FAILED;
		r->in.err = e;
		return;
	}
	if (e == 0) {
		r->in.kured_take = REM_DONE;
		return;
	}
	v = guard_kured_take(kube_annotation(ds, GUARD_KURED_LOCK), r->in.node_name, r->in.now_ms);
	if (!v) {
		(void)guard_kured_state(kube_annotation(ds, GUARD_KURED_LOCK), r->in.node_name,
					r->in.now_ms, r->kured_holder, sizeof(r->kured_holder));
		r->in.kured_holder = *r->kured_holder ? r->kured_holder : "kured (this node)";
		r->in.kured_take = REM_BLOCKED;
		return;
	}
	st = kured_write(r, ds, v);
	if (st == 200) {
		r->in.kured_take = REM_DONE;
		return;
	}
	if (st == 409) {
		snprintf(r->kured_holder, sizeof(r->kured_holder), "another writer (409)");
		r->in.kured_holder = r->kured_holder;
		r->in.kured_take = REM_BLOCKED;
		return;
	}
	r->in.kured_take = REM_FAILED;
	r->in.err = st < 0 ? (int)st : -EREMOTEIO;
}

/*
 * Give kured's lock back (the uncordon, a forgotten node, a remediation that did not start):
 * only our own entry for this node, at the resourceVersion read; a 409 is read again (twice).
 * Someone else's lock is never written.
 *
 * The reboot hand-off (remediation.reboot_sentinel) keeps the lock: kured on the drained node
 * finds the sentinel, its Holding() sees a lock naming its node, so it skips Acquire() and
 * reboots at once; no other node can take the lock from the cordon to the reboot, so kured
 * never reboots a second node while ours is down. After the reboot kured's start-up sees the
 * lock still naming its node, leaves the cordon (metadata.unschedulable true: the cordon was
 * there before it) and releases the lock; we uncordon once the conditions recover.
 */
static void kured_release(struct rem *r)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		_cleanup_(json_object_putp) json_object *ds = NULL;
		_cleanup_free_ char *v = NULL;

		if (kured_get(r, &ds) != 1)
			return;
		v = guard_kured_release(kube_annotation(ds, GUARD_KURED_LOCK), r->in.node_name);
		if (!v || kured_write(r, ds, *v ? v : NULL) != 409)
			return;
	}
}

/* While we hold the node: renew our lock once half its TTL has passed, or take it again if
 * it is free (kured's start-up on the node released it). Someone else's is left alone. */
static void kured_renew(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *ds = NULL;
	_cleanup_free_ char *v = NULL;
	const char *a;
	enum guard_kured st;

	if (kured_get(r, &ds) != 1)
		return;
	a = kube_annotation(ds, GUARD_KURED_LOCK);
	st = guard_kured_state(a, r->in.node_name, r->in.now_ms, NULL, 0);
	if (st == GUARD_KURED_OURS &&
	    guard_kured_state(a, r->in.node_name, r->in.now_ms + GUARD_KURED_TTL_MS / 2, NULL,
			      0) == GUARD_KURED_OURS)
		return;	/* not half-way yet */
	if ((st == GUARD_KURED_OURS || st == GUARD_KURED_FREE) &&
	    (v = guard_kured_take(a, r->in.node_name, r->in.now_ms)))
		(void)kured_write(r, ds, v);
}

static void step_read_guards(struct rem *r)
{
	char path[400];
	int e;

	r->in.guards_read = true;
	e = cluster_paused(r);
	if (e < 0) {
		r->in.guards_err = e;
		return;
	}
	r->in.cluster_paused = e == 1;
	e = kured_lock(r);
	if (e < 0) {
		r->in.guards_err = e;
		return;
	}
	if (!guard_lease_used(r->cfg))
		return;
	json_object_put(r->guard_lease);
	r->guard_lease = NULL;
	lease_path(r, GUARD_LEASE, path, sizeof(path));
	e = get_maybe(r, path, &r->guard_lease);
	if (e < 0)
		r->in.guards_err = e;
	else
		guard_state_read(r->guard_lease, r->in.now_ms,
				 r->cfg->remediation.breaker_window_ms, &r->in.guard);
}

static int count_node(json_object *node, void *userdata)
{
	struct rem *r = userdata;

	guard_fleet_add(&r->fleet, node, &r->cfg->remediation.conditions);
	return 0;
}

static void step_count_fleet(struct rem *r)
{
	char err[512] = "";
	int e = -ESTALE;

	r->in.fleet_read = true;
	for (int attempt = 0; e == -ESTALE && attempt < 3; attempt++) {
		r->fleet = (struct guard_fleet){ 0 };
		e = fleet_fetch_nodes(r->kc, r->cfg->remediation.node_selector, 500, count_node, r,
				      NULL, err, sizeof(err));
	}
	if (e < 0) {
		log_error_errno(e, "storm guard: cannot count the nodes: %s", err);
		r->in.err = e;
		return;
	}
	r->in.fleet = &r->fleet;
}

/* Write the guard Lease @l (create, or update at the resourceVersion read): DONE or FAILED. */
static enum rem_outcome write_guard(struct rem *r, json_object *l)
{
	struct kube_response resp = { 0 };
	char path[400];
	long st;
	int e;

	if (!l)
		return REM_FAILED;
	lease_path(r, r->guard_lease ? GUARD_LEASE : NULL, path, sizeof(path));
	e = kube_json(r->kc, r->guard_lease ? "PUT" : "POST", path, "application/json", l, 0,
		      &resp);
	st = e < 0 ? e : resp.status;
	if (st != 200 && st != 201 && st != 409)
		log_kube(LOG_PRIO_ERR, "Failed to write Lease %s/" GUARD_LEASE ": %ld: %s",
			 r->cfg->remediation.lease_namespace, st, resp.message);
	kube_response_clear(&resp);
	json_object_put(l);
	return st == 200 || st == 201 ? REM_DONE : REM_FAILED;
}

static void step_record(struct rem *r)
{
	r->in.record = write_guard(r, guard_record_body(r->guard_lease, r->in.node_name,
							 r->in.now_ms,
							 r->cfg->remediation.breaker_window_ms));
}

static void step_trip(struct rem *r)
{
	char why[200], w[40];

	snprintf(why, sizeof(why),
		 "%zu remediations within %s, the last by %.64s: reset with "
		 "kubectl annotate lease " GUARD_LEASE " " GUARD_ANN_TRIPPED "-",
		 r->in.guard.recent,
		 format_duration(r->cfg->remediation.breaker_window_ms, w, sizeof(w)),
		 r->in.node_name);
	r->in.trip = write_guard(r, guard_trip_body(r->guard_lease, r->in.now_ms, why));
	if (r->in.trip == REM_DONE)
		log_kube(LOG_PRIO_WARNING, "circuit breaker tripped: %s", why);
}

/* Between two drain rounds: has a person paused this node or everything? */
static bool paused_now(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *n = NULL;

	if (get_node(r, &n) == 0 && guard_paused_node(n))
		return true;
	return cluster_paused(r) == 1;
}

/* ---- hand-off with medik8s NodeHealthCheck ------------------------------------------------- */

static void medik8s_path(const struct rem *r, bool named, char *buf, size_t size)
{
	snprintf(buf, size, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s%s",
		 r->cfg->remediation.medik8s_lease_namespace, named ? "/" : "",
		 named ? GUARD_MEDIK8S_PREFIX : "", named ? r->in.node_name : "");
}

/* Create (@old NULL) or update medik8s' Lease for this node: the HTTP status or -errno. */
static long medik8s_write(struct rem *r, json_object *old)
{
	_cleanup_(json_object_putp) json_object *l = guard_medik8s_body(old, r->in.node_name,
		kube_get_str(r->in.node, "metadata.uid", NULL), r->in.now_ms);
	struct kube_response resp = { 0 };
	char path[400];
	long st;
	int e;

	if (!l)
		return -ENOMEM;
	medik8s_path(r, old != NULL, path, sizeof(path));
	/* the field manager the admission policy reads the server's clock from (managedFields) */
	snprintf(path + strlen(path), sizeof(path) - strlen(path),
		 "?fieldManager=" GUARD_MEDIK8S_HOLDER);
	e = kube_json(r->kc, old ? "PUT" : "POST", path, "application/json", l, 0, &resp);
	st = e < 0 ? e : resp.status;
	kube_response_clear(&resp);
	return st;
}

/* @old, medik8s' Lease for this node, held by someone else and still valid: the hand-off is
 * BLOCKED, their holder named; true. False: free, expired or ours. */
static bool medik8s_held(struct rem *r, json_object *old)
{
	if (streq(kube_get_str(old, "spec.holderIdentity", ""), GUARD_MEDIK8S_HOLDER) ||
	    !guard_medik8s_valid(old, r->in.now_ms))
		return false;
	snprintf(r->handoff_holder, sizeof(r->handoff_holder), "%.100s",
		 kube_get_str(old, "spec.holderIdentity", "?"));
	r->in.handoff_holder = r->handoff_holder;
	r->in.handoff = REM_BLOCKED;
	return true;
}

/*
 * Take medik8s' Lease: created (a 404 there means its namespace does not exist: no
 * NodeHealthCheck, nothing to hand off), ours already, or taken over once invalid; a valid
 * Lease of another holder blocks the node.
 */
static void step_handoff(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *old = NULL;
	char path[400];
	long st;
	int e;

	medik8s_path(r, true, path, sizeof(path));
	e = get_maybe(r, path, &old);
	if (e < 0) {
		r->in.handoff = REM_FAILED;
		r->in.err = e;
		return;
	}
	if (e == 1 && medik8s_held(r, old))
		return;
	st = medik8s_write(r, e == 1 ? old : NULL);
	if (st == 200 || st == 201 || (e == 0 && st == 404)) {
		r->in.handoff = REM_DONE;
		return;
	}
	if (st == 409) {	/* another remediator wrote it first: it acts */
		snprintf(r->handoff_holder, sizeof(r->handoff_holder), "another remediator (409)");
		r->in.handoff_holder = r->handoff_holder;
		r->in.handoff = REM_BLOCKED;
		return;
	}
	log_kube(LOG_PRIO_ERR, "Failed to take Lease %s: %ld", path, st);
	r->in.handoff = REM_FAILED;
	r->in.err = st < 0 ? (int)st : -EREMOTEIO;
}

/* dry-run: would medik8s' Lease block us? Read only (BLOCKED, DONE, or FAILED unreadable). */
static void step_peek_handoff(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *old = NULL;
	char path[400];
	int e;

	medik8s_path(r, true, path, sizeof(path));
	e = get_maybe(r, path, &old);
	r->in.handoff = e < 0 ? REM_FAILED : REM_DONE;
	if (e < 0)
		r->in.err = e;
	if (e == 1)
		(void)medik8s_held(r, old);
}

/* Give medik8s' Lease back (deleted at its resourceVersion), when we hold it. */
static void medik8s_release(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *l = NULL;
	struct kube_response resp = { 0 };
	char path[400], pre[200];

	if (!*r->cfg->remediation.medik8s_lease_namespace)
		return;
	medik8s_path(r, true, path, sizeof(path));
	if (get_maybe(r, path, &l) != 1 ||
	    !streq(kube_get_str(l, "spec.holderIdentity", ""), GUARD_MEDIK8S_HOLDER))
		return;
	snprintf(pre, sizeof(pre), "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
		 "\"preconditions\":{\"resourceVersion\":\"%.100s\"}}",
		 kube_get_str(l, "metadata.resourceVersion", ""));
	(void)kube_request(r->kc, "DELETE", path, "application/json", pre, 0, &resp);
	kube_response_clear(&resp);
}

/* While we hold the node: renew medik8s' Lease once half of its hold has passed. */
static void medik8s_renew(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *l = NULL;
	char path[400];
	uint64_t t;

	if (!*r->cfg->remediation.medik8s_lease_namespace)
		return;
	medik8s_path(r, true, path, sizeof(path));
	if (get_maybe(r, path, &l) != 1 ||
	    !streq(kube_get_str(l, "spec.holderIdentity", ""), GUARD_MEDIK8S_HOLDER) ||
	    (kube_parse_time(kube_get_str(l, "spec.renewTime", NULL), &t) == 0 &&
	     t <= r->in.now_ms && r->in.now_ms - t < GUARD_MEDIK8S_SECONDS * 1000ull / 2))
		return;
	(void)medik8s_write(r, l);
}

/* ---- drain --------------------------------------------------------------------------------- */

/* One eviction: 1 = done (evicted or gone), 0 = try again later (429), -errno = failed. */
static int evict(struct rem *r, json_object *pod)
{
	const char *ns = kube_get_str(pod, "metadata.namespace", "default");
	const char *name = kube_get_str(pod, "metadata.name", "");
	struct kube_response resp = { 0 };
	char path[600], body[600];
	int e;

	if (!drain_names_ok(ns, name))
		return -EINVAL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
	snprintf(body, sizeof(body), "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}}", name, ns);
	e = kube_request(r->kc, "POST", path, "application/json", body, KUBE_NO_RETRY_429, &resp);
	if (e < 0) {
		kube_response_clear(&resp);
		return e;
	}
	switch (drain_eviction_outcome(resp.status, r->cfg)) {
	case DRAIN_EVICTED:
		e = 1;
		break;
	case DRAIN_RETRY:
		e = 0;
		break;
	case DRAIN_DELETE:
		log_kube(LOG_PRIO_WARNING, "%s: eviction of %s/%s refused (HTTP %ld: %s): deleting "
			 "it (remediation.allow_delete)", r->in.node_name, ns, name, resp.status,
			 resp.message);
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
		e = kube_request(r->kc, "DELETE", path, NULL, NULL, 0, &resp);
		e = e < 0 ? e : (resp.status == 200 || resp.status == 404) ? 1 : -EREMOTEIO;
		break;
	case DRAIN_EVICT_FAILED:
		e = log_error_errno(EREMOTEIO, "%s: eviction of %s/%s failed: HTTP %ld: %s",
				    r->in.node_name, ns, name, resp.status, resp.message);
		break;
	}
	kube_response_clear(&resp);
	return e;
}

/* A protected pod among those that must go: the drain evicts nothing (PROTECTED). */
static bool drain_protected(struct rem *r, json_object *items)
{
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *p = json_object_array_get_idx(items, i);
		enum drain_pod d = drain_pod_disposition(p, r->cfg);

		if ((d == DRAIN_POD_EVICT || d == DRAIN_POD_BLOCKED) && guard_pod_protected(p)) {
			snprintf(r->drain_pod, sizeof(r->drain_pod), "%.100s/%.200s",
				 kube_get_str(p, "metadata.namespace", ""),
				 kube_get_str(p, "metadata.name", ""));
			r->in.drain_pod = r->drain_pod;
			r->in.drain = REM_PROTECTED;
			return true;
		}
	}
	return false;
}

/* dry-run: would a protected pod hold the drain? (drain PROTECTED; unreadable: logged) */
static void step_peek_pods(struct rem *r)
{
	_cleanup_(json_object_putp) json_object *body = NULL;
	json_object *items = NULL;
	char path[400];

	r->in.pods_peeked = true;
	snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
		 r->in.node_name);
	if (get_list(r, path, "the node's pods", &body, &items) == 0)
		(void)drain_protected(r, items);
}

/* Paused since the last round: stop where the drain is (PAUSED_MID). */
static bool drain_paused(struct rem *r, json_object *items)
{
	int left = 0;

	if (!paused_now(r))
		return false;
	for (size_t i = 0; i < json_object_array_length(items); i++)
		left += drain_pod_disposition(json_object_array_get_idx(items, i), r->cfg) !=
			DRAIN_POD_SKIP;
	r->in.drain = REM_PAUSED_MID;
	r->in.drain_left = left;
	return true;
}

/* Evict every pod that must go, waiting out PDBs, until done, blocked or drain_timeout. */
static void step_drain(struct rem *r)
{
	uint64_t deadline = now_monotonic_ms() + r->cfg->remediation.drain_timeout_ms;
	uint64_t backoff = 1000;
	char path[400];

	snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
		 r->in.node_name);
	for (;;) {
		_cleanup_(json_object_putp) json_object *body = NULL;
		json_object *items = NULL;
		int left = 0, blocked = 0, failed = 0, err = 0, e;

		e = get_list(r, path, "the node's pods", &body, &items);
		if (e < 0) {
			r->in.drain = REM_FAILED;
			r->in.err = e;
			return;
		}
		if (drain_protected(r, items) || drain_paused(r, items))
			return;
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			json_object *p = json_object_array_get_idx(items, i);

			switch (drain_pod_disposition(p, r->cfg)) {
			case DRAIN_POD_SKIP: break;
			case DRAIN_POD_BLOCKED: blocked++; break;
			case DRAIN_POD_LEAVING: left++; break;
			case DRAIN_POD_EVICT:
				e = evict(r, p);
				left += e != 1;
				if (e < 0 && !failed++)
					err = e;
				break;
			}
		}
		switch (drain_round_verdict(left, blocked, failed, now_monotonic_ms(), backoff,
					    deadline)) {
		case DRAIN_ROUND_FAILED:
			r->in.drain = REM_FAILED;
			r->in.err = err;
			return;
		case DRAIN_ROUND_DONE:
			r->in.drain = REM_DONE;
			return;
		case DRAIN_ROUND_BLOCKED:
			r->in.drain = REM_BLOCKED;
			r->in.drain_left = blocked;
			return;
		case DRAIN_ROUND_TIMED_OUT:
			r->in.drain = REM_TIMED_OUT;
			r->in.drain_left = left;
			return;
		case DRAIN_ROUND_AGAIN:
			usleep((useconds_t)(backoff * 1000));
			backoff = drain_next_backoff(backoff);
		}
	}
}

/* ---- the cycle ----------------------------------------------------------------------------- */

/* Carry out @p's steps. Returns 0, or -errno when a final plan's node PATCH failed (the rest of
 * the plan is then not done: the next cycle sees the same node and plans again). */
static int execute(struct rem *r, const struct rem_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct rem_step *s = &p->steps[i];
		int e;

		switch (s->op) {
		case REM_OP_LIST_LEASES: step_list_leases(r); break;
		case REM_OP_READ_HOLDER: step_read_holder(r, s->slot); break;
		case REM_OP_TAKE_SLOT: step_take_slot(r, s->slot, false); break;
		case REM_OP_RENEW_SLOT: step_take_slot(r, s->slot, true); break;
		case REM_OP_CORDON: step_cordon(r, s); break;
		case REM_OP_RELEASE_SLOTS: step_release_slots(r); break;
		case REM_OP_DRAIN: step_drain(r); break;
		case REM_OP_MARK_DRAINED: step_mark_drained(r); break;
		case REM_OP_SENTINEL: step_sentinel(r); break;
		case REM_OP_EVENT: step_event(r, s, p->msg); break;
		case REM_OP_READ_GUARDS: step_read_guards(r); break;
		case REM_OP_COUNT_FLEET: step_count_fleet(r); break;
		case REM_OP_RECORD: step_record(r); break;
		case REM_OP_TRIP: step_trip(r); break;
		case REM_OP_HANDOFF: step_handoff(r); break;
		case REM_OP_KURED_LOCK: step_kured_lock(r); break;
		case REM_OP_PEEK_HANDOFF: step_peek_handoff(r); break;
		case REM_OP_PEEK_PODS: step_peek_pods(r); break;
		case REM_OP_GIVE_BACK: step_give_back(r); break;
		case REM_OP_CLOCK: step_clock(r, s); break;
		case REM_OP_MARK_HELD_LONG: step_mark_held_long(r); break;
		case REM_OP_FIND_SLOT: step_find_slot(r); break;
		case REM_OP_UNCORDON:
		case REM_OP_FORGET:
			e = step_uncordon(r, s->op == REM_OP_UNCORDON);
			if (e < 0)
				return e;
			break;
		}
	}
	return 0;
}

/* Outside the maintenance window now? A zone that cannot be used keeps it closed. */
static bool window_closed(const struct cz_config *cfg, uint64_t now_ms)
{
	int wday, minute;

	if (!cfg->remediation.window_days.n && !*cfg->remediation.window_start &&
	    !*cfg->remediation.window_end)
		return false;
	if (guard_local(cfg->remediation.window_timezone, now_ms, &wday, &minute) < 0) {
		log_error(
			"remediation.window_timezone '%s': not in the TZ database: the maintenance "
			"window stays closed",
			cfg->remediation.window_timezone);
		return true;
	}
	return !guard_window_open(cfg, wday, minute);
}

int remediate_cycle(struct kube_client *kc, const struct cz_config *cfg, const char *node_name,
		    uint64_t now_ms, enum remediate_action *ret_action, char *summary,
		    size_t summary_size)
{
	return remediate_cycle_fleet(kc, cfg, node_name, now_ms, NULL, ret_action, summary,
				     summary_size);
}

int remediate_cycle_fleet(struct kube_client *kc, const struct cz_config *cfg,
			  const char *node_name, uint64_t now_ms, const struct guard_fleet *fleet,
			  enum remediate_action *ret_action, char *summary, size_t summary_size)
{
	_cleanup_(json_object_putp) json_object *node = NULL;
	struct rem r = { .kc = kc, .cfg = cfg };
	struct rem_plan p = { .action = REM_NONE };
	int e = 0;

	snprintf(summary, summary_size, "remediation off");
	*ret_action = REM_NONE;
	if (cfg->remediation.mode == CZ_REMEDIATE_OFF)
		return 0;
	r.in = (struct rem_input){ .cfg = cfg, .node_name = node_name, .now_ms = now_ms,
				   .slot_held = -1, .fleet_read = fleet != NULL, .fleet = fleet,
				   .window_closed = window_closed(cfg, now_ms) };
	e = get_node(&r, &node);
	if (e < 0) {
		snprintf(summary, summary_size, "cannot read node %.64s", node_name);
		return e;
	}
	r.in.node = node;
	for (unsigned round = 0; round < MAX_ROUNDS; round++) {
		remediate_plan(&r.in, &p);
		e = execute(&r, &p);
		if (e < 0) {
			p.action = REM_WAITING;
			p.ret = e;
			break;
		}
		if (!p.again)
			break;
	}
	if (p.again) {	/* 409 on more slots than MAX_ROUNDS: try again next cycle */
		snprintf(p.msg, sizeof(p.msg), "gave up after %d planning rounds", MAX_ROUNDS);
		p.action = REM_WAITING;
		p.notable = true;
	}
	if (p.notable || p.ret < 0)
		log_kube(p.ret < 0 ? LOG_PRIO_ERR : LOG_PRIO_NOTICE, "%s: %s", node_name, p.msg);
	snprintf(summary, summary_size, "%s", p.msg);
	*ret_action = p.action;
	json_object_put(r.leases_body);
	json_object_put(r.guard_lease);
	json_object_put(r.node_now);
	free(r.in.slots);
	return p.ret;
}
