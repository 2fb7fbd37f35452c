/* SPDX-License-Identifier: MIT */
/*
 * Remediation's pure facts about a node (remediate_plan.h): the remediator's own clock, a
 * problem and a recovery by it, the budget, the control-plane labels, our annotations' values
 * and node patches. The plan that decides with them: remediate_plan.c.
 */
#include <errno.h>

#include "base/util.h"
#include "base/kjson.h"
#include "remediator/remediate_plan.h"

/* ---- pure facts about the node ------------------------------------------------------------- */

/* A listed condition True, and are all listed ones False (or absent)? */
static void listed_states(json_object *node, const struct cz_strlist *types, bool *ret_any_true,
			  bool *ret_all_false)
{
	json_object *list = kube_get_array(node, "status.conditions");
	size_t n = list ? json_object_array_length(list) : 0;

	*ret_any_true = false;
	*ret_all_false = true;
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		const char *st = kube_get_str(c, "status", "");

		if (!config_strlist_has(types, kube_get_str(c, "type", "")))
			continue;
		if (streq(st, "True"))
			*ret_any_true = true;
		if (!streq(st, "False"))
			*ret_all_false = false;
	}
}

/* Our annotation @key as a time no later than @now_ms (0: absent, unreadable or ahead). */
static uint64_t clock_read(json_object *node, const char *key, uint64_t now_ms)
{
	uint64_t t;

	if (kube_parse_time(kube_annotation(node, key), &t) < 0 || t == 0 || t > now_ms)
		return 0;
	return t;
}

/* The annotation @key should say @want (0: be absent): does it? */
static bool clock_says(json_object *node, const char *key, uint64_t want)
{
	const char *a = kube_annotation(node, key);
	char ts[40];

	if (!want)
		return a == NULL;
	return a && streq(a, kube_time(want, false, ts, sizeof(ts)));
}

void remediate_clock(json_object *node, const struct cz_strlist *types, bool ours,
		     uint64_t now_ms, struct rem_clock *ret)
{
	uint64_t now_s = now_ms / 1000 * 1000;
	bool any_true, all_false;

	listed_states(node, types, &any_true, &all_false);
	*ret = (struct rem_clock){ 0 };
	if (any_true) {
		ret->true_since_ms = clock_read(node, REMEDIATE_ANN_TRUE_SINCE, now_ms);
		if (!ret->true_since_ms)
			ret->true_since_ms = now_s;
	}
	if (ours && all_false) {
		ret->recovered_since_ms = clock_read(node, REMEDIATE_ANN_RECOVERED_SINCE, now_ms);
		if (!ret->recovered_since_ms)
			ret->recovered_since_ms = now_s;
	}
	ret->write = !clock_says(node, REMEDIATE_ANN_TRUE_SINCE, ret->true_since_ms) ||
		     !clock_says(node, REMEDIATE_ANN_RECOVERED_SINCE, ret->recovered_since_ms);
}

bool remediate_problem(json_object *node, const struct cz_strlist *types, uint64_t since_ms,
		       uint64_t for_ms, uint64_t now_ms, const char **ret_type, bool *ret_any_true)
{
	json_object *list = kube_get_array(node, "status.conditions");
	size_t n = list ? json_object_array_length(list) : 0;
	const char *first = NULL;

	for (size_t i = 0; i < n && !first; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		const char *type = kube_get_str(c, "type", "");

		if (config_strlist_has(types, type) && streq(kube_get_str(c, "status", ""), "True"))
			first = type;
	}
	if (ret_any_true)
		*ret_any_true = first != NULL;
	/* no time of ours: we cannot tell how long, so not long enough */
	if (!first || !since_ms || since_ms > now_ms || now_ms - since_ms < for_ms)
		return false;
	if (ret_type)
		*ret_type = first;
	return true;
}

bool remediate_recovered(json_object *node, const struct cz_strlist *types, uint64_t since_ms,
			 uint64_t after_ms, uint64_t now_ms)
{
	bool any_true, all_false;

	listed_states(node, types, &any_true, &all_false);
	return all_false && since_ms && since_ms <= now_ms && now_ms - since_ms >= after_ms;
}

bool remediate_holds_slot(json_object *items, const char *me)
{
	size_t n = items && json_object_is_type(items, json_type_array) ?
			   json_object_array_length(items) : 0;

	for (size_t i = 0; i < n; i++)
		if (streq(kube_get_str(json_object_array_get_idx(items, i), "spec.holderIdentity",
				       ""), me))
			return true;
	return false;
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
	return kube_has_label(node, "node-role.kubernetes.io/control-plane") ||
	       kube_has_label(node, "node-role.kubernetes.io/master");
}

char *remediate_cordon_reason(uint64_t now_ms, const char *type, uint64_t for_ms, int slot,
			      char *buf, size_t size)
{
	char ts[40];

	snprintf(buf, size, "%s %s True for over %llus (slot %d)",
		 kube_time(now_ms, false, ts, sizeof(ts)), type,
		 (unsigned long long)(for_ms / 1000), slot);
	return buf;
}

json_object *remediate_node_patch(const char *const kv[], size_t n, int unschedulable,
				  const char *rv)
{
	json_object *p = json_object_new_object(), *md = json_object_new_object();
	json_object *ann = json_object_new_object();

	for (size_t i = 0; i + 1 < n; i += 2)
		json_object_object_add(ann, kv[i], kv[i + 1] ? json_object_new_string(kv[i + 1]) :
							      NULL);
	json_object_object_add(md, "annotations", ann);
	if (rv)
		json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
	json_object_object_add(p, "metadata", md);
	if (unschedulable >= 0) {
		json_object *spec = json_object_new_object();

		json_object_object_add(spec, "unschedulable",
				       unschedulable ? json_object_new_boolean(1) : NULL);
		json_object_object_add(p, "spec", spec);
	}
	return p;
}
