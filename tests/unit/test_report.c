/* SPDX-License-Identifier: MIT */
/* The report's pure parts: the screen and the JSON document of a fixed node (golden files),
 * the helpers (heat scale, perf hand-off, cause -> CPU), the systemd restart state/growth/hint,
 * the canary state and the journal detection. */
#include "testutil.h"

#include "memcg/canary.h"
#include "check/condmsg.h"
#include "base/log.h"
#include "report_fixture.h"
#include "node/advice.h"
#include "host/systemd.h"
#include "agent/metrics.h"
#include "base/kjson.h"
#include "cpu/cpustat.h"
#include "view/render.h"
#include "view/svg.h"

static int print_text(const struct node_model *r, FILE *f)
{
	return report_print(r, f);
}

static int print_json(const struct node_model *r, FILE *f)
{
	json_object *j = report_json(r);

	json_object_object_del(j, "version");
	fprintf(f, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
	return 0;
}

static void test_text_golden(void **state)
{
	struct node_model *r = fx_report();
	char *t = fx_render(print_text, r);

	fx_golden("node1.txt", t);
	/* what the screen must say, whatever the golden file holds */
	assert_non_null(strstr(t, "MemcgZombieLeak    True    ZombieMemcgsHigh"));
	/* the ratio as the check line spells it (one spelling everywhere, never "x1070.0") */
	assert_non_null(strstr(t, "ratio x1070   ("));
	{
		struct npd_result res = { 0 };

		/* and the check itself prints the same figure */
		assert_int_equal(memcg_verdict(&r->memcg, &fx_cfg, &res), NPD_PROBLEM);
		assert_non_null(strstr(res.msg, "(x1070 >= x10)"));
	}
	assert_non_null(strstr(t, "restarts   ecs.service=4211 (+310/h), fluent-bit.service=3"));
	assert_non_null(strstr(t, "EXPOSED"));
	assert_non_null(strstr(t, "canary     fs/cgroup/memory/memory.numa_stat read in 712.345 ms (18211 bytes), 12s ago\n"));
	assert_non_null(strstr(t, "kubelet[815] 9.0s"));
	assert_non_null(strstr(t, "NIC IRQs on this core: eth0-Tx-Rx-3"));
	assert_non_null(strstr(t, "perf record -C 3 -g -- sleep 20"));
	assert_non_null(strstr(t, "   3.0s+ ")); /* the ongoing burst */
	assert_non_null(strstr(t, "suspected_poll_starvation 1 (+1 since 11:54:30)"));
	assert_non_null(strstr(t, "  cpu2       |?"));	/* offline at the start */
	free(t);
	node_model_free(r);
}

static void test_json_golden(void **state)
{
	struct node_model *r = fx_report();
	char *t = fx_render(print_json, r);
	json_object *j = json_tokener_parse(t), *b, *x;

	fx_golden("node1.json", t);
	assert_non_null(j);
	assert_true(json_object_object_get_ex(j, "cores", &x));
	assert_true(json_object_object_get_ex(x, "bursts", &b));
	assert_int_equal(json_object_array_length(b), 3);
	x = json_object_array_get_idx(b, 2);
	assert_true(json_object_get_boolean(json_object_object_get(x, "ongoing")));
	x = json_object_object_get(json_object_array_get_idx(b, 0), "profile");
	assert_string_equal(json_object_get_string(json_object_object_get(x, "command")),
			    "perf record -C 3 -g -- sleep 20");
	assert_string_equal(json_object_get_string(json_object_object_get(x, "node")),
			    "ip-10-0-7-12");
	assert_string_equal(json_object_get_string(json_object_object_get(j, "status")), "problem");
	json_object_put(j);
	free(t);
	node_model_free(r);
}

static void test_unknown_memcg_and_no_sampler(void **state)
{
	struct node_model *r = fx_report();
	char *t;

	r->memcg_rc = NPD_UNKNOWN;
	snprintf(r->memcg_err, sizeof(r->memcg_err), "cannot read /proc/cgroups: Permission denied");
	history_series_free(&r->hist);
	r->hist_rc = -ENOENT;
	r->nbursts = r->nlogged = 0;
	r->restarts_rc = -ECONNREFUSED;
	t = fx_render(print_text, r);
	assert_non_null(strstr(t, "unknown: cannot read /proc/cgroups: Permission denied"));
	assert_non_null(strstr(t, "heatmap: no history (No such file or directory)"));
	assert_non_null(strstr(t, "BURSTS since 11:50:00: 0"));
	free(t);
	node_model_free(r);
}

/* Every "unavailable" line ends with what to do, in the text and the JSON. */
static void test_unavailable_says_what_to_do(void **state)
{
	static const int rcs[] = { -ENOSYS, -ENOENT, -ECONNREFUSED, -EACCES, -ETIMEDOUT, -EINVAL,
				   -EIO, -ENODATA, -EBADMSG, -ESTALE, 0 };
	struct node_model *r = fx_report();
	json_object *j, *o;
	char *t;

	r->memcg_rc = NPD_OK;
	r->restarts_rc = -EIO;	/* units_load: the agent published why it could not ask */
	snprintf(r->restarts_err, sizeof(r->restarts_err),
		 "cannot connect to bus 'system': No such file or directory");
	r->canary_rc = -EACCES;
	r->census_rc = -ENOENT;	/* census_load: nothing published */
	snprintf(r->census_err, sizeof(r->census_err), "no census from the agent");
	r->maps_rc = -ENOENT - 1000; /* any other failure */
	r->ena_rc = -EBADMSG;
	history_series_free(&r->hist);
	r->hist_rc = -ENOENT;
	r->has_now = false;
	r->hb = calloc(1, sizeof(*r->hb));
	assert_non_null(r->hb);
	r->hb_rc = 0;
	r->hb->stopped = true;
	r->hb->time_ms = FX_NOW - 60000;
	t = fx_render(print_text, r);
	assert_non_null(strstr(t, "now: unknown (no sampler history and /proc/stat unreadable): "
				  "start `cpuzombie agent`, or pass the host's /proc with --proc-root\n"));
	assert_non_null(strstr(t, "sampler: stopped, last heartbeat 11:59:00: (re)start `cpuzombie "
				  "agent` for bursts after it\n"));
	assert_non_null(strstr(t, "restarts   unavailable: cannot connect to bus 'system': No such "
				  "file or directory; the agent cannot ask systemd: on a host without "
				  "systemd there are no unit restarts to read; in a container mount the "
				  "host's /run/dbus/system_bus_socket (chart: agent.systemdBus) and point "
				  "systemd.bus at it"));
	assert_non_null(strstr(t, "canary     unavailable: Permission denied; run it as root"));
	assert_non_null(strstr(t, "census     unavailable: no census from the agent; run `cpuzombie "
				  "agent` with this run dir (its BPF census needs CAP_BPF and "
				  "CAP_PERFMON; chart: agent.zombieCensus)"));
	assert_non_null(strstr(t, "IRQ map unavailable: "));
	assert_non_null(strstr(t, "; mount the host's /sys and /proc and pass --sys-root/--proc-root\n"));
	assert_non_null(strstr(t, "ENA state unreadable: Bad message; the file is corrupt: the next "
				  "`cpuzombie check ena` moves it aside"));
	assert_non_null(strstr(t, "heatmap: no history (No such file or directory): start "
				  "`cpuzombie agent`"));
	free(t);
	j = report_json(r);
	assert_true(json_object_object_get_ex(j, "memcg", &o) &&
		    json_object_object_get_ex(o, "restarts", &o) &&
		    json_object_object_get_ex(o, "advice", &o));
	assert_string_equal(json_object_get_string(o), advice_restarts(-EIO));
	json_object_put(j);
	node_model_free(r);
	/* every errno gets a sentence, ASCII, without a trailing period */
	for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++) {
		const char *a[] = { advice_restarts(rcs[i]), advice_canary(rcs[i]),
				    advice_irq_map(rcs[i]), advice_ena_state(rcs[i]),
				    advice_history(rcs[i]), advice_census(rcs[i]) };

		for (size_t k = 0; k < ARRAY_SIZE(a); k++) {
			assert_true(a[k] && strlen(a[k]) > 10);
			assert_true(a[k][strlen(a[k]) - 1] != '.');
			for (const char *p = a[k]; *p; p++)
				assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
		}
	}
}

