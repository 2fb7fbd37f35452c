/* SPDX-License-Identifier: MIT */
#ifndef CZ_PRIVDROP_H
#define CZ_PRIVDROP_H

/*
 * What the agent keeps of its capabilities after its start, and the one line it logs about it.
 * At start the agent opens one disabled perf event per CPU (CAP_PERFMON) and reads
 * /proc/kallsyms's real addresses (CAP_SYSLOG); then it drops every capability that nothing
 * later needs (host/caps.h: effective, permitted, inheritable, ambient, the bounding set when
 * CAP_SETPCAP allows, and no_new_privs), before it starts any thread. What later work needs:
 *
 *  - the BPF census (memcg.census_interval > 0, a binary built with it): it loads its program
 *    every census: CAP_BPF and CAP_PERFMON, kept when both are held (either alone is
 *    refused), or CAP_SYS_ADMIN (below);
 *  - the kernel log (agent.kmsg set): /dev/kmsg is opened again on every SIGHUP reload, and
 *    with kernel.dmesg_restrict=1 that needs CAP_SYSLOG, kept when held;
 *  - kernel stacks (/proc/PID/task/TID/stack, read whenever the agent may: chart
 *    agent.readKernelStacks): CAP_SYS_ADMIN with CAP_SYS_PTRACE (and CAP_DAC_READ_SEARCH when
 *    not uid 0), kept when CAP_SYS_ADMIN is held.
 *
 * Everything else goes: the burst profiler's events stay open (enabling one needs no
 * capability), its kallsyms stay loaded. A feature that a SIGHUP turns on later and that needs a
 * dropped capability says so in its own reason (the agent must be restarted for it).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "host/caps.h"

/*
 * privdrop_keep - pure: of @held (a capability mask), what the agent needs after its start under
 * @cfg; @census: the binary has the BPF census. Never more than @held.
 */
uint64_t privdrop_keep(const struct cz_config *cfg, bool census, uint64_t held);

/*
 * privdrop_format - pure: the agent's start line about the drop, from the thread's state
 * @before and @after, what it meant to @keep, and caps_drop()'s result @err:
 * "capabilities: dropped perfmon,syslog after start; kept none; bounding set none;
 * no_new_privs" (and why the bounding set kept some, or how the drop failed). Returns its
 * length, or -ENOBUFS when it does not fit in @size.
 */
int privdrop_format(const struct caps_state *before, const struct caps_state *after,
		    uint64_t keep, int err, char *buf, size_t size);

#endif
