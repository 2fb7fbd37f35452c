/* SPDX-License-Identifier: MIT */
/* report/fleet: recording Node objects, the ranking of dimensions, names read back, output. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>

#include "kube/fleet_pager.h"
#include "fleet/fleet.h"
#include "base/textsafe.h"
#include "base/util.h"

static json_object *node(const char *name, const char *zone, const char *image, const char *kernel,
			 const char *memcg_status, const char *memcg_msg, const char *extra)
{
	char buf[4096];
	json_object *o;

	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"topology.kubernetes.io/zone\":\"%s\","
		 "\"kubernetes.io/hostname\":\"%s\",\"pool\":\"p1\"}%s},"
		 "\"status\":{\"nodeInfo\":{\"osImage\":\"%s\",\"kernelVersion\":\"%s\","
		 "\"containerRuntimeVersion\":\"containerd://1.7\"},\"conditions\":["
		 "{\"type\":\"Ready\",\"status\":\"True\"}%s%s%s%s%s]}}",
		 name, zone, name, extra ? extra : "", image, kernel,
		 memcg_status ? ",{\"type\":\"MemcgZombieLeak\",\"status\":\"" : "",
		 memcg_status ? memcg_status : "", memcg_status ? "\",\"message\":\"" : "",
		 memcg_status ? memcg_msg : "", memcg_status ? "\"}" : "");
	o = json_tokener_parse(buf);
	if (!o)
		fail_msg("bad test JSON: %s", buf);
	return o;
}

static void add(struct fleet *f, json_object *o)
{
	assert_int_equal(fleet_add_node(f, o), 0);
	json_object_put(o);
}

#define TRUE_MSG(unit) "12840 dying memcgs vs 241 live (x53 >= x10); top restarts: " unit "=42"
#define FALSE_MSG "3 dying memcgs vs 241 live (x0.0; limits 1000 dying and x10)"

/* 20 nodes: the 5 True ones all in zone a (8 nodes there), images split 3/2. */
static struct fleet *fleet20(const char *const *group_by, size_t n_group_by)
{
	struct fleet *f;
	char name[32];

	assert_int_equal(fleet_new(group_by, n_group_by, 256, &f), 0);
	for (int i = 0; i < 20; i++) {
		bool t = i < 5;

		snprintf(name, sizeof(name), "n%02d", i);
		add(f, node(name, i < 8 ? "a" : "b", i < 3 || i >= 15 ? "imgX" : "imgY", "5.10",
			    t ? "True" : "False", t ? (i < 4 ? TRUE_MSG("ecs.service") :
						   TRUE_MSG("foo.service")) : FALSE_MSG, NULL));
	}
	return f;
}

static const struct fleet_dim *dim(const struct fleet_cond_summary *cs, const char *name)
{
	for (size_t i = 0; i < cs->n_dims; i++)
		if (streq(cs->dims[i].name, name))
			return &cs->dims[i];
	fail_msg("no dimension %s", name);
	return NULL;
}

static void test_ranking(void **state)
{
	const char *gb[] = { "kubernetes.io/hostname", "pool" };
	struct fleet *f = fleet20(gb, 2);
	struct fleet_summary s;
	const struct fleet_cond_summary *cs;
	const struct fleet_dim *d;

	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_int_equal(s.nodes, 20);
	assert_int_equal(s.order[0], FLEET_MEMCG);
	cs = &s.cond[FLEET_MEMCG];
	assert_int_equal(cs->t, 5);
	assert_int_equal(cs->f, 15);
	assert_int_equal(cs->absent, 0);
	/* zone a: 5/5 of the True, 3/15 of the False: 0.8, first */
	assert_string_equal(cs->dims[0].name, "zone");
	assert_string_equal(cs->dims[0].best.value, "a");
	assert_int_equal(cs->dims[0].best.t, 5);
	assert_int_equal(cs->dims[0].best.n, 8);
	assert_true(fabs(cs->dims[0].score - 0.8) < 1e-9);
	/* imgY: 2/5 True vs 10/15 False (worse than nothing); imgX: 3/5 - 5/15 */
	d = dim(cs, "osImage");
	assert_string_equal(d->best.value, "imgX");
	assert_true(fabs(d->score - (3.0 / 5 - 5.0 / 15)) < 1e-9);
	assert_int_equal(d->n_also, 1);
	assert_string_equal(d->also[0].value, "imgY");
	/* every node has the same kernel and pool: nothing to separate */
	assert_true(fabs(dim(cs, "kernel")->score) < 1e-9);
	assert_true(fabs(dim(cs, "pool")->score) < 1e-9);
	/* a host name covers one True node: 1/5 */
	assert_true(fabs(dim(cs, "kubernetes.io/hostname")->score - 0.2) < 1e-9);
	/* ranked */
	for (size_t i = 1; i < cs->n_dims; i++)
		assert_true(cs->dims[i - 1].score >= cs->dims[i].score);
	/* leakers read back from the messages */
	assert_int_equal(cs->n_top, 2);
	assert_string_equal(cs->top[0].name, "ecs.service");
	assert_int_equal(cs->top[0].nodes, 4);
	assert_int_equal(cs->top[0].max, 42);
	assert_string_equal(cs->top[1].name, "foo.service");
	assert_int_equal(cs->dying_median, 12840);
	/* conditions nobody reports */
	assert_int_equal(s.cond[FLEET_CPU].t, 0);
	assert_int_equal(s.cond[FLEET_CPU].absent, 20);
	assert_int_equal(s.cond[FLEET_CPU].n_dims, 0);
	fleet_free(f);
}