static void test_helpers(void **state)
{
	char b[96];

	assert_int_equal(report_heat_char(0), ' ');
	assert_int_equal(report_heat_char(9), ' ');
	assert_int_equal(report_heat_char(10), '.');
	assert_int_equal(report_heat_char(89), '%');
	assert_int_equal(report_heat_char(90), '@');
	assert_int_equal(report_heat_char(100), '@');
	assert_int_equal(report_heat_char(180), '@');
	assert_int_equal(report_heat_char(HISTORY_NO_SAMPLE), '?');
	assert_string_equal(report_perf_cmd(39, 6200, b, sizeof(b)), "perf record -C 39 -g -- sleep 13");
	assert_string_equal(report_perf_cmd(0, 100, b, sizeof(b)), "perf record -C 0 -g -- sleep 10");
	assert_string_equal(report_perf_cmd(1, 3600000, b, sizeof(b)),
			    "perf record -C 1 -g -- sleep 300");
	assert_int_equal(report_ena_cpu("poll starvation q5 (cpu39 burst 6.2s)"), 39);
	assert_int_equal(report_ena_cpu("cpu7 saturated"), 7);
	assert_int_equal(report_ena_cpu("tx_timeout +2"), -1);
	assert_int_equal(report_ena_cpu("xcpu3 cpu"), -1);
	assert_int_equal(report_ena_cpu(NULL), -1);
}

