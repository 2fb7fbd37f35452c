/* SPDX-License-Identifier: MIT */
/* checks/memcg_where: the pure halves of "which cgroup v2 subtree holds the dying memcgs". */
#include "testutil.h"
#include "memcg/memcg_where.h"
#include "memcg/pods.h"

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

static void test_pod_uid(void **state)
{
	char uid[POD_UID_LEN + 1];

	(void)state;
	assert_int_equal(memcg_where_pod_uid("kubepods.slice/kubepods-burstable.slice/"
					     "kubepods-burstable-pod6b1c2d3e_4f5a_6b7c_8d9e_0f1a2b3c4d5e"
					     ".slice", uid, sizeof(uid)), 0);
	assert_string_equal(uid, "6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e");
	assert_int_equal(memcg_where_pod_uid("kubepods/besteffort/pod6b1c2d3e-4f5a-6b7c-8d9e-"
					     "0f1a2b3c4d5e", uid, sizeof(uid)), 0);	/* cgroupfs */
	assert_int_equal(memcg_where_pod_uid("system.slice", uid, sizeof(uid)), -ENOENT);
	assert_int_equal(memcg_where_pod_uid("kubepods.slice/kubepods-besteffort.slice", uid,
					     sizeof(uid)), -ENOENT);
	assert_int_equal(memcg_where_pod_uid("kubepods.slice/kubepods-podZZ1c2d3e_4f5a_6b7c_8d9e_"
					     "0f1a2b3c4d5e.slice", uid, sizeof(uid)), -ENOENT);
	assert_int_equal(memcg_where_pod_uid("pod6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e", uid, 10),
			 -ENOENT);
}

static void test_pods_file(void **state)
{
	char line[600], text[2048], who[600];
	const char *uid = "6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e";

	(void)state;
	assert_int_equal(pods_format_line(uid, "team-a", "web-7f9c", line, sizeof(line)),
			 strlen("p 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e team-a web-7f9c\n"));
	/* what is not a valid UID or DNS name is never published */
	assert_int_equal(pods_format_line(uid, "Team", "web", line, sizeof(line)), 0);
	assert_int_equal(pods_format_line(uid, "a", "web x", line, sizeof(line)), 0);
	assert_int_equal(pods_format_line(uid, "a", "-web", line, sizeof(line)), 0);
	assert_int_equal(pods_format_line("not-a-uid", "a", "b", line, sizeof(line)), 0);
	assert_int_equal(pods_format_line(uid, NULL, "b", line, sizeof(line)), 0);
	/* the kubelet's pod log directory names: NAMESPACE_NAME_UID */
	assert_int_equal(pods_log_dir_line("team-a_web-7f9c_6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
					   line, sizeof(line)),
			 strlen("p 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e team-a web-7f9c\n"));
	assert_string_equal(line, "p 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e team-a web-7f9c\n");
	assert_int_equal(pods_log_dir_line("kube-system_coredns.v1-x_6b1c2d3e-4f5a-6b7c-8d9e-"
					   "0f1a2b3c4d5e", line, sizeof(line)),
			 strlen("p 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e kube-system coredns.v1-x\n"));
	assert_string_equal(line, "p 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e kube-system coredns.v1-x\n");
	assert_int_equal(pods_log_dir_line("..", line, sizeof(line)), 0);
	assert_int_equal(pods_log_dir_line("a_b", line, sizeof(line)), 0);
	assert_int_equal(pods_log_dir_line("a__6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e", line,
					   sizeof(line)), 0);			/* no name */
	assert_int_equal(pods_log_dir_line("a_b_c_6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e", line,
					   sizeof(line)), 0);			/* '_' in a name */
	assert_int_equal(pods_log_dir_line("kube-system_etcd-n1_0123456789abcdef0123456789abcdef",
					   line, sizeof(line)), 0);		/* static pod hash */
	assert_int_equal(pods_log_dir_line("a_\x1b[31m_6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e", line,
					   sizeof(line)), 0);
	snprintf(text, sizeof(text), "cpuzombie-pods 1\nt 1000\n"
		 "p 00000000-0000-0000-0000-000000000001 kube-system coredns-1\n%s",
		 "p 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e team-a web-7f9c\n");
	assert_int_equal(pods_find(text, uid, 0, who, sizeof(who)), 0);
	assert_string_equal(who, "team-a/web-7f9c");
	assert_int_equal(pods_find(text, "00000000-0000-0000-0000-000000000002", 0, who,
				   sizeof(who)), -ENOENT);
	assert_int_equal(pods_find(text, uid, 2000, who, sizeof(who)), -ESTALE);
	assert_int_equal(pods_find("cpuzombie-pods 1\nt 1\np x y z\n", uid, 0, who, sizeof(who)),
			 -EINVAL);
	assert_int_equal(pods_find("cpuzombie-pods 1\np 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e a b\n",
				   uid, 0, who, sizeof(who)), -EINVAL);		/* no time */
	assert_int_equal(pods_find("cpuzombie-pods 1\nt 1\np 6b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e a "
				   "\x1b[31m\n", uid, 0, who, sizeof(who)), -EINVAL);
	assert_int_equal(pods_find("cpuzombie-pods 2\nt 1\n", uid, 0, who, sizeof(who)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_dying_prefers_memory),
		cmocka_unit_test(test_format_keeps_the_end),
		cmocka_unit_test(test_pod_uid),
		cmocka_unit_test(test_pods_file),
	};
	return cmocka_run_group_tests_name("memcg_where", tests, NULL, NULL);
}
