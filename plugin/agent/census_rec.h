/* SPDX-License-Identifier: MIT */
#ifndef CZ_CENSUS_REC_H
#define CZ_CENSUS_REC_H

/*
 * The records the census BPF program (agent/bpf/census.bpf.c) writes into its ring buffer, one
 * per memory css visited in pre-order, then one census_end. Shared by the BPF side (where
 * vmlinux.h gives the __u types) and agent/census_bpf.c. The two differ in size, which is how
 * the reader tells them apart.
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define CENSUS_BPF_NODES_MAX 200000u	/* csses visited, at most (userspace may lower it) */
#define CENSUS_BPF_STEPS_MAX (1u << 22)	/* bpf_loop steps: each visits, moves on or goes up */
#define CENSUS_BPF_DEPTH_MAX 64u	/* levels below the root; deeper subtrees are skipped */
#define CENSUS_NAME_MAX      96 /* a kernfs name, cut (cri-containerd-<64 hex>.scope fits) */
#define CENSUS_END_MAGIC 0x43454e53u	/* "CENS" */

struct census_rec {
	__u64 self;		/* the css, as an opaque id */
	__u64 parent;		/* its parent's css (0 for the root) */
	__u64 serial;		/* css->serial_nr: creation order */
	__u64 pages;		/* memcg->memory.usage: pages it still charges */
	__u32 flags;		/* css->flags (CSS_ONLINE, CSS_DYING as this kernel defines them) */
	__u32 depth;		/* 0 for the root */
	__u32 dying;		/* not CSS_ONLINE, or CSS_DYING: a zombie */
	__u32 pad;
	char name[CENSUS_NAME_MAX];
};

struct census_end {
	__u32 magic;
	__u32 nodes;		/* csses visited */
	__u32 dropped;		/* records the ring buffer had no room for */
	__u32 truncated;	/* a bound was hit: the census is partial */
};

#endif
