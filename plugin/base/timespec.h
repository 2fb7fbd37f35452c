/* SPDX-License-Identifier: MIT */
#ifndef CZ_TIMESPEC_H
#define CZ_TIMESPEC_H

/*
 * Points in time as a person types them for `report --since/--until`: relative to now ("3h",
 * "90m", "1h30m": that long ago; "now"), or absolute in UTC ("2026-12-01T03:10",
 * "2026-12-01 03:10:25", with an optional trailing "Z"), or seconds since the epoch
 * ("@1796094600").
 * Times are UTC because the kernel log, the journal's --utc and the API server all are; a local
 * time would silently shift the window on nodes with another zone.
 */

#include <stdint.h>

/*
 * parse_time_spec - pure: @s as a CLOCK_REALTIME time in ms, relative ones against @now_ms.
 * Returns 0 and *@ret_ms, or -EINVAL (syntax, a field out of range, a time before the epoch) /
 * -ERANGE (overflow); *@ret_ms untouched on failure.
 */
int parse_time_spec(const char *s, uint64_t now_ms, uint64_t *ret_ms);

#endif
