/* SPDX-License-Identifier: MIT */
#ifndef CZ_UNITS_H
#define CZ_UNITS_H

/*
 * The systemd units the agent published in the run dir, for the checks. In the chart's NPD mode
 * `check memcg` runs inside node-problem-detector's container: no libsystemd, no D-Bus socket.
 * The agent (which has both) asks the host's systemd for the units with the most restarts on a
 * slow period and writes them to <run dir>/UNITS_FILE (agent/units_publish.h); the checks and
 * `report` only read that file, so the leaker is named where NPD runs, and no check ever loads
 * libsystemd or talks to a bus.
 *
 * The file (written whole and renamed, mode 0644):
 *     cpuzombie-units 1
 *     t <ms since the epoch, when the agent asked>
 *     u <NRestarts> <restarts per hour x1000, or -> <unit name>     (0..SYSTEMD_TOP_MAX lines)
 *   or, when the agent could not ask:
 *     e <one-line reason>
 * The reader trusts nothing in it: the run dir is shared with another container.
 */

#include <stddef.h>
#include <stdint.h>

#include "host/systemd.h"

#define UNITS_FILE "systemd-units"
#define UNITS_PUBLISH_MS (60 * 1000)		/* the agent's period */
#define UNITS_FRESH_MS (3 * UNITS_PUBLISH_MS + 30 * 1000) /* older: the agent is not publishing */
#define UNITS_FILE_MAX 16384
#define UNITS_ERR_MAX 160

/*
 * units_format - pure: the file for @r, or for the reason @err when @err is non-NULL (then @r
 * is only read for its t_ms). Returns the bytes written, or 0 when it did not fit in @size.
 */
size_t units_format(const struct systemd_restarts *r, const char *err, char *buf, size_t size);

/*
 * units_parse - pure: the file @text into *@ret (has_growth/per_hour from the file) or, for an
 * "e" file, the agent's reason into @err (ASCII printable, cut to @err_size). Unit names must be
 * valid systemd unit names (letters, digits, ":-_.\\@", a "." suffix), counts decimal.
 * Returns 0 (units), 1 (the agent's error in @err, *@ret has only t_ms), or -EINVAL (anything
 * else: bad header, line, name or number); *@ret untouched on -EINVAL.
 */
int units_parse(const char *text, struct systemd_restarts *ret, char *err, size_t err_size);

/*
 * units_load - read <@run_dir>/UNITS_FILE and judge it at @now_ms. Returns 0 with fresh units in
 * *@ret, else a negative errno with the reason in @why (for the log): -ENOENT "no unit data from
 * the agent", -ESTALE "unit data N min old", -EIO the agent's own reason (it could not ask
 * systemd: "cannot connect to bus ..."), -EINVAL "unit data corrupt", or a read error.
 */
int units_load(const char *run_dir, uint64_t now_ms, struct systemd_restarts *ret, char *why,
	       size_t why_size);

/*
 * units_words - the few words a check line carries instead of a hint for units_load's @err
 * ("no unit data from the agent", "unit data stale", "agent cannot ask systemd", ...).
 */
const char *units_words(int err);

#endif
