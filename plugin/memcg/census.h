/* SPDX-License-Identifier: MIT */
#ifndef CZ_CENSUS_H
#define CZ_CENSUS_H

/*
 * The zombie census, as published in the run dir. The agent (agent/census_publish.h) reads the
 * dying memcgs from the kernel itself with a BPF program (agent/census_bpf.h): each dying memcg
 * keeps its former name and parent until it is freed. It groups them here by name pattern and
 * by parent, and writes <run dir>/CENSUS_FILE; `check memcg` and `report` only read that file
 * (no check loads BPF: the static check binary has no libbpf).
 *
 * A group's key is the memcg's path below the memory root with pod UIDs, container IDs and
 * numbers collapsed to "*" (census_pattern): kubepods.slice/kubepods-burstable.slice/
 * kubepods-burstable-pod*.slice/cri-containerd-*.scope, system.slice/ecs.service.
 *
 * The file (written whole and renamed, mode 0644):
 *     cpuzombie-census 1
 *     t <ms since the epoch, when the agent counted>
 *     n <dying> <bytes pinned> <csses visited> <1 when a bound cut the walk short, else 0>
 *     g <count> <bytes pinned> <first seen dying, ms since the epoch> <pattern>   (by pattern)
 *     p <count> <bytes pinned> <first seen dying, ms since the epoch> <parent>    (by parent)
 *   or, when the agent could not count:
 *     e <one-line reason>
 * Groups come most dying first, at most CENSUS_GROUPS_MAX of each kind. Names are printable
 * ASCII without spaces (anything else became '?'); the root itself is "/". The reader trusts
 * nothing in it: the run dir is shared with another container.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CENSUS_FILE "memcg-census"
#define CENSUS_GROUPS_MAX 16
#define CENSUS_KEY_MAX 256		/* a group's key, cut (with "...") beyond */
#define CENSUS_ERR_MAX 160
#define CENSUS_FILE_MAX 16384

/* One dying memcg, as the agent found it. */
struct census_dying {
	const char *path;	/* below the memory root, "a/b/c" (not owned) */
	uint64_t bytes;		/* what it still charges */
	uint64_t first_ms;	/* when the agent first saw it dying (ms since the epoch) */
};

struct census_group {
	uint64_t count, bytes, first_ms;
	char key[CENSUS_KEY_MAX];
};

struct census {
	uint64_t t_ms;
	uint64_t dying, bytes, visited;
	bool truncated;
	size_t ngroups, nparents;
	struct census_group group[CENSUS_GROUPS_MAX];	/* by pattern, most dying first */
	struct census_group parent[CENSUS_GROUPS_MAX];	/* by parent path, most dying first */
};

/*
 * census_pattern - pure: @path with each component's pod UID, container ID (12+ hex digits)
 * and digit run collapsed to "*", bytes outside printable ASCII, spaces, ';' and ',' as '?' (the
 * check line's separators), into @buf
 * (cut to @size with "..." at its end). Returns @buf.
 */
char *census_pattern(const char *path, char *buf, size_t size);

/*
 * census_build - pure: the census of @n dying memcgs @v (in any order) into *@ret, with its
 * t_ms, visited and truncated from the arguments. Returns 0, -ENOMEM.
 */
int census_build(const struct census_dying *v, size_t n, uint64_t t_ms, uint64_t visited,
		 bool truncated, struct census *ret);

/*
 * census_format - pure: the file for @c, or for the reason @err when @err is non-NULL (then only
 * @c->t_ms is read). Returns the bytes written, or 0 when it did not fit in @size.
 */
size_t census_format(const struct census *c, const char *err, char *buf, size_t size);

/*
 * census_parse - pure: the file @text into *@ret, or an "e" file's reason into @err (printable
 * ASCII, cut to @err_size). Returns 0 (a census), 1 (the agent's reason in @err; *@ret holds
 * only t_ms) or -EINVAL (bad header, line, key or number; a group count above the total, more
 * than CENSUS_GROUPS_MAX groups). *@ret untouched on -EINVAL.
 */
int census_parse(const char *text, struct census *ret, char *err, size_t err_size);

/*
 * census_load - read <@run_dir>/CENSUS_FILE and judge it at @now_ms against @fresh_ms. Returns
 * 0 with a fresh census in *@ret, else a negative errno with the reason in @why: -ENOENT "no
 * census from the agent", -ESTALE "census N min old", -EIO the agent's own reason, -EINVAL
 * "census corrupt", or a read error.
 */
int census_load(const char *run_dir, uint64_t now_ms, uint64_t fresh_ms, struct census *ret,
		char *why, size_t why_size);

#endif
