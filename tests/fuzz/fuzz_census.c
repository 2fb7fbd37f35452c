/* SPDX-License-Identifier: MIT */
/*
 * The zombie census file (memcg/census.h), which the agent writes into a run dir shared with
 * another container: any bytes parse without harm; what parses formats back to a file that
 * parses to the same census; census_pattern and census_build on fuzzed paths never overrun and
 * keep their counts; the check line's census clause reads back as written or not at all.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/census.h"
#include "check/condmsg.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static char text[CENSUS_FILE_MAX * 2], again[CENSUS_FILE_MAX];

static void same(const struct census *a, const struct census *b)
{
	if (a->t_ms != b->t_ms || a->dying != b->dying || a->bytes != b->bytes ||
	    a->visited != b->visited || a->truncated != b->truncated || a->ngroups != b->ngroups ||
	    a->nparents != b->nparents)
		abort();
	for (size_t i = 0; i < a->ngroups; i++)
		if (a->group[i].count != b->group[i].count || strcmp(a->group[i].key, b->group[i].key))
			abort();
}

static void paths(const char *s, size_t n)
{
	struct census_dying d[8];
	struct census c;
	char key[CENSUS_KEY_MAX], small[7];
	size_t k = 0;
	const char *p = s;

	for (size_t i = 0; i <= n && k < 8; i++)	/* '\n'-separated paths */
		if (i == n || s[i] == '\n') {
			d[k] = (struct census_dying){ p, i, i };
			k++;
			p = s + i + 1;
		}
	for (size_t i = 0; i < k; i++) {
		census_pattern(d[i].path, key, sizeof(key));
		census_pattern(d[i].path, small, sizeof(small));
		if (strlen(key) >= sizeof(key) || strlen(small) >= sizeof(small))
			abort();
	}
	if (census_build(d, k, 1, k, false, &c) == 0) {
		uint64_t sum = 0;
		char line[256];
		struct condmsg_memcg m;

		for (size_t i = 0; i < c.ngroups; i++)
			sum += c.group[i].count;
		if (c.dying != k || sum > k || (k && !c.ngroups))
			abort();
		if (c.ngroups) {
			snprintf(line, sizeof(line), "%llu dying memcgs vs 3 live (x1 >= x1); ",
				 (unsigned long long)k);
			condmsg_census_hint(c.group[0].count, c.group[0].key, c.group[0].bytes,
					    line + strlen(line), sizeof(line) - strlen(line));
			if (condmsg_memcg_parse(line, false, &m) == 0 && m.has_group &&
			    (strcmp(m.group, c.group[0].key) || m.group_count != c.group[0].count))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct census c, c2;
	char err[CENSUS_ERR_MAX];
	size_t n;
	int r;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r = census_parse(text, &c, err, sizeof(err));
	if (r == 0) {
		n = census_format(&c, NULL, again, sizeof(again));
		if (n == 0 || census_parse(again, &c2, err, sizeof(err)) != 0)
			abort();
		same(&c, &c2);
	} else if (r == 1 && strlen(err) >= sizeof(err)) {
		abort();
	}
	paths(text, strlen(text));
	return 0;
}
