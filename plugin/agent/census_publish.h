/* SPDX-License-Identifier: MIT */
#ifndef CZ_CENSUS_PUBLISH_H
#define CZ_CENSUS_PUBLISH_H

/*
 * The agent's half of memcg/census.h: every memcg.census_interval (and at once when asked,
 * e.g. when MemcgZombieLeak turns True) it runs the BPF census (agent/census_bpf.h) over the
 * memory hierarchy, groups the dying memcgs (census_build) and publishes them in the run dir
 * for `check memcg` and `report`, which never load BPF themselves. When it cannot count (no
 * capability, built without BPF, no memory hierarchy) it publishes why, so the check says that.
 * Each memcg's "first seen dying" is remembered between censuses by its css serial number.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/cz.h"
#include "memcg/census.h"

struct census_seen;

struct census_publisher {
	uint64_t next_ms;		/* monotonic: next census due (0: now) */
	int last_rc;			/* of the last census: 0 or -errno (logged on change) */
	uint64_t last_us;		/* how long the last census took (kernel walk + grouping) */
	struct census_seen *seen;	/* serial -> first seen, sorted by serial */
	size_t nseen;
	struct census last;		/* the last good census (for the metrics) */
	bool has_last;
};

/*
 * census_publish_due - publish now when due (every memcg.census_interval of @mono_ms; never
 * when it is 0). Returns 1 when it published, 0 when not due, or -errno when the run dir could
 * not be written (a census that failed is published as the reason: 1).
 */
int census_publish_due(struct census_publisher *p, struct cz_ctx *ctx, uint64_t mono_ms,
		       uint64_t now_ms);

/*
 * census_publish - count and publish now, and make the next one due a full interval later.
 * Returns 0 or -errno of the write.
 */
int census_publish(struct census_publisher *p, struct cz_ctx *ctx, uint64_t mono_ms,
		   uint64_t now_ms);

/*
 * census_take - count now into *@ret without publishing or remembering anything (every memcg
 * "first seen" now): `report` run by hand where no agent publishes (cmd/report_direct.h).
 * Returns 0, or -errno with the one-line reason in @why.
 */
int census_take(struct cz_ctx *ctx, uint64_t now_ms, struct census *ret, char *why,
		size_t why_size);

/* census_publisher_done - free what @p holds. */
void census_publisher_done(struct census_publisher *p);

#endif
