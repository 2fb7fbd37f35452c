/* SPDX-License-Identifier: MIT */
/* agent/census_bpf: the records of the census's BPF walk (pre-order, one per memory css) into
 * the dying memcgs with their former paths and the bytes each pins itself. The records here
 * have the shape the walk emitted in the pure cgroup v2 VM (tests/e2e/test_census_v2.py) and
 * on this host's v1 hierarchy: the root first, its name left out of every path. */
#include <stdlib.h>

#include "testutil.h"
#include "agent/census_bpf.h"
#include "agent/census_rec.h"
#include "base/util.h"

#define PG 4096u

static struct census_rec rec(uint64_t self, uint64_t parent, const char *name, uint64_t pages,
			     bool dying)
{
	struct census_rec r = { .self = self, .parent = parent, .serial = self, .pages = pages,
				.dying = dying };

	snprintf(r.name, sizeof(r.name), "%s", name);
	return r;
}

static const struct census_scan_item *find(const struct census_scan *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->v[i].path, path))
			return &s->v[i];
	fail_msg("no dying memcg at '%s'", path);
	return NULL;
}

/*
 * czt/ga-0 (16 pages), czt/nest-0 (dying, 2 pages of its own) with nb-0 and nb-1 (16 each),
 * czt/live-a (live): the counters are hierarchical, so nest-0 shows 34 and czt 50 + its own.
 */
static void test_paths_and_own_bytes(void **state)
{
	static const char *const roots[] = { "", "/" };	/* v1's root kernfs name, and "/" */

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(roots); k++) {
		struct census_rec r[] = {
			rec(0x100, 0, roots[k], 900, false),
			rec(0x200, 0x100, "czt", 53, false),
			rec(0x300, 0x200, "ga-0", 16, true),
			rec(0x400, 0x200, "nest-0", 34, true),
			rec(0x500, 0x400, "nb-0", 16, true),
			rec(0x600, 0x400, "nb-1", 16, true),
			rec(0x700, 0x200, "live-a", 0, false),
		};
		struct census_end end = { .magic = CENSUS_END_MAGIC, .nodes = ARRAY_SIZE(r) };
		struct census_scan s = { 0 };

		assert_int_equal(census_scan_records(r, ARRAY_SIZE(r), &end, PG, &s), 0);
		assert_int_equal(s.n, 4);
		assert_int_equal(s.visited, ARRAY_SIZE(r));
		assert_false(s.truncated);
		assert_int_equal(find(&s, "czt/ga-0")->bytes, 16 * PG);
		assert_int_equal(find(&s, "czt/nest-0/nb-0")->bytes, 16 * PG);
		assert_int_equal(find(&s, "czt/nest-0/nb-1")->bytes, 16 * PG);
		/* its own 2 pages, not its children's 32 again */
		assert_int_equal(find(&s, "czt/nest-0")->bytes, 2 * PG);
		assert_int_equal(find(&s, "czt/nest-0")->serial, 0x400);
		census_scan_free(&s);
	}
}

/* Records are read one at a time: a child may show more than its parent has left. */
static void test_own_bytes_never_wrap(void **state)
{
	struct census_rec r[] = {
		rec(1, 0, "", 10, false),
		rec(2, 1, "p", 5, true),
		rec(3, 2, "c", 7, true),
	};
	struct census_scan s = { 0 };

	(void)state;
	assert_int_equal(census_scan_records(r, ARRAY_SIZE(r), NULL, PG, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(find(&s, "p")->bytes, 0);
	assert_int_equal(find(&s, "p/c")->bytes, 7 * PG);
	assert_int_equal(s.visited, 0);
	census_scan_free(&s);
}

/* A cut walk (ring buffer full, a bound hit) is marked; no records is an empty census. */
static void test_truncated_and_empty(void **state)
{
	struct census_rec r[] = { rec(1, 0, "", 10, false), rec(2, 1, "a", 3, true) };
	struct census_end end = { .magic = CENSUS_END_MAGIC, .nodes = 9, .dropped = 7 };
	struct census_scan s = { 0 };

	(void)state;
	assert_int_equal(census_scan_records(r, ARRAY_SIZE(r), &end, PG, &s), 0);
	assert_true(s.truncated);
	assert_int_equal(s.visited, 9);
	assert_int_equal(find(&s, "a")->bytes, 3 * PG);
	census_scan_free(&s);
	end = (struct census_end){ .magic = CENSUS_END_MAGIC, .nodes = 0, .truncated = 1 };
	assert_int_equal(census_scan_records(NULL, 0, &end, PG, &s), 0);
	assert_int_equal(s.n, 0);
	assert_true(s.truncated);
	census_scan_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_and_own_bytes),
		cmocka_unit_test(test_own_bytes_never_wrap),
		cmocka_unit_test(test_truncated_and_empty),
	};
	return cmocka_run_group_tests_name("census_bpf", tests, NULL, NULL);
}
