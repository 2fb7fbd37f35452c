/* SPDX-License-Identifier: MIT */
#ifndef CZ_ADVICE_H
#define CZ_ADVICE_H

/*
 * What a person can do about a part of the report that could not be read. Every "unavailable"
 * line of the report (text and JSON "advice") ends with one of these, so the line says what to
 * change, not only what failed. Pure: a negative errno in, a constant sentence out (no trailing
 * period, ASCII, never NULL).
 */

/*
 * advice_restarts - after units_load() (memcg/units.h) failed with @rc: nothing published by
 * the agent (-ENOENT), too old (-ESTALE), the agent could not ask systemd (-EIO: no bus, as in
 * a container without the host's socket), a corrupt file (-EINVAL), no permission.
 */
const char *advice_restarts(int rc);

/* advice_census - what to do after census_load() (memcg/census.h) failed with @rc. */
const char *advice_census(int rc);

/* advice_canary - after canary_run() failed with @rc (no memory controller, no host /sys, ...). */
const char *advice_canary(int rc);

/* advice_irq_map - after irq_map_all() failed with @rc. */
const char *advice_irq_map(int rc);

/* advice_ena_state - after node_ena_load() (node.h) failed with @rc (other than -ENOENT). */
const char *advice_ena_state(int rc);

/* advice_history - when the sampler's history could not be read (@rc < 0) or was empty (0). */
const char *advice_history(int rc);

#endif
