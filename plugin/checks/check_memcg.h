/* SPDX-License-Identifier: MIT */
#ifndef CZ_CHECK_MEMCG_H
#define CZ_CHECK_MEMCG_H

/*
 * The I/O edge of check memcg (check_memcg.c): reads /proc/cgroups, the memory hierarchy and
 * cgroup.stat through the host roots; memcg.h is its pure half (parsers and the verdict).
 */

#include "checks/cz.h"
#include "checks/memcg.h"

/*
 * memcg_read - the reading of check memcg, shared with the report and the agent: fills *@r
 * (no state, no verdict). Returns NPD_OK, or NPD_UNKNOWN with the reason in @res.
 */
int memcg_read(struct cz_ctx *ctx, struct memcg_reading *r, struct npd_result *res);

#endif
