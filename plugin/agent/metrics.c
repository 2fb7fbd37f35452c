/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>

#include "agent/metrics.h"
#include "klog/kevents.h"
#include "base/fileio.h"
#include "node/model.h"
#include "base/textsafe.h"
#include "base/util.h"

/* A label value: valid UTF-8 with the exposition format's escapes (textsafe.h). */
static void label(FILE *out, const char *s)
{
	(void)textsafe_fputs(TEXTSAFE_PROM, s, out);
}

static void help(FILE *out, const char *name, const char *type, const char *text)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* One sample of @name with one label, @key="@value" (outside text, escaped): name{key="v"} n */
static void series(FILE *out, const char *name, const char *key, const char *value, uint64_t v)
{
	fprintf(out, "%s{%s=\"", name, key);
	label(out, value);
	fprintf(out, "\"} %llu\n", (unsigned long long)v);
}

static void memcg(const struct node_model *r, FILE *out)
{
	const struct memcg_reading *m = &r->memcg;

	if (r->memcg_rc != 0)
		return;
	help(out, "cpuzombie_memcg_live", "gauge", "Live memory cgroups (root included).");
	fprintf(out, "cpuzombie_memcg_live %llu\n", (unsigned long long)m->live);
	help(out, "cpuzombie_memcg_dying", "gauge",
	     "Dying (zombie) memory cgroups: removed but still held by charged pages.");
	fprintf(out, "cpuzombie_memcg_dying %llu\n", (unsigned long long)m->dying);
	help(out, "cpuzombie_memcg_dying_ratio", "gauge", "Dying memcgs per live memcg.");
	fprintf(out, "cpuzombie_memcg_dying_ratio %.6g\n",
		m->live ? (double)m->dying / (double)m->live : 0.0);
	if (m->has_growth) {
		help(out, "cpuzombie_memcg_dying_growth_per_hour", "gauge",
		     "Growth of dying memcgs per hour over the stored history.");
		fprintf(out, "cpuzombie_memcg_dying_growth_per_hour %.6g\n", m->growth_per_hour);
	}
	if (m->has_percpu) {
		help(out, "cpuzombie_memcg_percpu_bytes", "gauge",
		     "Kernel per-CPU memory (/proc/meminfo Percpu), which dying memcgs hold.");
		fprintf(out, "cpuzombie_memcg_percpu_bytes %llu\n",
			(unsigned long long)m->percpu_bytes);
	}
	if (m->has_kernel) {
		help(out, "cpuzombie_memcg_exposed", "gauge",
		     "1 when every root memory.numa_stat read walks all dying memcgs "
		     "(cgroup v1 before 5.8).");
		fprintf(out, "cpuzombie_memcg_exposed %d\n", m->exposed ? 1 : 0);
	}
	if (r->canary_rc == 0 && r->canary.err == 0) {
		help(out, "cpuzombie_memcg_canary_read_seconds", "gauge",
		     "Time of one read of the root memory.numa_stat (v1) or memory.stat (v2).");
		fprintf(out, "cpuzombie_memcg_canary_read_seconds %.6f\n",
			(double)r->canary.read_us / 1e6);
	}
}

