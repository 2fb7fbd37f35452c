/* SPDX-License-Identifier: MIT */
/* Recording nodes for the fleet view: see fleet.h. Field names: k8s.io/api/core/v1 Node. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check/condmsg.h"
#include "condition/conditions.h"
#include "base/kjson.h"
#include "remediator/remediate_plan.h"
#include "fleet/fleet_model.h"
#include "base/util.h"

#define BLOCK_SIZE (64u << 10)

static const char *const builtin_dims[] = { "zone", "instance-type", "osImage", "kernel",
					    "runtime" };

const char *const fleet_top_kind[FLEET_NCOND] = { "leakers", "busiest tasks", "reset causes" };

/* ---- the interner -----------------------------------------------------------------------------
 * */

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static int grow_hash(struct fleet *f)
{
	size_t cap = f->hash_cap ? f->hash_cap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t id = 1; id < f->n_strs; id++) {
		size_t i = hash_bytes(f->strs[id], strlen(f->strs[id])) & (cap - 1);

		while (h[i])
			i = (i + 1) & (cap - 1);
		h[i] = (uint32_t)id + 1;
	}
	free(f->hash);
	f->hash = h;
	f->hash_cap = cap;
	return 0;
}

static char *store(struct fleet *f, const char *s, size_t len)
{
	char *p;

	if (f->n_blocks == 0 || f->block_used + len + 1 > BLOCK_SIZE) {
		char **b = realloc(f->blocks, (f->n_blocks + 1) * sizeof(*b));

		if (!b)
			return NULL;
		f->blocks = b;
		if (!(b[f->n_blocks] = malloc(BLOCK_SIZE)))
			return NULL;
		f->n_blocks++;
		f->block_used = 0;
	}
	p = f->blocks[f->n_blocks - 1] + f->block_used;
	memcpy(p, s, len);
	p[len] = '\0';
	f->block_used += len + 1;
	return p;
}

int fleet_intern(struct fleet *f, const char *s, size_t len, uint32_t *ret)
{
	size_t i;
	char *p;

	if (len > FLEET_VALUE_MAX)
		len = FLEET_VALUE_MAX;
	if (len == 0) {
		*ret = 0;
		return 0;
	}
	if ((f->n_strs + 1) * 2 > f->hash_cap && grow_hash(f) < 0)
		return -ENOMEM;
	for (i = hash_bytes(s, len) & (f->hash_cap - 1); f->hash[i];
	     i = (i + 1) & (f->hash_cap - 1)) {
		const char *t = f->strs[f->hash[i] - 1];

		if (strncmp(t, s, len) == 0 && t[len] == '\0') {
			*ret = f->hash[i] - 1;
			return 0;
		}
	}
	if (f->n_strs == f->cap_strs) {
		size_t cap = f->cap_strs * 2;
		const char **ns = realloc(f->strs, cap * sizeof(*ns));
		uint32_t *no;

		if (!ns)
			return -ENOMEM;
		f->strs = ns;
		no = realloc(f->node_of, cap * sizeof(*no));
		if (!no)
			return -ENOMEM;
		memset(no + f->cap_strs, 0, (cap - f->cap_strs) * sizeof(*no));
		f->node_of = no;
		f->cap_strs = cap;
	}
	if (!(p = store(f, s, len)))
		return -ENOMEM;
	f->strs[f->n_strs] = p;
	f->hash[i] = (uint32_t)f->n_strs + 1;
	*ret = (uint32_t)f->n_strs++;
	return 0;
}

long fleet_find_str(const struct fleet *f, const char *s)
{
	size_t len = strlen(s);

	if (len == 0)
		return 0;
	if (len > FLEET_VALUE_MAX || !f->hash_cap)
		return -1;
	for (size_t i = hash_bytes(s, len) & (f->hash_cap - 1); f->hash[i];
	     i = (i + 1) & (f->hash_cap - 1))
		if (streq(f->strs[f->hash[i] - 1], s))
			return (long)f->hash[i] - 1;
	return -1;
}

/* ---- life cycle ------------------------------------------------------------------------------ */

int fleet_new(const char *const *group_by, size_t n_group_by, size_t max_output,
	      struct fleet **ret)
{
	struct fleet *f;
	static const char *const checks[FLEET_NCOND] = { "memcg", "cpu", "ena" };

