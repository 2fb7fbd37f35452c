/* SPDX-License-Identifier: MIT */
#include "testutil.h"
#include <linux/capability.h>
#include <sys/wait.h>
#include "agent/privdrop.h"
#include "base/config.h"
#include "host/caps.h"
#include "base/util.h"

#define BIT(c) (1ull << (c))

static void test_caps_format(void **state)
{
	char buf[256], tiny[8] = "zzz";

	assert_int_equal(caps_format(0, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "none");
	assert_int_equal(caps_format(BIT(CAP_PERFMON) | BIT(CAP_SYSLOG), buf, sizeof(buf)),
			 (int)strlen("syslog,perfmon"));
	assert_string_equal(buf, "syslog,perfmon");
	assert_true(caps_format(BIT(CAP_CHOWN) | BIT(CAP_CHECKPOINT_RESTORE) | BIT(45), buf,
				sizeof(buf)) > 0);
	assert_string_equal(buf, "chown,checkpoint_restore,cap_45");
	assert_int_equal(caps_format(BIT(CAP_PERFMON), tiny, 7), -ENOBUFS);
	assert_string_equal(tiny, "");
	assert_int_equal(caps_format(0, tiny, 4), -ENOBUFS);
	assert_int_equal(caps_format(0, tiny, 0), -ENOBUFS);
}

static void test_privdrop_keep(void **state)
{
	static struct cz_config cfg;
	const uint64_t chart = BIT(CAP_PERFMON) | BIT(CAP_SYSLOG), all = (BIT(41) - 1);

	memset(&cfg, 0, sizeof(cfg));
	/* the chart's default: burst profiles only; nothing later needs either */
	assert_true(privdrop_keep(&cfg, true, chart) == 0);
	/* the census loads its program every time: BPF and PERFMON stay (when held) */
	cfg.memcg.census_interval_ms = 600000;
	assert_true(privdrop_keep(&cfg, true, chart | BIT(CAP_BPF)) ==
		    (BIT(CAP_BPF) | BIT(CAP_PERFMON)));
	assert_true(privdrop_keep(&cfg, false, chart | BIT(CAP_BPF)) == 0); /* not built */
	assert_true(privdrop_keep(&cfg, true, BIT(CAP_SYSLOG)) == 0);	      /* never more */
	/* PERFMON alone cannot load it: the chart's default caps with the embedded census on */
	assert_true(privdrop_keep(&cfg, true, chart) == 0);
	cfg.memcg.census_interval_ms = 0;
	/* the kernel log is opened again on a reload: SYSLOG stays */
	snprintf(cfg.agent.kmsg, sizeof(cfg.agent.kmsg), "/dev/kmsg");
	assert_true(privdrop_keep(&cfg, true, chart) == BIT(CAP_SYSLOG));
	cfg.agent.kmsg[0] = '\0';
	/* kernel stacks (readKernelStacks): SYS_ADMIN with SYS_PTRACE and DAC_READ_SEARCH */
	assert_true(privdrop_keep(&cfg, true, chart | BIT(CAP_SYS_ADMIN) | BIT(CAP_SYS_PTRACE)) ==
		    (BIT(CAP_SYS_ADMIN) | BIT(CAP_SYS_PTRACE)));
	assert_true(privdrop_keep(&cfg, true, BIT(CAP_SYS_PTRACE)) == 0);
	/* full root (systemd): what those need, nothing else (no DAC_OVERRIDE, SETUID, ...) */
	assert_true(privdrop_keep(&cfg, true, all) ==
		    (BIT(CAP_SYS_ADMIN) | BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH)));
}

static void test_privdrop_format(void **state)
{
	struct caps_state before = { .prm = BIT(CAP_PERFMON) | BIT(CAP_SYSLOG),
				     .eff = BIT(CAP_PERFMON) | BIT(CAP_SYSLOG),
				     .bnd = BIT(CAP_PERFMON) | BIT(CAP_SYSLOG) | BIT(CAP_SETPCAP) };
	struct caps_state after = { .nnp = true };
	char buf[512], small[20];

	before.prm |= BIT(CAP_SETPCAP);
	assert_true(privdrop_format(&before, &after, 0, 0, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "capabilities: dropped setpcap,syslog,perfmon after start; kept "
				 "none; bounding set none; no_new_privs");
	/* the chart today: no CAP_SETPCAP, so the bounding set keeps what it had */
	before.prm &= ~BIT(CAP_SETPCAP);
	after.bnd = BIT(CAP_PERFMON) | BIT(CAP_SYSLOG);
	assert_true(privdrop_format(&before, &after, 0, 0, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "capabilities: dropped syslog,perfmon after start; kept none; "
				 "bounding set syslog,perfmon (no CAP_SETPCAP to drop it); "
				 "no_new_privs");
	/* the census keeps two */
	after.prm = after.eff = after.bnd = BIT(CAP_PERFMON) | BIT(CAP_BPF);
	before.prm |= BIT(CAP_BPF);
	assert_true(privdrop_format(&before, &after, after.prm, -EPERM, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "capabilities: dropped syslog after start; kept perfmon,bpf; "
				 "bounding set perfmon,bpf; no_new_privs; the drop failed: "
				 "Operation not permitted");
	assert_int_equal(privdrop_format(&before, &after, 0, 0, small, sizeof(small)), -ENOBUFS);
}

/* caps_drop for real, in a child (capabilities are per thread): root with everything, keep two. */
static void test_caps_drop_real(void **state)
{
	pid_t pid;
	int st = -1;

	if (geteuid() != 0) {
		print_message("SKIP test_caps_drop_real: needs root\n");
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct caps_state s0, s1, s2;
		const uint64_t keep = BIT(CAP_SYSLOG) | BIT(CAP_BPF);

		if (caps_read(&s0) < 0 || !(s0.prm & BIT(CAP_SETPCAP)) || !(s0.prm & keep))
			_exit(77); /* not a full root here */
		if (caps_drop(keep, &s1) < 0)
			_exit(1);
		if (s1.prm != (keep & s0.prm) || s1.eff != s1.prm || s1.inh || s1.amb)
			_exit(2);
		if (s1.bnd != (keep & s0.bnd) || !s1.nnp)
			_exit(3);
		/* for good: nothing dropped comes back */
		if (caps_drop(keep | BIT(CAP_PERFMON) | BIT(CAP_SETPCAP), &s2) != 0 ||
		    s2.prm != s1.prm || s2.bnd != s1.bnd)
			_exit(4);
		if (caps_drop(0, &s2) != 0 || s2.prm != 0 || s2.eff != 0)
			_exit(5);
		/* the bounding set stays (no CAP_SETPCAP now), no error for that */
		if (s2.bnd != s1.bnd)
			_exit(6);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("SKIP test_caps_drop_real: root without CAP_SETPCAP here\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_format),
		cmocka_unit_test(test_privdrop_keep),
		cmocka_unit_test(test_privdrop_format),
		cmocka_unit_test(test_caps_drop_real),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
