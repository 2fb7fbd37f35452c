/* SPDX-License-Identifier: MIT */
#ifndef CZ_HOSTID_H
#define CZ_HOSTID_H

/*
 * Who we are on the host, as the host's /proc (--proc-root) says: our pid there and the boot id.
 * In NPD's container (hostPID: false) getpid() is a pid of the container's namespace and means
 * nothing to a reader outside it; the host's procfs mounted at --proc-root answers "self" with
 * the pid of its own namespace (proc(5) /proc/self). The agent records both in its run-dir
 * files, and the checks judge the agent's liveness by them (cpu/check_cpu.c).
 */

#include <stdbool.h>
#include <stddef.h>

#include "host/hostfs.h"

#define HOSTID_BOOT_ID_LEN 36 /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */

/*
 * hostid_self_pid - our pid in the pid namespace of the procfs at @hf's proc root (readlink of
 * "self"). Returns 0 and *@ret_pid, or -errno (-EINVAL: not a pid: no procfs there).
 */
int hostid_self_pid(const struct hostfs *hf, int *ret_pid);

/*
 * hostid_boot_id - sys/kernel/random/boot_id under @hf's proc root into @buf (at least
 * HOSTID_BOOT_ID_LEN + 1 bytes), validated (hex digits and '-', 36 bytes). Returns 0 or -errno.
 */
int hostid_boot_id(const struct hostfs *hf, char *buf, size_t size);

/*
 * hostid_boot_id_valid - true when @s is a boot id as the kernel prints it (36 bytes of hex
 * digits and dashes). Pure.
 */
bool hostid_boot_id_valid(const char *s);

/*
 * hostid_pid_exists - 1 when @pid has a directory under @hf's proc root, 0 when it has none
 * (-ENOENT), -errno when that cannot be told (no procfs there).
 */
int hostid_pid_exists(const struct hostfs *hf, int pid);

#endif