static void test_restarts_state(void **state)
{
	struct systemd_restarts a = { 0 }, b, c = { .t_ms = 7 };
	char buf[512], hint[128];

	a.t_ms = 1000;
	a.n = 2;
	a.u[0] = (struct systemd_unit_restarts){ "ecs.service", 100, false, 0 };
	a.u[1] = (struct systemd_unit_restarts){ "x@1.service", 5, false, 0 };
	systemd_restarts_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "t 1000\nu 100 ecs.service\nu 5 x@1.service\n");
	assert_int_equal(systemd_restarts_parse(buf, &b), 0);
	assert_int_equal(b.n, 2);
	assert_string_equal(b.u[1].name, "x@1.service");
	/* bad payloads leave the output untouched */
	assert_int_equal(systemd_restarts_parse("u 5 a.service\n", &c), -EINVAL); /* no t */
	assert_int_equal(systemd_restarts_parse("t 1\nu x a.service\n", &c), -EINVAL);
	assert_int_equal(systemd_restarts_parse("t 1\nu 5\n", &c), -EINVAL);
	assert_int_equal(systemd_restarts_parse("t 1\nq 5 a\n", &c), -EINVAL);
	assert_int_equal(systemd_restarts_parse("t -1\n", &c), -EINVAL);
	assert_int_equal(c.t_ms, 7);

	/* 30 minutes later: ecs restarted 155 more times (310/h), x@1 went down (reset-failed) */
	b.t_ms = 1000 + 1800000;
	b.u[0].restarts = 255;
	b.u[1].restarts = 1;
	assert_true(systemd_restarts_growth(&a, &b));
	assert_true(b.u[0].has_growth);
	assert_true(b.u[0].per_hour > 309.9 && b.u[0].per_hour < 310.1);
	assert_false(b.u[1].has_growth);
	condmsg_restarts_hint(&b, hint, sizeof(hint));
	assert_string_equal(hint, "top restarts: ecs.service=255 (+310/h), x@1.service=1");
	/* too soon: no growth, keep the base */
	b.t_ms = 1000 + 2000;
	assert_false(systemd_restarts_growth(&a, &b));
	assert_false(b.u[0].has_growth);
	/* a base from the future (clock stepped back) is replaced */
	b.t_ms = 10;
	assert_true(systemd_restarts_growth(&a, &b));
	assert_true(systemd_restarts_growth(NULL, &b));
	/* only the first unit fits: it is cut rather than dropped */
	condmsg_restarts_hint(&a, hint, 20);
	assert_string_equal(hint, "top restarts: ecs.s");
	b.n = 0;
	assert_int_equal(condmsg_restarts_hint(&b, hint, sizeof(hint)), 0);
	assert_string_equal(hint, "");
}

static void test_canary_state(void **state)
{
	struct canary_result c = { 5, 712345, 100, -EACCES, "fs/cgroup/memory/memory.numa_stat",
				   true }, d, e = { .t_ms = 9 };
	char buf[256];

	canary_format(&c, buf, sizeof(buf));
	assert_int_equal(canary_parse(buf, &d), 0);
	assert_int_equal(d.read_us, 712345);
	assert_int_equal(d.err, -EACCES);
	assert_string_equal(d.file, c.file);
	assert_int_equal(canary_parse("t_ms 5\nread_us 1\n", &e), -EINVAL);
	assert_int_equal(canary_parse("t_ms 5\nread_us 1\nbytes 1\nerr 0\nfile x\nzzz 1\n", &e),
			 -EINVAL);
	assert_int_equal(e.t_ms, 9);
}

static void test_journal_stream(void **state)
{
	assert_true(log_journal_stream_matches("8:17:123456", 0, 0) == false);
	assert_true(log_journal_stream_matches("2049:123456", 2049, 123456));
	assert_false(log_journal_stream_matches("2049:123457", 2049, 123456));
	assert_false(log_journal_stream_matches("2049", 2049, 123456));
	assert_false(log_journal_stream_matches(":1", 0, 1));
	assert_false(log_journal_stream_matches(NULL, 0, 0));
}

