/* SPDX-License-Identifier: MIT */
/* The fleet summary: counts, the ranking of dimensions, names read back. See fleet.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_model.h"
#include "base/util.h"

/* Per string id counters, zeroed between uses by walking the ids touched. */
static int scratch(struct fleet *f)
{
	if (f->cnt_cap >= f->n_strs)
		return 0;
	free(f->cnt_t);
	free(f->cnt_n);
	free(f->cnt_max);
	f->cnt_t = calloc(f->n_strs, sizeof(*f->cnt_t));
	f->cnt_n = calloc(f->n_strs, sizeof(*f->cnt_n));
	f->cnt_max = calloc(f->n_strs, sizeof(*f->cnt_max));
	if (!f->cnt_t || !f->cnt_n || !f->cnt_max) {
		f->cnt_cap = 0;
		return -ENOMEM;
	}
	f->cnt_cap = f->n_strs;
	return 0;
}

static bool reports(const struct fleet_node *n, int c)
{
	return n->st[c] == FLEET_TRUE || n->st[c] == FLEET_FALSE;
}

/* Youden's J of "has the value" as a test for True: see fleet.h. */
static double score_of(size_t tv, size_t nv, size_t t, size_t n)
{
	if (t == 0 || t >= n)
		return 0; /* no True, or no False node: nothing to separate */
	return (double)tv / (double)t - (double)(nv - tv) / (double)(n - t);
}

static int value_cmp_t(const void *a, const void *b)
{
	const struct fleet_value *x = a, *y = b;

	if (x->t != y->t)
		return x->t > y->t ? -1 : 1;
	return strcmp(x->value, y->value);
}

/* One dimension for one condition: its best value, and the others holding True nodes. */
static int rank_dim(struct fleet *f, int c, size_t d, size_t t, size_t n, struct fleet_dim *out,
		    uint32_t *touched)
{
	size_t nt = 0, nv = 0;
	struct fleet_value *vals;

	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct fleet_node *x = &f->nodes[i];
		uint32_t id = x->dim[d];

		if (!reports(x, c))
			continue;
		if (f->cnt_n[id]++ == 0)
			touched[nt++] = id;
		f->cnt_t[id] += x->st[c] == FLEET_TRUE;
	}
	vals = calloc(nt ? nt : 1, sizeof(*vals));
	for (size_t i = 0; i < nt; i++) {
		uint32_t id = touched[i];

		if (vals && f->cnt_t[id])
			vals[nv++] =
				(struct fleet_value){ fleet_str(f, id), f->cnt_t[id], f->cnt_n[id],
						      score_of(f->cnt_t[id], f->cnt_n[id], t, n) };
		f->cnt_t[id] = f->cnt_n[id] = 0;
	}
	if (!vals)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	out->name = f->dim_name[d];
	if (nv) {
		size_t b = 0;

		for (size_t i = 1; i < nv; i++)
			if (vals[i].score > vals[b].score ||
			    (vals[i].score == vals[b].score && vals[i].t > vals[b].t))
				b = i;
		out->best = vals[b];
		out->score = vals[b].score;
		vals[b] = vals[--nv];
		qsort(vals, nv, sizeof(*vals), value_cmp_t);
		for (size_t i = 0; i < nv && i < ARRAY_SIZE(out->also); i++)
			out->also[out->n_also++] = vals[i];
	}
	free(vals);
	return 0;
}

static int dim_cmp(const void *a, const void *b)
{
	const struct fleet_dim *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->best.t != y->best.t)
		return x->best.t > y->best.t ? -1 : 1;
	return 0;
}

static int count_cmp(const void *a, const void *b)
{
	const struct fleet_count *x = a, *y = b;

	if (x->nodes != y->nodes)
		return x->nodes > y->nodes ? -1 : 1;
	if (x->max != y->max)
		return x->max > y->max ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The names read back from True nodes' messages, most nodes first. */
static int rank_named(struct fleet *f, int c, struct fleet_cond_summary *cs, uint32_t *touched)
{
	size_t nt = 0, nc = 0;
	struct fleet_count *all;

	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct fleet_node *x = &f->nodes[i];
		uint32_t id = x->named[c];

		if (x->st[c] != FLEET_TRUE)
			continue;
		cs->unparsed += !x->parsed[c];
		if (!id)
			continue;
		if (f->cnt_n[id]++ == 0)
			touched[nt++] = id;
		if (x->num[c] > f->cnt_max[id])
			f->cnt_max[id] = x->num[c];
	}
	all = calloc(nt ? nt : 1, sizeof(*all));
	for (size_t i = 0; i < nt; i++) {
		uint32_t id = touched[i];

		if (all)
			all[nc++] = (struct fleet_count){ fleet_str(f, id), f->cnt_n[id],
							  f->cnt_max[id] };
		f->cnt_n[id] = 0;
		f->cnt_max[id] = 0;
	}
	if (!all)
		return -ENOMEM;
	qsort(all, nc, sizeof(*all), count_cmp);
	for (size_t i = 0; i < nc && i < FLEET_TOP_MAX; i++)
		cs->top[cs->n_top++] = all[i];
	free(all);
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int float_cmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* Dying memcgs and ratios over the True nodes of MemcgZombieLeak. */
static int memcg_numbers(struct fleet *f, struct fleet_cond_summary *cs)
{
	_cleanup_free_ uint64_t *d = malloc((f->n_nodes + 1) * sizeof(*d));
	_cleanup_free_ float *r = malloc((f->n_nodes + 1) * sizeof(*r));
	size_t n = 0;

	if (!d || !r)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].st[FLEET_MEMCG] == FLEET_TRUE && f->nodes[i].has_counts) {
			d[n] = f->nodes[i].dying;
			r[n++] = f->nodes[i].ratio;
		}
	if (!n)
		return 0;
	qsort(d, n, sizeof(*d), u64_cmp);
	qsort(r, n, sizeof(*r), float_cmp);
	cs->dying_median = d[n / 2];
	cs->dying_max = d[n - 1];
	cs->ratio_median = r[n / 2];
	return 0;
}

