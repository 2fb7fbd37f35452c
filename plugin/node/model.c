/* SPDX-License-Identifier: MIT */
/*
 * The node model (report.h): a zeroed report, its worst verdict, and the loaders of what the
 * agent left in the run dir and the state dir. The renderers (view/) and the agent's metrics
 * read what these load; node.c gathers the rest from the host.
 */
#include <errno.h>
#include <math.h>
#include <time.h>

#include "base/state.h"
#include "base/textsafe.h"
#include "base/util.h"
#include "check/condmsg.h"
#include "cpu/cpustat.h"
#include "klog/kevents.h"
#include "node/model.h"

struct node_model *node_model_new(const struct cz_config *cfg, uint64_t now_ms)
{
	struct node_model *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cfg = cfg;
	r->now_ms = now_ms;
	r->memcg_rc = NPD_UNKNOWN;
	r->canary_rc = -ECANCELED;
	r->restarts_rc = 1;
	r->census_rc = 1;
	r->hist_rc = -ENOENT;
	r->hb_rc = -ENOENT;
	r->maps_rc = -ENOENT;
	r->ena_rc = -ENOENT;
	r->allowance_rc = -ENOENT;
	r->cpu_limit = CPUSTAT_MAX_CPUS;
	snprintf(r->node, sizeof(r->node), "%s", cfg->kubernetes.node_name);
	return r;
}

void node_model_free(struct node_model *r)
{
	if (!r)
		return;
	history_series_free(&r->hist);
	free(r->hb);
	free(r->now_pct);
	free(r->bursts);
	free(r->maps);
	ena_state_free(&r->ena_prev);
	ena_state_free(&r->ena);
	ena_state_free(&r->allowance);
	report_ena_metrics_free(&r->ena_metrics);
	free(r->kev);
	free(r);
}

void report_ena_metrics_free(struct report_ena_metrics *m)
{
	free(m->resets);
	free(m->allowance);
	free(m->window);
	*m = (struct report_ena_metrics){ 0 };
}

enum npd_status report_worst(const struct node_model *r)
{
	enum npd_status w = NPD_OK;

	for (size_t i = 0; i < r->nchecks; i++) {
		if (r->checks[i].res.status == NPD_PROBLEM)
			return NPD_PROBLEM;
		if (r->checks[i].res.status == NPD_UNKNOWN)
			w = NPD_UNKNOWN;
	}
	return w;
}

char *report_perf_cmd(unsigned cpu, uint64_t dur_ms, char *buf, size_t size)
{
	uint64_t s = (2 * dur_ms + 999) / 1000;

	s = s < 10 ? 10 : s > 300 ? 300 : s;
	snprintf(buf, size, "perf record -C %u -g -- sleep %llu", cpu, (unsigned long long)s);
	return buf;
}

