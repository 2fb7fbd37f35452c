/* SPDX-License-Identifier: MIT */
/*
 * Credentials (credentials.h): the ExecCredential parser, token files, and exec plugins run for
 * real through posix_spawn (sh scripts in a temporary directory): output, environment, exit
 * status, the timeout that kills the plugin's whole process group.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "base/log.h"
#include "base/util.h"
#include "kube/credentials.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/cz-creds-%d", (int)getpid());
	(void)state;
	return mkdir(dir, 0700);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void write_file(const char *name, const char *text, mode_t mode, char *path, size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_exec_parse(void **s)
{
	struct creds_exec_result r = { .token = (char *)"sentinel" };

	assert_int_equal(creds_exec_parse("{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"abc\","
					  "\"expirationTimestamp\":\"2024-01-01T00:00:00Z\"}}", &r), 0);
	assert_string_equal(r.token, "abc");
	assert_int_equal(r.expiry_ms, 1704067200000ull);
	creds_exec_clear(&r);
	assert_int_equal(creds_exec_parse("{\"kind\":\"ExecCredential\",\"status\":{"
					  "\"clientCertificateData\":\"C\",\"clientKeyData\":\"K\"}}",
					  &r), 0);
	assert_null(r.token);
	assert_string_equal(r.cert, "C");
	assert_int_equal(r.expiry_ms, 0);
	creds_exec_clear(&r);
	r.token = (char *)"sentinel";
	static const char *const bad[] = {
		"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\\r\\nX-Evil: 1\"}}",
		"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\\u0000\"}}",
		"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"\"}}",
		"{\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":\"C\"}}",
		"{\"kind\":\"Secret\",\"status\":{\"token\":\"t\"}}",
		"{\"kind\":\"ExecCredential\",\"status\":{\"token\":5}}",
		"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}} trailing",
		"not json", "",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		print_message("bad: %s\n", bad[i]);
		assert_int_equal(creds_exec_parse(bad[i], &r), -EINVAL);
		assert_string_equal(r.token, "sentinel");	/* untouched */
	}
}

static void test_token_file(void **s)
{
	static const struct {
		const char *text;
		int ret;
		const char *token;
	} rows[] = {
		{ "abc\n", 0, "abc" },
		{ "abc \r\n\n", 0, "abc" },	/* trailing white space of any kind goes */
		{ "a\rb\n", -EINVAL, NULL },	/* inside: refused */
		{ "a\nb\n", -EINVAL, NULL },
		{ "a\tb", -EINVAL, NULL },
		{ "\n", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
	};
	char path[128];

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char *tok = (char *)"sentinel";

		write_file("token", rows[i].text, 0600, path, sizeof(path));
		assert_int_equal(creds_read_token_file(path, &tok), rows[i].ret);
		assert_string_equal(tok, rows[i].token ? rows[i].token : "sentinel");
		if (rows[i].ret == 0)
			free(tok);
	}
	assert_int_equal(creds_read_token_file("/nonexistent/token", &(char *){ NULL }), -ENOENT);
	/* too big: -EFBIG ("File too large"), not -E2BIG ("Argument list too long") */
	{
		static char big[CREDS_TOKEN_MAX + 2];

		memset(big, 'a', sizeof(big) - 1);
		write_file("token", big, 0600, path, sizeof(path));
		assert_int_equal(creds_read_token_file(path, &(char *){ NULL }), -EFBIG);
	}
}

static void test_exec_run_output_env_and_status(void **s)
{
	char path[128], *argv0, *out = NULL;
	struct kube_exec e = { .api_version = (char *)"client.authentication.k8s.io/v1" };

	write_file("ok.sh", "#!/bin/sh\necho \"$1 $A $KUBERNETES_EXEC_INFO\"\n", 0700, path,
		   sizeof(path));
	argv0 = path;
	e.command = argv0;
	e.args[0] = (char *)"arg1";
	e.env[0] = (char *)"A=from-kubeconfig";
	setenv("A", "from-agent", 1);	/* the kubeconfig's entry wins */
	assert_int_equal(creds_exec_run(&e, 10000, &out), 0);
	assert_non_null(strstr(out, "arg1 from-kubeconfig {\"apiVersion\":\"client.authentication"
				    ".k8s.io/v1\",\"kind\":\"ExecCredential\""));
	free(out);
	unsetenv("A");
	write_file("fail.sh", "#!/bin/sh\necho partial\nexit 3\n", 0700, path, sizeof(path));
	e.command = path;
	out = (char *)"sentinel";
	assert_int_equal(creds_exec_run(&e, 10000, &out), -ECHILD);
	assert_string_equal(out, "sentinel");
	e.command = (char *)"/nonexistent/plugin";
	assert_true(creds_exec_run(&e, 10000, &out) < 0);
}

