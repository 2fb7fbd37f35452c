/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: an object as the API server might send it (any JSON) through every pure consumer:
 * the condition patch, the remediation plan (as the Node, and as the Lease list it reads), the
 * slot choice and the drain's pod decisions. Never crash, never trust shapes.
 */
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "condition/conditions.h"
#include "remediator/drain.h"
#include "base/kjson.h"
#include "remediator/lease.h"
#include "remediator/remediate_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void plans(json_object *node, json_object *leases)
{
	static struct cz_config cfg;
	static const enum rem_outcome outcomes[] = { REM_NOT_TRIED, REM_DONE, REM_FAILED,
						     REM_TIMED_OUT, REM_BLOCKED };
	uint8_t slots[4] = { REM_SLOT_UNKNOWN, REM_SLOT_HOLDER_HELD, REM_SLOT_HOLDER_GONE,
			     REM_SLOT_LOST };
	struct rem_plan p;

	if (!cfg.remediation.conditions.n)
		config_defaults(&cfg);
	snprintf(cfg.remediation.max_unavailable, sizeof(cfg.remediation.max_unavailable), "4");
	for (int mode = CZ_REMEDIATE_OFF; mode <= CZ_REMEDIATE_DRAIN; mode++) {
		cfg.remediation.mode = (enum cz_remediation_mode)mode;
		for (size_t o = 0; o < sizeof(outcomes) / sizeof(outcomes[0]); o++) {
			struct rem_input in = { .cfg = &cfg, .node_name = "n1", .node = node,
						.now_ms = 1700000000000ull, .leases_read = true,
						.leases = leases, .slots = slots, .nslots = 4,
						.slot_held = o ? 1 : -1, .cordon = outcomes[o],
						.drain = outcomes[o], .mark_drained = outcomes[o],
						.clock = outcomes[o], .slot_found = outcomes[o] };

			remediate_plan(&in, &p);
			in.leases_read = false;
			remediate_plan(&in, &p);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cz_strlist types = { .n = 2, .item = { "MemcgZombieLeak", "CPUCoreSaturation" } };
	struct cond_input in[] = { { conditions_for_check("memcg"), NPD_PROBLEM, "m" },
				   { conditions_for_check("cpu"), NPD_OK, "" } };
	struct cond_change ch[2];
	json_object *node, *patch = NULL, *items;
	struct cz_config cfg;
	struct rem_clock clock;
	const char *type;
	size_t n;
	bool any;

	log_set_max_level((enum log_prio)0);
	node = kube_parse_body((const char *)data, size);
	if (conditions_build_patch(node, in, 2, 1700000000000ull, &patch, ch, &n) == 0)
		json_object_put(patch);
	remediate_clock(node, &types, true, 1700000000000ull, &clock);	/* our annotations */
	remediate_problem(node, &types, clock.true_since_ms, 1000, 1700000000000ull, &type, &any);
	remediate_recovered(node, &types, clock.recovered_since_ms, 1000, 1700000000000ull);
	remediate_is_control_plane(node);
	items = kube_get_array(node, "items");
	plans(node, items);
	(void)lease_pick(items, 3, "n1", 1700000000000ull, NULL, 0);
	config_defaults(&cfg);
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		json_object *l = json_object_array_get_idx(items, i);

		(void)drain_pod_disposition(l, &cfg);
		json_object_put(lease_body("cpuzombie-slot-0", "n1", l, 1700000000000ull));
	}
	json_object_put(node);
	return 0;
}
