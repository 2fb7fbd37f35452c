/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "condition/conditions.h"
#include "base/kjson.h"
#include "remediator/remediate_plan.h"

static const char node_json[] =
	"{\"metadata\":{\"labels\":{\"node-role.kubernetes.io/control-plane\":\"\"}},"
	"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
	"{\"type\":\"MemcgZombieLeak\",\"status\":\"True\",\"lastTransitionTime\":"
	"\"2024-01-01T00:00:00Z\"},{\"type\":\"CPUCoreSaturation\",\"status\":\"False\","
	"\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}}";

#define T2024 1704067200000ull

static void test_patch_keeps_or_flips_transition_time(void **s)
{
	json_object *node = json_tokener_parse(node_json), *patch, *list, *c;
	struct cond_input in[] = {
		{ conditions_for_check("memcg"), NPD_PROBLEM, "12840 dying" },
		{ conditions_for_check("cpu"), NPD_PROBLEM, "burst" },
		{ conditions_for_check("ena"), NPD_UNKNOWN, "no ena" },
	};
	struct cond_change ch[3];
	size_t nch;

	assert_int_equal(conditions_build_patch(node, in, 3, T2024 + 3600000, &patch, ch, &nch), 0);
	list = kube_get(patch, "status.conditions");
	assert_int_equal(json_object_array_length(list), 3);	/* Ready is not in the patch */
	c = json_object_array_get_idx(list, 0);
	assert_string_equal(kube_get_str(c, "lastTransitionTime", ""), "2024-01-01T00:00:00Z");
	assert_string_equal(kube_get_str(c, "lastHeartbeatTime", ""), "2024-01-01T01:00:00Z");
	assert_string_equal(kube_get_str(c, "reason", ""), "ZombieMemcgsHigh");
	c = json_object_array_get_idx(list, 1);
	assert_string_equal(kube_get_str(c, "lastTransitionTime", ""), "2024-01-01T01:00:00Z");
	c = json_object_array_get_idx(list, 2);
	assert_string_equal(kube_get_str(c, "status", ""), "Unknown");
	assert_string_equal(kube_get_str(c, "reason", ""), "NoENAResets");
	assert_int_equal(nch, 2);
	assert_string_equal(ch[0].def->type, "CPUCoreSaturation");
	assert_string_equal(ch[0].old_status, "False");
	assert_string_equal(ch[1].old_status, "");
	json_object_put(patch);
	json_object_put(node);
	assert_null(conditions_for_check("ena-allowance"));
}

static void test_remediation_guards_pure(void **s)
{
	json_object *node = json_tokener_parse(node_json);
	struct cz_strlist types = { .n = 1, .item = { "MemcgZombieLeak" } };
	struct cz_strlist cpu = { .n = 1, .item = { "CPUCoreSaturation" } };
	const char *type = NULL;
	bool any;

	/* the time is the remediator's own (since T2024 here), never lastTransitionTime */
	assert_true(remediate_problem(node, &types, T2024, 600000, T2024 + 600000, &type, &any));
	assert_string_equal(type, "MemcgZombieLeak");
	assert_false(remediate_problem(node, &types, T2024, 600001, T2024 + 600000, NULL, &any));
	assert_true(any);
	assert_false(remediate_problem(node, &types, 0, 0, T2024 + 600000, NULL, &any));
	assert_false(remediate_recovered(node, &types, T2024, 0, T2024 + 1));
	assert_true(remediate_recovered(node, &cpu, T2024, 1000, T2024 + 1000));
	assert_false(remediate_recovered(node, &cpu, T2024, 1001, T2024 + 1000));
	assert_false(remediate_recovered(node, &cpu, 0, 0, T2024 + 1000));
	assert_true(remediate_is_control_plane(node));
	assert_int_equal(remediate_budget("2", 20), 2);
	assert_int_equal(remediate_budget("10%", 20), 2);
	assert_int_equal(remediate_budget("10%", 5), 1);
	assert_int_equal(remediate_budget("0", 5), -EINVAL);
	assert_int_equal(remediate_budget("101%", 5), -EINVAL);
	assert_int_equal(remediate_budget("x", 5), -EINVAL);
	json_object_put(node);
}

static void test_times(void **s)
{
	char buf[40];
	uint64_t ms;

	assert_string_equal(kube_time(T2024 + 1234, true, buf, sizeof(buf)),
			    "2024-01-01T00:00:01.234000Z");
	assert_int_equal(kube_parse_time("2024-01-01T00:00:01.234567Z", &ms), 0);
	assert_int_equal(ms, T2024 + 1234);
	assert_int_equal(kube_parse_time("2024-01-01T00:00:01+02:00", &ms), -EINVAL);
	assert_int_equal(kube_parse_time("2024-01-01T00:00:01.Z", &ms), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_keeps_or_flips_transition_time),
		cmocka_unit_test(test_remediation_guards_pure),
		cmocka_unit_test(test_times),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
