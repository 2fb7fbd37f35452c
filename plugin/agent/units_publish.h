/* SPDX-License-Identifier: MIT */
#ifndef CZ_UNITS_PUBLISH_H
#define CZ_UNITS_PUBLISH_H

/*
 * The agent's half of memcg/units.h: every UNITS_PUBLISH_MS it asks the host's systemd over
 * D-Bus (systemd.bus; ListUnits and NRestarts, both unprivileged reads) for the service units
 * that restarted, most first, with their restarts per hour against the baseline in the state
 * dir (host/systemd.h systemd_restarts_update), and publishes them in the run dir for `check
 * memcg` and `report`, which never talk to systemd themselves. When it cannot ask, it
 * publishes why, so a check says that instead of going quiet.
 */

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"
#include "host/systemd.h"

struct units_publisher {
	uint64_t next_ms;		/* monotonic: next publication due (0: now) */
	int last_rc;			/* of the last reading: 0 or -errno */
	struct systemd_restarts last;	/* the last good reading (for the metrics) */
};

/*
 * units_publish_due - publish now when due (every UNITS_PUBLISH_MS of @mono_ms) and
 * memcg.systemd_hints is on. Returns 1 when it published, 0 when not due, or -errno when the
 * run dir could not be written (a reading that failed is published as the reason: 1).
 */
int units_publish_due(struct units_publisher *p, const struct cz_config *cfg, uint64_t mono_ms,
		      uint64_t now_ms);

/* units_publish - read and publish now (the period's body). Returns 0 or -errno of the write. */
int units_publish(struct units_publisher *p, const struct cz_config *cfg, uint64_t now_ms);

#endif
