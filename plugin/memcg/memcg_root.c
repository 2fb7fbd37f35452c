/* SPDX-License-Identifier: MIT */
/*
 * Where the memory hierarchy is (memcg_root.h): its mount under the sys root, from mountinfo,
 * and its root directory as /proc/cgroups decides it. Check memcg, the census and the reclaimer
 * find it here.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "memcg/memcg.h"
#include "memcg/memcg_root.h"
#include "base/util.h"

int memcg_find_hierarchy(const struct hostfs *hf, bool v2, char *buf, size_t size)
{
	static const char *const infos[] = { "1/mountinfo", "self/mountinfo" };
	const size_t size_text = 256 * 1024; /* a node with thousands of mounts (pods) */
	/* on the heap: a large stack frame is probed page by page (-fstack-clash-protection),
	 * which costs page faults on every exec; malloc'ed pages are only touched as filled */
	_cleanup_free_ char *text = malloc(size_text);

	for (size_t i = 0; text && i < ARRAY_SIZE(infos); i++) {
		if (hostfs_read(hf, HOSTFS_PROC, infos[i], text, size_text) < 0)
			continue;
		if (memcg_find_mount(text, v2, buf, size) == 0)
			return 0;
	}
	snprintf(buf, size, "%s", v2 ? "fs/cgroup" : "fs/cgroup/memory");
	return 0;
}

int memcg_open_root(const struct hostfs *hf)
{
	struct memcg_controller c;
	char buf[8192], rel[256];
	ssize_t n = hostfs_read(hf, HOSTFS_PROC, "cgroups", buf, sizeof(buf));
	int e = n < 0 ? (int)n : memcg_parse_proc_cgroups(buf, &c);

	if (e < 0)
		return e;
	memcg_find_hierarchy(hf, c.hierarchy == 0, rel, sizeof(rel));
	return hostfs_openat(hf, HOSTFS_SYS, rel, O_RDONLY | O_DIRECTORY);
}
