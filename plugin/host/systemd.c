/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <systemd/sd-bus.h>	/* types only: nothing is linked, every call goes through dlsym */

#include <stdarg.h>
#include <sys/uio.h>

#include "base/log.h"
#include "base/state.h"
#include "host/systemd.h"
#include "base/util.h"

#define CALL_TIMEOUT_USEC 1000000ULL
#define LIST_DEADLINE_MS 4000
#define UNITS_SCAN_MAX 4096

static void *libsystemd;
static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;

static void *sym(const char *name)
{
	void *p = NULL;

	pthread_mutex_lock(&sym_lock);
	if (!libsystemd)
		libsystemd = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
	if (libsystemd)
		p = dlsym(libsystemd, name);
	pthread_mutex_unlock(&sym_lock);
	return p;
}

/* Resolve @name into a function pointer of @fn's own type (the prototypes in sd-*.h). */
#define SYM(fn) (*(void **)&(fn) = sym(&(#fn)[2] /* skip "p_" */))
#define BSYM(f, name) (*(void **)&(f)->p_##name = sym(#name))

bool systemd_loaded(void)
{
	bool r;

	pthread_mutex_lock(&sym_lock);
	r = libsystemd != NULL;
	pthread_mutex_unlock(&sym_lock);
	return r;
}

int systemd_notify(const char *state)
{
	int (*p_sd_notify)(int, const char *);

	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	if (!SYM(p_sd_notify))
		return -ENOSYS;
	return p_sd_notify(0, state);
}

