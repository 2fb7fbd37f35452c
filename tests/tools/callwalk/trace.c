// SPDX-License-Identifier: MIT
/*
 * The call tracer of callwalk.sh: gcc's -finstrument-functions calls these on every entry to
 * and exit from an instrumented function. Each event is one line "E|X TID OFFSET" (OFFSET: the
 * function's address less the binary's load base, for addr2line) in $CZ_CALLWALK_OUT. Not
 * instrumented itself; not part of cpuzombie.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOTRACE __attribute__((no_instrument_function))

static FILE *out;
static int off;

static NOTRACE void event(char kind, void *fn)
{
	static __thread long tid;
	static uintptr_t base;

	if (off)
		return;
	if (!out) {
		const char *p = getenv("CZ_CALLWALK_OUT");
		Dl_info di;

		if (!p || !(out = fopen(p, "we"))) {
			off = 1;
			return;
		}
		if (dladdr(fn, &di) && di.dli_fbase)
			base = (uintptr_t)di.dli_fbase;
	}
	if (!tid)
		tid = syscall(SYS_gettid);
	fprintf(out, "%c %ld %lx\n", kind, tid, (unsigned long)((uintptr_t)fn - base));
}

NOTRACE void __cyg_profile_func_enter(void *fn, void *site);
NOTRACE void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	event('E', fn);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	event('X', fn);
}
