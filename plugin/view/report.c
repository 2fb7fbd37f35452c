/* SPDX-License-Identifier: MIT */
/*
 * The terminal screen of the report (node/model.h's model). The JSON document is in
 * report_json.c, the heatmap in svg.c.
 */
#include <errno.h>
#include <math.h>
#include <time.h>

#include "check/condmsg.h"
#include "cpu/cpustat.h"
#include "node/advice.h"
#include "node/model.h"
#include "view/render.h"
#include "view/report_profile.h"
#include "node/report_window.h"
#include "cpu/tier.h"
#include "base/state.h"
#include "base/textsafe.h"
#include "base/util.h"

/*
 * Outside text for the terminal (textsafe.h): task, interface, unit and counter names are any
 * bytes. A few rotating buffers, so that one fprintf() can hold several; report_print() runs in
 * one thread.
 */
static const char *safe(const char *s)
{
	static char pool[8][1024];
	static unsigned next;

	return textsafe(TEXTSAFE_TEXT, s, pool[next++ % ARRAY_SIZE(pool)], sizeof(pool[0]));
}

static const char *node(const struct node_model *r)
{
	return r->node[0] ? safe(r->node) : "-";
}

/* ---- the screen ---- */

static const char *source_name(enum memcg_source s)
{
	switch (s) {
	case MEMCG_V1: return "cgroup v1: num_cgroups - directories";
	case MEMCG_V2_SUBSYS: return "cgroup v2: nr_dying_subsys_memory";
	default: return "cgroup v2: nr_dying_descendants (every controller)";
	}
}

static void print_conditions(const struct node_model *r, FILE *out)
{
	fprintf(out, "CONDITIONS\n");
	for (size_t i = 0; i < r->nchecks; i++) {
		const struct report_check *c = &r->checks[i];
		const char *type = c->cond ? c->cond->type : c->check;
		const char *reason = !c->cond			  ? "-"
				     : c->res.status == NPD_PROBLEM ? c->cond->reason_true
								    : c->cond->reason_false;

		fprintf(out, "  %-18s %-7s %-21s %s\n", type, conditions_status_name(c->res.status),
			reason, safe(c->res.msg));
	}
	if (r->nchecks == 0)
		fprintf(out, "  (checks not run)\n");
}

/* The agent's zombie census: the groups the dying memcgs came from, most first. */
static void print_census(const struct node_model *r, FILE *out)
{
	const struct census *c = &r->census;
	char b[32];

	if (r->census_rc < 0) {
		fprintf(out, "  census     unavailable: %s; %s\n", r->census_err,
			advice_census(r->census_rc));
		return;
	}
	if (r->census_rc != 0)
		return;
	fprintf(out, "  census     %llu dying, %s pinned, %llu min old%s\n",
		(unsigned long long)c->dying, format_bytes(c->bytes, b, sizeof(b)),
		(unsigned long long)(r->now_ms > c->t_ms ? (r->now_ms - c->t_ms) / 60000 : 0),
		c->truncated ? " (cut short by a bound)" : "");
	for (size_t i = 0; i < c->ngroups && i < 5; i++) {
		const struct census_group *g = &c->group[i];

		fprintf(out, "    %8llu %9s  %s (oldest seen %llu min ago)\n",
			(unsigned long long)g->count, format_bytes(g->bytes, b, sizeof(b)), g->key,
			(unsigned long long)(r->now_ms > g->first_ms
						     ? (r->now_ms - g->first_ms) / 60000 : 0));
	}
}

/* remediation.reclaim: its last run, when there was one or it is on. */
static void print_reclaim(const struct node_model *r, FILE *out)
{
	const struct reclaim_state *s = &r->reclaim;
	char msg[400], d[32];

	if (r->reclaim_rc == STATE_LOADED && s->last_ms) {
		fprintf(out, "  reclaim    %s ago: %s\n",
			format_duration(r->now_ms > s->last_ms
						? (r->now_ms - s->last_ms) / 1000 * 1000 : 0,
					d, sizeof(d)),
			reclaim_message(s, msg, sizeof(msg)));
	} else if (r->cfg->remediation.reclaim != CZ_RECLAIM_OFF) {
		fprintf(out,
			"  reclaim    %s, not run yet (after MemcgZombieLeak is True for %s)\n",
			config_reclaim_name(r->cfg->remediation.reclaim),
			format_duration(r->cfg->remediation.for_ms, d, sizeof(d)));
	}
}

