/* SPDX-License-Identifier: MIT */
#ifndef CZ_CAPS_H
#define CZ_CAPS_H

/*
 * The calling thread's capabilities (capabilities(7)), read and dropped for good. The agent
 * holds CAP_PERFMON and CAP_SYSLOG only to open its perf events and read /proc/kallsyms at
 * start; CAP_PERFMON held later would let it read every process's /proc/PID/environ (the
 * kernel's mm_access() passes PTRACE_MODE_READ for perfmon_capable() callers), so it drops
 * what nothing later needs (agent/privdrop.h decides what).
 *
 * Capabilities are per thread: caps_drop() changes only the calling thread and the threads it
 * creates afterwards, so it must run before any other thread exists.
 *
 * A set is a mask of bit (1 << CAP_X), CAP_X from <linux/capability.h>; bits above the
 * running kernel's cap_last_cap are never set.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The five sets and no_new_privs, as /proc/PID/status shows them (CapInh, CapPrm, ...). */
struct caps_state {
	uint64_t inh, prm, eff, bnd, amb;
	bool nnp; /* PR_SET_NO_NEW_PRIVS: execve() gains nothing */
};

/*
 * caps_read - the calling thread's sets (capget(2), PR_CAPBSET_READ, PR_CAP_AMBIENT_IS_SET)
 * and no_new_privs into *@ret. Returns 0 or -errno from capget (*@ret untouched then).
 */
int caps_read(struct caps_state *ret);

/*
 * caps_drop - keep only @keep (a mask) of the calling thread's capabilities, for good:
 *  - the bounding set loses every other capability (PR_CAPBSET_DROP), which the kernel allows
 *    only while CAP_SETPCAP is effective: it is raised first when permitted (and dropped last
 *    unless kept); without it the bounding set stays as it was;
 *  - the ambient set is cleared, the inheritable set becomes 0, the permitted and effective
 *    sets @keep & what was permitted (capset(2));
 *  - no_new_privs is set, so no execve() (setuid, file capabilities, uid 0's own rule) can
 *    give back what the bounding set could not lose.
 * Afterwards *@ret is the thread's state as caps_read() gives it (also on failure, when it
 * could be read). Returns 0, or -errno of the first step that failed (-EPERM from capset
 * means nothing was changed by it). Never raises anything that was not permitted.
 */
int caps_drop(uint64_t keep, struct caps_state *ret);

/*
 * caps_format - pure: @mask as lower-case capability names without "cap_", comma-separated
 * ("perfmon,syslog"), "none" for 0; a capability without a name here as "cap_N". Returns the
 * length written to @buf (NUL-terminated), or -ENOBUFS when it does not fit in @size (@buf is
 * then "" when @size > 0).
 */
int caps_format(uint64_t mask, char *buf, size_t size);

#endif
