/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "base/kjson.h"
#include "condition/condwrite.h"
#include "kube/event.h"

#define HB (5 * 60 * 1000ull)

/* A node with @n conditions {type, status, reason, message}. */
static json_object *node_with(const char *const c[][4], size_t n)
{
	json_object *node = json_object_new_object(), *st = json_object_new_object();
	json_object *list = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "type", json_object_new_string(c[i][0]));
		json_object_object_add(o, "status", json_object_new_string(c[i][1]));
		json_object_object_add(o, "reason", json_object_new_string(c[i][2]));
		json_object_object_add(o, "message", json_object_new_string(c[i][3]));
		json_object_array_add(list, o);
	}
	json_object_object_add(st, "conditions", list);
	json_object_object_add(node, "status", st);
	return node;
}

static const char *const HEALTHY[][4] = {
	{ "MemcgZombieLeak", "False", "ZombieMemcgsNormal", "12 dying" },
	{ "CPUCoreSaturation", "False", "NoCoreSaturation", "no burst" },
};

/* A new node: every result is a change, written at once whatever the heartbeat. */
static void test_new_node_is_written_at_once(void **state)
{
	struct condwrite w;
	struct cond_input in[] = {
		{ conditions_for_check("memcg"), NPD_OK, "12 dying" },
		{ conditions_for_check("cpu"), NPD_OK, "no burst" },
	};
	uint32_t changed = 0;

	condwrite_init(&w, HB, 1000, HB - 1);
	condwrite_learn(&w, NULL);
	assert_int_equal(condwrite_decide(&w, in, 2, 1000, &changed), 3);
	assert_int_equal(changed, 3);
	condwrite_written(&w, in, 2, 1000);
	/* written: nothing until the heartbeat, then both */
	assert_int_equal(condwrite_decide(&w, in, 2, 1000 + HB - 1, &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(condwrite_decide(&w, in, 2, 1000 + HB, &changed), 3);
	assert_int_equal(changed, 0);
	assert_true(condwrite_next_due(&w, in, 2) == 1000 + HB);
}

/* The node already says what the results say (an agent restarted): the first write is the
 * heartbeat, at start + jitter, the jitter chosen by the seed, always inside the heartbeat. */
static void test_first_heartbeat_is_jittered(void **state)
{
	_cleanup_(json_object_putp) json_object *node = node_with(HEALTHY, 2);
	struct cond_input in[] = {
		{ conditions_for_check("memcg"), NPD_OK, "12 dying" },
		{ conditions_for_check("cpu"), NPD_OK, "no burst" },
	};
	uint64_t seen_lo = UINT64_MAX, seen_hi = 0;
	struct condwrite w;

	condwrite_init(&w, HB, 1000, 70000);
	condwrite_learn(&w, node);
	assert_int_equal(condwrite_decide(&w, in, 2, 1000, NULL), 0);
	assert_int_equal(condwrite_decide(&w, in, 2, 1000 + 69999, NULL), 0);
	assert_int_equal(condwrite_decide(&w, in, 2, 1000 + 70000, NULL), 3);
	condwrite_written(&w, in, 2, 71000);
	assert_int_equal(condwrite_decide(&w, in, 2, 71000 + HB - 1, NULL), 0);
	/* seeds spread the first heartbeat over [0, HB): 10,000 agents started together */
	for (uint64_t s = 0; s < 10000; s++) {
		uint64_t j = condwrite_jitter(HB, s * 0x9e3779b97f4a7c15ull);

		assert_true(j < HB);
		seen_lo = j < seen_lo ? j : seen_lo;
		seen_hi = j > seen_hi ? j : seen_hi;
	}
	assert_true(seen_lo < HB / 100 && seen_hi > HB - HB / 100);
	/* seed 0 (agent --once): due at once */
	condwrite_init(&w, HB, 5000, 0);
	condwrite_learn(&w, node);
	assert_int_equal(condwrite_decide(&w, in, 2, 5000, NULL), 3);
	/* a heartbeat of 0 is taken as 1 ms, never a division by zero */
	assert_true(condwrite_jitter(0, 12345) == 0);
}

/* A change of status or reason is written at once, a message alone at the heartbeat; the
 * heartbeat is not moved by a re-read (a 409 or a failed write), and a re-read that shows our
 * write landed writes nothing. */
static void test_change_and_reread(void **state)
{
	_cleanup_(json_object_putp) json_object *node = node_with(HEALTHY, 2);
	_cleanup_(json_object_putp) json_object *other = NULL;
	struct cond_input in[] = {
		{ conditions_for_check("memcg"), NPD_OK, "12 dying" },
		{ conditions_for_check("cpu"), NPD_OK, "no burst" },
	};
	uint32_t changed;
	struct condwrite w;

	condwrite_init(&w, HB, 0, 1000);
	condwrite_learn(&w, node);
	condwrite_written(&w, in, 2, 1000);
	/* a message that alone changed (a count in it) waits for the heartbeat, as NPD's */
	in[1].message = "no burst, 3 cores";
	assert_int_equal(condwrite_decide(&w, in, 2, 2000, &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(condwrite_decide(&w, in, 2, 1000 + HB, &changed), 3);
	assert_int_equal(changed, 0);
	in[1].message = "no burst";
	in[0].status = NPD_PROBLEM;	/* status and reason */
	assert_int_equal(condwrite_decide(&w, in, 2, 2000, &changed), 1);
	assert_int_equal(changed, 1);
	in[0].status = NPD_UNKNOWN;	/* Unknown carries the False reason: the status differs */
	assert_int_equal(condwrite_decide(&w, in, 2, 2000, &changed), 1);
	/* someone else changed the node's MemcgZombieLeak: learnt at the re-read, a change */
	in[0].status = NPD_OK;
	other = node_with((const char *const[][4]){
		{ "MemcgZombieLeak", "True", "ZombieMemcgsHigh", "x" },
		{ "CPUCoreSaturation", "False", "NoCoreSaturation", "no burst" } }, 2);
	condwrite_learn(&w, other);
	assert_int_equal(condwrite_decide(&w, in, 2, 2000, &changed), 1);
	/* our write had landed: nothing to write, the heartbeat where it was */
	condwrite_learn(&w, node);
	assert_int_equal(condwrite_decide(&w, in, 2, 2000, &changed), 0);
	assert_true(condwrite_next_due(&w, in, 2) == 1000 + HB);
	/* a condition the node lost is written at once */
	condwrite_learn(&w, NULL);
	assert_int_equal(condwrite_decide(&w, in, 2, 2000, &changed), 3);
	assert_int_equal(changed, 3);
}

static void test_hash_separates_fields(void **state)
{
	assert_true(condwrite_hash("a", "bc") != condwrite_hash("ab", "c"));
	assert_true(condwrite_hash(NULL, "") == condwrite_hash("", NULL));
	assert_true(condwrite_hash("True", "r") == condwrite_hash("True", "r"));
	assert_true(condwrite_hash("True", "r") != condwrite_hash("False", "r"));
}

/* Events as client-go's correlator aggregates them: a repeat within 10 minutes of the last
 * occurrence counts on the Event posted first; another reason or message, another object, or a
 * repeat after the window is a new Event. */
static void test_events_aggregate(void **state)
{
	static struct event_cache c;
	struct event_desc up = { "n1", "uid-1", "Warning", "CoreSaturationBursts",
				 "CPUCoreSaturation is now True (was False)", 1000 };
	struct event_desc down = { "n1", "uid-1", "Normal", "NoCoreSaturation",
				   "CPUCoreSaturation is now False (was True)", 2000 };
	struct event_series *s;
	char name[320];

	assert_null(event_correlate(&c, &up));
	event_name(&up, name, sizeof(name));
	assert_string_equal(name, "n1.cz-3e8-coresaturationbursts");
	event_remember(&c, NULL, &up, name);
	assert_null(event_correlate(&c, &down));
	event_remember(&c, NULL, &down, "down");
	/* twenty flaps in ten minutes: two Events, counted */
	for (int i = 1; i <= 20; i++) {
		up.when_ms = 1000 + (uint64_t)i * 30000;
		down.when_ms = up.when_ms + 1000;
		s = event_correlate(&c, &up);
		assert_non_null(s);
		assert_string_equal(s->name, name);
		event_remember(&c, s, &up, s->name);
		s = event_correlate(&c, &down);
		assert_non_null(s);
		event_remember(&c, s, &down, s->name);
	}
	s = event_correlate(&c, &up);
	assert_int_equal(s->count, 21);
	assert_true(s->first_ms == 1000 && s->last_ms == 1000 + 20 * 30000);
	{
		_cleanup_(json_object_putp) json_object *p = event_count_patch(s, &up);

		assert_string_equal(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
				    "{\"count\":22,\"lastTimestamp\":\"1970-01-01T00:10:01Z\"}");
	}
	/* another message, another node: new */
	up.message = "CPUCoreSaturation is now True (was unset)";
	assert_null(event_correlate(&c, &up));
	up.message = "CPUCoreSaturation is now True (was False)";
	up.node = "n2";
	assert_null(event_correlate(&c, &up));
	up.node = "n1";
	/* past the window after the last one: a new Event; a clock gone back: new too */
	up.when_ms = s->last_ms + EVENT_SERIES_WINDOW_MS;
	assert_non_null(event_correlate(&c, &up));
	up.when_ms = s->last_ms + EVENT_SERIES_WINDOW_MS + 1;
	assert_null(event_correlate(&c, &up));
	up.when_ms = s->last_ms - 1;
	assert_null(event_correlate(&c, &up));
}

/* The cache holds EVENT_SERIES_MAX series; the least recent goes first. */
static void test_event_cache_replaces_least_recent(void **state)
{
	static struct event_cache c;
	char reason[EVENT_SERIES_MAX + 1][16];
	struct event_desc d = { "n1", NULL, "Normal", NULL, "m", 0 };

	for (int i = 0; i <= EVENT_SERIES_MAX; i++) {
		snprintf(reason[i], sizeof(reason[i]), "R%d", i);
		d.reason = reason[i];
		d.when_ms = 1000 + (uint64_t)i;
		event_remember(&c, NULL, &d, reason[i]);
	}
	d.when_ms = 2000;
	d.reason = reason[0];
	assert_null(event_correlate(&c, &d));	/* the oldest, replaced */
	for (int i = 1; i <= EVENT_SERIES_MAX; i++) {
		d.reason = reason[i];
		assert_non_null(event_correlate(&c, &d));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_node_is_written_at_once),
		cmocka_unit_test(test_first_heartbeat_is_jittered),
		cmocka_unit_test(test_change_and_reread),
		cmocka_unit_test(test_hash_separates_fields),
		cmocka_unit_test(test_events_aggregate),
		cmocka_unit_test(test_event_cache_replaces_least_recent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
