/* SPDX-License-Identifier: MIT */
/* The Prometheus textfile of a fixed node (golden file) and its atomic replacement. */
#include "testutil.h"

#include <sys/stat.h>

#include "agent/metrics.h"
#include "report_fixture.h"

static void test_golden_and_values(void **state)
{
	struct node_model *r = fx_report();
	char *t = fx_render(metrics_format, r);

	fx_golden("node1.prom", t);
	assert_non_null(strstr(t, "cpuzombie_agent_info{version=\"@VERSION@\",node=\"ip-10-0-7-12\"} 1\n"));
	assert_non_null(strstr(t, "\ncpuzombie_memcg_dying 12840\n"));
	assert_non_null(strstr(t, "\ncpuzombie_memcg_dying_ratio 1070\n"));
	assert_non_null(strstr(t, "\ncpuzombie_memcg_exposed 1\n"));
	assert_non_null(strstr(t, "\ncpuzombie_memcg_canary_read_seconds 0.712345\n"));
	assert_non_null(strstr(t, "\ncpuzombie_cpu_bursts{cpu=\"3\"} 2\n"));	/* one ongoing */
	assert_non_null(strstr(t, "\ncpuzombie_cpu_bursts{cpu=\"1\"} 0\n"));
	assert_non_null(strstr(t, "\ncpuzombie_cpu_burst_seconds{cpu=\"3\"} 13.000\n"));
	assert_non_null(strstr(t, "cpuzombie_ena_resets_total{interface=\"eth0\",cause=\"suspected_poll_starvation\"} 1\n"));
	assert_non_null(strstr(t, "cpuzombie_ena_resets_window{interface=\"eth0\"} 1\n"));
	assert_non_null(strstr(t, "cpuzombie_ena_allowance_exceeded_total{interface=\"eth0\",counter=\"bw_in_allowance_exceeded\"} 314\n"));
	assert_non_null(strstr(t, "cpuzombie_check_status{check=\"cpu\",condition=\"CPUCoreSaturation\"} 1\n"));
	assert_non_null(strstr(t, "cpuzombie_condition_true{check=\"ena\",condition=\"ENADeviceReset\"} 1\n"));
	assert_non_null(strstr(t, "\ncpuzombie_systemd_unit_restarts{unit=\"ecs.service\"} 4211\n"));
	assert_non_null(strstr(t, "\ncpuzombie_systemd_unit_restarts{unit=\"fluent-bit.service\"} 3\n"));
	free(t);
	node_model_free(r);
}

static void test_label_escaping_and_unknown_memcg(void **state)
{
	struct node_model *r = fx_report();
	char *t;

	snprintf(r->node, sizeof(r->node), "a\"b\\c\nd");
	r->memcg_rc = NPD_UNKNOWN;
	t = fx_render(metrics_format, r);
	assert_non_null(strstr(t, "node=\"a\\\"b\\\\c\\nd\"} 1\n"));
	assert_null(strstr(t, "cpuzombie_memcg_dying "));	/* unknown: no made-up zero */
	free(t);
	node_model_free(r);
}

static void test_write_atomic(void **state)
{
	struct node_model *r = fx_report();
	char dir[] = "/tmp/cz-metrics-XXXXXX", path[128], tmp[140], buf[64];
	struct stat st;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cpuzombie.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(path, "w");
	fputs("old\n", f);
	fclose(f);
	assert_int_equal(metrics_write(r, path), 0);
	assert_int_equal(stat(tmp, &st), -1);			/* no temporary file left */
	f = fopen(path, "r");
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_memory_equal(buf, "# HELP cpuzombie_agent_info", 27);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);		/* node_exporter reads it */
	/* under a strict umask too, and a FIFO left at the temporary name neither blocks the
	 * writer nor survives it (the one atomic writer of base/fileio.h) */
	assert_int_equal(mkfifo(tmp, 0600), 0);
	{
		mode_t old = umask(077);

		assert_int_equal(metrics_write(r, path), 0);
		umask(old);
	}
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(lstat(tmp, &st), -1);
	assert_int_equal(metrics_write(r, "/"), -EINVAL);	/* no file name */
	/* a directory that does not exist: error, nothing written */
	assert_int_equal(metrics_write(r, "/nonexistent-cz/x.prom"), -ENOENT);
	unlink(path);
	rmdir(dir);
	node_model_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_and_values),
		cmocka_unit_test(test_label_escaping_and_unknown_memcg),
		cmocka_unit_test(test_write_atomic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