static void print_canary(const struct node_model *r, FILE *out)
{
	char d[32];

	if (r->canary_rc == -ECANCELED) {
		fprintf(out, "  canary     off (memcg.latency_canary 0)\n");
		return;
	}
	if (r->canary_rc < 0) {
		fprintf(out, "  canary     unavailable: %s; %s\n", strerror(-r->canary_rc),
			advice_canary(r->canary_rc));
		return;
	}
	if (r->canary.err < 0)
		fprintf(out, "  canary     %s: %s", safe(r->canary.file), strerror(-r->canary.err));
	else
		fprintf(out, "  canary     %s read in %.3f ms (%llu bytes)", safe(r->canary.file),
			(double)r->canary.read_us / 1000.0, (unsigned long long)r->canary.bytes);
	if (r->canary.fresh)
		fprintf(out, ", now\n");
	else
		fprintf(out, ", %s ago\n",
			format_duration(r->now_ms > r->canary.t_ms
						? (r->now_ms - r->canary.t_ms) / 1000 * 1000
						: 0,
					d, sizeof(d)));
}

static void print_memcg(const struct node_model *r, FILE *out)
{
	const struct memcg_reading *m = &r->memcg;
	char b[32], hint[512], ratio[32];

	if (r->memcg_rc != NPD_OK) {
		fprintf(out, "MEMCG\n  unknown: %s\n", safe(r->memcg_err));
		return;
	}
	fprintf(out, "MEMCG  (%s)\n", source_name(m->source));
	fprintf(out, "  live       %llu\n", (unsigned long long)m->live);
	fprintf(out, "  dying      %llu   ratio %s   (problem at >= %llu dying and >= x%g)\n",
		(unsigned long long)m->dying, format_ratio(memcg_ratio(m), ratio, sizeof(ratio)),
		(unsigned long long)r->cfg->memcg.min_dying, r->cfg->memcg.max_ratio);
	if (m->has_growth)
		fprintf(out, "  growth     %+.0f/h\n", m->growth_per_hour);
	else
		fprintf(out, "  growth     - (not enough history yet)\n");
	if (m->has_percpu)
		fprintf(out, "  Percpu     %s\n", format_bytes(m->percpu_bytes, b, sizeof(b)));
	if (m->has_kernel)
		fprintf(out, "  exposure   %s (kernel %u.%u, %s)\n",
			memcg_exposed(m) ? "EXPOSED: every root memory.numa_stat read walks "
					   "all dying memcgs"
					 : "not exposed",
			m->kernel_major, m->kernel_minor,
			m->source == MEMCG_V1 ? "cgroup v1; fixed in 5.8" : "cgroup v2");
	print_canary(r, out);
	print_census(r, out);
	print_reclaim(r, out);
	if (r->restarts_rc == 0 && r->restarts.n > 0) {
		condmsg_restarts_hint(&r->restarts, hint, sizeof(hint));
		fprintf(out, "  restarts   %s\n", safe(hint + strlen("top restarts: ")));
	} else if (r->restarts_rc == 0) {
		fprintf(out, "  restarts   no service unit has restarted\n");
	} else if (r->restarts_rc < 0) {
		fprintf(out, "  restarts   unavailable: %s; %s\n", safe(r->restarts_err),
			advice_restarts(r->restarts_rc));
	}
}

/* The agent's own profile of the burst (report_profile.h), or why it has none. */
static void print_recorded_profile(const struct node_model *r, const struct burst_event *ev,
				   FILE *out)
{
	static struct report_profile p;
	int e;

	if (!ev->profile[0]) {
		if (ev->why[0])
			fprintf(out, "          recorded profile: none (%s)\n", ev->why);
		return;
	}
	e = report_profile_load(r->cfg->paths.run, ev, (size_t)r->cfg->cpu.profile_bytes + 1, &p);
	if (e < 0) {
		fprintf(out, "          recorded profile: %s unreadable (%s)\n", ev->profile,
			strerror(-e));
		return;
	}
	fprintf(out, "          recorded profile: %s, %" PRIu64 " samples, hot %s %u%%\n", p.path,
		p.total, ev->hot[0] ? ev->hot : "-", ev->hot_pct);
	for (size_t i = 0; i < p.n; i++)
		fprintf(out, "            %6" PRIu64 "  %s\n", p.top[i].count, p.top[i].stack);
}

