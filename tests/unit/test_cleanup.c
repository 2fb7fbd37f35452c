/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "base/config.h"
#include "remediator/cleanup.h"
#include "condition/conditions.h"
#include "base/kjson.h"
#include "remediator/remediate_plan.h"

/* A node with ours and theirs: the EKS node monitoring agent's types, Ready, a foreign taint
 * and annotation, and ours of each kind. */
static const char node_json[] =
	"{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"42\",\"annotations\":{"
	"\"cpuzombie.io/cordoned\":\"2024\",\"cpuzombie.io/last-action\":\"x\","
	"\"kured.dev/node-lock\":\"y\",\"cpuzombie.iox/not-ours\":\"z\"}},"
	"\"spec\":{\"taints\":[{\"key\":\"cpuzombie.io/unhealthy\",\"effect\":\"NoSchedule\"},"
	"{\"key\":\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"}]},"
	"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
	"{\"type\":\"KernelReady\",\"status\":\"False\"},{\"type\":\"NetworkingReady\","
	"\"status\":\"True\"},{\"type\":\"MemcgZombieLeak\",\"status\":\"True\"},"
	"{\"type\":\"ENADeviceReset\",\"status\":\"False\"}]}}";

static void test_removal_only_ours(void **st)
{
	json_object *node = json_tokener_parse(node_json), *patch, *list;
	struct cz_config cfg;
	const char *types[3];

	config_defaults(&cfg);
	/* every check on: nothing to remove */
	assert_int_equal(conditions_build_removal(node, &cfg, conditions_enabled, &patch, types), 0);
	assert_null(patch);
	/* ena off: only ENADeviceReset, as a delete directive */
	cfg.ena.condition = false;
	cfg.cpu.condition = false;	/* off, but the node has no CPUCoreSaturation */
	assert_int_equal(conditions_build_removal(node, &cfg, conditions_enabled, &patch, types), 1);
	assert_string_equal(types[0], "ENADeviceReset");
	list = kube_get_array(patch, "status.conditions");
	assert_int_equal(json_object_array_length(list), 1);
	assert_string_equal(kube_get_str(json_object_array_get_idx(list, 0), "$patch", ""),
			    "delete");
	json_object_put(patch);
	/* cleanup: all of ours the node has, never Ready/KernelReady/NetworkingReady */
	assert_int_equal(conditions_build_removal(node, NULL, NULL, &patch, types), 2);
	assert_string_equal(types[0], "MemcgZombieLeak");
	assert_string_equal(types[1], "ENADeviceReset");
	assert_string_equal(json_object_to_json_string(patch),
			    "{ \"status\": { \"conditions\": [ { \"type\": \"MemcgZombieLeak\", "
			    "\"$patch\": \"delete\" }, { \"type\": \"ENADeviceReset\", "
			    "\"$patch\": \"delete\" } ] } }");
	json_object_put(patch);
	json_object_put(node);
}

