/* SPDX-License-Identifier: MIT */
/* checks/memcg_where: the pure halves of "which cgroup v2 subtree holds the dying memcgs". */
#include "testutil.h"
#include "checks/memcg_where.h"

static void test_pick(void **state)
{
	const uint64_t a[] = { 300, 12500, 40 }, spread[] = { 400, 400, 200 },
		       half[] = { 500, 500 }, none[] = { 0, 0 };

	(void)state;
	assert_int_equal(memcg_where_pick(a, 3, 12840), 1);
	assert_int_equal(memcg_where_pick(spread, 3, 1000), -1);	/* no child holds half */
	assert_int_equal(memcg_where_pick(half, 2, 1000), 0);		/* exactly half: the first */
	assert_int_equal(memcg_where_pick(none, 2, 1000), -1);
	assert_int_equal(memcg_where_pick(a, 0, 12840), -1);
	assert_int_equal(memcg_where_pick(a, 3, 0), -1);
}

static void test_dying_prefers_memory(void **state)
{
	struct memcg_cgstat st = { .nr_dying_descendants = 900 };

	(void)state;
	assert_int_equal(memcg_where_dying(&st), 900);
	st.has_subsys_memory = true;
	st.nr_dying_subsys_memory = 700;
	assert_int_equal(memcg_where_dying(&st), 700);
}

static void test_format_keeps_the_end(void **state)
{
	char b[80];

	(void)state;
	memcg_where_format("system.slice", 5100, b, sizeof(b));
	assert_string_equal(b, "most under system.slice (5100)");
	memcg_where_format("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6b1c2d3e"
			   "_4f5a_6b7c_8d9e_0f1a2b3c4d5e.slice", 12300, b, sizeof(b));
	assert_int_equal(strlen(b), sizeof(b) - 1);
	assert_string_equal(b + strlen(b) - strlen("5e.slice (12300)"), "5e.slice (12300)");
	assert_memory_equal(b, "most under ...", 14);
	memcg_where_format("system.slice", 5100, b, 10);			/* no room: nothing */
	assert_string_equal(b, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_dying_prefers_memory),
		cmocka_unit_test(test_format_keeps_the_end),
	};
	return cmocka_run_group_tests_name("memcg_where", tests, NULL, NULL);
}
