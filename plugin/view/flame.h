/* SPDX-License-Identifier: MIT */
#ifndef CZ_FLAME_H
#define CZ_FLAME_H

/*
 * A burst's flame graph as a model: the recorded folded stacks (cpu/folded.h) merged into one
 * tree of frames, root (all samples) -> task -> kernel frames root first, each node with the
 * samples whose stack passes through it, children in name order (flamegraph.pl's merge), and,
 * where the profile kept them, each sample's time mapped to the node its stack ends in. The
 * renderers (flame_svg.h, html.h) lay it out; nothing here does I/O.
 *
 * Frames are told apart by kind: the task (the first element of a folded line), kernel
 * frames, the user-mode marker "[user]" (the core was in user mode: our profiles keep kernel
 * callchains only) and the profiler's own markers ("[unknown]", "[other]", "[truncated]").
 * The hot frame is folded_hot_frame()'s: the kernel function that explains most samples.
 */

#include <stddef.h>
#include <stdint.h>

enum flame_kind {
	FLAME_ROOT,
	FLAME_TASK,
	FLAME_KERNEL,
	FLAME_USER,
	FLAME_MARKER,
};

#define FLAME_NONE UINT32_MAX

struct flame_node {
	uint32_t name;	       /* index into names */
	uint32_t parent;       /* FLAME_NONE for the root (node 0) */
	uint32_t child;	       /* first child (name order), FLAME_NONE */
	uint32_t next;	       /* next sibling, FLAME_NONE */
	uint32_t depth;	       /* 0 the root, 1 the task, 2.. the kernel frames */
	enum flame_kind kind;
	uint64_t self;	       /* samples whose stack ends here */
	uint64_t total;	       /* samples whose stack passes through here */
};

/* One sample's time: @t_ms after the profile's start, its stack ending in node @node. */
struct flame_time {
	uint32_t t_ms;
	uint32_t node;
};

struct flame {
	size_t nnodes;
	struct flame_node *node; /* node[0] is the root, named "all" */
	size_t nnames;
	char **names;		 /* distinct frame names, printable ASCII (folded_parse) */
	uint32_t depth_max;
	uint32_t hot;		 /* the hot frame's name index, FLAME_NONE when there is none */
	uint64_t hot_samples;	 /* samples with it on their stack */
	size_t ntimes;		 /* 0: no times (see times_why) */
	struct flame_time *times; /* in the order they were taken */
	const char *times_why;	 /* why there are none: "not recorded", "do not match the
				  * stacks", ...; NULL when there are */
};

/* Bounds on what one flame graph holds (a profile is at most cpu.profile_bytes of text). */
#define FLAME_NODES_MAX (1u << 20)
#define FLAME_TIMES_MAX (1u << 20)

/*
 * flame_build - pure: the tree of the folded text @folded (@len bytes), with the sample times
 * of @times (@tlen bytes, a ".times" text; NULL for none) where they match it. Returns 0 and
 * *@ret (flame_free), -ENODATA for a profile without samples, -EINVAL for text that is not
 * folded stacks, -E2BIG beyond FLAME_NODES_MAX frames, -ENOMEM. Times that do not parse or do
 * not match the stacks (more times on a line than its count) are left out, saying why.
 */
int flame_build(const char *folded, size_t len, const char *times, size_t tlen,
		struct flame **ret);

/* flame_free - safe on NULL. */
void flame_free(struct flame *fl);

/* flame_name - the name of @node. */
const char *flame_name(const struct flame *fl, uint32_t node);

/*
 * flame_widest - pure: the widest node of @kind that is not plumbing in folded_hot_frame()'s
 * sense (what the burst's kernel time went to, not the syscall entry every stack starts with),
 * FLAME_NONE when there is none.
 */
uint32_t flame_widest(const struct flame *fl, enum flame_kind kind);

/* flame_kind_name - "task", "kernel", "user", "marker" ("root" for the root). */
const char *flame_kind_name(enum flame_kind kind);

#endif
