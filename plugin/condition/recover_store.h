/* SPDX-License-Identifier: MIT */
#ifndef CZ_RECOVER_STORE_H
#define CZ_RECOVER_STORE_H

/*
 * recover.h's state kept in the state dir (state.h: locked, atomic), one file per condition's
 * check: the agent and NPD's `check` runs on one node share it, so both publish one verdict.
 */

#include <stdint.h>

#include "base/npd.h"
#include "condition/recover.h"

/*
 * recover_store_apply - one check's result @res of check @check ("memcg", "cpu", "ena") through
 * the hysteresis with recover_after @after_ms at @now_ms: the state in @state_dir is stepped and
 * saved, and a held condition turns @res into NPD_PROBLEM with the recovering message. Returns
 * the verdict (recover_after 0: RECOVER_PASS, nothing read or written), or -errno when the state
 * could not be used (@res is then left as the check said:
 * the hysteresis needs its memory, and a stale hold is worse than none). Other checks: -ENOENT.
 */
int recover_store_apply(const char *state_dir, const char *check, uint64_t after_ms,
			uint64_t now_ms, struct npd_result *res);

/* recover_store_read - the state of @check without locking or writing. Returns STATE_NONE (@s
 * untouched), STATE_LOADED, or -errno (state.h's state_read). */
int recover_store_read(const char *state_dir, const char *check, struct recover_state *s);

#endif
