/* SPDX-License-Identifier: MIT */
/*
 * Regressions found by the bad-input catalogue (tests/e2e/test_bad_inputs.py): a FIFO where a
 * file is expected must fail at once, never block the open (a check blocked in open() holds NPD
 * past its timeout). An alarm turns a hang into a failed test instead of a stuck suite.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "base/config.h"
#include "host/hostfs.h"
#include "kube/kubeconfig.h"

static char dir[64];

static void hung(int sig)
{
	(void)sig;
	fail_msg("blocked on a FIFO");
}

static int setup(void **state)
{
	char p[128];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cz-hardening-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(p, sizeof(p), "%s/fifo", dir);
	if (mkfifo(p, 0600) < 0)
		return -1;
	signal(SIGALRM, hung);
	alarm(10);
	return 0;
}

static int teardown(void **state)
{
	char p[128];

	(void)state;
	alarm(0);
	snprintf(p, sizeof(p), "%s/fifo", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

static void test_config_fifo(void **state)
{
	struct cz_config cfg;
	char path[128], errs[512] = "";

	(void)state;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_true(config_load_file(path, &cfg, errs, sizeof(errs)) < 0);
	assert_non_null(strstr(errs, "cannot read"));
	assert_non_null(strstr(errs, path));
}

static void test_kubeconfig_fifo(void **state)
{
	struct kube_auth a = { 0 };
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_true(kubeconfig_load(path, &a) < 0);
}

static void test_hostfs_fifo(void **state)
{
	struct hostfs hf;
	char buf[64];

	(void)state;
	assert_int_equal(hostfs_open(&hf, dir, dir), 0);
	assert_true(hostfs_read(&hf, HOSTFS_PROC, "fifo", buf, sizeof(buf)) < 0);
	hostfs_close(&hf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_fifo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kubeconfig_fifo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostfs_fifo, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
