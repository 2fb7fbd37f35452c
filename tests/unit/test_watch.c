/* SPDX-License-Identifier: MIT */
/*
 * The watch stream's pure parts (kube/watch.h): lines split across any chunking, a "\r\n" end,
 * the bounded line buffer (a line over the cap is -EMSGSIZE naming the cap, whether it arrives
 * whole or in pieces), each event type parsed, the ERROR event's Status code (410 Gone), and
 * events without a resourceVersion or name refused; and the remediator's cache trims
 * (remediator.h): a heartbeat alone leaves the trimmed node equal.
 */
#include "testutil.h"

#include "base/kjson.h"
#include "kube/watch.h"
#include "remediator/remediator.h"

/* rows name their leading fields by position and leave the rest zero */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

struct seen {
	char lines[8][128];
	size_t n;
};

static int keep_line(const char *line, size_t n, void *userdata)
{
	struct seen *s = userdata;

	assert_true(s->n < 8 && n < 128);
	memcpy(s->lines[s->n], line, n);
	s->lines[s->n++][n] = '\0';
	return 0;
}

static void test_lines_any_chunking(void **state)
{
	static const char stream[] = "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n";
	char err[128];

	(void)state;
	/* every split point of the stream into two chunks gives the same three lines */
	for (size_t cut = 0; cut <= sizeof(stream) - 1; cut++) {
		struct watch_lines w;
		struct seen s = { 0 };

		watch_lines_init(&w, 64);
		assert_int_equal(watch_lines_feed(&w, stream, cut, keep_line, &s, err, sizeof(err)),
				 0);
		assert_int_equal(watch_lines_feed(&w, stream + cut, sizeof(stream) - 1 - cut,
						  keep_line, &s, err, sizeof(err)), 0);
		assert_int_equal(s.n, 3);
		assert_string_equal(s.lines[0], "{\"a\":1}");
		assert_string_equal(s.lines[1], "{\"b\":2}");
		assert_string_equal(s.lines[2], "{\"c\":3}");
		assert_int_equal(watch_lines_pending(&w), 0);
		watch_lines_done(&w);
	}
}

static void test_lines_cap(void **state)
{
	char line[100], err[128];
	struct watch_lines w;
	struct seen s = { 0 };

	(void)state;
	memset(line, 'x', sizeof(line));
	/* whole: one 100-byte line over a 64-byte cap */
	watch_lines_init(&w, 64);
	line[99] = '\n';
	assert_int_equal(watch_lines_feed(&w, line, 100, keep_line, &s, err, sizeof(err)),
			 -EMSGSIZE);
	assert_non_null(strstr(err, "64-byte cap"));
	watch_lines_done(&w);
	/* in pieces, with no newline yet: the held part may not pass the cap either */
	watch_lines_init(&w, 64);
	for (int i = 0; i < 6; i++) {
		int r = watch_lines_feed(&w, line, 20, keep_line, &s, err, sizeof(err));

		assert_int_equal(r, i < 3 ? 0 : -EMSGSIZE);
		if (r < 0)
			break;
	}
	assert_true(watch_lines_pending(&w) <= 64);
	watch_lines_done(&w);
	/* exactly at the cap: fine */
	watch_lines_init(&w, 64);
	line[64] = '\n';
	assert_int_equal(watch_lines_feed(&w, line, 65, keep_line, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(strlen(s.lines[0]), 64);
	watch_lines_done(&w);
}

struct ev_row {
	const char *line;
	int want;
	enum watch_type type;
	const char *rv;
	long code;
};

static const struct ev_row ev_rows[] = {
	{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"7\"}}}",
	  0, WATCH_ADDED, "7" },
	{ "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"n1\","
	  "\"resourceVersion\":\"8\"}}}", 0, WATCH_MODIFIED, "8" },
	{ "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"n1\","
	  "\"resourceVersion\":\"9\"}}}", 0, WATCH_DELETED, "9" },
	{ "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"metadata\":"
	  "{\"resourceVersion\":\"12345\"}}}", 0, WATCH_BOOKMARK, "12345" },
	{ "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
	  "\"message\":\"too old resource version: 1 (2)\",\"reason\":\"Expired\",\"code\":410}}",
	  0, WATCH_ERROR, "", 410 },
	{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n1\"}}}", -EBADMSG },
	{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n1\","
	  "\"resourceVersion\":\"7&x=1\"}}}", -EBADMSG },
	{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}", -EBADMSG },
	{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"../x\","
	  "\"resourceVersion\":\"7\"}}}", -EBADMSG },
	{ "{\"type\":\"SOMETHING\",\"object\":{}}", -EBADMSG },
	{ "{\"type\":\"ADDED\",\"object\":[]}", -EBADMSG },
	{ "{\"type\":7,\"object\":{}}", -EBADMSG },
	{ "[1,2]", -EBADMSG },
	{ "{\"type\":\"ADDED\"", -EBADMSG },
};

static void test_event_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ev_rows) / sizeof(ev_rows[0]); i++) {
		const struct ev_row *r = &ev_rows[i];
		struct watch_event ev = { 0 };
		char err[128] = "";
		int got = watch_event_parse(r->line, strlen(r->line), &ev, err, sizeof(err));

		if (got != r->want)
			fail_msg("row %zu: %d, want %d (%s)", i, got, r->want, err);
		if (got == 0) {
			assert_int_equal(ev.type, r->type);
			assert_string_equal(ev.rv, r->rv);
			assert_int_equal(ev.code, r->code);
			assert_non_null(ev.object);
		} else {
			assert_null(ev.object);
			assert_true(*err);
		}
		watch_event_clear(&ev);
	}
}

