/* SPDX-License-Identifier: MIT */
#ifndef CZ_SYSTEMD_H
#define CZ_SYSTEMD_H

/*
 * The one place that talks to libsystemd. It is dlopen()ed lazily ("libsystemd.so.0"), only by
 * the agent: the check paths must never load it (41 shared objects, ~7 ms per exec measured).
 * Symbols are resolved one by one on first use, so later additions (sd-bus for unit restart
 * counts, sd-journal) go next to sd_notify here with their own resolver entry.
 */

#include <stdbool.h>
#include <stdint.h>

/*
 * systemd_notify - sd_notify(0, @state) ("READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS=...").
 * Does nothing and returns 0 when not started by systemd with a notify socket ($NOTIFY_SOCKET
 * unset), without loading the library. Returns > 0 when sent, 0 when not applicable, -errno
 * (-ENOSYS when libsystemd cannot be loaded).
 */
int systemd_notify(const char *state);

/*
 * systemd_watchdog_usec - the watchdog period systemd expects pings within (WatchdogSec=), or 0
 * when there is no watchdog for this process. Does not load libsystemd when $WATCHDOG_USEC is
 * unset.
 */
uint64_t systemd_watchdog_usec(void);

/* systemd_loaded - true once libsystemd has been dlopen()ed (tests assert the checks never do). */
bool systemd_loaded(void);

#endif