static void test_rare_condition_scores_like_common(void **state)
{
	struct fleet *f;
	struct fleet_summary s;
	char name[32];

	/* 12 True of 1000, all in zone a of four: as telling as if there were many */
	assert_int_equal(fleet_new(NULL, 0, 0, &f), 0);
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "n%04d", i);
		add(f, node(name, i < 12 ? "a" : (const char *[]){ "a", "b", "c", "d" }[i % 4],
			    "img", "k", i < 12 ? "True" : "False",
			    i < 12 ? TRUE_MSG("x.service") : FALSE_MSG, NULL));
	}
	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_string_equal(s.cond[FLEET_MEMCG].dims[0].name, "zone");
	assert_true(s.cond[FLEET_MEMCG].dims[0].score > 0.7);
	fleet_free(f);
}

static void test_duplicates_absent_unknown(void **state)
{
	struct fleet *f = fleet20(NULL, 0);
	struct fleet_summary s;

	/* n00 listed again (a restarted list), now False: replaced, not counted twice */
	add(f, node("n00", "a", "imgX", "5.10", "False", FALSE_MSG, NULL));
	/* no conditions of ours; Unknown; junk */
	add(f, node("bare", "b", "imgY", "5.10", NULL, NULL, NULL));
	add(f, node("unk", "a", "imgY", "5.10", "Unknown", "cannot read /proc/cgroups", NULL));
	add(f, json_tokener_parse("[1,2]"));
	add(f, json_tokener_parse("{\"metadata\":{\"name\":7},\"status\":[]}"));
	add(f, json_tokener_parse("{\"metadata\":{\"name\":\"odd\"},\"status\":{\"conditions\":"
				  "{\"type\":\"Ready\"},\"nodeInfo\":5},\"spec\":\"x\"}"));
	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_int_equal(s.nodes, 23);
	assert_int_equal(s.duplicates, 1);
	assert_int_equal(s.skipped, 2);
	assert_int_equal(s.cond[FLEET_MEMCG].t, 4);
	assert_int_equal(s.cond[FLEET_MEMCG].f, 16);
	assert_int_equal(s.cond[FLEET_MEMCG].unknown, 1);
	assert_int_equal(s.cond[FLEET_MEMCG].absent, 2);
	assert_int_equal(s.ready_true, 22);
	assert_int_equal(s.ready_unknown, 1);
	/* reset: the view starts over with nothing */
	fleet_reset(f);
	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_int_equal(s.nodes, 0);
	add(f, node("n00", "a", "imgX", "5.10", "True", TRUE_MSG("a.service"), NULL));
	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_int_equal(s.nodes, 1);
	assert_int_equal(s.duplicates, 0);
	fleet_free(f);
}

