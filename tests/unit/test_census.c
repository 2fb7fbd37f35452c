/* SPDX-License-Identifier: MIT */
/* checks/census: the zombie census the agent publishes in the run dir, and its clause in the
 * check line. The file is shared with another container: the reader refuses anything but what
 * the writer makes; the patterns collapse what changes between instances and nothing else. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "memcg/census.h"
#include "check/condmsg.h"
#include "base/util.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cz-unit-census-%ld", (long)getpid());
	return mkdir(dir, 0700);
}

static int teardown(void **state)
{
	char p[300];

	(void)state;
	snprintf(p, sizeof(p), "%s/%s", dir, CENSUS_FILE);
	unlink(p);
	return rmdir(dir);
}

static void put(const char *text)
{
	char p[300];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, CENSUS_FILE);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	fclose(f);
}

static void test_pattern(void **state)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{ "system.slice/ecs.service", "system.slice/ecs.service" },
		{ "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_"
		  "9c0d_112233445566.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789"
		  "abcdef0123456789abcdef.scope",
		  "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod*.slice/"
		  "cri-containerd-*.scope" },
		{ "kubepods/burstable/pod1a2b3c4d-5e6f-7a8b-9c0d-112233445566/0123456789abcdef01234567",
		  "kubepods/burstable/pod*/*" },
		{ "kubepods/pod1a2b3c4d5e6f7a8b9c0d112233445566", "kubepods/pod*" },
		{ "user.slice/user-1000.slice/session-12.scope", "user.slice/user-*.slice/session-*.scope" },
		{ "cz-census-77/ga/m26", "cz-census-*/ga/m*" },
		{ "k8s.io/cafe", "k8s.io/cafe" },		/* a short hex word is a name */
		{ "a b;c,d\x01", "a?b?c?d?" },			/* the check line's separators */
		{ "", "" },
	};
	char buf[CENSUS_KEY_MAX], small[8];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		assert_string_equal(census_pattern(t[i].in, buf, sizeof(buf)), t[i].out);
	assert_string_equal(census_pattern("abcdefghijkl", small, sizeof(small)), "abcd...");
}

static void test_build_groups(void **state)
{
	const struct census_dying d[] = {
		{ "system.slice/ecs.service", 4096, 300 },
		{ "system.slice/ecs.service", 8192, 100 },
		{ "system.slice/ecs.service", 0, 200 },
		{ "cz/a-1", 10, 50 },
		{ "cz/a-2", 20, 60 },
		{ "top", 1, 70 },
	};
	struct census c;

	(void)state;
	assert_int_equal(census_build(d, ARRAY_SIZE(d), 1000, 99, true, &c), 0);
	assert_int_equal(c.dying, 6);
	assert_int_equal(c.bytes, 4096 + 8192 + 31);
	assert_int_equal(c.visited, 99);
	assert_true(c.truncated);
	assert_int_equal(c.ngroups, 3);
	assert_string_equal(c.group[0].key, "system.slice/ecs.service");
	assert_int_equal(c.group[0].count, 3);
	assert_int_equal(c.group[0].bytes, 12288);
	assert_int_equal(c.group[0].first_ms, 100);		/* the oldest */
	assert_string_equal(c.group[1].key, "cz/a-*");
	assert_int_equal(c.group[1].count, 2);
	assert_int_equal(c.group[1].first_ms, 50);
	assert_int_equal(c.nparents, 3);
	assert_string_equal(c.parent[0].key, "system.slice");
	assert_string_equal(c.parent[1].key, "cz");
	assert_string_equal(c.parent[2].key, "/");
	assert_int_equal(census_build(NULL, 0, 5, 1, false, &c), 0);
	assert_int_equal(c.ngroups, 0);
	assert_int_equal(c.dying, 0);
}

static void test_many_groups_top(void **state)
{
	struct census_dying d[40];
	char names[40][16];
	struct census c;

	(void)state;
	for (int i = 0; i < 40; i++) {	/* 40 groups of one, told apart by their bytes */
		snprintf(names[i], sizeof(names[i]), "g%c", 'A' + i);
		d[i] = (struct census_dying){ names[i], (uint64_t)i, 1 };
	}
	assert_int_equal(census_build(d, 40, 1, 40, false, &c), 0);
	assert_int_equal(c.ngroups, CENSUS_GROUPS_MAX);
	assert_int_equal(c.group[0].bytes, 39);		/* ties on count: most bytes first */
}