static void test_node_patch(void **st)
{
	json_object *node = json_tokener_parse(node_json), *patch, *ann, *taints;
	enum cleanup_cordon c;

	/* the marker without spec.unschedulable: a cordon someone lifted, nothing to uncordon */
	/* 2 annotations, 1 taint */
	assert_int_equal(cleanup_node_patch(node, false, &patch, &c), 3);
	assert_int_equal(c, CLEANUP_CORDON_NONE);
	assert_null(kube_get(patch, "spec.unschedulable"));
	assert_string_equal(kube_get_str(patch, "metadata.resourceVersion", ""), "42");
	ann = kube_get(patch, "metadata.annotations");
	assert_int_equal(json_object_object_length(ann), 2);
	assert_true(json_object_object_get_ex(ann, "cpuzombie.io/cordoned", NULL));
	assert_false(json_object_object_get_ex(ann, "kured.dev/node-lock", NULL));
	assert_false(json_object_object_get_ex(ann, "cpuzombie.iox/not-ours", NULL));
	taints = kube_get_array(patch, "spec.taints");
	assert_int_equal(json_object_array_length(taints), 1);
	assert_string_equal(kube_get_str(json_object_array_get_idx(taints, 0), "key", ""),
			    "node.kubernetes.io/unschedulable");
	json_object_put(patch);
	json_object_put(node);
	/* the remediator's clock and held-long mark go too (every cpuzombie.io/ annotation) */
	node = json_tokener_parse("{\"metadata\":{\"resourceVersion\":\"3\",\"annotations\":{"
				  "\"" REMEDIATE_ANN_TRUE_SINCE "\":\"2024-01-01T00:00:00Z\",\""
				  REMEDIATE_ANN_RECOVERED_SINCE "\":\"2024-01-01T00:00:00Z\",\""
				  REMEDIATE_ANN_HELD_LONG "\":\"2024-01-01T00:00:00Z\"}}}");
	assert_int_equal(cleanup_node_patch(node, false, &patch, &c), 3);
	ann = kube_get(patch, "metadata.annotations");
	assert_true(json_object_object_get_ex(ann, REMEDIATE_ANN_TRUE_SINCE, NULL));
	assert_true(json_object_object_get_ex(ann, REMEDIATE_ANN_RECOVERED_SINCE, NULL));
	assert_true(json_object_object_get_ex(ann, REMEDIATE_ANN_HELD_LONG, NULL));
	json_object_put(patch);
	json_object_put(node);
	/* nothing of ours: no patch; no resourceVersion: refused, never unconditional */
	node = json_tokener_parse("{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":"
				  "{\"a\":\"b\"}},\"spec\":{\"taints\":[{\"key\":\"k\"}]}}");
	assert_int_equal(cleanup_node_patch(node, false, &patch, &c), 0);
	assert_null(patch);
	json_object_put(node);
	node = json_tokener_parse("{\"metadata\":{\"annotations\":{\"cpuzombie.io/x\":\"1\"}}}");
	assert_int_equal(cleanup_node_patch(node, false, &patch, &c), -EINVAL);
	assert_null(patch);
	json_object_put(node);
}

/* A cordon of ours is lifted in the same resourceVersion-checked patch that removes its
 * marker, or kept with its marker when asked; a cordon without our marker is someone else's. */
static void test_node_patch_cordons(void **st)
{
	static const char cordoned[] =
		"{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"7\",\"annotations\":{"
		"\"cpuzombie.io/cordoned\":\"2024\",\"cpuzombie.io/drained\":\"2024\"}},"
		"\"spec\":{\"unschedulable\":true}}";
	json_object *node = json_tokener_parse(cordoned), *patch, *ann;
	enum cleanup_cordon c;

	assert_int_equal(cleanup_node_patch(node, false, &patch, &c), 3);
	assert_int_equal(c, CLEANUP_CORDON_LIFTED);
	assert_string_equal(json_object_to_json_string_ext(patch, JSON_C_TO_STRING_NOSLASHESCAPE),
			    "{\"metadata\":{\"resourceVersion\":\"7\",\"annotations\":{"
			    "\"cpuzombie.io/cordoned\":null,\"cpuzombie.io/drained\":null}},"
			    "\"spec\":{\"unschedulable\":false}}");
	json_object_put(patch);
	assert_int_equal(cleanup_node_patch(node, true, &patch, &c), 1);
	assert_int_equal(c, CLEANUP_CORDON_KEPT);
	ann = kube_get(patch, "metadata.annotations");
	assert_int_equal(json_object_object_length(ann), 1);
	assert_true(json_object_object_get_ex(ann, "cpuzombie.io/drained", NULL));
	assert_null(kube_get(patch, "spec"));
	json_object_put(patch);
	json_object_put(node);
	/* kept with nothing else to remove: no patch, still counted as kept */
	node = json_tokener_parse("{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":{"
				  "\"cpuzombie.io/cordoned\":\"x\"}},"
				  "\"spec\":{\"unschedulable\":true}}");
	assert_int_equal(cleanup_node_patch(node, true, &patch, &c), 0);
	assert_null(patch);
	assert_int_equal(c, CLEANUP_CORDON_KEPT);
	json_object_put(node);
	/* someone else's cordon (no marker of ours): never lifted */
	node = json_tokener_parse("{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":{"
				  "\"cpuzombie.io/last-action\":\"x\"}},"
				  "\"spec\":{\"unschedulable\":true}}");
	assert_int_equal(cleanup_node_patch(node, false, &patch, &c), 1);
	assert_int_equal(c, CLEANUP_CORDON_NONE);
	assert_null(kube_get(patch, "spec"));
	json_object_put(patch);
	json_object_put(node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_removal_only_ours),
		cmocka_unit_test(test_node_patch),
		cmocka_unit_test(test_node_patch_cordons),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