static void test_leases_and_held(void **state)
{
	struct fleet *f = fleet20(NULL, 0);
	struct fleet_summary s;
	json_object *l[3];

	add(f, node("held1", "a", "imgX", "5.10", "True", TRUE_MSG("ecs.service"),
		    ",\"annotations\":{\"cpuzombie.io/cordoned\":\"MemcgZombieLeak\","
		    "\"cpuzombie.io/held-long\":\"2024-01-01T00:00:00Z\"}"));
	l[0] = json_tokener_parse("{\"spec\":{\"holderIdentity\":\"held1\",\"leaseDurationSeconds\""
				  ":600,\"renewTime\":\"2024-01-01T00:00:00.000000Z\"}}");
	l[1] = json_tokener_parse("{\"spec\":{\"holderIdentity\":\"gone\",\"leaseDurationSeconds\""
				  ":600,\"renewTime\":\"2023-12-31T00:00:00.000000Z\"}}");
	l[2] = json_tokener_parse("{\"spec\":{\"holderIdentity\":\"\"}}");
	fleet_set_leases(f, l, 3, 1704067200000ull + 60000, 2, NULL);
	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_int_equal(s.held, 1);
	assert_int_equal(s.drained, 0);
	assert_int_equal(s.held_long, 1);	/* the remediator's held-long mark */
	assert_true(s.leases_known);
	assert_int_equal(s.leases_held, 1);
	assert_int_equal(s.leases_expired, 1);
	assert_int_equal(s.budget, 2);
	fleet_set_leases(f, NULL, 0, 0, 0, "cannot list leases: HTTP 403: forbidden");
	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_false(s.leases_known);
	assert_string_equal(s.leases_denied, "cannot list leases: HTTP 403: forbidden");
	for (size_t i = 0; i < ARRAY_SIZE(l); i++)
		json_object_put(l[i]);
	fleet_free(f);
}

static void test_true_since(void **state)
{
	struct fleet *f;
	struct fleet_summary s;
	static const char *const times[] = { "2024-05-01T10:00:00Z", "2024-05-01T09:00:00Z",
					     "not a time", "2024-05-02T00:00:00.5Z" };
	char buf[512];

	assert_int_equal(fleet_new(NULL, 0, 0, &f), 0);
	for (size_t i = 0; i < ARRAY_SIZE(times); i++) {
		snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"n%zu\"},\"status\":{"
			 "\"conditions\":[{\"type\":\"CPUCoreSaturation\",\"status\":\"%s\","
			 "\"lastTransitionTime\":\"%s\"}]}}", i, i == 3 ? "False" : "True", times[i]);
		add(f, json_tokener_parse(buf));
	}
	assert_int_equal(fleet_summarize(f, &s), 0);
	assert_int_equal(s.cond[FLEET_CPU].t, 3);
	/* the False node's time and the unreadable one do not count */
	assert_int_equal(s.cond[FLEET_CPU].first_true_ms, 1714554000000ull);
	assert_int_equal(s.cond[FLEET_CPU].last_true_ms, 1714557600000ull);
	assert_int_equal(s.cond[FLEET_CPU].unparsed, 3); /* no message */
	fleet_free(f);
}

static void test_outputs(void **state)
{
	struct fleet *f = fleet20(NULL, 0);
	struct fleet_summary s;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	json_object *j, *c0, *d0;

	add(f, node("evil\\u001b[2J", "a", "img\\u0007X", "5.10", "True",
		    TRUE_MSG("ecs.service"), NULL));
	fleet_set_leases(f, NULL, 0, 0, 0, "cannot list leases: HTTP 403: forbidden");
	assert_int_equal(fleet_summarize(f, &s), 0);
	fleet_print(f, &s, true, out);
	fclose(out);
	/* the zone line comes first under the condition, then the others */
	assert_non_null(strstr(text, "MemcgZombieLeak: True on 6 of 21 nodes"));
	assert_non_null(strstr(text, " zone "));
	assert_non_null(strstr(text, " osImage "));
	assert_true(strstr(text, " zone ") < strstr(text, " osImage "));
	assert_non_null(strstr(text, "ecs.service on 5 nodes"));
	assert_non_null(strstr(text, "cannot read the remediation budget (cannot list leases: HTTP "
				     "403: forbidden)"));
	assert_non_null(strstr(text, "evil?[2J"));
	for (size_t i = 0; i < len; i++)
		if ((text[i] < 0x20 && text[i] != '\n') || text[i] == 0x7f)
			fail_msg("control byte 0x%02x in the text output", text[i]);
	free(text);
	j = fleet_json(f, &s, true);
	assert_non_null(j);
	c0 = json_object_array_get_idx(json_object_object_get(j, "conditions"), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(c0, "type")),
			    "MemcgZombieLeak");
	d0 = json_object_array_get_idx(json_object_object_get(c0, "dimensions"), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(d0, "name")), "zone");
	assert_int_equal(json_object_array_length(json_object_object_get(d0, "nodes")), 6);
	assert_false(json_object_get_boolean(json_object_object_get(
		json_object_object_get(json_object_object_get(j, "remediation"), "leases"),
		"readable")));
	json_object_put(j);
	fleet_free(f);
}

