/* SPDX-License-Identifier: MIT */
/* The fleet summary as one JSON object, the same content as the text: see fleet.h. */
#include <errno.h>

#include "base/kjson.h"
#include "fleet/fleet_model.h"
#include "base/jsonw.h"
#include "base/textsafe.h"
#include "base/util.h"

/* Every string from the cluster reaches the document through jsonw_str(): node names, label
 * values, images, names read from messages, the server's words are any bytes a (hostile)
 * server sent, and a JSON document must be valid UTF-8 (base/jsonw.h, as report --json). */

static json_object *num(size_t n)
{
	return json_object_new_int64((int64_t)n);
}

static void name_add(const char *name, void *userdata)
{
	json_object_array_add(userdata, jsonw_str(name));
}

static json_object *value_json(const struct fleet_value *v)
{
	json_object *o = json_object_new_object();

	jsonw_add(o, "value", jsonw_str(v->value));
	jsonw_add(o, "true_here", num(v->t));
	jsonw_add(o, "nodes_here", num(v->n));
	return o;
}

static json_object *dim_json(struct fleet *f, int c, const struct fleet_cond_summary *cs,
			     const struct fleet_dim *d, bool nodes)
{
	json_object *o = value_json(&d->best), *also = json_object_new_array();
	size_t n = cs->t + cs->f, elsewhere = n - d->best.n;

	jsonw_add(o, "name", jsonw_str(d->name));
	jsonw_add(o, "score", json_object_new_double(d->score));
	jsonw_add(o, "rate_here", json_object_new_double(d->best.n ? (double)d->best.t /
						   (double)d->best.n : 0));
	jsonw_add(o, "rate_elsewhere",
		  elsewhere
			  ? json_object_new_double((double)(cs->t - d->best.t) / (double)elsewhere)
			  : NULL);
	for (size_t i = 0; i < d->n_also; i++)
		json_object_array_add(also, value_json(&d->also[i]));
	jsonw_add(o, "also", also);
	if (nodes) {
		json_object *names = json_object_new_array();

		fleet_nodes_where(f, (enum fleet_cond)c, d->name, d->best.value, name_add, names);
		jsonw_add(o, "nodes", names);
	}
	return o;
}

static json_object *cond_json(struct fleet *f, int c, const struct fleet_cond_summary *cs,
			      bool nodes)
{
	json_object *o = json_object_new_object(), *dims = json_object_new_array();
	json_object *top = json_object_new_array();

	jsonw_add(o, "type", json_object_new_string(cs->type));
	jsonw_add(o, "true", num(cs->t));
	jsonw_add(o, "false", num(cs->f));
	jsonw_add(o, "unknown", num(cs->unknown));
	jsonw_add(o, "absent", num(cs->absent));
	jsonw_add(o, "true_not_ready", num(cs->not_ready));
	jsonw_add(o, "unparsed", num(cs->unparsed));
	for (size_t i = 0; i < cs->n_dims; i++)
		json_object_array_add(dims, dim_json(f, c, cs, &cs->dims[i], nodes));
	jsonw_add(o, "dimensions", dims);
	jsonw_add(o, "top_kind", json_object_new_string(fleet_top_kind[c]));
	for (size_t i = 0; i < cs->n_top; i++) {
		json_object *t = json_object_new_object();

		jsonw_add(t, "name", jsonw_str(cs->top[i].name));
		jsonw_add(t, "nodes", num(cs->top[i].nodes));
		jsonw_add(t, "max", json_object_new_int64((int64_t)cs->top[i].max));
		if (nodes) {
			json_object *names = json_object_new_array();

			fleet_nodes_named(f, (enum fleet_cond)c, cs->top[i].name, name_add, names);
			jsonw_add(t, "nodes_list", names);
		}
		json_object_array_add(top, t);
	}
	jsonw_add(o, "top", top);
	if (cs->first_true_ms) {
		char a[40], b[40];

		jsonw_add(
			o, "true_since_first",
			json_object_new_string(kube_time(cs->first_true_ms, false, a, sizeof(a))));
		jsonw_add(o, "true_since_latest",
			  json_object_new_string(kube_time(cs->last_true_ms, false, b, sizeof(b))));
	}
	if (c == FLEET_MEMCG && cs->dying_max) {
		jsonw_add(o, "dying_median", json_object_new_int64((int64_t)cs->dying_median));
		jsonw_add(o, "dying_max", json_object_new_int64((int64_t)cs->dying_max));
		jsonw_add(o, "ratio_median", json_object_new_double(cs->ratio_median));
	}
	return o;
}

static json_object *remediation_json(struct fleet *f, const struct fleet_summary *s)
{
	json_object *o = json_object_new_object(), *held = json_object_new_array();
	json_object *leases = json_object_new_object(), *holders = json_object_new_array();
	json_object *held_long = json_object_new_array();

	fleet_nodes_held(f, name_add, held);
	jsonw_add(o, "held", held);
	fleet_nodes_held_long(f, name_add, held_long);
	jsonw_add(o, "held_long", held_long);
	jsonw_add(o, "drained", num(s->drained));
	jsonw_add(o, "unschedulable", num(s->unschedulable));
	jsonw_add(leases, "readable", json_object_new_boolean(s->leases_known));
	if (!s->leases_known)
		jsonw_add(leases, "error", jsonw_str(s->leases_denied));
	jsonw_add(leases, "in_use", num(s->leases_held));
	jsonw_add(leases, "expired", num(s->leases_expired));
	jsonw_add(leases, "budget", s->budget > 0 ? json_object_new_int(s->budget) : NULL);
	fleet_lease_holders(f, name_add, holders);
	jsonw_add(leases, "holders", holders);
	jsonw_add(o, "leases", leases);
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
	jsonw_add(o, "nodes", num(s->nodes));
	jsonw_add(o, "skipped", num(s->skipped));
	jsonw_add(o, "duplicates", num(s->duplicates));
	for (int i = 0; i < FLEET_NCOND; i++)
		json_object_array_add(conds,
				      cond_json(f, s->order[i], &s->cond[s->order[i]], nodes));
	jsonw_add(o, "conditions", conds);
	jsonw_add(ready, "True", num(s->ready_true));
	jsonw_add(ready, "False", num(s->ready_false));
	jsonw_add(ready, "Unknown", num(s->ready_unknown));
	jsonw_add(o, "ready", ready);
	jsonw_add(o, "remediation", remediation_json(f, s));
	return o;
}
