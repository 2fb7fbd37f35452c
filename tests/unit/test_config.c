/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdlib.h>

#include "testutil.h"
#include "base/config.h"
#include "base/util.h"

#define CFG FIXTURES "/config/"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	assert_non_null(f);
	buf = malloc(1 << 20);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

static int load(const char *file, struct cz_config *cfg, char *errs, size_t size)
{
	char path[512];
	size_t len;
	char *text;
	int r;

	snprintf(path, sizeof(path), CFG "%s", file);
	text = slurp(path, &len);
	r = config_load_string(file, text, len, cfg, errs, size);
	free(text);
	return r;
}

static void test_defaults(void **state)
{
	struct cz_config c;

	config_defaults(&c);
	assert_true(c.memcg.min_dying == 1000);
	assert_true(c.memcg.max_ratio == 10);
	assert_true(c.cpu.interval_ms == 250);
	assert_true(c.cpu.threshold_pct == 90);
	assert_true(c.cpu.min_burst_ms == 2000);
	assert_true(c.cpu.lookback_ms == 600000);
	assert_true(c.cpu.inline_window_ms == 3000);
	assert_true(c.cpu.history_ms == 900000);
	assert_int_equal(c.cpu.metric, CZ_METRIC_SYSTEM);
	assert_true(config_strlist_has(&c.ena.drivers, "ena"));
	assert_true(c.ena.window_ms == 3600000);
	assert_true(config_strlist_has(&c.ena.reset_counters, "suspected_poll_starvation"));
	assert_true(config_strlist_has(&c.ena.allowance_counters, "pps_allowance_exceeded"));
	assert_true(c.agent.check_interval_ms == 30000);
	assert_true(c.agent.heartbeat_ms == 5 * 60 * 1000);
	assert_false(c.agent.set_conditions);
	assert_int_equal(c.remediation.mode, CZ_REMEDIATE_OFF);
	assert_string_equal(c.remediation.max_unavailable, "1");
	assert_true(c.remediation.for_ms == 600000);
	assert_string_equal(c.paths.state, "/var/lib/cpuzombie");
	assert_string_equal(c.systemd.bus, "system");
}

static void test_good_full(void **state)
{
	struct cz_config c;
	char errs[4096];

	assert_int_equal(load("good-full.yaml", &c, errs, sizeof(errs)), 0);
	assert_string_equal(errs, "");
	assert_string_equal(c.paths.proc, "/host/proc");
	assert_true(c.memcg.min_dying == 500);
	assert_true(c.memcg.max_ratio == 2.5);
	assert_true(c.memcg.latency_canary_ms == 0);
	assert_false(c.memcg.systemd_hints);
	assert_true(c.cpu.interval_ms == 100);
	assert_int_equal(c.cpu.metric, CZ_METRIC_SYSTEM_IRQ);
	assert_true(c.cpu.threshold_pct == 95);
	assert_int_equal(c.ena.drivers.n, 2);
	assert_string_equal(c.ena.drivers.item[1], "veth");
	assert_int_equal(c.ena.interfaces.n, 0);
	assert_int_equal(c.ena.risk_counters.n, 0);
	assert_string_equal(c.ena.reset_counters.item[1], "queue_*_tx_missed_tx");
	assert_int_equal(c.ena.allowance_counters.n, 1);
	assert_true(c.ena.conntrack_floor == 1000);
	assert_string_equal(c.kubernetes.node_name, "ip-10-0-0-1.ec2.internal");
	assert_string_equal(c.systemd.bus, "unix:path=/run/systemd/private");
	assert_true(c.agent.set_conditions);
	assert_true(c.agent.heartbeat_ms == 90000);
	assert_int_equal(c.remediation.mode, CZ_REMEDIATE_DRAIN);
	assert_string_equal(c.remediation.max_unavailable, "10%");
	assert_true(c.remediation.uncordon_after_ms == 3600000);
	assert_string_equal(c.remediation.lease_namespace, "cpuzombie");
}

static void test_good_minimal(void **state)
{
	static const char *const files[] = { "good-empty.yaml", "good-comments.yaml",
					     "good-null-section.yaml" };
	struct cz_config c, d;

	config_defaults(&d);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		memset(&c, 0xa5, sizeof(c));
		assert_int_equal(load(files[i], &c, NULL, 0), 0);
		assert_memory_equal(&c, &d, sizeof(c)); /* exactly the defaults */
	}
}

/* Every bad-*.yaml has a .golden with the exact error lines; the output struct is untouched. */
static void test_bad_golden(void **state)
{
	DIR *dir = opendir(CFG);
	struct dirent *de;
	int seen = 0;

	assert_non_null(dir);
	while ((de = readdir(dir))) {
		char golden[512], errs[8192], *want;
		struct cz_config c, before;
		size_t n = strlen(de->d_name);

		if (!startswith(de->d_name, "bad-") || n < 6 || !streq(de->d_name + n - 5, ".yaml"))
			continue;
		memset(&c, 0x5a, sizeof(c));
		before = c;
		assert_int_not_equal(load(de->d_name, &c, errs, sizeof(errs)), 0);
		assert_memory_equal(&c, &before, sizeof(c));
		snprintf(golden, sizeof(golden), CFG "%.*s.golden", (int)(n - 5), de->d_name);
		want = slurp(golden, NULL);
		if (strcmp(want, errs) != 0)
			print_error("%s: got:\n%swant:\n%s", de->d_name, errs, want);
		assert_string_equal(errs, want);
		free(want);
		seen++;
	}
	closedir(dir);
	assert_true(seen >= 8);
}