/* A hostile server's bytes (json-c's parser takes them as they are): the JSON document is valid
 * UTF-8 all the same, each bad byte a U+FFFD, nothing else changed. */
static void test_json_is_utf8(void **state)
{
	struct fleet *f = fleet20(NULL, 0);
	struct fleet_summary s;
	json_object *j;
	const char *out, *names;

	(void)state;
	add(f, node("bad\xff\xfe-node", "a\xc3", "img\xed\xa0\x80X", "5.10\xc0\xaf", "True",
		    "12840 dying memcgs vs 241 live (x53 >= x10); top restarts: ecs.service=42",
		    NULL));
	fleet_set_leases(f, NULL, 0, 0, 0, "cannot list leases: HTTP 403: \xf8\x88 no");
	assert_int_equal(fleet_summarize(f, &s), 0);
	j = fleet_json(f, &s, true);
	assert_non_null(j);
	out = json_object_to_json_string_ext(j, JSON_C_TO_STRING_NOSLASHESCAPE);
	assert_true(textsafe_valid_utf8(out, strlen(out)));
	names = strstr(out, "bad");
	assert_non_null(names);
	assert_memory_equal(names, "bad\xef\xbf\xbd\xef\xbf\xbd-node", 13);
	assert_non_null(strstr(out, "\"a\xef\xbf\xbd\""));		/* the zone */
	assert_non_null(strstr(out, "403: \xef\xbf\xbd\xef\xbf\xbd no"));
	json_object_put(j);
	fleet_free(f);
}

static void test_pager(void **state)
{
	struct fleet_pager p;
	char err[160], tok[32];

	(void)state;
	/* a real list: tokens once each, then the end */
	fleet_pager_init(&p, 500);
	assert_int_equal(fleet_pager_next(&p, "t1", 500, err, sizeof(err)), 1);
	assert_int_equal(fleet_pager_next(&p, "t2", 500, err, sizeof(err)), 1);
	assert_int_equal(fleet_pager_next(&p, "", 12, err, sizeof(err)), 0);
	assert_int_equal(p.items, 1012);
	fleet_pager_done(&p);
	/* the server sends back the token it was given, or an older one */
	fleet_pager_init(&p, 500);
	assert_int_equal(fleet_pager_next(&p, "t1", 500, err, sizeof(err)), 1);
	assert_int_equal(fleet_pager_next(&p, "t1", 500, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "repeated a continue token (page 2"));
	fleet_pager_done(&p);
	fleet_pager_init(&p, 1);
	for (int i = 0; i < 200; i++) {
		snprintf(tok, sizeof(tok), "tok-%d", i);
		assert_int_equal(fleet_pager_next(&p, tok, 1, err, sizeof(err)), 1);
	}
	assert_int_equal(fleet_pager_next(&p, "tok-17", 1, err, sizeof(err)), -ELOOP);
	fleet_pager_done(&p);
	/* new tokens for ever, empty pages: stopped at the page cap */
	fleet_pager_init(&p, 500);
	assert_int_equal(p.pages_max, FLEET_NODES_MAX / 500 + FLEET_PAGES_SLACK);
	for (unsigned i = 1; i < p.pages_max; i++) {
		snprintf(tok, sizeof(tok), "e-%u", i);
		assert_int_equal(fleet_pager_next(&p, tok, 0, err, sizeof(err)), 1);
	}
	assert_int_equal(fleet_pager_next(&p, "one-more", 0, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "kept sending pages"));
	fleet_pager_done(&p);
	/* pages fuller than asked: stopped at the node cap, last page or not */
	fleet_pager_init(&p, 500);
	assert_int_equal(fleet_pager_next(&p, "a", FLEET_NODES_MAX, err, sizeof(err)), 1);
	assert_int_equal(fleet_pager_next(&p, "", 1, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "more than 100000 nodes"));
	fleet_pager_done(&p);
	/* unpaged: one list */
	fleet_pager_init(&p, 0);
	assert_int_equal(fleet_pager_next(&p, NULL, 3000, err, sizeof(err)), 0);
	fleet_pager_done(&p);
	fleet_pager_done(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranking),
		cmocka_unit_test(test_rare_condition_scores_like_common),
		cmocka_unit_test(test_duplicates_absent_unknown),
		cmocka_unit_test(test_leases_and_held),
		cmocka_unit_test(test_true_since),
		cmocka_unit_test(test_outputs),
		cmocka_unit_test(test_json_is_utf8),
		cmocka_unit_test(test_pager),
	};
	return cmocka_run_group_tests_name("fleet", tests, NULL, NULL);
}
