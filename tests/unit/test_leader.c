/* SPDX-License-Identifier: MIT */
/*
 * The remediator's pure parts, table-tested: the leader decision (leader.h: create, renew, take
 * a released or expired Lease, follow a live holder, never overthrow a hold that cannot be
 * read), the leader Lease body (holder, times, transitions, resourceVersion kept), which nodes
 * need a cycle (remediator.h) and the default leader namespace.
 */
#include "testutil.h"

#include "base/config.h"
#include "base/kjson.h"
#include "remediator/leader.h"
#include "remediator/remediator.h"

/* rows name their leading fields by position and leave the rest zero */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define NOW 1704067200000ull	/* 2024-01-01T00:00:00Z */

static json_object *lease(const char *holder, const char *renew, int duration)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"cpuzombie-remediator\","
		 "\"resourceVersion\":\"42\"},\"spec\":{%s%s%s%s%s%s,\"leaseTransitions\":3}}",
		 holder ? "\"holderIdentity\":\"" : "\"x\":\"", holder ? holder : "", "\"",
		 renew ? ",\"renewTime\":\"" : "", renew ? renew : "", renew ? "\"" : "");
	json_object *o = json_tokener_parse(buf);

	if (duration)
		json_object_object_add(json_object_object_get(o, "spec"), "leaseDurationSeconds",
				       json_object_new_int(duration));
	return o;
}

struct row {
	const char *name, *holder, *renew;
	int duration;
	enum leader_verdict want;
	const char *want_holder;
	uint64_t want_until;
};

static const struct row rows[] = {
	{ "own lease: renew", "me", "2024-01-01T00:00:00.000000Z", 30, LEADER_RENEW },
	{ "own lease expired: still ours, renew", "me", "2023-12-31T00:00:00Z", 30, LEADER_RENEW },
	{ "live holder: follow", "other", "2023-12-31T23:59:50.000000Z", 30, LEADER_FOLLOW,
	  "other", NOW + 20000 },
	{ "expired by exactly its duration: take", "other", "2023-12-31T23:59:30Z", 30,
	  LEADER_TAKE },
	{ "its own longer duration holds", "other", "2023-12-31T23:59:30Z", 60, LEADER_FOLLOW,
	  "other", NOW + 30000 },
	{ "no duration: 30 s", "other", "2023-12-31T23:59:45Z", 0, LEADER_FOLLOW, "other",
	  NOW + 15000 },
	{ "negative duration: 30 s", "other", "2023-12-31T23:59:00Z", -5, LEADER_TAKE },
	{ "released (holder empty): take", "", "2024-01-01T00:00:00Z", 30, LEADER_TAKE },
	{ "no holder field: take", NULL, NULL, 30, LEADER_TAKE },
	{ "unreadable renewTime: follow, end unknown", "other", "yesterday", 30, LEADER_FOLLOW,
	  "other", 0 },
	{ "no renewTime at all: follow", "other", NULL, 30, LEADER_FOLLOW, "other", 0 },
	{ "renewed in the future (skew): follow", "other", "2024-01-01T00:10:00Z", 30,
	  LEADER_FOLLOW, "other", NOW + 630000 },
};

static void test_decide_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		json_object *l = lease(r->holder, r->renew, r->duration);
		struct leader_decision d = leader_decide(l, "me", NOW);

		print_message("%s\n", r->name);
		assert_non_null(l);
		assert_int_equal(d.verdict, r->want);
		if (r->want == LEADER_FOLLOW) {
			assert_string_equal(d.holder, r->want_holder);
			assert_true(d.until_ms == r->want_until);
		}
		json_object_put(l);
	}
	assert_int_equal(leader_decide(NULL, "me", NOW).verdict, LEADER_CREATE);
	assert_string_equal(leader_verdict_name(LEADER_FOLLOW), "follow");
}

