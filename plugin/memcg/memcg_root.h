/* SPDX-License-Identifier: MIT */
#ifndef CZ_MEMCG_ROOT_H
#define CZ_MEMCG_ROOT_H

/*
 * The memory hierarchy's place under the host roots (memcg_root.c): the I/O that finds it, over
 * memcg.h's pure parsers of mountinfo and /proc/cgroups.
 */

#include <stdbool.h>
#include <stddef.h>

#include "host/hostfs.h"

/*
 * memcg_find_hierarchy - where the memory hierarchy (@v2: the unified one) is mounted, relative
 * to the sys root, into @buf: from host init's mountinfo, then ours, then the conventional path
 * ("fs/cgroup/memory", "fs/cgroup"). Returns 0 (always; the caller's open says if it exists).
 */
int memcg_find_hierarchy(const struct hostfs *hf, bool v2, char *buf, size_t size);

/*
 * memcg_open_root - open the root directory of the hierarchy that holds the memory controller,
 * decided as check memcg decides it: /proc/cgroups' hierarchy column, 0 for the unified one
 * (pure v2, or a hybrid host with memory on cgroup2), else v1's memory mount. Never guesses
 * from what exists: on pure v2 "fs/cgroup/memory" may be a cgroup that happens to be so named.
 * Returns an O_RDONLY|O_DIRECTORY fd (O_CLOEXEC), or -errno: -ENODATA no memory row, -EINVAL
 * an unreadable /proc/cgroups, the open's -ENOENT/-ENOTDIR/-EACCES.
 */
int memcg_open_root(const struct hostfs *hf);

#endif
