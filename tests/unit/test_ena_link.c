/* SPDX-License-Identifier: MIT */
/* The queue -> CPU -> burst link on the real ENA IRQ layout of fixture 15 (amzn-drivers#316):
 * enp39s0-Tx-Rx-0 is served by cpu1; a 6.2 s burst on cpu1 in the sampler's log must end up
 * in the ENA cause. */
#include <stdlib.h>

#include "testutil.h"
#include "check/cz.h"
#include "ena/ena.h"
#include "ena/ena_link.h"
#include "cpu/history.h"
#include "base/util.h"

static char run_dir[128];

static void ctx_on_fixture(struct cz_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	config_defaults(&ctx->cfg);
	snprintf(ctx->cfg.paths.run, sizeof(ctx->cfg.paths.run), "%s", run_dir);
	assert_int_equal(hostfs_open(&ctx->hf, FIXTURES "/cpu/irq-ena/proc",
				     FIXTURES "/cpu/irq-ena/sys"), 0);
}

static int setup(void **state)
{
	snprintf(run_dir, sizeof(run_dir), "/tmp/cz-unit-enalink-%ld", (long)getpid());
	return 0;
}

static int teardown(void **state)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", run_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct ethtool_devdump parse1(const char *text)
{
	struct ethtool_devdump *d = NULL, out;
	struct ethtool_text_error err;
	size_t n = 0;

	assert_int_equal(ethtool_parse_text(text, strlen(text), &d, &n, &err), 0);
	assert_int_equal(n, 1);
	out = d[0];
	memset(&d[0], 0, sizeof(d[0]));
	ethtool_dumps_free(d, n);
	return out;
}

static void test_no_bursts(void **state)
{
	struct cz_ctx ctx;
	struct ena_queue_cpu qc[8];

	ctx_on_fixture(&ctx);
	/* no burst log yet: the pairs are known, no burst */
	assert_int_equal(ena_link_queue_cpus(&ctx, "enp39s0", qc, 8), 1);
	assert_int_equal(qc[0].queue, 0);
	assert_int_equal(qc[0].cpu, 1);
	assert_true(qc[0].burst_ms == 0);
	assert_int_equal(ena_link_queue_cpus(&ctx, "nope0", qc, 8), -ENOENT);
	hostfs_close(&ctx.hf);
}

static void test_burst_reaches_the_cause(void **state)
{
	struct cz_ctx ctx;
	struct ena_queue_cpu qc[8];
	uint64_t now = now_realtime_ms();
	struct burst_event ev = { .cpu = 1, .start_ms = now - 60000, .end_ms = now - 53800,
				  .peak_pct = 100, .mean_pct = 99 }, other = ev;
	struct ethtool_devdump before, after;
	struct ena_lists l;
	struct ena_verdict v;

	ctx_on_fixture(&ctx);
	other.cpu = 3; /* a longer burst on a core that serves no queue: not ours */
	other.end_ms = other.start_ms + 9000;
	assert_int_equal(burst_log_append(run_dir, &ev), 0);
	assert_int_equal(burst_log_append(run_dir, &other), 0);
	assert_int_equal(ena_link_queue_cpus(&ctx, "enp39s0", qc, 8), 1);
	assert_true(qc[0].cpu == 1 && qc[0].burst_ms == 6200);

	before = parse1("  total_resets: 0\n  suspected_poll_starvation: 0\n"
			"  queue_0_tx_missed_tx: 0\n");
	after = parse1("  total_resets: 1\n  suspected_poll_starvation: 1\n"
		       "  queue_0_tx_missed_tx: 4\n");
	l = ena_lists_from_config(&ctx.cfg);
	assert_int_equal(ena_diff(&before, &after, &l, qc, 1, &v), 0);
	if (!startswith(v.cause, "poll starvation q0 (cpu1 burst 6.2s)"))
		fail_msg("cause '%s'", v.cause);
	ethtool_dump_free(&before);
	ethtool_dump_free(&after);
	hostfs_close(&ctx.hf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_bursts),
		cmocka_unit_test(test_burst_reaches_the_cause),
	};
	return cmocka_run_group_tests_name("ena_link", tests, setup, teardown);
}
