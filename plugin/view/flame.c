/* SPDX-License-Identifier: MIT */
/*
 * The flame-graph model (flame.h): folded lines merged into a tree. Names and (parent, name)
 * pairs are found through two open-addressing tables, so a profile of 2048 stacks 30 frames
 * deep is built in one pass over its text.
 */
#include <errno.h>

#include "cpu/folded.h"
#include "view/flame.h"
#include "base/util.h"

struct builder {
	struct flame *fl;
	size_t cap_nodes, cap_names;
	uint32_t *name_tab;  /* name index + 1, 0 empty */
	size_t name_tab_cap;
	uint32_t *edge_tab;  /* node index + 1 keyed by (parent, name), 0 empty */
	size_t edge_tab_cap;
};

static uint64_t hash(const char *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static size_t pow2_at_least(size_t n)
{
	size_t c = 64;

	while (c < n)
		c *= 2;
	return c;
}

/* The index of the name @s (@n bytes), added when new; FLAME_NONE when out of memory. */
static uint32_t intern(struct builder *b, const char *s, size_t n)
{
	struct flame *fl = b->fl;
	size_t i = (size_t)hash(s, n, 0xcbf29ce484222325ULL) & (b->name_tab_cap - 1);

	for (;; i = (i + 1) & (b->name_tab_cap - 1)) {
		uint32_t k = b->name_tab[i];

		if (k == 0)
			break;
		if (strncmp(fl->names[k - 1], s, n) == 0 && fl->names[k - 1][n] == '\0')
			return k - 1;
	}
	if (fl->nnames == b->cap_names)
		return FLAME_NONE; /* sized for every frame of the text: cannot happen */
	fl->names[fl->nnames] = strndup(s, n);
	if (!fl->names[fl->nnames])
		return FLAME_NONE;
	b->name_tab[i] = (uint32_t)++fl->nnames;
	return (uint32_t)(fl->nnames - 1);
}

static enum flame_kind kind_of(const char *name, uint32_t depth)
{
	if (depth == 1)
		return FLAME_TASK;
	if (streq(name, "[user]"))
		return FLAME_USER;
	if (name[0] == '[')
		return FLAME_MARKER;
	return FLAME_KERNEL;
}

/* The child of @parent named @name, added when new; FLAME_NONE beyond the bounds. */
static uint32_t child(struct builder *b, uint32_t parent, uint32_t name)
{
	struct flame *fl = b->fl;
	uint64_t key = (uint64_t)parent << 32 | name;
	size_t i = (size_t)hash((const char *)&key, sizeof(key), 0x84222325cbf29ce4ULL) &
		   (b->edge_tab_cap - 1);
	struct flame_node *n;

	for (;; i = (i + 1) & (b->edge_tab_cap - 1)) {
		uint32_t k = b->edge_tab[i];

		if (k == 0)
			break;
		if (fl->node[k - 1].parent == parent && fl->node[k - 1].name == name)
			return k - 1;
	}
	if (fl->nnodes == b->cap_nodes)
		return FLAME_NONE;
	n = &fl->node[fl->nnodes];
	*n = (struct flame_node){ .name = name, .parent = parent, .child = FLAME_NONE,
				  .next = FLAME_NONE, .depth = fl->node[parent].depth + 1 };
	n->kind = kind_of(fl->names[name], n->depth);
	if (n->depth > fl->depth_max)
		fl->depth_max = n->depth;
	b->edge_tab[i] = (uint32_t)++fl->nnodes;
	return (uint32_t)(fl->nnodes - 1);
}

/* Adds one folded line; its last node into *@ret_leaf. 0, -E2BIG or -ENOMEM. */
static int add_line(struct builder *b, const struct folded_line *l, uint32_t *ret_leaf)
{
	struct flame *fl = b->fl;
	const char *p = l->stack, *end = l->stack + l->len;
	uint32_t at = 0;

	fl->node[0].total += l->count;
	while (p <= end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		size_t n = semi ? (size_t)(semi - p) : (size_t)(end - p);
		uint32_t name;

		if (n > 0) { /* "a;;b" has an empty frame: nothing to draw */
			name = intern(b, p, n);
			if (name == FLAME_NONE)
				return -ENOMEM;
			at = child(b, at, name);
			if (at == FLAME_NONE)
				return -E2BIG;
			fl->node[at].total += l->count;
		}
		if (!semi)
			break;
		p = semi + 1;
	}
	fl->node[at].self += l->count;
	*ret_leaf = at;
	return 0;
}

static const struct flame *sort_fl; /* qsort has no context argument */

static int by_name(const void *a, const void *b)
{
	const struct flame_node *x = &sort_fl->node[*(const uint32_t *)a];
	const struct flame_node *y = &sort_fl->node[*(const uint32_t *)b];

	return strcmp(sort_fl->names[x->name], sort_fl->names[y->name]);
}

/* Links each node's children in name order. 0 or -ENOMEM. */
static int link_children(struct flame *fl)
{
	_cleanup_free_ uint32_t *order = malloc((fl->nnodes ? fl->nnodes : 1) * sizeof(*order));
	size_t n = 0;

	if (!order)
		return -ENOMEM;
	for (uint32_t i = 1; i < fl->nnodes; i++)
		order[n++] = i;
	sort_fl = fl;
	qsort(order, n, sizeof(*order), by_name);
	for (size_t i = n; i-- > 0;) { /* prepended from the last: first in name order first */
		struct flame_node *c = &fl->node[order[i]];

		c->next = fl->node[c->parent].child;
		fl->node[c->parent].child = order[i];
	}
	return 0;
}

/* The sample times of @times mapped to the leaves of @leaf (one per folded line). */
static void add_times(struct flame *fl, const char *times, size_t tlen, const uint32_t *leaf,
		      const struct folded_line *l, size_t nlines)
{
	_cleanup_free_ struct folded_time *t = NULL;
	_cleanup_free_ uint64_t *per_line = NULL;
	int n;

	fl->times_why = "not recorded";
	if (!times)
		return;
	n = folded_times_parse(times, tlen, nlines, NULL, 0);
	if (n < 0 || n > (int)FLAME_TIMES_MAX) {
		fl->times_why = n < 0 ? "unreadable" : "too many";
		return;
	}
	t = calloc((size_t)n + 1, sizeof(*t));
	per_line = calloc(nlines + 1, sizeof(*per_line));
	fl->times = calloc((size_t)n + 1, sizeof(*fl->times));
	if (!t || !per_line || !fl->times) {
		fl->times_why = "out of memory";
		return;
	}
	n = folded_times_parse(times, tlen, nlines, t, (size_t)n);
	for (int i = 0; i < n; i++) {
		if (++per_line[t[i].line] > l[t[i].line].count) {
			fl->times_why = "do not match the stacks";
			return;
		}
		fl->times[i] = (struct flame_time){ t[i].t_ms, leaf[t[i].line] };
	}
	fl->ntimes = (size_t)n;
	fl->times_why = n > 0 ? NULL : "not recorded";
}

static void set_hot(struct flame *fl, const char *folded, size_t len)
{
	struct hot_frame h;

	fl->hot = FLAME_NONE;
	if (folded_hot_frame(folded, len, &h) < 0)
		return;
	for (size_t i = 0; i < fl->nnames; i++)
		if (streq(fl->names[i], h.frame)) {
			fl->hot = (uint32_t)i;
			fl->hot_samples = h.samples;
		}
}

static int build(struct flame *fl, const char *folded, size_t len, const char *times,
		 size_t tlen)
{
	_cleanup_free_ struct folded_line *l = NULL;
	_cleanup_free_ uint32_t *leaf = NULL;
	struct builder b = { .fl = fl };
	int n = folded_parse(folded, len, NULL, 0), r = 0;
	size_t frames = 1;

	if (n < 0)
		return n;
	l = calloc((size_t)n + 1, sizeof(*l));
	leaf = calloc((size_t)n + 1, sizeof(*leaf));
	if (!l || !leaf)
		return -ENOMEM;
	n = folded_parse(folded, len, l, (size_t)n + 1);
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < l[i].len; k++)
			frames += l[i].stack[k] == ';';
	frames += (size_t)n + 1; /* each line's first frame, the root */
	if (frames > FLAME_NODES_MAX)
		return -E2BIG;
	b.cap_nodes = b.cap_names = frames;
	fl->node = calloc(frames, sizeof(*fl->node));
	fl->names = calloc(frames, sizeof(*fl->names));
	b.name_tab_cap = b.edge_tab_cap = pow2_at_least(2 * frames);
	b.name_tab = calloc(b.name_tab_cap, sizeof(*b.name_tab));
	b.edge_tab = calloc(b.edge_tab_cap, sizeof(*b.edge_tab));
	if (!fl->node || !fl->names || !b.name_tab || !b.edge_tab) {
		r = -ENOMEM;
		goto out;
	}
	fl->names[0] = strdup("all");
	fl->nnames = 1;
	fl->nnodes = 1;
	fl->node[0] = (struct flame_node){ .parent = FLAME_NONE, .child = FLAME_NONE,
					   .next = FLAME_NONE, .kind = FLAME_ROOT };
	for (int i = 0; i < n && r == 0; i++)
		r = add_line(&b, &l[i], &leaf[i]);
	if (r == 0 && !fl->names[0])
		r = -ENOMEM;
	if (r == 0 && fl->node[0].total == 0)
		r = -ENODATA;
	if (r == 0)
		r = link_children(fl);
	if (r == 0) {
		set_hot(fl, folded, len);
		add_times(fl, times, tlen, leaf, l, (size_t)n);
	}
out:
	free(b.name_tab);
	free(b.edge_tab);
	return r;
}

