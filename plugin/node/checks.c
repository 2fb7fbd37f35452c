/* SPDX-License-Identifier: MIT */
/* The table of checks `cpuzombie check NAME` runs (checks.h). */
#include "base/util.h"
#include "cpu/check_cpu.h"
#include "ena/check_ena.h"
#include "memcg/check_memcg.h"
#include "node/checks.h"

/* Every check NPD can run: `cpuzombie check NAME`. One row per check. */
static const struct check_def checks[] = {
	{ "memcg", check_memcg, "dying (zombie) memory cgroups vs live ones" },
	{ "cpu", check_cpu,
	  "a core at >= cpu.threshold_pct for >= cpu.min_burst within cpu.lookback" },
	{ "ena", check_ena,
	  "ENA device resets from ethtool statistics (condition ENADeviceReset)" },
	{ "ena-allowance", check_ena_allowance,
	  "ENA allowance exceeded since the last run (event)" },
	{ NULL, NULL, NULL },
};

const struct check_def *checks_all(void)
{
	return checks;
}

const struct check_def *checks_find(const char *name)
{
	for (const struct check_def *c = checks; c->name; c++)
		if (streq(c->name, name))
			return c;
	return NULL;
}
