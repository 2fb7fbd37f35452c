/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "memcg/check_memcg.h"
#include "memcg/memcg_root.h"
#include "check/cz.h"
#include "memcg/memcg.h"
#include "base/util.h"

#define HDR "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"

static void test_proc_cgroups(void **state)
{
	static const struct {
		const char *text;
		int r;
		uint64_t hier, num;
	} t[] = {
		{ HDR "cpu\t2\t5\t1\nmemory\t4\t13081\t1\n", 0, 4, 13081 },
		{ HDR "memory\t0\t300\t1\n", 0, 0, 300 },				/* v2 */
		{ "#subsys_name\thierarchy\tnum_cgroups\tenabled\tx\nmemory\t4\t9\t1\t0\n", 0, 4, 9 },
		{ "#subsys_name\tenabled\tnum_cgroups\thierarchy\nmemory\t1\t9\t4\n", 0, 4, 9 },
		{ HDR "cpu\t2\t5\t1\n", -ENODATA, 0, 0 },
		{ HDR "memory\t4\t128", -EINVAL, 0, 0 },			/* truncated row */
		{ HDR "memory\t4\t99999999999999999999999\t1\n", -ERANGE, 0, 0 },
		/* the kernel counts cgroups in an int; near 2^64 is damage, not a count */
		{ HDR "memory\t4\t18446744073709551000\t1\n", -ERANGE, 0, 0 },
		{ HDR "memory\t4\t2147483648\t1\n", -ERANGE, 0, 0 },
		{ HDR "memory\t4\t2147483647\t1\n", 0, 4, 2147483647 },
		{ HDR "memory\t4\t-1\t1\n", -EINVAL, 0, 0 },
		{ HDR "memory\t4\t12\t7\n", -EINVAL, 0, 0 },
		{ "memory\t4\t12\t1\n", -EINVAL, 0, 0 },			/* no header */
		{ "", -EINVAL, 0, 0 },
		{ "#subsys_name\thierarchy\nmemory\t4\n", -EINVAL, 0, 0 },	/* missing column */
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct memcg_controller c = { 77, 77, false };

		assert_int_equal(memcg_parse_proc_cgroups(t[i].text, &c), t[i].r);
		if (t[i].r == 0) {
			assert_true(c.hierarchy == t[i].hier && c.num_cgroups == t[i].num && c.enabled);
		} else {
			assert_true(c.hierarchy == 77 && c.num_cgroups == 77); /* untouched */
		}
	}
}

static void test_cgroup_stat(void **state)
{
	struct memcg_cgstat s;

	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 240\nnr_dying_descendants 7\n", &s), 0);
	assert_false(s.has_subsys_memory);
	assert_true(s.nr_descendants == 240 && s.nr_dying_descendants == 7);
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 3\nnr_subsys_cpu 2\n"
						 "nr_subsys_memory 241\nnr_dying_descendants 9\n"
						 "nr_dying_subsys_memory 12840\n", &s), 0);
	assert_true(s.has_subsys_memory && s.nr_subsys_memory == 241 &&
		    s.nr_dying_subsys_memory == 12840);
	/* only one of the two 6.12 keys: fall back to descendants */
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 3\nnr_dying_descendants 1\n"
						 "nr_subsys_memory 241\n", &s), 0);
	assert_false(s.has_subsys_memory);
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 3\n", &s), -EINVAL);
	/* the kernel's counts are ints */
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 3\nnr_dying_descendants "
						 "18446744073709551000\n", &s), -ERANGE);
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 3\nnr_dying_descendants 1\n"
						 "nr_dying_subsys_memory 4294967296\n"
						 "nr_subsys_memory 2\n", &s), -ERANGE);
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants x\nnr_dying_descendants 1\n", &s),
			 -EINVAL);
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 1 2\nnr_dying_descendants 1\n",
						 &s), -EINVAL);
	assert_int_equal(memcg_parse_cgroup_stat("nr_descendants 1\nnr_descendants 1\n"
						 "nr_dying_descendants 1\n", &s), -EINVAL);
	assert_int_equal(memcg_parse_cgroup_stat("", &s), -EINVAL);
}

