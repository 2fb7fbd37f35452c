/* SPDX-License-Identifier: MIT */
/* checks/units: the systemd units the agent publishes in the run dir for the checks. The file
 * is shared with another container: the reader refuses anything but what the writer makes. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "memcg/units.h"
#include "base/util.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cz-unit-units-%ld", (long)getpid());
	return mkdir(dir, 0700);
}

static int teardown(void **state)
{
	char p[300];

	(void)state;
	snprintf(p, sizeof(p), "%s/%s", dir, UNITS_FILE);
	unlink(p);
	return rmdir(dir);
}

static void put_n(const char *text, size_t len)
{
	char p[300];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, UNITS_FILE);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void put(const char *text)
{
	put_n(text, strlen(text));
}

static void test_roundtrip(void **state)
{
	struct systemd_restarts r = { .t_ms = 1700000000123ULL, .n = 2 }, got;
	char buf[1024], err[64];

	(void)state;
	snprintf(r.u[0].name, sizeof(r.u[0].name), "ecs.service");
	r.u[0].restarts = 4211;
	r.u[0].has_growth = true;
	r.u[0].per_hour = 310.25;
	snprintf(r.u[1].name, sizeof(r.u[1].name), "getty@tty1.service");
	r.u[1].restarts = 3;
	assert_true(units_format(&r, NULL, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "cpuzombie-units 1\nt 1700000000123\n"
				 "u 4211 310250 ecs.service\nu 3 - getty@tty1.service\n");
	assert_int_equal(units_parse(buf, &got, err, sizeof(err)), 0);
	assert_int_equal(got.n, 2);
	assert_int_equal(got.t_ms, 1700000000123ULL);
	assert_string_equal(got.u[0].name, "ecs.service");
	assert_int_equal(got.u[0].restarts, 4211);
	assert_true(got.u[0].has_growth);
	assert_true(got.u[0].per_hour > 310.24 && got.u[0].per_hour < 310.26);
	assert_false(got.u[1].has_growth);
	/* too small a buffer: 0, never a cut file */
	assert_int_equal(units_format(&r, NULL, buf, 40), 0);
}

static void test_agent_error(void **state)
{
	struct systemd_restarts r = { .t_ms = 5 }, got;
	char buf[512], err[64];

	(void)state;
	assert_true(units_format(&r, "cannot connect to bus\n\x01x", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "cpuzombie-units 1\nt 5\ne cannot connect to bus??x\n");
	assert_int_equal(units_parse(buf, &got, err, sizeof(err)), 1);
	assert_string_equal(err, "cannot connect to bus??x");
	assert_int_equal(got.n, 0);
}

static void test_hostile_files_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"cpuzombie-units 2\nt 1\n",
		"cpuzombie-units 1\n",					/* no time */
		"cpuzombie-units 1\nt 1\nt 2\n",
		"cpuzombie-units 1\nu 1 - a.service\nt 1\n",		/* unit before time */
		"cpuzombie-units 1\nt 1\nu 1 - a.service x\n",		/* space in a name */
		"cpuzombie-units 1\nt 1\nu 1 - \x1b[31m.service\n",	/* escape in a name */
		"cpuzombie-units 1\nt 1\nu 1 - noservice\n",		/* no type suffix */
		"cpuzombie-units 1\nt 1\nu 1 - .service\n",
		"cpuzombie-units 1\nt 1\nu -1 - a.service\n",
		"cpuzombie-units 1\nt 1\nu 99999999999999999999999 - a.service\n",
		"cpuzombie-units 1\nt 1\nu 1 1.5 a.service\n",
		"cpuzombie-units 1\nt 1\nu 1 -\n",
		"cpuzombie-units 1\nt 1\nx 1\n",
		"cpuzombie-units 1\nt 1\ne a\nu 1 - a.service\n",	/* error and units */
		"cpuzombie-units 1\nt 1\ne bell\a\n",
	};
	struct systemd_restarts got = { .n = 7 };
	char err[64];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(units_parse(bad[i], &got, err, sizeof(err)), -EINVAL);
		assert_int_equal(got.n, 7);	/* untouched */
	}
	/* a name of SYSTEMD_UNIT_MAX bytes does not fit */
	char big[512];
	memset(big, 'a', sizeof(big));
	snprintf(big, sizeof(big), "cpuzombie-units 1\nt 1\nu 1 - %.*s.service\n",
		 SYSTEMD_UNIT_MAX, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(units_parse(big, &got, err, sizeof(err)), -EINVAL);
}

static void test_too_many_units_refused(void **state)
{
	char *buf = malloc(UNITS_FILE_MAX);
	struct systemd_restarts got;
	size_t off;

	(void)state;
	assert_non_null(buf);
	off = (size_t)snprintf(buf, UNITS_FILE_MAX, "cpuzombie-units 1\nt 1\n");
	for (int i = 0; i <= SYSTEMD_TOP_MAX; i++)
		off += (size_t)snprintf(buf + off, UNITS_FILE_MAX - off, "u 1 - u%d.service\n", i);
	assert_int_equal(units_parse(buf, &got, NULL, 0), -EINVAL);
	free(buf);
}

static void test_load_judges_freshness(void **state)
{
	struct systemd_restarts got;
	char why[256], text[256];
	uint64_t now = 1700000000000ULL;

	(void)state;
	assert_int_equal(units_load(dir, now, &got, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "no unit data from the agent");
	assert_string_equal(units_words(-ENOENT), "no unit data from the agent");
	snprintf(text, sizeof(text), "cpuzombie-units 1\nt %llu\nu 9 - crash.service\n",
		 (unsigned long long)(now - 1000));
	put(text);
	assert_int_equal(units_load(dir, now, &got, why, sizeof(why)), 0);
	assert_string_equal(got.u[0].name, "crash.service");
	snprintf(text, sizeof(text), "cpuzombie-units 1\nt %llu\nu 9 - crash.service\n",
		 (unsigned long long)(now - UNITS_FRESH_MS - 60000));
	put(text);
	assert_int_equal(units_load(dir, now, &got, why, sizeof(why)), -ESTALE);
	assert_string_equal(units_words(-ESTALE), "unit data stale");
	snprintf(text, sizeof(text), "cpuzombie-units 1\nt %llu\n", (unsigned long long)(now + 86400000));
	put(text);
	assert_int_equal(units_load(dir, now, &got, why, sizeof(why)), -ESTALE);
	assert_string_equal(why, "unit data from the future");
	snprintf(text, sizeof(text), "cpuzombie-units 1\nt %llu\ne cannot connect to bus\n",
		 (unsigned long long)now);
	put(text);
	assert_int_equal(units_load(dir, now, &got, why, sizeof(why)), -EIO);
	assert_string_equal(why, "cannot connect to bus");
	put("cpuzombie-units 1\nt 1\nu 1 - a b\n");
	assert_int_equal(units_load(dir, now, &got, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "unit data corrupt");
	snprintf(text, sizeof(text), "cpuzombie-units 1\nt %llu\n", (unsigned long long)now);
	memcpy(text + strlen(text), "\0u 1 - a.service\n", 17);	/* a NUL inside */
	put_n(text, strlen(text) + 17);
	assert_int_equal(units_load(dir, now, &got, why, sizeof(why)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_agent_error),
		cmocka_unit_test(test_hostile_files_refused),
		cmocka_unit_test(test_too_many_units_refused),
		cmocka_unit_test(test_load_judges_freshness),
	};
	return cmocka_run_group_tests_name("units", tests, setup, teardown);
}
