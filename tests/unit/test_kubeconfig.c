/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include <stdlib.h>

#include "base/log.h"
#include "kube/kubeconfig.h"

/* The last line logged (kubeconfig errors go to the one logging channel). */
static char logged[512];

static int capture(enum log_prio prio, const struct log_fields *f, const char *msg)
{
	(void)prio;
	(void)f;
	snprintf(logged, sizeof(logged), "%s", msg);
	return 0;
}

#define KC(user) \
	"apiVersion: v1\nkind: Config\ncurrent-context: b\n" \
	"clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443/\n" \
	"    certificate-authority-data: aGVsbG8=\n" \
	"contexts:\n- name: a\n  context: {cluster: nope, user: u}\n" \
	"- name: b\n  context: {cluster: c, user: u}\n" \
	"users:\n- name: u\n  user:\n" user

static void test_token_and_ca_data(void **s)
{
	const char *t = KC("    token: abc\n");
	struct kube_auth a = { 0 };

	assert_int_equal(kubeconfig_parse(t, strlen(t), "/etc", &a), 0);
	assert_string_equal(a.server, "https://10.0.0.1:6443");
	assert_string_equal(a.token, "abc");
	assert_int_equal(a.ca_data_len, 5);
	assert_memory_equal(a.ca_data, "hello", 5);
	assert_false(a.insecure);
	kubeconfig_free(&a);
}

static void test_files_relative_and_exec(void **s)
{
	const char *t = KC("    client-certificate: c.pem\n    client-key: /abs/k.pem\n"
			   "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
			   "      command: aws\n      args: [eks, get-token]\n"
			   "      env: [{name: A, value: b}]\n");
	struct kube_auth a = { 0 };

	assert_int_equal(kubeconfig_parse(t, strlen(t), "/etc/kube", &a), 0);
	assert_string_equal(a.cert_file, "/etc/kube/c.pem");
	assert_string_equal(a.key_file, "/abs/k.pem");
	assert_true(a.has_exec);
	assert_string_equal(a.exec.command, "aws");
	assert_string_equal(a.exec.args[1], "get-token");
	assert_null(a.exec.args[2]);
	assert_string_equal(a.exec.env[0], "A=b");
	kubeconfig_free(&a);
}

static void test_bad_inputs_leave_output_untouched(void **s)
{
	static const char *const bad[] = {
		"current-context: x\n",
		"[1, 2",
		"apiVersion: v1\ncurrent-context: b\nclusters:\n- name: c\n  cluster:\n"
		"    server: http://plain:80\ncontexts:\n- name: b\n  context: {cluster: c}\n",
		KC("    client-certificate: only-cert.pem\n"),
		KC("    client-key-data: '!!!'\n    client-certificate-data: aGVsbG8=\n"),
		KC("    exec: {command: x, apiVersion: client.authentication.k8s.io/v1alpha1}\n"),
		"a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]"
		"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
	};

	log_set_sink(capture);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kube_auth a = { .server = (char *)"sentinel" };

		logged[0] = '\0';
		assert_true(kubeconfig_parse(bad[i], strlen(bad[i]), NULL, &a) < 0);
		assert_string_equal(a.server, "sentinel");
		assert_true(logged[0] != '\0');
	}
	log_set_sink(NULL);
}

/* A CR or LF in a token would start a header of its own: refused, with the reason logged. */
static void test_token_with_control_characters_refused(void **s)
{
	static const char *const bad[] = {
		KC("    token: \"t\\r\\nX-Evil: kubeconfig\"\n"),
		KC("    token: \"t\\nX\"\n"),
		KC("    token: \"t\\x01\"\n"),
		KC("    token: \"t\\x7f\"\n"),
		KC("    token: \"t\\0rest\"\n"),	/* a NUL must not cut it to "t" */
	};

	log_set_sink(capture);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kube_auth a = { .server = (char *)"sentinel" };

		logged[0] = '\0';
		assert_int_equal(kubeconfig_parse(bad[i], strlen(bad[i]), NULL, &a), -EINVAL);
		assert_string_equal(a.server, "sentinel");
		assert_non_null(strstr(logged, "control characters"));
	}
	log_set_sink(NULL);
}

static void test_incluster_ipv6(void **s)
{
	struct kube_auth a = { 0 };

	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kubeconfig_incluster("/sa", &a), 0);
	assert_string_equal(a.server, "https://[fd00::1]:443");
	assert_string_equal(a.token_file, "/sa/token");
	assert_string_equal(a.ca_file, "/sa/ca.crt");
	kubeconfig_free(&a);
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(kubeconfig_incluster("/sa", &a), -ENOENT);
}

static void test_base64(void **s)
{
	unsigned char *out;
	size_t n;

	assert_int_equal(base64_decode("aGk=", 4, &out, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(out, "hi", 2);
	free(out);
	assert_int_equal(base64_decode("a=b", 3, &out, &n), -EINVAL);
	assert_int_equal(base64_decode("a", 1, &out, &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_and_ca_data),
		cmocka_unit_test(test_files_relative_and_exec),
		cmocka_unit_test(test_bad_inputs_leave_output_untouched),
		cmocka_unit_test(test_token_with_control_characters_refused),
		cmocka_unit_test(test_incluster_ipv6),
		cmocka_unit_test(test_base64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
