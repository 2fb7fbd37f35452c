/* SPDX-License-Identifier: MIT */
/* The fleet summary as one JSON object, the same content as the text: see fleet.h. */
#include <errno.h>

#include "cluster/kjson.h"
#include "fleet/fleet_model.h"
#include "base/textsafe.h"
#include "base/util.h"

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

/* Every string from the cluster reaches the document through here: node names, label values,
 * images, names read from messages, the server's words are any bytes a (hostile) server sent,
 * and a JSON document must be valid UTF-8 (textsafe.h, as report --json). */
static json_object *jstr(const char *s)
{
	_cleanup_free_ char *safe = textsafe_strdup(TEXTSAFE_TEXT, s);

	return safe ? json_object_new_string(safe) : NULL;
}

static json_object *num(size_t n)
{
	return json_object_new_int64((int64_t)n);
}

static void name_add(const char *name, void *userdata)
{
	json_object_array_add(userdata, jstr(name));
}

static json_object *value_json(const struct fleet_value *v)
{
	json_object *o = json_object_new_object();

	add(o, "value", jstr(v->value));
	add(o, "true_here", num(v->t));
	add(o, "nodes_here", num(v->n));
	return o;
}

static json_object *dim_json(struct fleet *f, int c, const struct fleet_cond_summary *cs,
			     const struct fleet_dim *d, bool nodes)
{
	json_object *o = value_json(&d->best), *also = json_object_new_array();
	size_t n = cs->t + cs->f, elsewhere = n - d->best.n;

	add(o, "name", jstr(d->name));
	add(o, "score", json_object_new_double(d->score));
	add(o, "rate_here", json_object_new_double(d->best.n ? (double)d->best.t /
						   (double)d->best.n : 0));
	add(o, "rate_elsewhere", elsewhere ? json_object_new_double((double)(cs->t - d->best.t) /
								     (double)elsewhere) : NULL);
	for (size_t i = 0; i < d->n_also; i++)
		json_object_array_add(also, value_json(&d->also[i]));
	add(o, "also", also);
	if (nodes) {
		json_object *names = json_object_new_array();

		fleet_nodes_where(f, (enum fleet_cond)c, d->name, d->best.value, name_add, names);
		add(o, "nodes", names);
	}
	return o;
}

static json_object *cond_json(struct fleet *f, int c, const struct fleet_cond_summary *cs,
			      bool nodes)
{
	json_object *o = json_object_new_object(), *dims = json_object_new_array();
	json_object *top = json_object_new_array();

	add(o, "type", json_object_new_string(cs->type));
	add(o, "true", num(cs->t));
	add(o, "false", num(cs->f));
	add(o, "unknown", num(cs->unknown));
	add(o, "absent", num(cs->absent));
	add(o, "true_not_ready", num(cs->not_ready));
	add(o, "unparsed", num(cs->unparsed));
	for (size_t i = 0; i < cs->n_dims; i++)
		json_object_array_add(dims, dim_json(f, c, cs, &cs->dims[i], nodes));
	add(o, "dimensions", dims);
	add(o, "top_kind", json_object_new_string(fleet_top_kind[c]));
	for (size_t i = 0; i < cs->n_top; i++) {
		json_object *t = json_object_new_object();

		add(t, "name", jstr(cs->top[i].name));
		add(t, "nodes", num(cs->top[i].nodes));
		add(t, "max", json_object_new_int64((int64_t)cs->top[i].max));
		if (nodes) {
			json_object *names = json_object_new_array();

			fleet_nodes_named(f, (enum fleet_cond)c, cs->top[i].name, name_add, names);
			add(t, "nodes_list", names);
		}
		json_object_array_add(top, t);
	}
	add(o, "top", top);
	if (cs->first_true_ms) {
		char a[40], b[40];

		add(o, "true_since_first", json_object_new_string(kube_time(cs->first_true_ms, false,
									    a, sizeof(a))));
		add(o, "true_since_latest", json_object_new_string(kube_time(cs->last_true_ms, false,
									     b, sizeof(b))));
	}
	if (c == FLEET_MEMCG && cs->dying_max) {
		add(o, "dying_median", json_object_new_int64((int64_t)cs->dying_median));
		add(o, "dying_max", json_object_new_int64((int64_t)cs->dying_max));
		add(o, "ratio_median", json_object_new_double(cs->ratio_median));
	}
	return o;
}

static json_object *remediation_json(struct fleet *f, const struct fleet_summary *s)
{
	json_object *o = json_object_new_object(), *held = json_object_new_array();
	json_object *leases = json_object_new_object(), *holders = json_object_new_array();

	fleet_nodes_held(f, name_add, held);
	add(o, "held", held);
	add(o, "drained", num(s->drained));
	add(o, "unschedulable", num(s->unschedulable));
	add(leases, "readable", json_object_new_boolean(s->leases_known));
	if (!s->leases_known)
		add(leases, "error", jstr(s->leases_denied));
	add(leases, "in_use", num(s->leases_held));
	add(leases, "expired", num(s->leases_expired));
	add(leases, "budget", s->budget > 0 ? json_object_new_int(s->budget) : NULL);
	fleet_lease_holders(f, name_add, holders);
	add(leases, "holders", holders);
	add(o, "leases", leases);
	return o;
}

json_object *fleet_json(struct fleet *f, const struct fleet_summary *s, bool nodes)
{
	json_object *o = json_object_new_object(), *conds = json_object_new_array();
	json_object *ready = json_object_new_object();

	if (!o || !conds || !ready) {
		json_object_put(o);
		json_object_put(conds);
		json_object_put(ready);
		return NULL;
	}
	add(o, "nodes", num(s->nodes));
	add(o, "skipped", num(s->skipped));
	add(o, "duplicates", num(s->duplicates));
	for (int i = 0; i < FLEET_NCOND; i++)
		json_object_array_add(conds, cond_json(f, s->order[i], &s->cond[s->order[i]], nodes));
	add(o, "conditions", conds);
	add(ready, "True", num(s->ready_true));
	add(ready, "False", num(s->ready_false));
	add(ready, "Unknown", num(s->ready_unknown));
	add(o, "ready", ready);
	add(o, "remediation", remediation_json(f, s));
	return o;
}