static void print_burst(const struct node_model *r, const struct burst_event *ev, bool ongoing,
			FILE *out)
{
	char t1[16], t2[16], d[32], cmd[96], tasks[256];
	uint64_t dur = ev->end_ms > ev->start_ms ? ev->end_ms - ev->start_ms : 0;

	report_format_tasks(ev, tasks, sizeof(tasks));
	fprintf(out, "  cpu%-4u %s  %6.1fs%s %4.0f%% %4.0f%%  %s\n", ev->cpu,
		utc_hms(ev->start_ms, t1, sizeof(t1)), (double)dur / 1000.0, ongoing ? "+" : " ",
		ev->peak_pct, ev->mean_pct, ev->ntasks ? tasks : "-");
	if (ev->irqs[0])
		fprintf(out, "          NIC IRQs on this core: %s\n", safe(ev->irqs));
	if (ev->stack[0])
		fprintf(out, "          kernel stack: %s\n", safe(ev->stack));
	print_recorded_profile(r, ev, out);
	fprintf(out, "          profile: node %s cpu %u %s..%s (%s): %s\n", node(r), ev->cpu, t1,
		utc_hms(ev->end_ms, t2, sizeof(t2)), format_duration(dur, d, sizeof(d)),
		report_perf_cmd(ev->cpu, dur, cmd, sizeof(cmd)));
}

static void print_now(const struct node_model *r, FILE *out)
{
	unsigned shown = 0, hot = 0;

	if (!r->has_now) {
		fprintf(out, "  now: unknown (no sampler history and /proc/stat unreadable): start "
			     "`cpuzombie agent`, or pass the host's /proc with --proc-root\n");
		return;
	}
	fprintf(out, "  now:");
	for (unsigned c = 0; c < r->ncpu; c++)
		hot += r->now_pct[c] != HISTORY_NO_SAMPLE &&
		       r->now_pct[c] >= r->cfg->cpu.threshold_pct;
	/* the hottest cores first, at most 16, so 192 cores still fit a screen */
	for (int pct = 100; pct >= 0 && shown < 16; pct--)
		for (unsigned c = 0; c < r->ncpu && shown < 16; c++)
			if (r->now_pct[c] == pct) {
				fprintf(out, " cpu%u %d%%", c, pct);
				shown++;
			}
	fprintf(out, "%s; %u of %u at or above %g%%\n", shown < r->ncpu ? " ..." : "", hot, r->ncpu,
		r->cfg->cpu.threshold_pct);
}

static void print_cores(const struct node_model *r, FILE *out)
{
	char d1[32], d2[32], t[16];

	fprintf(out, "CORES  (metric %s, burst at >= %g%% for >= %s, lookback %s)\n",
		config_metric_name(r->cfg->cpu.metric), r->cfg->cpu.threshold_pct,
		format_duration(r->cfg->cpu.min_burst_ms, d1, sizeof(d1)),
		format_duration(r->cfg->cpu.lookback_ms, d2, sizeof(d2)));
	if (r->hb_rc < 0)
		fprintf(out, "  sampler: not running (no heartbeat in the run dir): bursts and "
			     "heatmap need `cpuzombie agent`\n");
	else if (r->hb->stopped || r->hb->time_ms + 3 * HISTORY_HEARTBEAT_MS < r->now_ms)
		fprintf(out,
			"  sampler: stopped, last heartbeat %s: (re)start `cpuzombie agent` for "
			"bursts after it\n",
			utc_hms(r->hb->time_ms, t, sizeof(t)));
	print_now(r, out);
	fprintf(out, "  BURSTS since %s: %zu\n", utc_hms(r->since_ms, t, sizeof(t)), r->nbursts);
	if (r->nbursts)
		fprintf(out,
			"  core    start       length  peak  mean  top tasks (system time on the "
			"core)\n");
	for (size_t i = 0; i < r->nbursts; i++)
		print_burst(r, &r->bursts[i], i >= r->nlogged, out);
	if (r->hist_rc > 0)
		(void)report_heatmap(r, REPORT_HEAT_COLS, out);
	else
		fprintf(out, "  heatmap: no history (%s): %s\n",
			r->hist_rc == 0		  ? "empty"
			: r->hist_rc == -E2BIG ? "more CPUs than this host can have"
						  : strerror(-r->hist_rc),
			advice_history(r->hist_rc));
}