static void cpu(const struct node_model *r, FILE *out)
{
	_cleanup_free_ double *secs = calloc(r->ncpu ? r->ncpu : 1, sizeof(double));
	_cleanup_free_ double *peak = calloc(r->ncpu ? r->ncpu : 1, sizeof(double));
	_cleanup_free_ unsigned *count = calloc(r->ncpu ? r->ncpu : 1, sizeof(unsigned));

	if (!secs || !peak || !count)
		return;
	for (size_t i = 0; i < r->nbursts; i++) {
		const struct burst_event *ev = &r->bursts[i];

		if (ev->cpu >= r->ncpu)
			continue;
		count[ev->cpu]++;
		secs[ev->cpu] +=
			ev->end_ms > ev->start_ms ? (double)(ev->end_ms - ev->start_ms) / 1e3 : 0;
		if (ev->peak_pct > peak[ev->cpu])
			peak[ev->cpu] = ev->peak_pct;
	}
	help(out, "cpuzombie_cpu_burst_window_seconds", "gauge",
	     "The lookback window the burst metrics cover (cpu.lookback).");
	fprintf(out, "cpuzombie_cpu_burst_window_seconds %.3f\n",
		(double)r->cfg->cpu.lookback_ms / 1e3);
	help(out, "cpuzombie_cpu_bursts", "gauge",
	     "Saturation bursts per core that ended in the window or are going on.");
	for (unsigned c = 0; c < r->ncpu; c++)
		fprintf(out, "cpuzombie_cpu_bursts{cpu=\"%u\"} %u\n", c, count[c]);
	help(out, "cpuzombie_cpu_burst_seconds", "gauge", "Seconds of saturation bursts per core "
							   "in the window.");
	for (unsigned c = 0; c < r->ncpu; c++)
		fprintf(out, "cpuzombie_cpu_burst_seconds{cpu=\"%u\"} %.3f\n", c, secs[c]);
	help(out, "cpuzombie_cpu_burst_peak_percent", "gauge",
	     "Highest share of a burst per core in the window (0 without bursts).");
	for (unsigned c = 0; c < r->ncpu; c++)
		fprintf(out, "cpuzombie_cpu_burst_peak_percent{cpu=\"%u\"} %.1f\n", c, peak[c]);
	/* the bursts above include those going on (the heartbeat's, after the logged ones) */
	help(out, "cpuzombie_cpu_burst_ongoing", "gauge",
	     "1 while a saturation burst is going on on the core (it counts above already).");
	for (unsigned c = 0; c < r->ncpu; c++) {
		bool on = false;

		for (size_t i = r->nlogged; i < r->nbursts && !on; i++)
			on = r->bursts[i].cpu == c;
		fprintf(out, "cpuzombie_cpu_burst_ongoing{cpu=\"%u\"} %d\n", c, on);
	}
}

static void ena_counters(const struct report_ena_counter *c, size_t n, const char *name,
			 const char *lab, FILE *out)
{
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{interface=\"", name);
		label(out, c[i].ifname);
		fprintf(out, "\",%s=\"", lab);
		label(out, c[i].name);
		fprintf(out, "\"} %llu\n", (unsigned long long)c[i].value);
	}
}

/* The ENA counters by class, as the model computed them (node_ena_metrics). */
static void ena(const struct node_model *r, FILE *out)
{
	const struct report_ena_metrics *m = &r->ena_metrics;

	help(out, "cpuzombie_ena_resets_total", "counter",
	     "The ENA driver's reset counters by cause (ethtool -S; restart at driver reload).");
	ena_counters(m->resets, m->nresets, "cpuzombie_ena_resets_total", "cause", out);
	help(out, "cpuzombie_ena_resets_window", "gauge",
	     "ENA device resets seen within ena.window.");
	for (size_t i = 0; m->set && i < r->ena.n; i++)
		series(out, "cpuzombie_ena_resets_window", "interface", r->ena.ifs[i].base.ifname,
		       m->window[i]);
	help(out, "cpuzombie_ena_allowance_exceeded_total", "counter",
	     "Packets queued or dropped because an instance network allowance was exceeded.");
	ena_counters(m->allowance, m->nallowance, "cpuzombie_ena_allowance_exceeded_total",
		     "counter", out);
}

/* The units the agent last read from systemd (report.restarts, filled by the agent). */
static void units(const struct node_model *r, FILE *out)
{
	if (r->restarts_rc != 0 || r->restarts.n == 0)
		return;
	help(out, "cpuzombie_systemd_unit_restarts", "gauge",
	     "NRestarts of the service units that restarted most (top units only).");
	for (size_t i = 0; i < r->restarts.n; i++)
		series(out, "cpuzombie_systemd_unit_restarts", "unit", r->restarts.u[i].name,
		       r->restarts.u[i].restarts);
}