static void test_shipped_config_is_the_defaults(void **state)
{
	struct cz_config c, d;
	char errs[4096];

	unsetenv("NODE_NAME");
	config_defaults(&d);
	assert_int_equal(config_load_file(FIXTURES "/../../config/cpuzombie.yaml", &c, errs,
					  sizeof(errs)), 0);
	/* the shipped file documents every key with its default value */
	assert_memory_equal(&c, &d, sizeof(c));
}

static void test_dump_roundtrip(void **state)
{
	struct cz_config c, back;
	char errs[4096], *text = NULL;
	size_t len = 0;
	FILE *f;

	assert_int_equal(load("good-full.yaml", &c, errs, sizeof(errs)), 0);
	f = open_memstream(&text, &len);
	assert_int_equal(config_dump(&c, f), 0);
	fclose(f);
	assert_int_equal(config_load_string("dump", text, len, &back, errs, sizeof(errs)), 0);
	assert_memory_equal(&c, &back, sizeof(c));
	free(text);
}

static void test_limits(void **state)
{
	struct cz_config c;
	char errs[512], big[4096];
	int n;

	/* 33 list entries: more than CZ_LIST_MAX */
	n = snprintf(big, sizeof(big), "ena:\n  drivers: [");
	for (int i = 0; i < CZ_LIST_MAX + 1; i++)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "%sd%d", i ? "," : "", i);
	snprintf(big + n, sizeof(big) - (size_t)n, "]\n");
	assert_int_equal(config_load_string("big", big, strlen(big), &c, errs, sizeof(errs)), -EINVAL);
	assert_non_null(strstr(errs, "more than 32 entries"));
	/* errors never overrun a small buffer */
	assert_int_equal(load("bad-many.yaml", &c, errs, 40), -EINVAL);
	assert_true(strlen(errs) < 40);
	assert_int_equal(config_load_file("/nonexistent/cz.yaml", &c, errs, sizeof(errs)), -ENOENT);
	assert_non_null(strstr(errs, "/nonexistent/cz.yaml"));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
/* Generate @n copies of @unit (a printf format taking the copy's index) after @head. */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail, size_t *len)
{
	size_t size = strlen(head) + n * (strlen(unit) + 16) + strlen(tail) + 1, off;
	char *s = malloc(size);

	assert_non_null(s);
	off = (size_t)snprintf(s, size, "%s", head);
	for (size_t i = 0; i < n; i++)
		off += (size_t)snprintf(s + off, size - off, unit, i);
	off += (size_t)snprintf(s + off, size - off, "%s", tail);
	*len = off;
	return s;
}
#pragma GCC diagnostic pop

/*
 * Shapes that would cost superlinear time: each is refused at the line that crosses a limit,
 * and the message names the limit. (Their cost is measured by the fuzz target's time limit and
 * the e2e catalogue, not asserted here.)
 */
static void test_pathological_shapes(void **state)
{
	static const struct {
		const char *head, *unit, *tail;
		size_t n;
		const char *want;
	} t[] = {
		{ "memcg:\n", "  k%zu: 1\n", "", 40000, "big:513: more than 512 keys" },
		{ "x: ", "[", "", 40000, "big:1: nesting deeper than 4 levels" },
		{ "x: ", "{a: ", "", 100000, "big:1: nesting deeper than 4 levels" },
		{ "", "a%zu: &a x\n", "", 60000, "big:1: anchors (&a) are not supported" },
		{ "ena:\n  drivers: [", "d,", "d]\n", 50000, "more than 8192 YAML events" },
		{ "memcg:\n", "  min_dying: %zu\n", "", 100, "big:3: key 'memcg.min_dying': given twice" },
	};
	struct cz_config c;
	char errs[512];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		size_t len;
		char *text = repeat(t[i].head, t[i].unit, t[i].n, t[i].tail, &len);

		assert_int_equal(config_load_string("big", text, len, &c, errs, sizeof(errs)),
				 -EINVAL);
		if (!strstr(errs, t[i].want))
			print_error("case %zu: got %s", i, errs);
		assert_non_null(strstr(errs, t[i].want));
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),	cmocka_unit_test(test_good_full),
		cmocka_unit_test(test_good_minimal),	cmocka_unit_test(test_bad_golden),
		cmocka_unit_test(test_shipped_config_is_the_defaults),
		cmocka_unit_test(test_dump_roundtrip),	cmocka_unit_test(test_limits),
		cmocka_unit_test(test_pathological_shapes),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
