/* SPDX-License-Identifier: MIT */
#ifndef CZ_CHECK_MEMCG_H
#define CZ_CHECK_MEMCG_H

/*
 * The I/O edge of check memcg (check_memcg.c): reads /proc/cgroups, the memory hierarchy and
 * cgroup.stat through the host roots; memcg.h is its pure half (parsers and the verdict).
 */

#include "check/cz.h"
#include "memcg/memcg.h"

/*
 * memcg_read - the reading of check memcg, shared with the report and the agent: fills *@r
 * (no state, no verdict). Returns NPD_OK, or NPD_UNKNOWN with the reason in @res.
 */
int memcg_read(struct cz_ctx *ctx, struct memcg_reading *r, struct npd_result *res);

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

/*
 * What check memcg leaves for the agent's node model (ctx->memcg_seen), so the metrics do not
 * read the hierarchy again: @read when it did; @rc and @msg as memcg_read() answered, @reading as
 * memcg_read() left it, with the growth from the history the state file holds after the check
 * (at the check's time). @read stays false when the check could not tell what the file holds
 * (state trouble): the node model reads again then.
 */
struct memcg_seen {
	bool read;
	int rc;				/* NPD_OK, or NPD_UNKNOWN with @msg */
	char msg[NPD_MSG_MAX];
	struct memcg_reading reading;
	bool history; /* (check_memcg.c's own: the growth above is from the file's history) */
};

/* check_memcg - `check memcg`: dying memcgs against live ones (the node/checks.c row). */
int check_memcg(struct cz_ctx *ctx, struct npd_result *res);

#endif
