/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>

#include "systemd.h"
#include "util.h"

static void *libsystemd;

static void *sym(const char *name)
{
	if (!libsystemd) {
		libsystemd = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
		if (!libsystemd)
			return NULL;
	}
	return dlsym(libsystemd, name);
}

bool systemd_loaded(void)
{
	return libsystemd != NULL;
}

int systemd_notify(const char *state)
{
	int (*fn)(int, const char *);

	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	*(void **)&fn = sym("sd_notify");
	if (!fn)
		return -ENOSYS;
	return fn(0, state);
}

uint64_t systemd_watchdog_usec(void)
{
	int (*fn)(int, uint64_t *);
	uint64_t usec = 0;

	if (!getenv("WATCHDOG_USEC"))
		return 0;
	*(void **)&fn = sym("sd_watchdog_enabled");
	if (!fn || fn(0, &usec) <= 0)
		return 0;
	return usec;
}
