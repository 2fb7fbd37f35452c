/* SPDX-License-Identifier: MIT */
#ifndef CZ_RECOVER_H
#define CZ_RECOVER_H

/*
 * Clearing with hysteresis, pure: a condition that was True goes back to False only after its
 * check has said OK without a break for <check>.recover_after (0 = at the first OK, NPD's own
 * behaviour). Meanwhile the condition stays True ("held") and says it is recovering. A problem
 * seen again while held is a flap the hysteresis absorbed: counted (flaps), never published.
 * Unknown passes through as Unknown (we could not tell is not healthy) and restarts the
 * recovery clock. The state is one small text payload per check in the state dir (recover-
 * <check>), so a restart of NPD or of the agent keeps a held condition held.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/npd.h"

struct recover_state {
	bool active;		/* the condition is True (by a problem, or held) */
	uint64_t ok_since_ms;	/* start of the current run of OK checks while active; 0 = none */
	uint64_t true_since_ms;	/* when it became True (active); 0 = never */
	uint64_t flaps;		/* problems seen again while held (absorbed flips) */
	uint64_t clears;	/* True -> False after recover_after */
};

/* What recover_step() decided. */
enum recover_verdict {
	RECOVER_PASS,		/* publish the check's own result */
	RECOVER_HOLD,		/* OK, but recover_after has not passed: publish True */
	RECOVER_CLEAR,		/* OK for recover_after: publish False (a clear) */
};

/*
 * recover_step - pure: the state after a check that said @status at @now_ms, with
 * recover_after @after_ms, into *@s. Returns the verdict. A clock that went back (@now_ms before
 * ok_since) restarts the recovery clock at @now_ms: never a clear early.
 */
enum recover_verdict recover_step(struct recover_state *s, enum npd_status status, uint64_t now_ms,
				  uint64_t after_ms);

/*
 * recover_hold_message - pure: the message of a held condition into @buf ("recovering: OK for
 * 2m of recover_after 10m; <the check's message>"), ASCII, cut to @size. Returns @buf.
 */
char *recover_hold_message(const struct recover_state *s, uint64_t now_ms, uint64_t after_ms,
			   const char *check_msg, char *buf, size_t size);

/* recover_parse / recover_format - the state payload ("active 1\nok_since 0\n..."); parse
 * returns 0 or -EINVAL (@s untouched), format a malloc()ed payload's length or -ENOMEM. */
int recover_parse(const char *payload, size_t len, void *s);
ssize_t recover_format(const void *s, char **ret);

/* recover_state_name - the state file of check @check ("recover-memcg") into @buf. */
const char *recover_state_name(const char *check, char *buf, size_t size);

#endif
