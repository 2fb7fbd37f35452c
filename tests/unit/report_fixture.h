/* SPDX-License-Identifier: MIT */
#ifndef CZ_REPORT_FIXTURE_H
#define CZ_REPORT_FIXTURE_H

/*
 * A fixed node for the report, metrics and SVG unit tests: 4 cores, 15 minutes of 1 s samples
 * (cpu3 saturated for 10 s, cpu0 for 6 s), the bursts with tasks and stacks, ENA state with one
 * poll-starvation reset and a moved baseline, the memcg numbers of tests/fixtures/memcg/v1-zombies
 * (12852 cgroups, 12 live) with growth, canary and a crash-looping unit. Golden outputs live in
 * tests/fixtures/report/; CZ_UPDATE_GOLDEN=1 rewrites them.
 */

#include <stdlib.h>

#include "base/config.h"
#include "ena/ena.h"
#include "node/node.h"
#include "node/model.h"

#define FX_NOW 1714564800000ULL /* 2024-05-01 12:00:00 UTC */

static struct cz_config fx_cfg;

static void fx_ena(struct ena_state *st, uint64_t read_ms, uint64_t starv, bool event)
{
	struct ena_ifstate *e = ena_state_add(st, "pci:0000:00:05.0");

	st->read_ms = read_ms;
	e->read_ms = read_ms;
	snprintf(e->base.ifname, sizeof(e->base.ifname), "eth0");
	snprintf(e->base.driver, sizeof(e->base.driver), "ena");
	snprintf(e->base.bus_info, sizeof(e->base.bus_info), "0000:00:05.0");
	e->base.has_drvinfo = true;
	e->base.n = 3;
	e->base.stats = calloc(3, sizeof(*e->base.stats));
	snprintf(e->base.stats[0].name, sizeof(e->base.stats[0].name), "suspected_poll_starvation");
	e->base.stats[0].value = starv;
	snprintf(e->base.stats[1].name, sizeof(e->base.stats[1].name), "tx_timeout");
	e->base.stats[1].value = 2;
	snprintf(e->base.stats[2].name, sizeof(e->base.stats[2].name), "bw_in_allowance_exceeded");
	e->base.stats[2].value = 314;
	if (event)
		ena_history_add(&e->hist, FX_NOW - 270000, 1, "poll starvation q3 (cpu3 burst 10.0s)");
}

static void fx_burst(struct burst_event *ev, unsigned cpu, uint64_t start, uint64_t end)
{
	memset(ev, 0, sizeof(*ev));
	ev->cpu = cpu;
	ev->start_ms = start;
	ev->end_ms = end;
	ev->peak_pct = 100;
	ev->mean_pct = 98.5;
	snprintf(ev->irqs, sizeof(ev->irqs), "eth0-Tx-Rx-%u", cpu);
	ev->ntasks = 2;
	ev->task[0] = (struct burst_task){ 812, 815, "kubelet", (end - start) * 9 / 10 };
	ev->task[1] = (struct burst_task){ 1, 1, "systemd", 120 };
	snprintf(ev->stack, sizeof(ev->stack), "mem_cgroup_nr_lru_pages<memcg_numa_stat_show<seq_read");
}

/* The fixed report; node_model_free() it. */
static struct node_model *fx_report(void)
{
	struct node_model *r;
	unsigned ncpu = 4;
	size_t n = 900;

	config_defaults(&fx_cfg);
	snprintf(fx_cfg.kubernetes.node_name, sizeof(fx_cfg.kubernetes.node_name), "ip-10-0-7-12");
	fx_cfg.cpu.interval_ms = 1000;
	r = node_model_new(&fx_cfg, FX_NOW);
	r->since_ms = FX_NOW - fx_cfg.cpu.lookback_ms;
	r->memcg_rc = NPD_OK;
	r->memcg = (struct memcg_reading){ .source = MEMCG_V1, .live = 12, .dying = 12840,
					   .has_percpu = true, .percpu_bytes = 2040528896ULL,
					   .has_growth = true, .growth_per_hour = 310,
					   .has_kernel = true, .kernel_major = 5, .kernel_minor = 4,
					   .exposed = true };
	r->canary_rc = 0;
	r->canary = (struct canary_result){ FX_NOW - 12000, 712345, 18211, 0,
					    "fs/cgroup/memory/memory.numa_stat", false };
	/* the agent's reclaim 20 minutes ago freed a few: the rest is pinned by something else */
	r->reclaim_rc = STATE_LOADED;
	r->reclaim = (struct reclaim_state){ .last_ms = FX_NOW - 1200000,
					     .method = RECLAIM_DROP_CACHES, .result = RECLAIM_OK,
					     .before = 12905, .after = 12840, .took_ms = 1300,
					     .freed = 65, .runs = { [RECLAIM_OK] = 1 } };
	r->restarts_rc = 0;
	r->restarts.t_ms = FX_NOW;
	r->restarts.n = 2;
	r->restarts.u[0] = (struct systemd_unit_restarts){ "ecs.service", 4211, true, 310.4 };
	r->restarts.u[1] = (struct systemd_unit_restarts){ "fluent-bit.service", 3, false, 0 };