char *report_format_tasks(const struct burst_event *ev, char *buf, size_t size)
{
	size_t off = 0;

	if (size > 0)
		buf[0] = '\0';
	for (size_t k = 0; k < ev->ntasks && k < HISTORY_TASKS_MAX && off < size; k++) {
		char comm[4 * sizeof(ev->task[k].comm)];
		int w = snprintf(buf + off, size - off, "%s%s[%d] %.1fs", k ? ", " : "",
				 textsafe(TEXTSAFE_TEXT, ev->task[k].comm, comm, sizeof(comm)),
				 ev->task[k].tid,
				 (double)ev->task[k].stime_ms / 1000.0);
		off += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

char report_heat_char(uint8_t pct)
{
	static const char ramp[] = " .:-=+*#%@";

	if (pct == HISTORY_NO_SAMPLE)
		return '?';
	if (pct > 100)
		pct = 100;
	return ramp[pct / 10 > 9 ? 9 : pct / 10]; /* 90..100%: '@', a burst at the default */
}

int report_ena_cpu(const char *cause)
{
	for (const char *p = cause; p && (p = strstr(p, "cpu")); p += 3) {
		uint64_t v;
		size_t n = strspn(p + 3, "0123456789");

		if (n > 0 && n < 6 && (p == cause || p[-1] == ' ' || p[-1] == '(') &&
		    parse_u64_n(p + 3, n, &v) == 0)
			return (int)v;
	}
	return -1;
}

bool report_claim_cpus(struct node_model *r, uint64_t n)
{
	unsigned limit = r->cpu_limit && r->cpu_limit < CPUSTAT_MAX_CPUS ? r->cpu_limit
									 : CPUSTAT_MAX_CPUS;

	if (n > limit)
		return false;
	if (n > r->ncpu)
		r->ncpu = (unsigned)n;
	return true;
}

uint8_t *report_percpu_new(const struct node_model *r, const uint8_t *src, unsigned n)
{
	uint8_t *a = malloc(r->ncpu ? r->ncpu : 1);

	if (!a)
		return NULL;
	memset(a, HISTORY_NO_SAMPLE, r->ncpu ? r->ncpu : 1);
	if (src)
		memcpy(a, src, n < r->ncpu ? n : r->ncpu);
	return a;
}

void report_keep_bursts(struct node_model *r, bool (*keep)(const struct burst_event *ev, void *arg),
			void *arg)
{
	size_t kept = 0, logged = 0;

	for (size_t i = 0; i < r->nbursts; i++) {
		if (!keep(&r->bursts[i], arg))
			continue;
		logged += i < r->nlogged; /* the old count: the partition before any was dropped */
		r->bursts[kept++] = r->bursts[i];
	}
	r->nbursts = kept;
	r->nlogged = logged;
}

/* ---- loaders ---- */

void report_node_name(struct node_model *r, const struct hostfs *hf)
{
	char buf[256];

	if (r->node[0] ||
	    hostfs_read(hf, HOSTFS_PROC, "sys/kernel/hostname", buf, sizeof(buf)) <= 0)
		return;
	buf[strcspn(buf, "\n")] = '\0';
	/* validated as --node-name is: the name goes into metrics labels, JSON and the API */
	if (valid_name(buf, sizeof(r->node) - 1))
		snprintf(r->node, sizeof(r->node), "%s", buf);
}

void report_memcg_growth(struct node_model *r, const char *state_dir)
{
	struct memcg_history h;

	if (memcg_history_state_read(state_dir, &memcg_history_state, &h) != STATE_LOADED)
		return;
	r->memcg.has_growth = memcg_history_growth(&h, r->now_ms, r->memcg.dying,
						   &r->memcg.growth_per_hour);
}

static void add_ongoing(struct node_model *r)
{
	const struct heartbeat *hb = r->hb;
	uint64_t limit = 3 * HISTORY_HEARTBEAT_MS;

	/* a stopped or stale agent's "active" bursts are not going on */
	if (!hb || hb->stopped || hb->time_ms + limit < r->now_ms)
		return;
	for (size_t i = 0; i < hb->nactive && r->nbursts < REPORT_BURSTS_MAX + HISTORY_ACTIVE_MAX;
	     i++)
		r->bursts[r->nbursts++] = hb->active[i];
}

int report_load_run(struct node_model *r, const char *run_dir, uint64_t since_hist_ms)
{
	int n;

	r->bursts = calloc(REPORT_BURSTS_MAX + HISTORY_ACTIVE_MAX, sizeof(*r->bursts));
	r->hb = calloc(1, sizeof(*r->hb));
	if (!r->bursts || !r->hb)
		return -ENOMEM;
	r->hist_rc = history_read(run_dir, since_hist_ms, &r->hist);
	if (r->hist_rc >= 0 && !report_claim_cpus(r, r->hist.ncpu)) {
		history_series_free(&r->hist); /* a ring for more CPUs than this host can have */
		r->hist_rc = -E2BIG;
	}
	r->hb_rc = heartbeat_read(run_dir, r->hb);
	if (r->hb_rc < 0) {
		free(r->hb);
		r->hb = NULL;
	} else {
		(void)report_claim_cpus(r, r->hb->ncpu); /* beyond the host: not believed */
	}
	n = burst_log_read(run_dir, r->since_ms, r->bursts, REPORT_BURSTS_MAX);
	r->nlogged = r->nbursts = n > 0 ? (size_t)n : 0;
	add_ongoing(r);
	for (size_t i = 0; i < r->nbursts; i++)
		(void)report_claim_cpus(r, (uint64_t)r->bursts[i].cpu + 1);
	return 0;
}

int report_load_kevents(struct node_model *r, const char *run_dir)
{
	struct kevents *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return -ENOMEM;
	rc = kevents_state_read(run_dir, &kevents_state, k);
	if (rc == -ENOMEM) {
		free(k);
		return rc;
	}
	if (rc != STATE_LOADED) {
		free(k);
		return 0;
	}
	free(r->kev);
	r->kev = k;
	return 0;
}
