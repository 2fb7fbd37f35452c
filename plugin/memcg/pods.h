/* SPDX-License-Identifier: MIT */
#ifndef CZ_PODS_H
#define CZ_PODS_H

/*
 * The pods of this node by UID, as the agent publishes them in the run dir (agent/
 * pods_publish.h, from the kubelet's pod log directories) for `check memcg`: on cgroup v2 the
 * check finds the subtree holding the dying memcgs (memcg/memcg_where.h); when that is a pod's
 * cgroup, its name carries only the
 * pod's UID, and this file turns it into namespace/name without the check talking to the API
 * server. The file (written whole and renamed, 0644):
 *     cpuzombie-pods 1
 *     t <ms since the epoch>
 *     p <uid> <namespace> <name>        (one line per pod on the node)
 * The reader trusts nothing in it: the run dir is shared with another container.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PODS_FILE "pods"
#define PODS_FILE_MAX (256 * 1024)
#define PODS_FRESH_MS (10 * 60 * 1000)
#define POD_UID_LEN 36		/* 8-4-4-4-12 hex digits */
#define POD_NAME_MAX 253	/* DNS subdomain */

/*
 * pods_format_line - pure: "p <uid> <namespace> <name>\n" into @buf, or 0 when a field is not
 * a valid UID / DNS-1123 name (never published) or it does not fit. Returns the length.
 */
size_t pods_format_line(const char *uid, const char *ns, const char *name, char *buf,
			size_t size);

/*
 * pods_log_dir_line - pure: the kubelet's pod log directory name @dname
 * (/var/log/pods/NAMESPACE_NAME_UID: kubelet's BuildPodLogsDirectory) as pods_format_line's
 * "p <uid> <namespace> <name>\n" in @buf. Neither a namespace, a pod name nor a UID has a '_',
 * so the first and the last '_' split it. Returns the length, or 0 when it is not such a name
 * (a static pod's 32-digit hash UID included: its cgroup is not named by pods_valid_uid either).
 */
size_t pods_log_dir_line(const char *dname, char *buf, size_t size);

/*
 * pods_find - pure: in the file @text (header checked; published at or after @min_t_ms), the
 * pod with @uid; writes "<namespace>/<name>" into @buf. Returns 0, -ENOENT (no such pod),
 * -ESTALE (older than @min_t_ms), or -EINVAL (anything malformed, from the first bad line).
 */
int pods_find(const char *text, const char *uid, uint64_t min_t_ms, char *buf, size_t size);

/*
 * pods_lookup - pods_find on <@run_dir>/PODS_FILE, fresh within PODS_FRESH_MS of @now_ms.
 * Returns as pods_find, or the -errno of reading the file.
 */
int pods_lookup(const char *run_dir, const char *uid, uint64_t now_ms, char *buf, size_t size);

/* pods_valid_uid - pure: 36 characters, lowercase hex digits and '-' at 8, 13, 18 and 23. */
bool pods_valid_uid(const char *s, size_t len);

#endif