	if (n_group_by > FLEET_GROUP_BY_MAX)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->max_output = max_output;
	for (size_t i = 0; i < FLEET_NCOND; i++)
		f->cond_type[i] = conditions_for_check(checks[i])->type;
	for (size_t i = 0; i < ARRAY_SIZE(builtin_dims); i++)
		f->dim_name[f->n_dims++] = builtin_dims[i];
	for (size_t i = 0; i < n_group_by; i++) {
		if (!group_by[i][0] || !(f->group_by[i] = strdup(group_by[i]))) {
			fleet_free(f);
			return group_by[i][0] ? -ENOMEM : -EINVAL;
		}
		f->dim_name[f->n_dims++] = f->group_by[i];
	}
	f->cap_strs = 256;
	f->strs = calloc(f->cap_strs, sizeof(*f->strs));
	f->node_of = calloc(f->cap_strs, sizeof(*f->node_of));
	if (!f->strs || !f->node_of || grow_hash(f) < 0) {
		fleet_free(f);
		return -ENOMEM;
	}
	f->strs[0] = "";
	f->n_strs = 1;
	*ret = f;
	return 0;
}

void fleet_reset(struct fleet *f)
{
	for (size_t i = 0; i < f->n_nodes; i++)
		f->node_of[f->nodes[i].name] = 0;
	f->n_nodes = f->skipped = f->duplicates = 0;
}

void fleet_free(struct fleet *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_blocks; i++)
		free(f->blocks[i]);
	for (size_t i = 0; i < FLEET_GROUP_BY_MAX; i++)
		free(f->group_by[i]);
	free(f->blocks);
	free(f->strs);
	free(f->hash);
	free(f->node_of);
	free(f->nodes);
	free(f->holders);
	free(f->cnt_t);
	free(f->cnt_n);
	free(f->cnt_max);
	free(f);
}

size_t fleet_node_count(const struct fleet *f)
{
	return f->n_nodes;
}

/* ---- reading a Node -------------------------------------------------------------------------- */

/* The string member @key of object @o, or NULL (absent, or not an object / a string). */
static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static json_object *obj_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

static int intern_str(struct fleet *f, const char *s, uint32_t *ret)
{
	return fleet_intern(f, s ? s : "", s ? strlen(s) : 0, ret);
}

static enum fleet_status status_of(const char *s)
{
	if (!s)
		return FLEET_UNKNOWN;
	return streq(s, "True") ? FLEET_TRUE : streq(s, "False") ? FLEET_FALSE : FLEET_UNKNOWN;
}

/* NPD cuts at max_output_length bytes after trimming: a message of exactly a cut length may
 * have lost its end. 80 is NPD's default, 256 ours. */
static bool maybe_cut(const struct fleet *f, size_t len)
{
	return len == 80 || len == NPD_DEFAULT_MAX_OUTPUT ||
	       (f->max_output && len == f->max_output);
}

static int read_message(struct fleet *f, struct fleet_node *n, enum fleet_cond c, const char *msg)
{
	bool cut = maybe_cut(f, strlen(msg));
	struct condmsg_memcg m;
	struct condmsg_cpu u;
	struct condmsg_ena e;

	switch (c) {
	case FLEET_MEMCG:
		if (condmsg_memcg_parse(msg, cut, &m) < 0)
			return 0;
		n->parsed[c] = true;
		n->has_counts = m.has_counts;
		n->dying = m.dying;
		n->ratio = (float)m.ratio;
		n->num[c] = m.leaker_restarts;
		return m.has_leaker ? intern_str(f, m.leaker, &n->named[c]) : 0;
	case FLEET_CPU:
		if (condmsg_cpu_parse(msg, cut, &u) < 0)
			return 0;
		n->parsed[c] = true;
		n->num[c] = u.top_ms;
		return u.has_top ? intern_str(f, u.top, &n->named[c]) : 0;
	default:
		if (condmsg_ena_parse(msg, cut, &e) < 0)
			return 0;
		n->parsed[c] = true;
		n->num[c] = e.resets;
		return e.has_cause ? intern_str(f, e.cause, &n->named[c]) : 0;
	}
}