uint64_t systemd_watchdog_usec(void)
{
	int (*p_sd_watchdog_enabled)(int, uint64_t *);
	uint64_t usec = 0;

	if (!getenv("WATCHDOG_USEC"))
		return 0;
	if (!SYM(p_sd_watchdog_enabled) || p_sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}

int systemd_journal_sendv(const struct iovec *iov, int n)
{
	int (*p_sd_journal_sendv)(const struct iovec *, int);

	if (!SYM(p_sd_journal_sendv))
		return -ENOSYS;
	return p_sd_journal_sendv(iov, n);
}

/* ---- sd-bus ---- */

struct busfn {
	__typeof__(sd_bus_open_system) *p_sd_bus_open_system;
	__typeof__(sd_bus_open_user) *p_sd_bus_open_user;
	__typeof__(sd_bus_new) *p_sd_bus_new;
	__typeof__(sd_bus_set_address) *p_sd_bus_set_address;
	__typeof__(sd_bus_set_bus_client) *p_sd_bus_set_bus_client;
	__typeof__(sd_bus_start) *p_sd_bus_start;
	__typeof__(sd_bus_flush_close_unref) *p_sd_bus_flush_close_unref;
	__typeof__(sd_bus_call_method) *p_sd_bus_call_method;
	__typeof__(sd_bus_get_property_trivial) *p_sd_bus_get_property_trivial;
	__typeof__(sd_bus_message_enter_container) *p_sd_bus_message_enter_container;
	__typeof__(sd_bus_message_read) *p_sd_bus_message_read;
	__typeof__(sd_bus_message_unref) *p_sd_bus_message_unref;
	__typeof__(sd_bus_error_free) *p_sd_bus_error_free;
	__typeof__(sd_bus_set_method_call_timeout) *p_sd_bus_set_method_call_timeout; /* 240+ */
};

static int load_busfn(struct busfn *f)
{
	bool ok = BSYM(f, sd_bus_open_system) && BSYM(f, sd_bus_open_user) &&
		  BSYM(f, sd_bus_new) && BSYM(f, sd_bus_set_address) &&
		  BSYM(f, sd_bus_set_bus_client) && BSYM(f, sd_bus_start) &&
		  BSYM(f, sd_bus_flush_close_unref) && BSYM(f, sd_bus_call_method) &&
		  BSYM(f, sd_bus_get_property_trivial) &&
		  BSYM(f, sd_bus_message_enter_container) && BSYM(f, sd_bus_message_read) &&
		  BSYM(f, sd_bus_message_unref) && BSYM(f, sd_bus_error_free);

	(void)BSYM(f, sd_bus_set_method_call_timeout); /* optional */
	return ok ? 0 : -ENOSYS;
}

static int bus_open(const struct busfn *f, const char *bus, sd_bus **ret)
{
	sd_bus *b = NULL;
	size_t n = strlen(bus);
	int r;

	if (streq(bus, "system"))
		return f->p_sd_bus_open_system(ret);
	if (streq(bus, "user"))
		return f->p_sd_bus_open_user(ret);
	if (!strchr(bus, ':'))
		return -EINVAL;
	r = f->p_sd_bus_new(&b);
	if (r < 0)
		return r;
	r = f->p_sd_bus_set_address(b, bus);
	/* systemd's private socket is peer-to-peer (no Hello, no bus daemon), as systemctl uses it */
	if (r >= 0 && !(n >= 16 && streq(bus + n - 16, "/systemd/private")))
		r = f->p_sd_bus_set_bus_client(b, 1);
	if (r >= 0 && f->p_sd_bus_set_method_call_timeout)
		r = f->p_sd_bus_set_method_call_timeout(b, CALL_TIMEOUT_USEC);
	r = r < 0 ? r : f->p_sd_bus_start(b);
	if (r < 0) {
		f->p_sd_bus_flush_close_unref(b);
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
static int scan_units(const struct busfn *f, sd_bus *b, sd_bus_message *m,
		      struct systemd_restarts *r)
{
	uint64_t deadline = now_monotonic_ms() + LIST_DEADLINE_MS;
	unsigned seen = 0;
	int e;

	e = f->p_sd_bus_message_enter_container(m, 'a', "(ssssssouso)");
	while (e >= 0 && seen++ < UNITS_SCAN_MAX && now_monotonic_ms() < deadline) {
		const char *name, *path, *s;
		uint32_t job, nrestarts = 0;
		sd_bus_error err = SD_BUS_ERROR_NULL;
		size_t len;

		e = f->p_sd_bus_message_read(m, "(ssssssouso)", &name, &s, &s, &s, &s, &s, &path,
					     &job, &s, &s);
		if (e <= 0)
			break;
		len = strlen(name);
		if (len < 8 || !streq(name + len - 8, ".service") || strchr(name, ' '))
			continue;
		if (f->p_sd_bus_get_property_trivial(b, "org.freedesktop.systemd1", path,
						     "org.freedesktop.systemd1.Service",
						     "NRestarts", &err, 'u', &nrestarts) >= 0 &&
		    nrestarts > 0)
			keep(r, name, nrestarts);
		f->p_sd_bus_error_free(&err);
	}
	if (e < 0)
		return e;
	qsort(r->u, r->n, sizeof(r->u[0]), cmp_restarts);
	return 0;
}

int systemd_read_restarts(const char *bus, uint64_t now_ms, struct systemd_restarts *ret,
			  char *err, size_t err_size)
{
	struct busfn f = { 0 };
	struct systemd_restarts r = { .t_ms = now_ms };
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	sd_bus *b = NULL;
	int k;

	if (load_busfn(&f) < 0) {
		snprintf(err, err_size, "libsystemd.so.0 not loadable");
		return -ENOSYS;
	}
	k = bus_open(&f, bus, &b);
	if (k < 0) {
		snprintf(err, err_size, "cannot connect to bus '%s': %s", bus, strerror(-k));
		return k;
	}
	k = f.p_sd_bus_call_method(b, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
				   "org.freedesktop.systemd1.Manager", "ListUnits", &e, &m, "");
	if (k < 0)
		snprintf(err, err_size, "ListUnits on bus '%s': %s", bus,
			 e.message ? e.message : strerror(-k));
	else if ((k = scan_units(&f, b, m, &r)) < 0)
		snprintf(err, err_size, "ListUnits reply on bus '%s': %s", bus, strerror(-k));
	f.p_sd_bus_error_free(&e);
	f.p_sd_bus_message_unref(m);
	f.p_sd_bus_flush_close_unref(b);
	if (k < 0)
		return k;
	*ret = r;
	return 0;
}

int systemd_restarts_update(const char *bus, const char *state_dir, uint64_t now_ms,
			    struct systemd_restarts *ret, char *err, size_t err_size)
{
	_cleanup_(state_unlock) struct state_lock lock = { -1 };
	struct systemd_restarts base, cur;
	char buf[SYSTEMD_TOP_MAX * (SYSTEMD_UNIT_MAX + 32) + 64];
	bool have_base = false;
	ssize_t n;
	int r;

	r = systemd_read_restarts(bus, now_ms, &cur, err, err_size);
	if (r < 0)
		return r;
	if (state_lock(state_dir, SYSTEMD_RESTARTS_STATE, &lock) == 0) {
		n = state_load(state_dir, SYSTEMD_RESTARTS_STATE, buf, sizeof(buf));
		have_base = n >= 0 && systemd_restarts_parse(buf, &base) == 0;
		if (systemd_restarts_growth(have_base ? &base : NULL, &cur)) {
			n = (ssize_t)systemd_restarts_format(&cur, buf, sizeof(buf));
			(void)state_save(state_dir, SYSTEMD_RESTARTS_STATE, buf, (size_t)n);
		}
	}
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