static void test_meminfo_osrelease(void **state)
{
	uint64_t b = 5;
	unsigned ma = 0, mi = 0;

	assert_int_equal(memcg_parse_meminfo_percpu("MemTotal: 1 kB\nPercpu:   1992704 kB\n", &b), 0);
	assert_true(b == 1992704ull * 1024);
	assert_int_equal(memcg_parse_meminfo_percpu("MemTotal: 1 kB\n", &b), -ENODATA);
	assert_int_equal(memcg_parse_meminfo_percpu("Percpu: 12\n", &b), -EINVAL);
	assert_int_equal(memcg_parse_meminfo_percpu("Percpu: 99999999999999999999 kB\n", &b),
			 -EINVAL);
	assert_int_equal(memcg_parse_osrelease("5.4.0-1103-aws\n", &ma, &mi), 0);
	assert_true(ma == 5 && mi == 4);
	assert_int_equal(memcg_parse_osrelease("6.18.44-fc", &ma, &mi), 0);
	assert_true(ma == 6 && mi == 18);
	assert_int_equal(memcg_parse_osrelease("abc", &ma, &mi), -EINVAL);
	assert_int_equal(memcg_parse_osrelease("5", &ma, &mi), -EINVAL);
}

static void test_find_mount(void **state)
{
	static const char mi[] =
		"35 31 0:32 / /sys/fs/cgroup/memory rw shared:15 - cgroup cgroup rw,memory\n"
		"36 31 0:33 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		"41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
	char buf[64];

	assert_int_equal(memcg_find_mount(mi, false, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fs/cgroup/memory");
	assert_int_equal(memcg_find_mount(mi, true, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fs/cgroup/unified");
	/* "memory" must be a whole option, not a substring such as memory_recursiveprot */
	assert_int_equal(memcg_find_mount("1 2 0:3 / /sys/fs/cgroup/x rw - cgroup cgroup "
					  "rw,memory_recursiveprot\n", false, buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(memcg_find_mount("1 2 0:3 / /cg\\040mem rw - cgroup cgroup rw,memory\n",
					  false, buf, sizeof(buf)), -EXDEV);
	assert_int_equal(memcg_find_mount("1 2 0:3 /kubepods /sys/fs/cgroup/memory rw - cgroup "
					  "cgroup rw,memory\n", false, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(memcg_find_mount(mi, false, buf, 8), -ENAMETOOLONG);
	assert_int_equal(memcg_find_mount("garbage\n\n- - -\n", true, buf, sizeof(buf)), -ENOENT);
}

static struct cz_config cfg(void)
{
	struct cz_config c;

	config_defaults(&c);
	return c;
}

static void test_verdict(void **state)
{
	struct cz_config c = cfg();
	struct npd_result res;
	struct memcg_reading r = { .source = MEMCG_V1, .live = 241, .dying = 12840,
				   .has_percpu = true, .percpu_bytes = 1992704ull * 1024,
				   .has_growth = true, .growth_per_hour = 310 };

	snprintf(r.hint, sizeof(r.hint), "top restarts: ecs.service=4211");
	assert_int_equal(memcg_verdict(&r, &c, &res), NPD_PROBLEM);
	assert_string_equal(res.msg, "12840 dying memcgs vs 241 live (x53 >= x10); +310/h; "
				     "top restarts: ecs.service=4211; Percpu 1.9GiB");
	/* both limits are needed */
	r.dying = 999;
	r.live = 3;
	assert_int_equal(memcg_verdict(&r, &c, &res), NPD_OK);
	r.dying = 100000;
	r.live = 10001;
	assert_int_equal(memcg_verdict(&r, &c, &res), NPD_OK); /* x9.99 */
	r.live = 10000;
	assert_int_equal(memcg_verdict(&r, &c, &res), NPD_PROBLEM); /* exactly x10 */
	r.dying = 1000;
	r.live = 100;
	assert_int_equal(memcg_verdict(&r, &c, &res), NPD_PROBLEM); /* exactly min_dying */
	/* the hint is only shown with a problem; exposure for v1 before 5.8 */
	r.dying = 5;
	r.has_kernel = true;
	r.kernel_major = 5;
	r.kernel_minor = 4;
	assert_int_equal(memcg_verdict(&r, &c, &res), NPD_OK);
	assert_null(strstr(res.msg, "ecs.service"));
	assert_non_null(strstr(res.msg, "kernel 5.4 < 5.8"));
	r.kernel_minor = 8;
	assert_false(memcg_exposed(&r));
	r.source = MEMCG_V2_DESCENDANTS;
	r.kernel_minor = 4;
	assert_false(memcg_exposed(&r));
	memcg_verdict(&r, &c, &res);
	assert_non_null(strstr(res.msg, "nr_dying_descendants"));
	/* live 0 cannot divide by zero */
	r.live = 0;
	r.dying = 5000;
	assert_int_equal(memcg_verdict(&r, &c, &res), NPD_PROBLEM);
}

static void test_history(void **state)
{
	struct memcg_history h = { 0 }, back;
	char buf[4096];
	double g = 0;
	uint64_t t0 = 1700000000000ull;

	assert_false(memcg_history_growth(&h, t0, 10, &g));
	assert_true(memcg_history_add(&h, t0, 1000));
	assert_false(memcg_history_add(&h, t0 + 30000, 1001)); /* too close: skipped, unchanged */
	assert_int_equal(h.n, 1);
	assert_false(memcg_history_growth(&h, t0 + 5 * 60000, 1100, &g)); /* < 10 min of history */
	assert_true(memcg_history_growth(&h, t0 + 3600000, 1310, &g));
	assert_true(g > 309.99 && g < 310.01);
	for (int i = 1; i <= 100; i++)
		assert_true(memcg_history_add(&h, t0 + (uint64_t)i * MEMCG_HISTORY_SPACING_MS,
					      1000 + (uint64_t)i));
	assert_int_equal(h.n, MEMCG_HISTORY_MAX);
	memcg_history_format(&h, buf, sizeof(buf));
	assert_int_equal(memcg_history_parse(buf, &back), 0);
	assert_memory_equal(&h, &back, sizeof(h));
	/* the clock stepped back: future samples are dropped */
	assert_true(memcg_history_add(&h, t0 + 10 * MEMCG_HISTORY_SPACING_MS, 5));
	assert_true(h.s[h.n - 1].t_ms == t0 + 10 * MEMCG_HISTORY_SPACING_MS);
	assert_int_equal(memcg_history_parse("s 1 2\nx 3 4\n", &back), -EINVAL);
	assert_int_equal(memcg_history_parse("s 5 2\ns 3 4\n", &back), -EINVAL); /* out of order */
}

/* The whole check on fixture trees: exit status and the line NPD would see. */
static void test_check_on_trees(void **state)
{
	static const struct {
		const char *tree;
		int status;
		const char *starts;
	} t[] = {
		{ "v1-zombies", NPD_PROBLEM, "12840 dying memcgs vs 12 live (x1070 >= x10)" },
		{ "v1-healthy", NPD_OK, "28 dying memcgs vs 12 live" },
		{ "v1-tiny", NPD_OK, "80 dying memcgs vs 3 live (x27; limits 1000 dying and x10)" },
		{ "v1-extra-columns", NPD_PROBLEM, "12840 dying" },
		{ "v1-no-percpu", NPD_PROBLEM, "12840 dying memcgs vs 12 live (x1070 >= x10)" },
		{ "v1-old-kernel", NPD_PROBLEM, "12840 dying" },
		{ "v2-subsys", NPD_PROBLEM, "12840 dying memcgs vs 241 live (x53 >= x10)" },
		{ "v2-descendants", NPD_PROBLEM, "12840 dying memcgs vs 241 live" },
		{ "v2-healthy", NPD_OK, "2 dying memcgs vs 241 live" },
		{ "v2-cgroup-named-memory", NPD_PROBLEM, "12840 dying memcgs vs 241 live" },
		{ "this-vm-hybrid", NPD_OK, "" },
		{ "no-mountinfo", NPD_PROBLEM, "12840 dying" },
		{ "no-memory-row", NPD_UNKNOWN, "no memory controller in " },
		{ "disabled", NPD_UNKNOWN, "memory controller disabled" },
		{ "truncated", NPD_UNKNOWN, "cannot read " },
		{ "huge", NPD_UNKNOWN, "cannot read " },
		{ "garbage", NPD_UNKNOWN, "cannot read " },
		{ "empty-cgroups", NPD_UNKNOWN, "cannot read " },
		{ "missing-cgroups", NPD_UNKNOWN, "cannot read " },
		{ "missing-hierarchy", NPD_UNKNOWN, "cannot open memory hierarchy " },
		{ "v2-missing-stat", NPD_UNKNOWN, "cannot read " },
		{ "v2-bad-stat", NPD_UNKNOWN, "cannot read " },
	};
	char statedir[128];

	snprintf(statedir, sizeof(statedir), "/tmp/cz-unit-memcg-%ld", (long)getpid());
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct cz_ctx ctx = { 0 };
		struct npd_result res = { 0 };
		char proc[512], sys[512];

		config_defaults(&ctx.cfg);
		snprintf(ctx.cfg.paths.state, sizeof(ctx.cfg.paths.state), "%s", statedir);
		snprintf(proc, sizeof(proc), FIXTURES "/memcg/%s/proc", t[i].tree);
		snprintf(sys, sizeof(sys), FIXTURES "/memcg/%s/sys", t[i].tree);
		assert_int_equal(hostfs_open(&ctx.hf, proc, sys), 0);
		if (check_memcg(&ctx, NULL, &res) != t[i].status || !startswith(res.msg, t[i].starts))
			fail_msg("%s: status %d msg '%s'", t[i].tree, res.status, res.msg);
		if (t[i].status == NPD_UNKNOWN)
			assert_non_null(strstr(res.msg, t[i].tree)); /* names the file it could not use */
		hostfs_close(&ctx.hf);
	}
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", statedir);
		assert_int_equal(system(cmd), 0);
	}
}

/*
 * The census's root (memcg_open_root): chosen by /proc/cgroups' hierarchy column, never by
 * which directory exists. On pure v2 a cgroup named "memory" under the root is a cgroup, and
 * attaching the census there would count only its subtree.
 */
static void test_open_root(void **state)
{
	static const struct {
		const char *tree, *want; /* want: the directory under sys/ it must open */
		int err;
	} t[] = {
		{ "v2-descendants", "fs/cgroup", 0 },
		{ "v2-cgroup-named-memory", "fs/cgroup", 0 },
		{ "v1-zombies", "fs/cgroup/memory", 0 },
		{ "this-vm-hybrid", "fs/cgroup/memory", 0 },
		{ "no-mountinfo", "fs/cgroup/memory", 0 },	/* the conventional v1 path */
		{ "no-memory-row", NULL, -ENODATA },
		{ "missing-cgroups", NULL, -ENOENT },
		{ "garbage", NULL, -EINVAL },
		{ "missing-hierarchy", NULL, -ENOENT },
		{ "v2-missing-stat", NULL, -ENOENT },	/* no fs/cgroup directory at all */
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct hostfs hf;
		struct stat got, want;
		char proc[512], sys[512], dir[600];
		int fd;

		snprintf(proc, sizeof(proc), FIXTURES "/memcg/%s/proc", t[i].tree);
		snprintf(sys, sizeof(sys), FIXTURES "/memcg/%s/sys", t[i].tree);
		assert_int_equal(hostfs_open(&hf, proc, sys), 0);
		fd = memcg_open_root(&hf);
		hostfs_close(&hf);
		if (!t[i].want) {
			if (fd != t[i].err)
				fail_msg("%s: got %d, want %d", t[i].tree, fd, t[i].err);
			continue;
		}
		if (fd < 0)
			fail_msg("%s: %d", t[i].tree, fd);
		snprintf(dir, sizeof(dir), "%s/%s", sys, t[i].want);
		assert_int_equal(fstat(fd, &got), 0);
		assert_int_equal(stat(dir, &want), 0);
		if (got.st_ino != want.st_ino || got.st_dev != want.st_dev)
			fail_msg("%s: opened another directory than %s", t[i].tree, t[i].want);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_cgroups),	 cmocka_unit_test(test_cgroup_stat),
		cmocka_unit_test(test_meminfo_osrelease), cmocka_unit_test(test_find_mount),
		cmocka_unit_test(test_verdict),		 cmocka_unit_test(test_history),
		cmocka_unit_test(test_check_on_trees),	 cmocka_unit_test(test_open_root),
	};
	return cmocka_run_group_tests_name("memcg", tests, NULL, NULL);
}
