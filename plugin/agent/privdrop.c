/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/capability.h>

#include "agent/privdrop.h"
#include "base/util.h"

#define BIT(c) (1ull << (c))

uint64_t privdrop_keep(const struct cz_config *cfg, bool census, uint64_t held)
{
	uint64_t keep = 0;

	/* either alone is refused (measured: test_census.py), so neither is kept alone */
	if (census && cfg->memcg.census_interval_ms > 0 && (held & BIT(CAP_BPF)) &&
	    (held & BIT(CAP_PERFMON)))
		keep |= BIT(CAP_BPF) | BIT(CAP_PERFMON);
	if (cfg->agent.kmsg[0])
		keep |= BIT(CAP_SYSLOG);
	if (held & BIT(CAP_SYS_ADMIN))
		keep |= BIT(CAP_SYS_ADMIN) | BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH);
	return keep & held;
}

int privdrop_format(const struct caps_state *before, const struct caps_state *after,
		    uint64_t keep, int err, char *buf, size_t size)
{
	char dropped[512], kept[512], bnd[512];
	int n;

	if (caps_format(before->prm & ~after->prm, dropped, sizeof(dropped)) < 0 ||
	    caps_format(after->prm, kept, sizeof(kept)) < 0 ||
	    caps_format(after->bnd, bnd, sizeof(bnd)) < 0)
		return -ENOBUFS;
	n = snprintf(buf, size,
		     "capabilities: dropped %s after start; kept %s; bounding set %s%s%s", dropped,
		     kept, bnd, (after->bnd & ~keep) ? " (no CAP_SETPCAP to drop it)" : "",
		     after->nnp ? "; no_new_privs" : "");
	if (n >= 0 && (size_t)n < size && err < 0)
		n += snprintf(buf + n, size - (size_t)n, "; the drop failed: %s", strerror(-err));
	return n < 0 || (size_t)n >= size ? -ENOBUFS : n;
}