int report_heatmap(const struct node_model *r, unsigned cols, FILE *out)
{
	const struct history_series *h = &r->hist;
	unsigned group, rows;
	uint64_t t0, span;
	char a[16], b[16], d[32];
	_cleanup_free_ uint8_t *cell = NULL;

	if (h->n == 0 || h->ncpu == 0 || cols == 0)
		return 0;
	if (cols > h->n)
		cols = (unsigned)h->n; /* a short history: no column without a sample */
	group = (h->ncpu + REPORT_HEAT_ROWS - 1) / REPORT_HEAT_ROWS;
	rows = (h->ncpu + group - 1) / group;
	cell = malloc((size_t)rows * cols);
	if (!cell)
		return -ENOMEM;
	memset(cell, HISTORY_NO_SAMPLE, (size_t)rows * cols);
	t0 = h->t_ms[0];
	span = h->t_ms[h->n - 1] - t0 + 1;
	for (size_t i = 0; i < h->n; i++) {
		unsigned col = h->t_ms[i] < t0 ? 0 : (unsigned)((h->t_ms[i] - t0) * cols / span);

		if (col >= cols) /* the series is in time order; a hand-made one may not be */
			col = cols - 1;
		for (unsigned c = 0; c < h->ncpu; c++) {
			uint8_t v = h->pct[i * h->ncpu + c], *p = &cell[(c / group) * cols + col];

			if (v != HISTORY_NO_SAMPLE && (*p == HISTORY_NO_SAMPLE || v > *p))
				*p = v;
		}
	}
	fprintf(out, "  HEATMAP  %s..%s UTC (%s), %u columns, highest share per cell%s%s%s\n",
		utc_hms(t0, a, sizeof(a)), utc_hms(h->t_ms[h->n - 1], b, sizeof(b)),
		format_duration(span - 1, d, sizeof(d)), cols,
		group > 1 ? ", rows group cores (highest)" : "",
		r->hist_tier != TIER_FINE ? ", from " : "",
		r->hist_tier != TIER_FINE ? report_tier_name(r->hist_tier) : "");
	fprintf(out, "  scale: ' '0-9%% '.'10 ':'20 '-'30 '='40 '+'50 '*'60 '#'70 '%%'80 '@'90+ "
		     "'?'none\n");
	for (unsigned row = 0; row < rows; row++) {
		unsigned lo = row * group,
			 hi = lo + group - 1 < h->ncpu ? lo + group - 1 : h->ncpu - 1;
		char label[24];

		if (group > 1)
			snprintf(label, sizeof(label), "cpu%u-%u", lo, hi);
		else
			snprintf(label, sizeof(label), "cpu%u", lo);
		fprintf(out, "  %-11s|", label);
		for (unsigned col = 0; col < cols; col++)
			fputc(report_heat_char(cell[row * cols + col]), out);
		fprintf(out, "|\n");
	}
	return ferror(out) ? -EIO : 0;
}

/* "eth0-Tx-Rx-0->0 eth0-Tx-Rx-1->1 ...", at most 12 vectors, then "+N more". */
static void print_irq_map(const struct irq_map *m, FILE *out)
{
	size_t i;

	fprintf(out, "    IRQ->CPU:");
	for (i = 0; i < m->n && i < 12; i++)
		fprintf(out, " %s%s%u->%s", m->irq[i].name[0] ? safe(m->irq[i].name) : "irq",
			m->irq[i].name[0] ? "/" : "", m->irq[i].irq,
			m->irq[i].cpulist[0] ? safe(m->irq[i].cpulist) : "?");
	if (m->n > i)
		fprintf(out, " +%zu more", m->n - i);
	fprintf(out, "%s\n", m->n ? "" : " none");
}

static const struct ethtool_stat *find_prev(const struct node_model *r, const char *key,
					    const char *name, uint64_t *ret_read_ms)
{
	struct ena_ifstate *p = ena_state_find((struct ena_state *)&r->ena_prev, key);

	if (!p)
		return NULL;
	*ret_read_ms = p->read_ms;
	return ethtool_dump_find(&p->base, name);
}