/* The agent's zombie census: dying memcgs by group, for its top groups. */
static void census(const struct node_model *r, FILE *out)
{
	if (r->census_rc != 0 || r->census.ngroups == 0)
		return;
	help(out, "cpuzombie_memcg_dying_by_group", "gauge",
	     "Dying memcgs by former path pattern (the agent's BPF census; top groups only).");
	for (size_t i = 0; i < r->census.ngroups; i++)
		series(out, "cpuzombie_memcg_dying_by_group", "group", r->census.group[i].key,
		       r->census.group[i].count);
	help(out, "cpuzombie_memcg_pinned_bytes_by_group", "gauge",
	     "Bytes the dying memcgs of a group still charge (the agent's BPF census).");
	for (size_t i = 0; i < r->census.ngroups; i++)
		series(out, "cpuzombie_memcg_pinned_bytes_by_group", "group",
		       r->census.group[i].key, r->census.group[i].bytes);
}

/* remediation.reclaim (memcg/reclaim.h): what the agent's reclaims did, once there was one. */
static void reclaim(const struct node_model *r, FILE *out)
{
	const struct reclaim_state *s = &r->reclaim;

	if (r->reclaim_rc != STATE_LOADED || !s->last_ms)
		return;
	help(out, "cpuzombie_reclaim_runs_total", "counter",
	     "Reclaims of the dying memcgs by the agent (remediation.reclaim), by result.");
	for (int i = RECLAIM_OK; i < RECLAIM_RESULT_COUNT; i++)
		fprintf(out, "cpuzombie_reclaim_runs_total{result=\"%s\"} %llu\n",
			reclaim_result_name((enum reclaim_result)i),
			(unsigned long long)s->runs[i]);
	help(out, "cpuzombie_reclaim_freed_memcgs_total", "counter",
	     "Dying memcgs the kernel freed within seconds of the agent's reclaims.");
	fprintf(out, "cpuzombie_reclaim_freed_memcgs_total %llu\n", (unsigned long long)s->freed);
	help(out, "cpuzombie_reclaim_last_timestamp_seconds", "gauge",
	     "When the last reclaim (or dry run) began.");
	fprintf(out, "cpuzombie_reclaim_last_timestamp_seconds %.3f\n", (double)s->last_ms / 1e3);
	help(out, "cpuzombie_reclaim_last_dying", "gauge",
	     "Dying memcgs before and after the last reclaim.");
	fprintf(out, "cpuzombie_reclaim_last_dying{when=\"before\",method=\"%s\"} %llu\n"
		     "cpuzombie_reclaim_last_dying{when=\"after\",method=\"%s\"} %llu\n",
		reclaim_method_name(s->method), (unsigned long long)s->before,
		reclaim_method_name(s->method), (unsigned long long)s->after);
}

/* The agent's kernel-event log: recognized kernel messages by kind, and what it missed. */
static void kernel(const struct node_model *r, FILE *out)
{
	const struct kevents *k = r->kev;

	if (!k)
		return; /* agent.kmsg off, or no agent: no series rather than zeros */
	help(out, "cpuzombie_kernel_events_total", "counter",
	     "Kernel log messages recognized by the agent (facility 0 only), by kind.");
	for (int i = 1; i < KLOG_KIND_MAX; i++)
		fprintf(out, "cpuzombie_kernel_events_total{kind=\"%s\"} %llu\n",
			klog_kind_name((enum klog_kind)i), (unsigned long long)k->count[i]);
	help(out, "cpuzombie_kernel_records_lost_total", "counter",
	     "Kernel log records overwritten before the agent read them (sequence gaps).");
	fprintf(out, "cpuzombie_kernel_records_lost_total %llu\n", (unsigned long long)k->lost);
	help(out, "cpuzombie_kernel_overruns_total", "counter",
	     "Reads of /dev/kmsg that returned EPIPE (the ring buffer overtook the agent).");
	fprintf(out, "cpuzombie_kernel_overruns_total %llu\n", (unsigned long long)k->overruns);
}

