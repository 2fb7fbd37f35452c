/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: a Node as the API server might send it (any JSON) through every pure consumer:
 * condition patch building and the remediation decisions. Never crash, never trust shapes.
 */
#include <stddef.h>
#include <stdint.h>

#include "cluster/conditions.h"
#include "cluster/kjson.h"
#include "cluster/remediate_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_tokener *t = json_tokener_new_ex(KUBE_JSON_DEPTH);
	struct cz_strlist types = { .n = 2, .item = { "MemcgZombieLeak", "CPUCoreSaturation" } };
	struct cond_input in[] = { { conditions_for_check("memcg"), NPD_PROBLEM, "m" },
				   { conditions_for_check("cpu"), NPD_OK, "" } };
	struct cond_change ch[2];
	json_object *node, *patch = NULL;
	const char *type;
	size_t n;
	bool any;

	node = json_tokener_parse_ex(t, (const char *)data, (int)size);
	json_tokener_free(t);
	if (conditions_build_patch(node, in, 2, 1700000000000ull, &patch, ch, &n) == 0)
		json_object_put(patch);
	remediate_problem(node, &types, 1000, 1700000000000ull, &type, &any);
	remediate_recovered(node, &types, 1000, 1700000000000ull);
	remediate_is_control_plane(node);
	json_object_put(node);
	return 0;
}
