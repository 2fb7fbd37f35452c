// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * The zombie census (agent/census.h): one run of this iter/cgroup program, attached to the root
 * of the hierarchy that holds the memory controller (order SELF_ONLY: it is called once, for the
 * root), walks the memory css tree from the root's memory css in pre-order, dying csses
 * included, and emits one record per css into a ring buffer that userspace drains afterwards.
 *
 * Why this shape (measured on 6.18): the cgroup iterator itself visits only live cgroups, and
 * bpf_iter_css_new refuses cgrp->subsys[memory_cgrp_id] ("R2 must be referenced or trusted"), so
 * the walk follows css->children / css->sibling with CO-RE reads. An offline css stays on its
 * parent's children list until it is released (css_release_work_fn), which is exactly the life
 * of a zombie. The cgroup iterator runs its program with cgroup_mutex held, so the lists do not
 * change under the walk; every read is a probe read anyway, so a surprise costs a record, never
 * the kernel. The seq_file of an iterator holds only a few pages per show(), hence the ring
 * buffer (sized by userspace before load).
 *
 * Paths are not built here: each record carries its css and its parent's css pointer (as
 * opaque ids) and its name, and userspace joins them (pre-order: a parent always comes first).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "agent/census_rec.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The bounds: set by userspace through .rodata before load. */
const volatile __u32 max_nodes = CENSUS_BPF_NODES_MAX;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);	/* resized by userspace before load */
} records SEC(".maps");

struct walk {
	struct cgroup_subsys_state *root, *cur;
	__u32 nodes;
	__u32 depth;
	__u32 dropped;			/* records the ring buffer refused */
	bool ascending;			/* cur's subtree is done: go to its next sibling or up */
	bool truncated;
};

static struct cgroup_subsys_state *css_of(struct list_head *node)
{
	unsigned long off = bpf_core_field_offset(struct cgroup_subsys_state, sibling);

	return (struct cgroup_subsys_state *)((void *)node - off);
}

static void emit(struct walk *w, struct cgroup_subsys_state *css)
{
	struct census_rec *r;
	struct mem_cgroup *memcg;
	const char *name;

	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		w->dropped++;
		return;
	}
	/* css is the first member of struct mem_cgroup, but say so through CO-RE */
	memcg = (void *)css - bpf_core_field_offset(struct mem_cgroup, css);
	r->self = (__u64)(unsigned long)css;
	r->parent = (__u64)(unsigned long)BPF_CORE_READ(css, parent);
	r->serial = BPF_CORE_READ(css, serial_nr);
	r->pages = (__u64)BPF_CORE_READ(memcg, memory.usage.counter);
	r->flags = BPF_CORE_READ(css, flags);
	/* this kernel's own flag values (vmlinux.h is dumped from its BTF at build time) */
	r->dying = !(r->flags & CSS_ONLINE) || (r->flags & CSS_DYING);
	r->depth = w->depth;
	r->name[0] = 0;
	name = BPF_CORE_READ(css, cgroup, kn, name);
	if (name)
		bpf_probe_read_kernel_str(r->name, sizeof(r->name), name);
	bpf_ringbuf_submit(r, 0);
}

/* One step of the pre-order walk: visit-and-descend, or move to the next sibling, or go up. */
static long step(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	struct cgroup_subsys_state *cur = w->cur, *parent;
	struct list_head *next;

	if (!w->ascending) {
		if (w->nodes >= max_nodes) {
			w->truncated = true;
			return 1;
		}
		w->nodes++;
		emit(w, cur);
		next = BPF_CORE_READ(cur, children.next);
		if (next && next != &cur->children && w->depth < CENSUS_BPF_DEPTH_MAX) {
			w->cur = css_of(next);	/* the first child, by its sibling node */
			w->depth++;
			return 0;
		}
		w->ascending = true;
	}
	if (cur == w->root)
		return 1;	/* the whole tree is done */
	parent = BPF_CORE_READ(cur, parent);
	if (!parent)
		return 1;
	next = BPF_CORE_READ(cur, sibling.next);
	if (next && next != &parent->children) {
		w->cur = css_of(next);
		w->ascending = false;
		return 0;
	}
	w->cur = parent;
	w->depth--;
	return 0;
}

SEC("iter/cgroup")
int census(struct bpf_iter__cgroup *ctx)
{
	struct cgroup *cgrp = ctx->cgroup;
	struct census_end *end;
	struct walk w = {};
	/* both relocated to the running kernel: its subsystem list may differ from the build's */
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	int count = bpf_core_enum_value(enum cgroup_subsys_id, CGROUP_SUBSYS_COUNT);

	if (!cgrp || id < 0 || id >= count)
		return 0;
	w.root = BPF_CORE_READ(cgrp, subsys[id]);
	if (!w.root)
		return 0;
	w.cur = w.root;
	if (bpf_loop(CENSUS_BPF_STEPS_MAX, step, &w, 0) >= CENSUS_BPF_STEPS_MAX)
		w.truncated = true;
	end = bpf_ringbuf_reserve(&records, sizeof(*end), 0);
	if (end) {
		end->magic = CENSUS_END_MAGIC;
		end->nodes = w.nodes;
		end->dropped = w.dropped;
		end->truncated = w.truncated;
		bpf_ringbuf_submit(end, 0);
	}
	return 0;
}