static void checks(const struct node_model *r, FILE *out)
{
	help(out, "cpuzombie_check_status", "gauge",
	     "Last result of each check: 0 OK, 1 problem (condition True), 2 unknown.");
	for (size_t i = 0; i < r->nchecks; i++)
		fprintf(out, "cpuzombie_check_status{check=\"%s\",condition=\"%s\"} %d\n",
			r->checks[i].check, r->checks[i].cond ? r->checks[i].cond->type : "",
			(int)r->checks[i].res.status);
	help(out, "cpuzombie_condition_true", "gauge", "1 when the node condition is True.");
	for (size_t i = 0; i < r->nchecks; i++)
		fprintf(out, "cpuzombie_condition_true{check=\"%s\",condition=\"%s\"} %d\n",
			r->checks[i].check, r->checks[i].cond ? r->checks[i].cond->type : "",
			r->checks[i].res.status == NPD_PROBLEM);
}

int metrics_format(const struct node_model *r, FILE *out)
{
	help(out, "cpuzombie_agent_info", "gauge", "The cpuzombie agent writing these metrics.");
	fputs("cpuzombie_agent_info{version=\"", out);
	label(out, CZ_VERSION);
	fputs("\",node=\"", out);
	label(out, r->node);
	fputs("\"} 1\n", out);
	help(out, "cpuzombie_metrics_timestamp_seconds", "gauge",
	     "When these metrics were written.");
	fprintf(out, "cpuzombie_metrics_timestamp_seconds %.3f\n", (double)r->now_ms / 1e3);
	memcg(r, out);
	cpu(r, out);
	ena(r, out);
	units(r, out);
	census(r, out);
	reclaim(r, out);
	kernel(r, out);
	checks(r, out);
	return ferror(out) ? -EIO : 0;
}

/*
 * The conditions' hysteresis (condition/recover.h) the model holds (r->recovery, taken by
 * node_take_recovery): what recover_after absorbed (flaps), what it let clear, and what it holds
 * True now. Apart from metrics_format(), whose output does not depend on the state dir.
 */
static void lifecycle(const struct node_model *r, FILE *out)
{
	const struct report_recovery *rc = &r->recovery;

	if (!r->cfg)
		return;
	help(out, "cpuzombie_condition_flaps_total", "counter",
	     "Problems seen again while recover_after held the condition True: True/False/True "
	     "flips the node did not show.");
	for (size_t i = 0; i < rc->n; i++)
		if (rc->c[i].rc >= 0)
			series(out, "cpuzombie_condition_flaps_total", "condition",
			       rc->c[i].condition, rc->c[i].st.flaps);
	help(out, "cpuzombie_condition_clears_total", "counter",
	     "Conditions set back to False after recover_after of OK checks.");
	for (size_t i = 0; i < rc->n; i++)
		if (rc->c[i].rc >= 0)
			series(out, "cpuzombie_condition_clears_total", "condition",
			       rc->c[i].condition, rc->c[i].st.clears);
	help(out, "cpuzombie_condition_recovering", "gauge",
	     "1 while the problem is gone but recover_after still holds the condition True.");
	for (size_t i = 0; i < rc->n; i++)
		if (rc->c[i].rc >= 0)
			series(out, "cpuzombie_condition_recovering", "condition",
			       rc->c[i].condition,
			       rc->c[i].st.active && rc->c[i].st.ok_since_ms != 0);
}

int metrics_write(const struct node_model *r, const char *path)
{
	_cleanup_free_ char *text = NULL;
	char dir[PATH_MAX];
	const char *name = fileio_split_path(path, dir, sizeof(dir));
	size_t len = 0;
	struct iovec iov;
	FILE *f;
	int e;

	if (!name)
		return -EINVAL;
	/* format in memory, then one atomic replace: the collector sees the old or the new file */
	f = open_memstream(&text, &len);
	if (!f)
		return -errno;
	e = metrics_format(r, f);
	if (e == 0) {
		lifecycle(r, f);
		e = ferror(f) ? -EIO : 0;
	}
	if (fclose(f) != 0 && e == 0)
		e = -errno;
	if (e < 0)
		return e;
	iov = (struct iovec){ text, len };
	/* 0644 whatever the umask: node_exporter reads it as another user */
	return fileio_write_atomic(dir, name, &iov, 1, 0644, FILEIO_DURABLE);
}
