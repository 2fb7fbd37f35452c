/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "agent/trigger.h"

/* Event-driven condition patches: one per condition per TRIGGER_GAP_MS, none lost. */
static void test_take_rate_limits_per_condition(void **state)
{
	struct trigger t = { 0 };

	assert_int_equal(trigger_take(&t, 1000), 0); /* nothing noted */
	trigger_note(&t, TRIGGER_CPU);
	assert_int_equal(trigger_take(&t, 1000), TRIGGER_CPU); /* the first: at once */
	assert_int_equal(trigger_take(&t, 1001), 0);
	/* a second burst 1 s later: kept pending through the gap, taken when it is over */
	trigger_note(&t, TRIGGER_CPU);
	assert_int_equal(trigger_take(&t, 2000), 0);
	assert_int_equal(trigger_take(&t, 1000 + TRIGGER_GAP_MS - 1), 0);
	assert_int_equal(trigger_take(&t, 1000 + TRIGGER_GAP_MS), TRIGGER_CPU);
	assert_int_equal(trigger_take(&t, 1000 + 3 * TRIGGER_GAP_MS), 0); /* taken once */
	/* the ENA reset has a gap of its own: the CPU one just taken does not hold it back */
	trigger_note(&t, TRIGGER_ALL);
	assert_int_equal(trigger_take(&t, 1000 + TRIGGER_GAP_MS + 10), TRIGGER_ENA);
	assert_int_equal(t.pending, TRIGGER_CPU);
	assert_int_equal(trigger_take(&t, 1000 + 2 * TRIGGER_GAP_MS), TRIGGER_CPU);
	/* unknown bits are not kept; a clock at 0 still counts as taken */
	trigger_note(&t, 1u << 7);
	assert_int_equal(t.pending, 0);
	t = (struct trigger){ 0 };
	trigger_note(&t, TRIGGER_CPU);
	assert_int_equal(trigger_take(&t, 0), TRIGGER_CPU);
	trigger_note(&t, TRIGGER_CPU);
	assert_int_equal(trigger_take(&t, 1), 0);
}

/* Without a client or with agent.set_conditions off there is nothing to patch. */
static void test_publish_without_client_is_a_no_op(void **state)
{
	struct cz_ctx ctx = { 0 };
	char out[100];

	ctx.cfg.agent.set_conditions = true;
	assert_int_equal(trigger_publish(&ctx, NULL, TRIGGER_ALL, out, sizeof(out)), 0);
	assert_string_equal(out, "trigger: nothing to do");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_rate_limits_per_condition),
		cmocka_unit_test(test_publish_without_client_is_a_no_op),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
