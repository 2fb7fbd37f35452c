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
 * What check memcg leaves for the agent's node model (check_seen's memcg, check/cz.h), so the
 * metrics do not read the hierarchy again: @read when it did; @rc and @msg as memcg_read()
 * answered, @reading as memcg_read() left it, with the growth from the history the state file holds
 * after the check (at the check's time). @read stays false when the check could not tell what the
 * file holds (state trouble): the node model reads again then.
 */
struct memcg_seen {
	bool read;
	int rc;				/* NPD_OK, or NPD_UNKNOWN with @msg */
	char msg[NPD_MSG_MAX];
	struct memcg_reading reading;
	bool history; /* (check_memcg.c's own: the growth above is from the file's history) */
};

/* check_memcg - `check memcg`: dying memcgs against live ones (the node/checks.c row). */
int check_memcg(struct cz_ctx *ctx, const struct check_seen *cs, struct npd_result *res);

#endif