static void test_roundtrip(void **state)
{
	const struct census_dying d[] = { { "system.slice/ecs.service", 4096, 7 },
					  { "cz/x-1/m3", 8192, 9 } };
	struct census c, got;
	char buf[CENSUS_FILE_MAX], err[CENSUS_ERR_MAX];

	(void)state;
	assert_int_equal(census_build(d, 2, 1700000000123ULL, 12, false, &c), 0);
	assert_true(census_format(&c, NULL, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "cpuzombie-census 1\nt 1700000000123\nn 2 12288 12 0\n"
				 "g 1 8192 9 cz/x-*/m*\ng 1 4096 7 system.slice/ecs.service\n"
				 "p 1 8192 9 cz/x-*\np 1 4096 7 system.slice\n");
	assert_int_equal(census_parse(buf, &got, err, sizeof(err)), 0);
	assert_int_equal(got.dying, 2);
	assert_int_equal(got.ngroups, 2);
	assert_string_equal(got.group[0].key, "cz/x-*/m*");
	assert_int_equal(got.group[0].first_ms, 9);
	assert_int_equal(census_format(&c, NULL, buf, 40), 0);	/* does not fit: 0, not cut */
	assert_true(census_format(&c, "no capability\n(CAP_BPF)", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "cpuzombie-census 1\nt 1700000000123\ne no capability?(CAP_BPF)\n");
	assert_int_equal(census_parse(buf, &got, err, sizeof(err)), 1);
	assert_string_equal(err, "no capability?(CAP_BPF)");
}

static void test_parse_refuses(void **state)
{
	static const char *const bad[] = {
		"",
		"cpuzombie-census 2\nt 1\nn 0 0 0 0\n",
		"cpuzombie-census 1\nn 0 0 0 0\nt 1\n",			/* t first */
		"cpuzombie-census 1\nt 1\n",				/* neither n nor e */
		"cpuzombie-census 1\nt 1\nn 0 0 0 0\ne x\n",		/* both */
		"cpuzombie-census 1\nt 1\nn 0 0 0 0",			/* cut */
		"cpuzombie-census 1\nt 1\nn 1 0 0 2\n",			/* truncated is 0/1 */
		"cpuzombie-census 1\nt 1\nn -1 0 0 0\n",
		"cpuzombie-census 1\nt 1\nn 1  0 0 0\n",
		"cpuzombie-census 1\nt 1\nn 1 0 0 0\ng 2 0 0 a\n",	/* more than the total */
		"cpuzombie-census 1\nt 1\nn 1 0 0 0\ng 0 0 0 a\n",
		"cpuzombie-census 1\nt 1\nn 1 0 0 0\ng 1 0 0 a b\n",	/* a space in a key */
		"cpuzombie-census 1\nt 1\nn 1 0 0 0\ng 1 0 0 \n",
		"cpuzombie-census 1\nt 1\nn 1 0 0 0\ng 1 0 a\n",
		"cpuzombie-census 1\nt 1\nn 1 0 0 0\ng 1 0 0 a\xc3\xa9\n",
		"cpuzombie-census 1\nt 1\nn 1 0 0 0\nx 1\n",
		"cpuzombie-census 1\nt 1\nt 1\nn 1 0 0 0\n",
		"cpuzombie-census 1\nt 99999999999999999999\nn 0 0 0 0\n",
	};
	struct census c = { .t_ms = 42 };
	char err[8];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(census_parse(bad[i], &c, err, sizeof(err)), -EINVAL);
		assert_int_equal(c.t_ms, 42);	/* untouched */
	}
	assert_int_equal(census_parse(NULL, &c, err, sizeof(err)), -EINVAL);
}

static void test_load(void **state)
{
	struct census c;
	char why[200];

	(void)state;
	assert_int_equal(census_load(dir, 1000, 600000, &c, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "no census from the agent");
	put("cpuzombie-census 1\nt 1000\nn 3 12288 50 0\ng 3 12288 900 cz/a-*\n");
	assert_int_equal(census_load(dir, 2000, 600000, &c, why, sizeof(why)), 0);
	assert_string_equal(c.group[0].key, "cz/a-*");
	assert_int_equal(census_load(dir, 1000 + 600001 + 60000, 600000, &c, why, sizeof(why)),
			 -ESTALE);
	assert_string_equal(why, "census 11 min old");
	put("cpuzombie-census 1\nt 1000\ne built without the BPF census\n");
	assert_int_equal(census_load(dir, 2000, 600000, &c, why, sizeof(why)), -EIO);
	assert_string_equal(why, "built without the BPF census");
	put("cpuzombie-census 1\nt 1000\nn 3 0 0 0\ng 4 0 0 a\n");
	assert_int_equal(census_load(dir, 2000, 600000, &c, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "census corrupt");
}

static void test_condmsg_clause(void **state)
{
	char buf[200], line[400];
	struct condmsg_memcg m;

	(void)state;
	condmsg_census_hint(69790, "system.slice/ecs.service", 14ULL << 30, buf, sizeof(buf));
	assert_string_equal(buf, "69790 were system.slice/ecs.service, 14GiB pinned");
	snprintf(line, sizeof(line), "69812 dying memcgs vs 240 live (x290 >= x10); %s; Percpu 1GiB",
		 buf);
	assert_int_equal(condmsg_memcg_parse(line, false, &m), 0);
	assert_true(m.has_group);
	assert_string_equal(m.group, "system.slice/ecs.service");
	assert_int_equal(m.group_count, 69790);
	assert_false(m.has_leaker);
	/* cut inside the key (NPD's max_output_length): no group rather than a short one */
	line[strlen("69812 dying memcgs vs 240 live (x290 >= x10); 69790 were system.sl")] = '\0';
	assert_int_equal(condmsg_memcg_parse(line, true, &m), 0);
	assert_false(m.has_group);
	/* a key too long for the hint is cut with "...", and then not read back as a key */
	condmsg_census_hint(5, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 4096, buf, 40);
	assert_string_equal(buf, "5 were aaaaaaaaaaaaaa..., 4.0KiB pinned");
	assert_int_equal(strlen(buf), 39);
	snprintf(line, sizeof(line), "9 dying memcgs vs 1 live (x9 >= x1); %s", buf);
	assert_int_equal(condmsg_memcg_parse(line, false, &m), 0);
	assert_false(m.has_group);
	/* the restarts hint still reads as before */
	assert_int_equal(condmsg_memcg_parse("9 dying memcgs vs 1 live (x9 >= x1); top restarts: "
					     "ecs.service=42, a.service=1", false, &m), 0);
	assert_true(m.has_leaker);
	assert_false(m.has_group);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_build_groups),
		cmocka_unit_test(test_many_groups_top),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
		cmocka_unit_test(test_condmsg_clause),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
