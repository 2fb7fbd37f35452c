/* SPDX-License-Identifier: MIT */
#ifndef CZ_MEMCG_WHERE_H
#define CZ_MEMCG_WHERE_H

/*
 * Where the dying memcgs hang, on cgroup v2 and the unified hierarchy of hybrid mode: every
 * cgroup's cgroup.stat counts its dying descendants (nr_dying_subsys_memory on 6.12+, else
 * nr_dying_descendants), so the subtree holding them is found by reading a few of those small
 * files, never by walking the dying memcgs themselves. The walk descends from the root into the
 * child holding the most, while that child holds at least half of its parent's (below that the
 * zombies are spread and the parent is the answer), at most MEMCG_WHERE_DEPTH levels and
 * MEMCG_WHERE_READS files: bounded on any tree. A crash-looping unit's zombies end at its
 * slice ("system.slice": the unit's own cgroup is removed at every restart); a pod's at the
 * pod's cgroup ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice").
 */

#include <stddef.h>
#include <stdint.h>

#include "memcg/memcg.h"
#include "host/hostfs.h"

#define MEMCG_WHERE_DEPTH 4	/* levels below the root */
#define MEMCG_WHERE_READS 512	/* cgroup.stat files read at most */

/* memcg_where_dying - pure: the dying memcgs a cgroup.stat counts below its cgroup. */
uint64_t memcg_where_dying(const struct memcg_cgstat *st);

/*
 * memcg_where_pick - pure: the index in @dying (@n children) to descend into, or -1 to stop at
 * the parent (no child holds at least half of @parent_dying, or the parent holds none).
 */
int memcg_where_pick(const uint64_t *dying, size_t n, uint64_t parent_dying);

/*
 * memcg_where_find - walk the cgroup2 hierarchy at @rel (relative to the sys root) and write
 * the subtree holding most dying memcgs, relative to its root ("system.slice"), into @buf, with
 * their number in *@ret_dying. Returns 0, -ENODATA when the zombies are not below any one
 * child (or there are none), or the -errno of reading the root's cgroup.stat.
 */
int memcg_where_find(const struct hostfs *hf, const char *rel, char *buf, size_t size,
		     uint64_t *ret_dying);

/*
 * memcg_where_pod_uid - pure: the UID of the pod whose cgroup @subtree ends in: the systemd
 * driver's "kubepods-burstable-pod<uid with '_'>.slice" or cgroupfs's "pod<uid>". Writes the
 * UID with '-' into @uid (POD_UID_LEN + 1 bytes). Returns 0 or -ENOENT (not a pod's cgroup).
 */
int memcg_where_pod_uid(const char *subtree, char *uid, size_t size);

/*
 * memcg_where_format - pure: "most under <subtree> (<n>)" into @buf, the path cut from the
 * front ("...-pod1234.slice") when it does not fit, since its end names the unit or pod.
 * Returns the length.
 */
size_t memcg_where_format(const char *subtree, uint64_t dying, char *buf, size_t size);

#endif