static int read_conditions(struct fleet *f, struct fleet_node *n, json_object *conds)
{
	size_t len = conds && json_object_is_type(conds, json_type_array) ?
			     json_object_array_length(conds) : 0;

	n->ready = FLEET_ABSENT;
	for (size_t i = 0; i < len; i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		const char *type = str_of(c, "type"), *msg, *t;

		if (!type)
			continue;
		if (streq(type, "Ready")) {
			n->ready = (uint8_t)status_of(str_of(c, "status"));
			continue;
		}
		for (int k = 0; k < FLEET_NCOND; k++) {
			if (!streq(type, f->cond_type[k]) || n->st[k] != FLEET_ABSENT)
				continue;
			n->st[k] = (uint8_t)status_of(str_of(c, "status"));
			t = str_of(c, "lastTransitionTime");
			if (!t || kube_parse_time(t, &n->since_ms[k]) < 0)
				n->since_ms[k] = 0;
			msg = str_of(c, "message");
			if (msg && n->st[k] != FLEET_UNKNOWN && read_message(f, n, k, msg) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* The label @key, or its deprecated beta twin @old. */
static const char *label2(json_object *labels, const char *key, const char *old)
{
	const char *v = str_of(labels, key);

	return v ? v : str_of(labels, old);
}

static int read_node(struct fleet *f, json_object *node, struct fleet_node *n)
{
	json_object *md = obj_of(node, "metadata"), *labels = obj_of(md, "labels");
	json_object *status = obj_of(node, "status"), *info = obj_of(status, "nodeInfo");
	json_object *spec = obj_of(node, "spec"), *v, *conds = NULL;
	const char *vals[FLEET_DIMS_MAX] = {
		label2(labels, "topology.kubernetes.io/zone",
		       "failure-domain.beta.kubernetes.io/zone"),
		label2(labels, "node.kubernetes.io/instance-type",
		       "beta.kubernetes.io/instance-type"),
		str_of(info, "osImage"),
		str_of(info, "kernelVersion"),
		str_of(info, "containerRuntimeVersion"),
	};
	int r = 0;

	for (size_t i = ARRAY_SIZE(builtin_dims); i < f->n_dims; i++)
		vals[i] = str_of(labels, f->dim_name[i]);
	for (size_t i = 0; i < f->n_dims && r == 0; i++)
		r = intern_str(f, vals[i], &n->dim[i]);
	if (r < 0)
		return r;
	n->held = str_of(obj_of(md, "annotations"), REMEDIATE_ANN_CORDONED) != NULL;
	n->drained = str_of(obj_of(md, "annotations"), REMEDIATE_ANN_DRAINED) != NULL;
	n->held_long = str_of(obj_of(md, "annotations"), REMEDIATE_ANN_HELD_LONG) != NULL;
	n->unschedulable = spec && json_object_object_get_ex(spec, "unschedulable", &v) &&
			   json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	if (status)
		json_object_object_get_ex(status, "conditions", &conds);
	return read_conditions(f, n, conds);
}

int fleet_add_node(struct fleet *f, json_object *node)
{
	const char *name = str_of(obj_of(node, "metadata"), "name");
	struct fleet_node n = { 0 };
	uint32_t id;
	int r;

	if (!name || !*name || strlen(name) > FLEET_VALUE_MAX) {
		f->skipped++;
		return 0;
	}
	r = fleet_intern(f, name, strlen(name), &id);
	if (r < 0)
		return r;
	n.name = id;
	r = read_node(f, node, &n);
	if (r < 0)
		return r;
	if (f->node_of[id]) { /* seen before: the newer record wins, counted once */
		f->nodes[f->node_of[id] - 1] = n;
		f->duplicates++;
		return 0;
	}
	if (f->n_nodes == f->cap_nodes) {
		size_t cap = f->cap_nodes ? f->cap_nodes * 2 : 512;
		struct fleet_node *nn = realloc(f->nodes, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		f->nodes = nn;
		f->cap_nodes = cap;
	}
	f->nodes[f->n_nodes++] = n;
	f->node_of[id] = (uint32_t)f->n_nodes;
	return 0;
}

/* ---- the Lease budget ------------------------------------------------------------------------ */

static bool lease_expired(json_object *spec, uint64_t now_ms)
{
	const char *renew = str_of(spec, "renewTime");
	json_object *d;
	uint64_t t;
	int64_t secs;

	if (!renew || !json_object_object_get_ex(spec, "leaseDurationSeconds", &d) ||
	    !json_object_is_type(d, json_type_int) || kube_parse_time(renew, &t) < 0)
		return false; /* cannot tell: count it as held, as remediation does */
	secs = json_object_get_int64(d);
	return secs > 0 && secs < (int64_t)(UINT32_MAX) && t + (uint64_t)secs * 1000 < now_ms;
}

void fleet_set_leases(struct fleet *f, json_object *const *leases, size_t n, uint64_t now_ms,
		      int budget, const char *denied)
{
	f->budget = budget;
	f->n_holders = f->leases_expired = 0;
	f->leases_known = !denied;
	snprintf(f->leases_denied, sizeof(f->leases_denied), "%s", denied ? denied : "");
	free(f->holders);
	f->holders = n ? calloc(n, sizeof(*f->holders)) : NULL;
	for (size_t i = 0; f->holders && i < n; i++) {
		json_object *spec = obj_of(leases[i], "spec");
		const char *holder = str_of(spec, "holderIdentity");
		uint32_t id;

		if (!holder || !*holder)
			continue; /* released */
		if (lease_expired(spec, now_ms))
			f->leases_expired++;
		else if (intern_str(f, holder, &id) == 0)
			f->holders[f->n_holders++] = id;
	}
}
