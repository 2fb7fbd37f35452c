/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include <stdarg.h>
#include <sys/uio.h>

#include "base/log.h"
#include "base/state.h"
#include "host/systemd.h"
#include "base/util.h"

#define CALL_TIMEOUT_USEC 1000000ULL
#define LIST_DEADLINE_MS 4000
#define UNITS_SCAN_MAX 4096

int systemd_notify(const char *state)
{
	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	return sd_notify(0, state);
}

uint64_t systemd_watchdog_usec(void)
{
	uint64_t usec = 0;

	if (!getenv("WATCHDOG_USEC"))
		return 0;
	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}

int systemd_journal_sendv(const struct iovec *iov, int n)
{
	return sd_journal_sendv(iov, n);
}

/* ---- sd-bus ---- */

static int bus_open(const char *bus, sd_bus **ret)
{
	sd_bus *b = NULL;
	size_t n = strlen(bus);
	int r;

	if (streq(bus, "system"))
		return sd_bus_open_system(ret);
	if (streq(bus, "user"))
		return sd_bus_open_user(ret);
	if (!strchr(bus, ':'))
		return -EINVAL;
	r = sd_bus_new(&b);
	if (r < 0)
		return r;
	r = sd_bus_set_address(b, bus);
	/* systemd's private socket is peer-to-peer (no Hello, no bus daemon), as systemctl uses it
	 * */
	if (r >= 0 && !(n >= 16 && streq(bus + n - 16, "/systemd/private")))
		r = sd_bus_set_bus_client(b, 1);
	if (r >= 0)
		r = sd_bus_set_method_call_timeout(b, CALL_TIMEOUT_USEC);
	r = r < 0 ? r : sd_bus_start(b);
	if (r < 0) {
		sd_bus_flush_close_unref(b);
		return r;
	}
	*ret = b;
	return 0;
}

static int cmp_restarts(const void *a, const void *b)
{
	const struct systemd_unit_restarts *x = a, *y = b;

	if (x->restarts != y->restarts)
		return x->restarts < y->restarts ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Keep @u in the top list @r (sorted later), replacing the smallest when full. */
static void keep(struct systemd_restarts *r, const char *name, uint64_t restarts)
{
	size_t k = r->n;

	if (r->n == SYSTEMD_TOP_MAX) {
		k = 0;
		for (size_t i = 1; i < r->n; i++)
			if (r->u[i].restarts < r->u[k].restarts)
				k = i;
		if (r->u[k].restarts >= restarts)
			return;
	} else {
		r->n++;
	}
	memset(&r->u[k], 0, sizeof(r->u[k]));
	snprintf(r->u[k].name, sizeof(r->u[k].name), "%s", name);
	r->u[k].restarts = restarts;
}

/* Walk ListUnits' reply and ask each service for NRestarts. */
static int scan_units(sd_bus *b, sd_bus_message *m, struct systemd_restarts *r)
{
	uint64_t deadline = now_monotonic_ms() + LIST_DEADLINE_MS;
	unsigned seen = 0;
	int e;

	e = sd_bus_message_enter_container(m, 'a', "(ssssssouso)");
	while (e >= 0 && seen++ < UNITS_SCAN_MAX && now_monotonic_ms() < deadline) {
		const char *name, *path, *s;
		uint32_t job, nrestarts = 0;
		sd_bus_error err = SD_BUS_ERROR_NULL;
		size_t len;

		e = sd_bus_message_read(m, "(ssssssouso)", &name, &s, &s, &s, &s, &s, &path,
					     &job, &s, &s);
		if (e <= 0)
			break;
		len = strlen(name);
		if (len < 8 || !streq(name + len - 8, ".service") || strchr(name, ' '))
			continue;
		if (sd_bus_get_property_trivial(b, "org.freedesktop.systemd1", path,
						     "org.freedesktop.systemd1.Service",
						     "NRestarts", &err, 'u', &nrestarts) >= 0 &&
		    nrestarts > 0)
			keep(r, name, nrestarts);
		sd_bus_error_free(&err);
	}
	if (e < 0)
		return e;
	qsort(r->u, r->n, sizeof(r->u[0]), cmp_restarts);
	return 0;
}

int systemd_read_restarts(const char *bus, uint64_t now_ms, struct systemd_restarts *ret,
			  char *why, size_t why_size)
{
	struct systemd_restarts r = { .t_ms = now_ms };
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	sd_bus *b = NULL;
	int k;

	k = bus_open(bus, &b);
	if (k < 0) {
		snprintf(why, why_size, "cannot connect to bus '%s': %s", bus, strerror(-k));
		return k;
	}
	k = sd_bus_call_method(b, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			       "org.freedesktop.systemd1.Manager", "ListUnits", &e, &m, "");
	if (k < 0)
		snprintf(why, why_size, "ListUnits on bus '%s': %s", bus,
			 e.message ? e.message : strerror(-k));
	else if ((k = scan_units(b, m, &r)) < 0)
		snprintf(why, why_size, "ListUnits reply on bus '%s': %s", bus, strerror(-k));
	sd_bus_error_free(&e);
	sd_bus_message_unref(m);
	sd_bus_flush_close_unref(b);
	if (k < 0)
		return k;
	*ret = r;
	return 0;
}

int systemd_restarts_update(const char *bus, const char *state_dir, unsigned state_flags,
			    uint64_t now_ms,
			    struct systemd_restarts *ret, char *why, size_t why_size)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT_FLAGS(state_flags);
	struct systemd_restarts base, cur;
	int r, st;

	r = systemd_read_restarts(bus, now_ms, &cur, why, why_size);
	if (r < 0)
		return r;
	/* state trouble costs only the growth figures */
	st = systemd_restarts_state_begin(&txn, state_dir, &systemd_restarts_state, &base);
	if (st >= 0 && systemd_restarts_growth(st == STATE_LOADED ? &base : NULL, &cur))
		(void)systemd_restarts_state_commit(&txn, &cur);
	*ret = cur;
	return 0;
}

#define FIELD_MAX 1200

/* Append one "KEY=value" field to @iov (@buf holds the text). */
static void field(struct iovec *iov, int *n, char *buf, size_t size, const char *fmt, ...)
	_printf_(5, 6);
static void field(struct iovec *iov, int *n, char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	iov[*n].iov_base = buf;
	iov[*n].iov_len = (size_t)len < size ? (size_t)len : size - 1;
	(*n)++;
}

int systemd_log_sink(enum log_prio prio, const struct log_fields *f, const char *msg)
{
	char b[7][FIELD_MAX];
	struct iovec iov[7];
	int n = 0;

	field(iov, &n, b[n], sizeof(b[0]), "MESSAGE=%s", msg);
	field(iov, &n, b[n], sizeof(b[0]), "PRIORITY=%d", (int)prio);
	field(iov, &n, b[n], sizeof(b[0]), "SYSLOG_IDENTIFIER=cpuzombie");
	if (f && f->message_id)
		field(iov, &n, b[n], sizeof(b[0]), "MESSAGE_ID=%s", f->message_id);
	if (f && f->check)
		field(iov, &n, b[n], sizeof(b[0]), "CHECK=%s", f->check);
	if (f && f->cpu >= 0)
		field(iov, &n, b[n], sizeof(b[0]), "CPU=%d", f->cpu);
	if (f && f->interface)
		field(iov, &n, b[n], sizeof(b[0]), "INTERFACE=%s", f->interface);
	return systemd_journal_sendv(iov, n);
}
