/* SPDX-License-Identifier: MIT */
#ifndef CZ_CENSUS_BPF_H
#define CZ_CENSUS_BPF_H

/*
 * The kernel side of the zombie census: load the CO-RE BPF program (agent/bpf/census.bpf.c,
 * embedded as a bpftool skeleton), attach it as a cgroup iterator to the memory hierarchy's
 * root, run it once, and turn its records into the dying memcgs with their former paths
 * (joined through the parent chain, at most CENSUS_BPF_DEPTH_MAX levels) and the bytes each
 * still charges. Agent only: libbpf is never linked into the check binary.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct census_scan_item {
	char *path;		/* below the memory root, "a/b/c"; points into the scan's storage */
	uint64_t bytes;		/* what it charges itself (its usage less its children's), bytes */
	uint64_t serial;	/* css->serial_nr: the same memcg has the same one next time */
};

struct census_scan {
	struct census_scan_item *v;	/* the dying memcgs, in pre-order */
	size_t n;
	uint64_t visited;		/* csses the walk visited, live ones included */
	bool truncated;			/* a bound (nodes, steps, ring buffer) cut the walk */
	uint64_t load_us, walk_us;	/* loading (verifier) and the walk + drain, wall time */
	char *storage;			/* the paths */
};

struct census_rec;
struct census_end;

#define CENSUS_ROOM_MIN 4096	/* records the ring buffer holds at least (~600 KiB) */

/*
 * census_bpf_scan - one census of the memory hierarchy whose root directory is @cgroup_fd (v1
 * memory, or v2's root), visiting at most @max_nodes csses (0: CENSUS_BPF_NODES_MAX). The
 * ring buffer is sized for twice @expect csses (the last census's count; at least
 * CENSUS_ROOM_MIN); a walk that finds more runs once more with room for all. Returns 0 with
 * *@ret filled (free with census_scan_free), or -errno: -EOPNOTSUPP when built without the BPF
 * census, -EPERM when loading or attaching was refused (capabilities), -ENOMEM, or libbpf's.
 */
int census_bpf_scan(int cgroup_fd, uint32_t max_nodes, uint32_t expect, struct census_scan *ret);

/*
 * census_scan_records - the pure half of census_bpf_scan: @n records of the BPF walk (in
 * pre-order: a parent before its children; agent/census_rec.h) and its @end record (NULL: none)
 * into the dying memcgs, each with its path (names up the parent chain, the root's left out)
 * and the bytes it charges itself (@page_size x its pages less its children's: the counters are
 * hierarchical). Returns 0 with *@ret filled (free with census_scan_free; load_us and walk_us
 * left 0), or -ENOMEM with *@ret untouched.
 */
int census_scan_records(const struct census_rec *rec, size_t n, const struct census_end *end,
			uint64_t page_size, struct census_scan *ret);

/*
 * census_bpf_build - how this binary was built for the census, for `cpuzombie -v --version`
 * (an image build checks it, so no image ships without the census unnoticed): "bpf (CO-RE,
 * libbpf vX.Y)" with the libbpf the binary loaded, or "no (built without ...)". Static text.
 */
const char *census_bpf_build(void);

/* census_scan_free - free what a scan holds. Accepts a zeroed scan. */
void census_scan_free(struct census_scan *s);

#endif
