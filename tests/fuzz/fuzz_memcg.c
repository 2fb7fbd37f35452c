/* SPDX-License-Identifier: MIT */
/* Every memcg parser on the same bytes: /proc/cgroups, cgroup.stat, meminfo, osrelease,
 * mountinfo, and the state history payload. */
#include <stdlib.h>
#include <string.h>

#include "memcg/memcg.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1), buf[128];
	struct memcg_controller c;
	struct memcg_cgstat st;
	struct memcg_history h;
	uint64_t b;
	unsigned ma, mi;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)memcg_parse_proc_cgroups(s, &c);
	(void)memcg_parse_cgroup_stat(s, &st);
	(void)memcg_parse_meminfo_percpu(s, &b);
	(void)memcg_parse_osrelease(s, &ma, &mi);
	(void)memcg_find_mount(s, false, buf, sizeof(buf));
	(void)memcg_find_mount(s, true, buf, sizeof(buf));
	if (memcg_history_parse(s, &h) == 0) {
		char out[8192];

		memcg_history_add(&h, 1700000000000ull, 5);
		memcg_history_format(&h, out, sizeof(out));
	}
	free(s);
	return 0;
}