	r->ncpu = ncpu;
	r->hist_rc = (int)n;
	r->hist.ncpu = ncpu;
	r->hist.n = n;
	r->hist.t_ms = calloc(n, sizeof(uint64_t));
	r->hist.pct = calloc(n * ncpu, 1);
	for (size_t i = 0; i < n; i++) {
		uint64_t t = FX_NOW - (n - i) * 1000;

		r->hist.t_ms[i] = t;
		for (unsigned c = 0; c < ncpu; c++) {
			uint8_t v = (uint8_t)(2 + c * 9); /* 2, 11, 20, 29: four shades */

			if (c == 3 && t >= FX_NOW - 300000 && t < FX_NOW - 290000)
				v = 100;
			if (c == 0 && t >= FX_NOW - 120000 && t < FX_NOW - 114000)
				v = 97;
			if (c == 2 && i < 30)
				v = HISTORY_NO_SAMPLE; /* offline at the start */
			r->hist.pct[i * ncpu + c] = v;
		}
	}
	r->has_now = true;
	r->now_pct = malloc(ncpu);
	memcpy(r->now_pct, (uint8_t[]){ 5, 12, 3, 100 }, ncpu);
	r->bursts = calloc(REPORT_BURSTS_MAX + HISTORY_ACTIVE_MAX, sizeof(*r->bursts));
	fx_burst(&r->bursts[0], 3, FX_NOW - 300000, FX_NOW - 290000);
	fx_burst(&r->bursts[1], 0, FX_NOW - 120000, FX_NOW - 114000);
	fx_burst(&r->bursts[2], 3, FX_NOW - 4000, FX_NOW - 1000);
	r->bursts[2].ntasks = 0;
	r->bursts[2].irqs[0] = r->bursts[2].stack[0] = '\0';
	r->nlogged = 2;
	r->nbursts = 3;

	r->ena_rc = 0;
	fx_ena(&r->ena_prev, FX_NOW - 330000, 0, false);
	fx_ena(&r->ena, FX_NOW - 30000, 1, true);
	r->allowance_rc = 0;
	fx_ena(&r->allowance, FX_NOW - 30000, 1, false);
	(void)node_ena_metrics(r); /* as node_read_ena() computes it */

	r->nchecks = 3;
	r->checks[0] = (struct report_check){ "memcg", conditions_for_check("memcg"),
					      { NPD_PROBLEM, "12840 dying memcgs vs 12 live (x1070)" } };
	r->checks[1] = (struct report_check){ "cpu", conditions_for_check("cpu"),
					      { NPD_PROBLEM, "cpu3 100% sys 10.0s x2/10m" } };
	r->checks[2] = (struct report_check){ "ena", conditions_for_check("ena"),
					      { NPD_PROBLEM, "eth0 1 reset/1h: poll starvation q3" } };
	return r;
}

/* Render @fn into a malloc()ed string with CZ_VERSION replaced by "@VERSION@". */
static char *fx_render(int (*fn)(const struct node_model *, FILE *), const struct node_model *r)
{
	char *buf = NULL, *p;
	size_t size = 0, vl = strlen(CZ_VERSION);
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	assert_int_equal(fn(r, f), 0);
	fclose(f);
	while ((p = strstr(buf, CZ_VERSION)) && vl >= 1) {
		size_t pre = (size_t)(p - buf), rest = strlen(p + vl);
		char *out = malloc(pre + 9 + rest + 1);

		memcpy(out, buf, pre);
		memcpy(out + pre, "@VERSION@", 9);
		memcpy(out + pre + 9, p + vl, rest + 1);
		free(buf);
		buf = out;
	}
	return buf;
}

/* Compare @got with tests/fixtures/report/@name (CZ_UPDATE_GOLDEN=1: write it instead). */
static void fx_golden(const char *name, const char *got)
{
	char path[512];
	FILE *f;
	char *want;
	long n;

	snprintf(path, sizeof(path), "%s/report/%s", FIXTURES, name);
	if (getenv("CZ_UPDATE_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(got, f);
		fclose(f);
	}
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	want = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(want, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (strcmp(want, got) != 0)
		fprintf(stderr, "golden %s differs; got:\n%s\n", path, got);
	assert_string_equal(want, got);
	free(want);
}

#endif
