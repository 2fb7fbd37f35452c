/* SPDX-License-Identifier: MIT */
/* Node conditions: see conditions.h. Field names: k8s.io/api/core/v1 NodeCondition. */
#include <errno.h>

#include "condition/conditions.h"
#include "base/kjson.h"
#include "base/config.h"
#include "base/textsafe.h"
#include "base/util.h"

static const struct cond_def defs[] = {
	{ "memcg", "MemcgZombieLeak", "ZombieMemcgsHigh", "ZombieMemcgsNormal" },
	{ "cpu", "CPUCoreSaturation", "CoreSaturationBursts", "NoCoreSaturation" },
	{ "ena", "ENADeviceReset", "ENAResetsDetected", "NoENAResets" },
};

const struct cond_def *conditions_for_check(const char *check)
{
	for (size_t i = 0; i < ARRAY_SIZE(defs); i++)
		if (streq(defs[i].check, check))
			return &defs[i];
	return NULL;
}

const struct cond_def *conditions_nth(size_t i)
{
	return i < ARRAY_SIZE(defs) ? &defs[i] : NULL;
}

const char *conditions_reason(const struct cond_def *d, enum npd_status s)
{
	return s == NPD_PROBLEM ? d->reason_true : d->reason_false;
}

uint64_t conditions_recover_after(const struct cz_config *cfg, const char *check)
{
	return streq(check, "memcg") ? cfg->memcg.recover_after_ms :
	       streq(check, "cpu") ? cfg->cpu.recover_after_ms :
	       streq(check, "ena") ? cfg->ena.recover_after_ms : 0;
}

bool conditions_enabled(const struct cz_config *cfg, const char *check)
{
	return streq(check, "memcg") ? cfg->memcg.condition :
	       streq(check, "cpu") ? cfg->cpu.condition :
	       streq(check, "ena") ? cfg->ena.condition : true;
}

int conditions_build_removal(json_object *node, const struct cz_config *cfg,
			     bool (*keep)(const struct cz_config *cfg, const char *check),
			     json_object **ret_patch, const char *ret_types[])
{
	_cleanup_(json_object_putp) json_object *patch = NULL;
	json_object *status, *list = NULL;
	int n = 0;

	*ret_patch = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(defs); i++) {
		json_object *c;

		if ((keep && keep(cfg, defs[i].check)) || !kube_condition(node, defs[i].type))
			continue;
		if (!patch) {
			patch = json_object_new_object();
			status = json_object_new_object();
			list = json_object_new_array();
			if (!patch || !status || !list) {
				json_object_put(status);
				json_object_put(list);
				return -ENOMEM;
			}
			json_object_object_add(patch, "status", status);
			json_object_object_add(status, "conditions", list);
		}
		c = json_object_new_object();
		if (!c)
			return -ENOMEM;
		json_object_object_add(c, "type", json_object_new_string(defs[i].type));
		json_object_object_add(c, "$patch", json_object_new_string("delete"));
		json_object_array_add(list, c);
		if (ret_types)
			ret_types[n] = defs[i].type;
		n++;
	}
	*ret_patch = TAKE_PTR(patch);
	return n;
}

const char *conditions_status_name(enum npd_status s)
{
	return s == NPD_OK ? "False" : s == NPD_PROBLEM ? "True" : "Unknown";
}

static const char *static_status(const char *s)
{
	return streq(s, "True") ? "True" : streq(s, "False") ? "False" :
	       streq(s, "Unknown") ? "Unknown" : "";
}

int conditions_build_patch(json_object *node, const struct cond_input in[], size_t n,
			   uint64_t now_ms, json_object **ret_patch, struct cond_change *changes,
			   size_t *ret_nchanges)
{
	_cleanup_(json_object_putp) json_object *patch = json_object_new_object();
	json_object *status, *list;
	char now[40], msg[2048];
	size_t nch = 0;

	if (!patch)
		return -ENOMEM;
	kube_time(now_ms, false, now, sizeof(now));
	status = json_object_new_object();
	list = json_object_new_array();
	json_object_object_add(patch, "status", status);
	json_object_object_add(status, "conditions", list);
	for (size_t i = 0; i < n; i++) {
		const struct cond_def *d = in[i].def;
		const char *st = conditions_status_name(in[i].status);
		json_object *old, *c = json_object_new_object();
		const char *old_st, *old_tt;

		if (!d || in[i].status > NPD_UNKNOWN || !c) {
			json_object_put(c);
			return -EINVAL;
		}
		old = kube_condition(node, d->type);
		old_st = kube_get_str(old, "status", "");
		old_tt = kube_get_str(old, "lastTransitionTime", NULL);
		json_object_object_add(c, "type", json_object_new_string(d->type));
		json_object_object_add(c, "status", json_object_new_string(st));
		json_object_object_add(c, "reason",
				       json_object_new_string(conditions_reason(d, in[i].status)));
		json_object_object_add(c, "message", json_object_new_string(textsafe(
			TEXTSAFE_TEXT, in[i].message, msg, sizeof(msg)))); /* kubectl prints it */
		json_object_object_add(c, "lastHeartbeatTime", json_object_new_string(now));
		json_object_object_add(c, "lastTransitionTime", json_object_new_string(
			streq(old_st, st) && old_tt ? old_tt : now));
		json_object_array_add(list, c);
		if (!streq(old_st, st) && changes && nch < n)
			changes[nch++] = (struct cond_change){ d, static_status(old_st), st };
	}
	if (ret_nchanges)
		*ret_nchanges = nch;
	*ret_patch = TAKE_PTR(patch);
	return 0;
}