static void test_exec_run_timeout_kills_group(void **s)
{
	char path[128], pidfile[160], buf[32] = "";
	struct kube_exec e = { .api_version = (char *)"client.authentication.k8s.io/v1" };
	char *out = NULL;
	uint64_t t0 = now_monotonic_ms();
	FILE *f;
	long pgid;

	snprintf(pidfile, sizeof(pidfile), "%s/pgid", dir);
	write_file("hang.sh", "#!/bin/sh\necho $$ > \"$1\"\nsleep 1000 &\nexec sleep 1000\n", 0700,
		   path, sizeof(path));
	e.command = path;
	e.args[0] = pidfile;
	assert_int_equal(creds_exec_run(&e, 500, &out), -ETIME);
	assert_true(now_monotonic_ms() - t0 < 10000);
	f = fopen(pidfile, "re");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	pgid = strtol(buf, NULL, 10);
	assert_true(pgid > 1);
	/* the group is gone: the leader was reaped, its background sleep killed with it */
	for (int i = 0; i < 100 && kill(-(pid_t)pgid, 0) == 0; i++)
		usleep(20000);
	assert_int_equal(kill(-(pid_t)pgid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

/* What log.h was given, in order (the sink of the tests below). */
static char logged[8192];

static int capture(enum log_prio prio, const struct log_fields *f, const char *msg)
{
	size_t n = strlen(logged);

	(void)f;
	snprintf(logged + n, sizeof(logged) - n, "%d %s\n", (int)prio, msg);
	return 0;
}

/*
 * The plugin's stderr never goes straight to our stderr (the terminal, the journal), where an
 * escape sequence in it would reach the terminal raw: it is read through a pipe and
 * logged one entry a line through log.h, whose text safety shows control characters visibly;
 * bounded in lines and bytes; a warning when the plugin failed.
 */
static void test_exec_stderr_is_logged_safe(void **s)
{
	char path[128], *out = NULL;
	struct kube_exec e = { .api_version = (char *)"client.authentication.k8s.io/v1" };

	write_file("chatty.sh", "#!/bin/sh\nprintf 'hello \\033]0;pwned\\007\\033[2J\\r"
		   "there\\nline two\\n' >&2\necho '{\"kind\":\"ExecCredential\"}'\n", 0700,
		   path, sizeof(path));
	e.command = path;
	logged[0] = '\0';
	log_set_max_level(LOG_PRIO_INFO);
	log_set_sink(capture);
	assert_int_equal(creds_exec_run(&e, 10000, &out), 0);
	free(out);
	assert_non_null(strstr(logged, "said: hello \\e]0;pwned\\x07\\e[2J\\rthere\n"));
	assert_non_null(strstr(logged, "said: line two\n"));
	assert_null(strchr(logged, '\033'));
	assert_null(strchr(logged, '\r'));
	assert_null(strchr(logged, '\a'));
	assert_int_equal(logged[0] - '0', LOG_PRIO_INFO);
	/* a failing plugin's reason, as a warning; a flood is cut at the bound and counted */
	write_file("flood.sh", "#!/bin/sh\necho 'token expired' >&2\n"
		   "head -c 100000 /dev/zero | tr '\\0' x >&2\nexit 3\n", 0700, path, sizeof(path));
	logged[0] = '\0';
	assert_int_equal(creds_exec_run(&e, 10000, &out), -ECHILD);
	assert_non_null(strstr(logged, "said: token expired\n"));
	assert_int_equal(logged[0] - '0', LOG_PRIO_WARNING);
	assert_non_null(strstr(logged, "said more ("));
	assert_true(strlen(logged) < 2 * CREDS_EXEC_MAX_STDERR);
	log_set_sink(NULL);
	log_set_max_level((enum log_prio)0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_parse),
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_exec_run_output_env_and_status),
		cmocka_unit_test(test_exec_run_timeout_kills_group),
		cmocka_unit_test(test_exec_stderr_is_logged_safe),
	};

	log_set_max_level((enum log_prio)0);
	return cmocka_run_group_tests(tests, setup, teardown);
}