int flame_build(const char *folded, size_t len, const char *times, size_t tlen,
		struct flame **ret)
{
	struct flame *fl = calloc(1, sizeof(*fl));
	int r;

	if (!fl)
		return -ENOMEM;
	r = build(fl, folded, len, times, tlen);
	if (r < 0) {
		flame_free(fl);
		return r;
	}
	*ret = fl;
	return 0;
}

void flame_free(struct flame *fl)
{
	if (!fl)
		return;
	for (size_t i = 0; i < fl->nnames; i++)
		free(fl->names[i]);
	free(fl->names);
	free(fl->node);
	free(fl->times);
	free(fl);
}

const char *flame_name(const struct flame *fl, uint32_t node)
{
	return fl->names[fl->node[node].name];
}

uint32_t flame_widest(const struct flame *fl, enum flame_kind kind)
{
	uint32_t best = FLAME_NONE;

	for (uint32_t i = 1; i < fl->nnodes; i++) {
		const struct flame_node *n = &fl->node[i];
		const char *name = fl->names[n->name];

		if (n->kind != kind || folded_is_plumbing(name, strlen(name)))
			continue;
		if (best == FLAME_NONE || n->total > fl->node[best].total ||
		    (n->total == fl->node[best].total && n->depth > fl->node[best].depth))
			best = i;
	}
	return best;
}

const char *flame_kind_name(enum flame_kind kind)
{
	switch (kind) {
	case FLAME_ROOT: return "root";
	case FLAME_TASK: return "task";
	case FLAME_KERNEL: return "kernel";
	case FLAME_USER: return "user";
	default: return "marker";
	}
}