static void print_ena(const struct node_model *r, const struct ena_ifstate *s, FILE *out)
{
	struct ena_lists l = ena_lists_from_config(r->cfg);
	char t[16], t2[16], cmd[96];
	uint64_t prev_ms = 0;
	unsigned shown = 0;

	fprintf(out, "    ENA counters (read %s):", utc_hms(s->read_ms, t, sizeof(t)));
	for (size_t i = 0; i < s->base.n; i++) {
		const struct ethtool_stat *st = &s->base.stats[i], *p;
		enum ena_class c = ena_classify(&l, st->name, NULL);

		if (c == ENA_CLASS_NONE || st->value == 0)
			continue;
		p = find_prev(r, s->key, st->name, &prev_ms);
		fprintf(out, "%s %s %llu", shown++ % 4 == 0 ? "\n     " : ",", safe(st->name),
			(unsigned long long)st->value);
		if (p && prev_ms < s->read_ms && st->value >= p->value)
			fprintf(out, " (+%llu since %s)",
				(unsigned long long)(st->value - p->value),
				utc_hms(prev_ms, t2, sizeof(t2)));
	}
	fprintf(out, "%s\n", shown ? "" : " no reset, risk or allowance counter above 0");
	fprintf(out, "    resets in the last %s: %llu\n",
		format_duration(r->cfg->ena.window_ms, t2, sizeof(t2)),
		(unsigned long long)ena_history_resets(&s->hist));
	for (size_t i = 0; i < s->hist.n; i++) {
		const struct ena_event *ev = &s->hist.ev[i];
		int cpu = report_ena_cpu(ev->cause);

		fprintf(out, "     %s  %llu reset(s): %s\n", utc_hms(ev->t_ms, t, sizeof(t)),
			(unsigned long long)ev->resets, safe(ev->cause));
		if (cpu >= 0)
			fprintf(out, "          profile: node %s cpu %d before %s: %s\n",
				node(r), cpu, t,
				report_perf_cmd((unsigned)cpu, 5000, cmd, sizeof(cmd)));
	}
}

static void print_nics(const struct node_model *r, FILE *out)
{
	fprintf(out, "NICS\n");
	if (r->maps_rc < 0 && r->maps_rc != -ENOENT)
		fprintf(out, "  IRQ map unavailable: %s; %s\n", strerror(-r->maps_rc),
			advice_irq_map(r->maps_rc));
	for (size_t i = 0; i < r->nmaps; i++) {
		const struct irq_map *m = &r->maps[i];

		fprintf(out, "  %-10s driver %s  pci %s  threaded NAPI %s\n", safe(m->ifname),
			m->driver[0] ? safe(m->driver) : "-", m->pci[0] ? safe(m->pci) : "-",
			m->threaded == 1 ? "on" : m->threaded == 0 ? "off" : "n/a");
		print_irq_map(m, out);
		for (size_t k = 0; k < r->ena.n; k++)
			if (streq(r->ena.ifs[k].base.ifname, m->ifname))
				print_ena(r, &r->ena.ifs[k], out);
	}
	for (size_t k = 0; k < r->ena.n; k++) {
		bool mapped = false;

		for (size_t i = 0; i < r->nmaps; i++)
			mapped |= streq(r->ena.ifs[k].base.ifname, r->maps[i].ifname);
		if (mapped)
			continue;
		fprintf(out, "  %-10s driver %s  bus %s  (no IRQ map)\n",
			safe(r->ena.ifs[k].base.ifname), safe(r->ena.ifs[k].base.driver),
			safe(r->ena.ifs[k].base.bus_info));
		print_ena(r, &r->ena.ifs[k], out);
	}
	if (r->nmaps == 0 && r->ena.n == 0)
		fprintf(out, "  no NIC with IRQs found\n");
	if (r->ena_rc < 0 && r->ena_rc != -ENOENT)
		fprintf(out, "  ENA state unreadable: %s; %s\n", strerror(-r->ena_rc),
			advice_ena_state(r->ena_rc));
}

int report_print(const struct node_model *r, FILE *out)
{
	char t[48];

	fprintf(out, "cpuzombie report  node %s  %s  (cpuzombie %s)\n\n", node(r),
		utc_datetime(r->now_ms, t, sizeof(t)), CZ_VERSION);
	print_conditions(r, out);
	fputc('\n', out);
	print_memcg(r, out);
	fputc('\n', out);
	print_cores(r, out);
	fputc('\n', out);
	print_nics(r, out);
	report_print_kernel(r, out);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
