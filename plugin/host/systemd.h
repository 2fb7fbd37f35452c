/* SPDX-License-Identifier: MIT */
#ifndef CZ_SYSTEMD_H
#define CZ_SYSTEMD_H

/*
 * The one place that talks to libsystemd, linked directly into the full binary (the agent's
 * sd_notify, watchdog and journal; the restart counts of `report` and of the full binary's
 * `check memcg`). The static check binary that NPD execs does not contain this file: it gets
 * no cz_ctx.restarts_update (check/cz.h) and never calls in here; the pure half (state payload,
 * growth, hint) is systemd_restarts.c, which it does link.
 *
 * Unit restart counts: systemd's Manager.ListUnits over the configured bus (systemd.bus:
 * "system", "user", or a D-Bus address; an address ending in "/systemd/private" is systemd's own
 * peer-to-peer socket and is spoken to directly, anything else as a bus client), then
 * Service.NRestarts (systemd 235+) of every *.service unit. A crash-looping unit is how leaked
 * memcgs pile up (each restart leaves its memcg dying while its page cache lives on).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "base/state.h"

/*
 * systemd_notify - sd_notify(0, @state) ("READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS=...").
 * Does nothing and returns 0 when not started by systemd with a notify socket ($NOTIFY_SOCKET
 * unset). Returns > 0 when sent, 0 when not applicable, -errno.
 */
int systemd_notify(const char *state);

/*
 * systemd_watchdog_usec - the watchdog period systemd expects pings within (WatchdogSec=), or 0
 * when there is no watchdog for this process ($WATCHDOG_USEC unset or not for this PID).
 */
uint64_t systemd_watchdog_usec(void);

/*
 * systemd_journal_sendv - sd_journal_sendv(@iov, @n): one structured entry ("KEY=value" each).
 * Returns 0 or -errno.
 */
int systemd_journal_sendv(const struct iovec *iov, int n);

/*
 * systemd_log_sink - a log_sink_fn (base/log.h) that sends each entry to the journal with its
 * structured fields. The agent installs it when log_to_journal(). Returns >= 0 or -errno.
 */
enum log_prio;
struct log_fields;
int systemd_log_sink(enum log_prio prio, const struct log_fields *f, const char *msg);

/* ---- unit restart counts (the pure functions are in systemd_restarts.c) ---- */

#define SYSTEMD_UNIT_MAX 128	/* unit name bytes kept (systemd's own limit is 255) */
#define SYSTEMD_TOP_MAX 64	/* units kept in a reading and in the state file */
#define SYSTEMD_RESTARTS_STATE "systemd-restarts"
#define SYSTEMD_BASELINE_MIN_MS (60 * 1000)	/* keep a baseline at least this long */
#define SYSTEMD_GROWTH_MIN_MS (5 * 1000)	/* no growth figure over a shorter span */

struct systemd_unit_restarts {
	char name[SYSTEMD_UNIT_MAX];
	uint64_t restarts;	/* NRestarts */
	bool has_growth;
	double per_hour;	/* restarts per hour since the stored baseline */
};

struct systemd_restarts {
	uint64_t t_ms;		/* when read (CLOCK_REALTIME) */
	size_t n;		/* units with at least one restart, most restarts first */
	struct systemd_unit_restarts u[SYSTEMD_TOP_MAX];
};

/*
 * systemd_read_restarts - list the service units over @bus and keep those with NRestarts > 0,
 * most first (at most SYSTEMD_TOP_MAX). Bounded: each call times out after a second and the
 * whole listing stops after a few seconds (keeping what it has). Returns 0 and fills *@ret
 * (t_ms = @now_ms), or -errno (-ECONNREFUSED / -ENOENT no bus, -EINVAL bad address, -EACCES,
 * -ETIMEDOUT) with a one-line reason in @why ("cannot connect to bus 'system': ..."). The reason
 * is data, not a log line: the agent publishes it in the run dir (memcg/units.h), where
 * `check memcg` and `report` read why they have no restart hint.
 */
int systemd_read_restarts(const char *bus, uint64_t now_ms, struct systemd_restarts *ret,
			  char *why, size_t why_size);

/*
 * systemd_restarts_parse - pure: a state payload ("t <ms>" then "u <restarts> <name>" lines)
 * into *@ret (growth fields false). Returns 0, or -EINVAL; *@ret untouched on failure.
 */
int systemd_restarts_parse(const char *text, struct systemd_restarts *ret);

/* systemd_restarts_format - pure: the payload for @r; returns bytes written (cut at @size). */
size_t systemd_restarts_format(const struct systemd_restarts *r, char *buf, size_t size);

/*
 * systemd_restarts_growth - pure: fill each unit's growth in @cur from @base (NULL: none). A unit
 * whose count went down (manager restarted, reset-failed) or a span under
 * SYSTEMD_GROWTH_MIN_MS gets no growth. Returns true when @base should be replaced by @cur
 * (no base, base older than SYSTEMD_BASELINE_MIN_MS, or from the future).
 */
bool systemd_restarts_growth(const struct systemd_restarts *base, struct systemd_restarts *cur);

/*
 * systemd_restarts_update - read (systemd_read_restarts), compute growth against the state file
 * SYSTEMD_RESTARTS_STATE in @state_dir and replace it when due (locked, atomic; nothing under
 * @state_flags STATE_READ_ONLY, base/state.h). State trouble
 * costs only the growth figures. Returns as systemd_read_restarts.
 */
int systemd_restarts_update(const char *bus, const char *state_dir, unsigned state_flags,
			    uint64_t now_ms,
			    struct systemd_restarts *ret, char *why, size_t why_size);

/* The "systemd-restarts" state file (STATE_SYSTEMD_RESTARTS, base/state.h): the baseline, a
 * struct systemd_restarts (systemd_restarts.c). */
struct state_type;
struct state_txn;
extern const struct state_type systemd_restarts_state;
/* systemd_restarts_state_read, _begin, _commit, _write: STATE_CODEC's typed calls (base/state.h) */
int systemd_restarts_state_read(const char *dir, const struct state_type *t,
				struct systemd_restarts *obj);
int systemd_restarts_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
				 struct systemd_restarts *obj);
int systemd_restarts_state_commit(struct state_txn *txn, const struct systemd_restarts *obj);
int systemd_restarts_state_write(const char *dir, const struct state_type *t,
				 const struct systemd_restarts *obj);

#endif