static void test_body(void **state)
{
	json_object *n = leader_body("rem-a", NULL, NOW), *old, *b;

	(void)state;
	assert_string_equal(kube_get_str(n, "metadata.name", ""), LEADER_LEASE);
	assert_string_equal(kube_get_str(n, "kind", ""), "Lease");
	assert_string_equal(kube_get_str(n, "spec.holderIdentity", ""), "rem-a");
	assert_string_equal(kube_get_str(n, "spec.renewTime", ""), "2024-01-01T00:00:00.000000Z");
	assert_string_equal(kube_get_str(n, "spec.acquireTime", ""), "2024-01-01T00:00:00.000000Z");
	/* labelled, but not managed-by=cpuzombie: that label selects the budget slots */
	assert_true(json_object_object_get_ex(kube_get(n, "metadata.labels"),
					      "app.kubernetes.io/name", NULL));
	assert_false(json_object_object_get_ex(kube_get(n, "metadata.labels"),
					       "app.kubernetes.io/managed-by", NULL));
	assert_int_equal(leader_decide(n, "rem-a", NOW + 29000).verdict, LEADER_RENEW);
	assert_int_equal(leader_decide(n, "rem-b", NOW + 29000).verdict, LEADER_FOLLOW);
	assert_int_equal(leader_decide(n, "rem-b", NOW + 30000).verdict, LEADER_TAKE);
	json_object_put(n);

	/* taken over: acquireTime new, transitions counted, resourceVersion kept (conditional) */
	old = lease("other", "2023-12-31T00:00:00Z", 30);
	json_object_object_add(json_object_object_get(old, "spec"), "acquireTime",
			       json_object_new_string("2023-12-30T00:00:00Z"));
	b = leader_body("me", old, NOW);
	assert_string_equal(kube_get_str(b, "metadata.resourceVersion", ""), "42");
	assert_string_equal(kube_get_str(b, "spec.acquireTime", ""), "2024-01-01T00:00:00.000000Z");
	assert_int_equal(json_object_get_int(kube_get(b, "spec.leaseTransitions")), 4);
	json_object_put(b);
	json_object_put(old);	/* the body was built on it: one reference each */

	/* renewed by its holder: acquireTime kept, no transition */
	old = lease("me", "2023-12-31T00:00:00Z", 30);
	json_object_object_add(json_object_object_get(old, "spec"), "acquireTime",
			       json_object_new_string("2023-12-30T00:00:00Z"));
	b = leader_body("me", old, NOW);
	assert_string_equal(kube_get_str(b, "spec.acquireTime", ""), "2023-12-30T00:00:00Z");
	assert_int_equal(json_object_get_int(kube_get(b, "spec.leaseTransitions")), 3);
	json_object_put(b);
	json_object_put(old);	/* the body was built on it: one reference each */

	/* released: no holder, 1 s, so the next replica takes it at once */
	old = lease("me", "2024-01-01T00:00:00Z", 30);
	b = leader_body("", old, NOW);
	assert_string_equal(kube_get_str(b, "spec.holderIdentity", "x"), "");
	assert_int_equal(json_object_get_int(kube_get(b, "spec.leaseDurationSeconds")), 1);
	assert_int_equal(leader_decide(b, "rem-b", NOW).verdict, LEADER_TAKE);
	json_object_put(b);
	json_object_put(old);	/* the body was built on it: one reference each */

	/* an old Lease that is not an object, or whose metadata is not: refused, not asserted */
	old = json_object_new_array();
	assert_null(leader_body("me", old, NOW));
	json_object_put(old);
	old = json_tokener_parse("{\"metadata\":7}");
	assert_null(leader_body("me", old, NOW));
	json_object_put(old);
}

static json_object *node(const char *name, const char *cond_status, bool cordoned)
{
	char buf[600];

	snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\"%s},\"status\":{\"conditions\":["
		 "{\"type\":\"Ready\",\"status\":\"True\"}%s%s%s]}}", name,
		 cordoned ? ",\"annotations\":{\"cpuzombie.io/cordoned\":\"x\"}" : "",
		 cond_status ? ",{\"type\":\"MemcgZombieLeak\",\"status\":\"" : "",
		 cond_status ? cond_status : "", cond_status ? "\"}" : "");
	return json_tokener_parse(buf);
}

static void test_node_due(void **state)
{
	static struct cz_config cfg;
	const char *holders[] = { "held" };
	struct {
		json_object *n;
		bool due;
	} t[] = {
		{ node("sick", "True", false), true },
		{ node("healthy", "False", false), false },
		{ node("unknown", "Unknown", false), false },
		{ node("plain", NULL, false), false },
		{ node("ours", "False", true), true },		/* may be due an uncordon */
		{ node("held", "False", false), true },		/* holds a budget slot */
		{ node("bad/name", "True", false), false },	/* never into a URL */
	};

	(void)state;
	config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_non_null(t[i].n);
		assert_int_equal(remediator_node_due(t[i].n, &cfg, holders, 1), t[i].due);
		json_object_put(t[i].n);
	}
	/* a condition type not listed: not ours to act on */
	json_object *n = node("sick", "True", false);
	snprintf(cfg.remediation.conditions.item[0], sizeof(cfg.remediation.conditions.item[0]),
		 "ENADeviceReset");
	cfg.remediation.conditions.n = 1;
	assert_false(remediator_node_due(n, &cfg, NULL, 0));
	json_object_put(n);
}

static void test_default_namespace(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(remediator_default_namespace("monitoring\n", buf, sizeof(buf)),
			    "monitoring");
	assert_string_equal(remediator_default_namespace(NULL, buf, sizeof(buf)), "cpuzombie");
	assert_string_equal(remediator_default_namespace("", buf, sizeof(buf)), "cpuzombie");
	assert_string_equal(remediator_default_namespace("../etc", buf, sizeof(buf)), "cpuzombie");
	assert_string_equal(remediator_default_namespace(
		"a-namespace-name-much-longer-than-sixty-three-bytes-is-not-a-namespace-at-all",
		buf, sizeof(buf)), "cpuzombie");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_node_due),
		cmocka_unit_test(test_default_namespace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