static int summarize_cond(struct fleet *f, int c, struct fleet_cond_summary *cs,
			  uint32_t *touched)
{
	int r = 0;

	cs->type = f->cond_type[c];
	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct fleet_node *x = &f->nodes[i];

		switch (x->st[c]) {
		case FLEET_TRUE:
			cs->t++;
			cs->not_ready += x->ready != FLEET_TRUE;
			if (x->since_ms[c] &&
			    (!cs->first_true_ms || x->since_ms[c] < cs->first_true_ms))
				cs->first_true_ms = x->since_ms[c];
			if (x->since_ms[c] > cs->last_true_ms)
				cs->last_true_ms = x->since_ms[c];
			break;
		case FLEET_FALSE: cs->f++; break;
		case FLEET_UNKNOWN: cs->unknown++; break;
		default: cs->absent++; break;
		}
	}
	if (cs->t == 0)
		return 0;
	for (size_t d = 0; d < f->n_dims && r == 0; d++)
		r = rank_dim(f, c, d, cs->t, cs->t + cs->f, &cs->dims[cs->n_dims++], touched);
	if (r < 0)
		return r;
	qsort(cs->dims, cs->n_dims, sizeof(cs->dims[0]), dim_cmp);
	r = rank_named(f, c, cs, touched);
	if (r == 0 && c == FLEET_MEMCG)
		r = memcg_numbers(f, cs);
	return r;
}

int fleet_summarize(struct fleet *f, struct fleet_summary *ret)
{
	_cleanup_free_ uint32_t *touched = NULL;
	struct fleet_summary s = { 0 };
	int r = scratch(f);

	if (r < 0 || !(touched = malloc(f->n_strs * sizeof(*touched))))
		return -ENOMEM;
	s.nodes = f->n_nodes;
	s.skipped = f->skipped;
	s.duplicates = f->duplicates;
	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct fleet_node *x = &f->nodes[i];

		s.ready_true += x->ready == FLEET_TRUE;
		s.ready_false += x->ready == FLEET_FALSE;
		s.ready_unknown += x->ready == FLEET_UNKNOWN || x->ready == FLEET_ABSENT;
		s.unschedulable += x->unschedulable;
		s.held += x->held;
		s.drained += x->held && x->drained;
		s.held_long += x->held && x->held_long;
	}
	for (int c = 0; c < FLEET_NCOND && r == 0; c++)
		r = summarize_cond(f, c, &s.cond[c], touched);
	if (r < 0)
		return r;
	for (int c = 0; c < FLEET_NCOND; c++) {
		int k = c;

		/* insertion by True count, stable: most True nodes first */
		while (k > 0 && s.cond[s.order[k - 1]].t < s.cond[c].t) {
			s.order[k] = s.order[k - 1];
			k--;
		}
		s.order[k] = c;
	}
	s.leases_known = f->leases_known;
	memcpy(s.leases_denied, f->leases_denied, sizeof(s.leases_denied));
	s.leases_held = f->n_holders;
	s.leases_expired = f->leases_expired;
	s.budget = f->budget;
	*ret = s;
	return 0;
}

/* ---- the nodes behind a line ----------------------------------------------------------------- */

static long dim_index(const struct fleet *f, const char *dim)
{
	for (size_t d = 0; d < f->n_dims; d++)
		if (streq(f->dim_name[d], dim))
			return (long)d;
	return -1;
}

void fleet_nodes_where(const struct fleet *f, enum fleet_cond cond, const char *dim,
		       const char *value, fleet_name_fn fn, void *userdata)
{
	long d = dim_index(f, dim), id = fleet_find_str(f, value);

	if (d < 0 || id < 0)
		return;
	for (size_t i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].st[cond] == FLEET_TRUE && f->nodes[i].dim[d] == (uint32_t)id)
			fn(fleet_str(f, f->nodes[i].name), userdata);
}

void fleet_nodes_named(const struct fleet *f, enum fleet_cond cond, const char *name,
		       fleet_name_fn fn, void *userdata)
{
	long id = fleet_find_str(f, name);

	if (id <= 0)
		return;
	for (size_t i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].st[cond] == FLEET_TRUE && f->nodes[i].named[cond] == (uint32_t)id)
			fn(fleet_str(f, f->nodes[i].name), userdata);
}

void fleet_nodes_held(const struct fleet *f, fleet_name_fn fn, void *userdata)
{
	for (size_t i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].held)
			fn(fleet_str(f, f->nodes[i].name), userdata);
}

void fleet_nodes_held_long(const struct fleet *f, fleet_name_fn fn, void *userdata)
{
	for (size_t i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].held && f->nodes[i].held_long)
			fn(fleet_str(f, f->nodes[i].name), userdata);
}

void fleet_lease_holders(const struct fleet *f, fleet_name_fn fn, void *userdata)
{
	for (size_t i = 0; i < f->n_holders; i++)
		fn(fleet_str(f, f->holders[i]), userdata);
}