static void test_node_trim(void **state)
{
	static const char a[] =
		"{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"5\",\"managedFields\":[1],"
		"\"annotations\":{\"cpuzombie.io/cordoned\":\"x\"}},\"spec\":{\"unschedulable\":true},"
		"\"status\":{\"images\":[1,2,3],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
		"\"lastHeartbeatTime\":\"2024-01-01T00:00:00Z\",\"lastTransitionTime\":"
		"\"2023-01-01T00:00:00Z\"}]}}";
	json_object *n1 = json_tokener_parse(a), *n2 = json_tokener_parse(a);
	json_object *t1, *t2, *c;

	(void)state;
	c = json_object_array_get_idx(kube_get_array(n2, "status.conditions"), 0);
	json_object_object_add(c, "lastHeartbeatTime",
			       json_object_new_string("2024-01-01T00:00:40Z"));
	t1 = remediator_node_trim(n1);
	t2 = remediator_node_trim(n2);
	assert_non_null(t1);
	assert_true(json_object_equal(t1, t2));		/* a heartbeat alone: no change */
	assert_null(kube_get(t1, "status.images"));
	assert_null(kube_get(t1, "metadata.managedFields"));
	assert_non_null(kube_annotation(t1, "cpuzombie.io/cordoned"));
	assert_true(kube_get_bool(t1, "spec.unschedulable"));
	assert_string_equal(kube_get_str(kube_condition(t1, "Ready"), "lastTransitionTime", ""),
			    "2023-01-01T00:00:00Z");
	json_object_object_add(c, "status", json_object_new_string("False"));
	json_object_put(t2);
	t2 = remediator_node_trim(n2);
	assert_false(json_object_equal(t1, t2));	/* a condition's status: a change */
	json_object_put(t1);
	json_object_put(t2);
	json_object_put(n1);
	json_object_put(n2);
}

static void test_lease_trim(void **state)
{
	json_object *l = json_tokener_parse(
		"{\"metadata\":{\"name\":\"cpuzombie-slot-0\",\"resourceVersion\":\"3\"},\"spec\":"
		"{\"holderIdentity\":\"n1\",\"renewTime\":\"2024-01-01T00:00:00.000000Z\"}}");
	json_object *t = remediator_lease_trim(l);

	(void)state;
	assert_string_equal(kube_get_str(t, "spec.holderIdentity", ""), "n1");
	assert_string_equal(kube_get_str(t, "metadata.name", ""), "cpuzombie-slot-0");
	assert_null(kube_get(t, "spec.renewTime"));
	json_object_put(t);
	json_object_put(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_any_chunking),
		cmocka_unit_test(test_lines_cap),
		cmocka_unit_test(test_event_parse),
		cmocka_unit_test(test_node_trim),
		cmocka_unit_test(test_lease_trim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
