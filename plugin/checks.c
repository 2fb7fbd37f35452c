/* SPDX-License-Identifier: MIT */
#include "cz.h"
#include "util.h"

/* Every check NPD can run: `cpuzombie check NAME`. One row per check. */
static const struct check_def checks[] = {
	{ "memcg", check_memcg, "dying (zombie) memory cgroups vs live ones" },
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