/* Every per-CPU array of the model is sized to the model's CPU count: a heartbeat or a burst
 * that claims more CPUs than the ring holds grows the model, and every renderer (text, JSON,
 * SVG, metrics) reads the cores the ring lacks as unknown, never past the array (ASan build). */
static void test_percpu_sized_to_the_model(void **state)
{
	struct node_model *r = fx_report();
	uint8_t *old = r->now_pct;
	json_object *j, *now;
	char *t;

	assert_true(report_claim_cpus(r, 64));	/* a heartbeat saying "ncpu 64" */
	assert_int_equal(r->ncpu, 64);
	r->now_pct = report_percpu_new(r, old, 4);
	free(old);
	assert_non_null(r->now_pct);
	assert_int_equal(r->now_pct[3], 100);
	for (unsigned c = 4; c < 64; c++)
		assert_int_equal(r->now_pct[c], HISTORY_NO_SAMPLE);
	r->bursts[0].cpu = 63;		/* a logged burst on a core the ring has no row for */
	t = fx_render(print_text, r);
	assert_non_null(strstr(t, "  now: cpu3 100% cpu1 12% cpu0 5% cpu2 3% ...; 1 of 64 at"));
	free(t);
	j = report_json(r);
	now = kube_get_array(j, "cores.now_pct");
	assert_int_equal(json_object_array_length(now), 64);
	assert_null(json_object_array_get_idx(now, 63));
	json_object_put(j);
	free(fx_render(svg_write, r));
	free(fx_render(metrics_format, r));
	node_model_free(r);
}

/* No run file claims more CPUs than this host can have (r->cpu_limit). */
static void test_claims_bounded_by_the_host(void **state)
{
	struct node_model *r = fx_report();

	r->cpu_limit = 8;
	assert_true(report_claim_cpus(r, 8));
	assert_int_equal(r->ncpu, 8);
	assert_false(report_claim_cpus(r, 9));
	assert_false(report_claim_cpus(r, 8193));
	assert_int_equal(r->ncpu, 8);
	assert_true(report_claim_cpus(r, 2));	/* fewer: the model keeps its count */
	assert_int_equal(r->ncpu, 8);
	r->cpu_limit = 0;			/* unknown: the most any file may say */
	assert_false(report_claim_cpus(r, CPUSTAT_MAX_CPUS + 1));
	assert_true(report_claim_cpus(r, CPUSTAT_MAX_CPUS));
	node_model_free(r);
	assert_int_equal(cpustat_possible_parse("0-3\n"), 4);
	assert_int_equal(cpustat_possible_parse("0,2-5,7\n"), 8);
	assert_int_equal(cpustat_possible_parse("0-99999\n"), CPUSTAT_MAX_CPUS);
	assert_int_equal(cpustat_possible_parse("0-8191"), CPUSTAT_MAX_CPUS);
	assert_int_equal(cpustat_possible_parse(""), 0);
}

static bool after(const struct burst_event *ev, void *arg)
{
	return ev->start_ms > *(const uint64_t *)arg;
}

/* Dropping logged bursts keeps the ones going on, going on: the partition is recounted from the
 * count before any was dropped (every filter of the burst list goes through this). */
static void test_keep_bursts_keeps_the_partition(void **state)
{
	struct node_model *r = fx_report();
	uint64_t t = r->bursts[1].start_ms;
	unsigned ongoing_cpu = r->bursts[2].cpu;

	assert_int_equal(r->nlogged, 2);
	assert_int_equal(r->nbursts, 3);
	report_keep_bursts(r, after, &t);	/* both logged ones go */
	assert_int_equal(r->nbursts, 1);
	assert_int_equal(r->nlogged, 0);
	assert_int_equal(r->bursts[0].cpu, ongoing_cpu);
	node_model_free(r);
	r = fx_report();
	t = r->bursts[0].start_ms;		/* the first logged one goes */
	report_keep_bursts(r, after, &t);
	assert_int_equal(r->nbursts, 2);
	assert_int_equal(r->nlogged, 1);
	node_model_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_golden),
		cmocka_unit_test(test_json_golden),
		cmocka_unit_test(test_unknown_memcg_and_no_sampler),
		cmocka_unit_test(test_unavailable_says_what_to_do),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_restarts_state),
		cmocka_unit_test(test_canary_state),
		cmocka_unit_test(test_journal_stream),
		cmocka_unit_test(test_percpu_sized_to_the_model),
		cmocka_unit_test(test_claims_bounded_by_the_host),
		cmocka_unit_test(test_keep_bursts_keeps_the_partition),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
