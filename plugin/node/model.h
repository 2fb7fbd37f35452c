/* SPDX-License-Identifier: MIT */
#ifndef CZ_NODE_MODEL_H
#define CZ_NODE_MODEL_H

/*
 * `cpuzombie report`: everything this node says about the CPU-zombie chain, in one model.
 *
 * cmd_report.c gathers (the I/O edge: memcg_read, the canary, unit restarts, the sampler's run
 * dir, the NIC IRQ map, the ENA state files, the checks); everything here is pure: the model in,
 * a terminal screen, a JSON document (json-c) or the Prometheus textfile (metrics.h) and the SVG
 * heatmap (svg.h) out. Tests fill a struct node_model from fixtures and compare with golden files.
 *
 * Every burst and every ENA reset carries a profiler hand-off: node, CPU, time window and the
 * `perf record -C N -g -- sleep S` command that catches the next one on that core.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memcg/canary.h"
#include "memcg/census.h"
#include "condition/conditions.h"
#include "condition/recover.h"
#include "base/config.h"
#include "ena/ena.h"
#include "cpu/history.h"
#include "host/irq.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"
#include "base/npd.h"
#include "host/systemd.h"

#define REPORT_CHECKS_MAX 8
#define REPORT_BURSTS_MAX HISTORY_EVENTS_MAX
#define REPORT_HEAT_COLS 60	/* terminal heatmap: time columns */
#define REPORT_HEAT_ROWS 32	/* terminal heatmap: at most this many rows (cores grouped) */

struct report_check {
	const char *check;		/* "memcg" */
	const struct cond_def *cond;	/* its node condition (NULL for events) */
	struct npd_result res;
};

/* One ENA counter the metrics show: @ifname and @name point into r->ena or r->allowance. */
struct report_ena_counter {
	const char *ifname, *name;
	uint64_t value;
};

/* What the metrics show of the ENA state (node_ena_metrics(), node.h); @set once computed. */
struct report_ena_metrics {
	bool set;
	size_t nresets, nallowance;
	struct report_ena_counter *resets;	/* reset causes in r->ena (no per-queue ones) */
	struct report_ena_counter *allowance;	/* allowance counters in r->allowance */
	uint64_t *window;			/* resets within ena.window, per r->ena.ifs[] */
};

/* report_ena_metrics_free - free what @m owns and zero it. */
void report_ena_metrics_free(struct report_ena_metrics *m);

/* One condition's hysteresis state (condition/recover.h) for the metrics: @rc as
 * recover_store_read() answered (>= 0: @st holds the state, zero when there is none yet). */
struct report_recover {
	const char *check, *condition;
	int rc;
	struct recover_state st;
};

#define REPORT_RECOVER_MAX 3 /* the checks with a condition: memcg, cpu, ena */

/* The states of the checks' conditions, in check order (node_take_recovery(), node.h). */
struct report_recovery {
	size_t n;
	struct report_recover c[REPORT_RECOVER_MAX];
};

struct node_model {
	char node[256];
	uint64_t now_ms;		/* CLOCK_REALTIME of the report */
	const struct cz_config *cfg;

	/* memcg */
	int memcg_rc;			/* NPD_OK, or NPD_UNKNOWN with memcg_err */
	char memcg_err[NPD_MSG_MAX];
	struct memcg_reading memcg;
	int canary_rc;			/* 0, or -errno (-ECANCELED: off) */
	struct canary_result canary;
	int restarts_rc;		/* 0, or -errno with restarts_err (1: not asked) */
	char restarts_err[256];
	struct systemd_restarts restarts;
	int census_rc; /* 0, or -errno with census_err (1: not asked, census off) */
	char census_err[2 * CENSUS_ERR_MAX + 64]; /* the agent's reason, and ours when we counted */
	struct census census;		/* the agent's zombie census (memcg/census.h) */
	int reclaim_rc;			/* STATE_LOADED, STATE_NONE (never reclaimed) or -errno */
	struct reclaim_state reclaim;	/* remediation.reclaim's last run (memcg/reclaim.h) */

	/* cores */
	unsigned ncpu;			/* CPUs known (history, heartbeat or /proc/stat) */
	unsigned cpu_limit;		/* CPUs this host can have: no run file claims more */
	int hist_rc;			/* samples in hist, or -errno (-ENOENT: no sampler ran) */
	struct history_series hist;	/* the history window */
	int hist_tier;			/* where hist came from: TIER_FINE, _SECONDS, _MINUTES */
	uint64_t hist_interval_ms;	/* spacing of hist's samples; 0: cpu.interval */
	uint64_t until_ms;		/* --until: bursts and history end here; 0: now */
	int hb_rc;			/* 0 or -errno */
	struct heartbeat *hb;		/* owned, NULL without one */
	bool has_now;
	uint8_t *now_pct;		/* ncpu current shares (HISTORY_NO_SAMPLE when unknown) */
					/* (every per-CPU array: report_percpu_new) */
	uint64_t since_ms;		/* bursts that ended at or after this */
	size_t nbursts;			/* bursts[0..nlogged) ended, the rest still going on */
	size_t nlogged;
	struct burst_event *bursts;	/* owned, oldest first */

	/* NICs */
	int maps_rc;
	size_t nmaps;
	struct irq_map *maps;		/* owned */
	int ena_rc;			/* 0, -ENOENT (no state yet) or -errno */
	struct ena_state ena_prev;	/* the baseline before this report's check ran */
	struct ena_state ena;		/* after */
	int allowance_rc;
	struct ena_state allowance;

	/* the kernel's own word: the agent's kernel-event log (klog/kevents.h), NULL without */
	struct kevents *kev;

	/* conditions */
	size_t nchecks;
	struct report_check checks[REPORT_CHECKS_MAX];

	/* the conditions' hysteresis (the agent's metrics; node_take_recovery) */
	struct report_recovery recovery;
	struct report_ena_metrics ena_metrics; /* from r->ena and r->allowance */
};

/* report_new - a zeroed report for @cfg at @now_ms. Returns NULL when out of memory. */
struct node_model *node_model_new(const struct cz_config *cfg, uint64_t now_ms);

/*
 * report_load_kevents - read the run dir's kernel-event log into r->kev (no lock, nothing
 * written). No log (no agent, agent.kmsg off, unreadable): r->kev stays NULL. Returns 0 or
 * -ENOMEM.
 */
int report_load_kevents(struct node_model *r, const char *run_dir);



/* report_free - free everything the report owns and itself. NULL-safe. */
void node_model_free(struct node_model *r);

/* report_worst - the worst check status (NPD_PROBLEM over NPD_UNKNOWN over NPD_OK). */
enum npd_status report_worst(const struct node_model *r);

/*
 * report_perf_cmd - pure: "perf record -C 39 -g -- sleep 12" for a burst of @dur_ms: long enough
 * (twice the burst, at least 10 s, at most 5 min) to catch the next one. Returns @buf.
 */
char *report_perf_cmd(unsigned cpu, uint64_t dur_ms, char *buf, size_t size);

/*
 * report_format_tasks - pure: a burst's top tasks as "kubelet[815] 9.0s, systemd[1] 0.1s" (comm,
 * TID, system time on the core), the one spelling of the screen and the SVG; comms made safe as
 * TEXTSAFE_TEXT (textsafe.h). Cut to @size.
 * Returns @buf ("" without tasks).
 */
char *report_format_tasks(const struct burst_event *ev, char *buf, size_t size);

/* report_heat_char - pure: one terminal cell for a share (0..100; HISTORY_NO_SAMPLE is '?'). */
char report_heat_char(uint8_t pct);


/* report_ena_cpu - pure: the CPU a reset cause names ("... cpu39 ..."), or -1. */
int report_ena_cpu(const char *cause);



/*
 * report_node_name - when cfg gave no node name, the host's (/proc/sys/kernel/hostname) if it
 * is a valid node name (as --node-name must be); otherwise the node stays unnamed ("-").
 */
void report_node_name(struct node_model *r, const struct hostfs *hf);

/*
 * report_memcg_growth - set r->memcg's growth from check memcg's history in @state_dir, read-only
 * (the check keeps it). Leaves it unset when there is no usable history.
 */
void report_memcg_growth(struct node_model *r, const char *state_dir);

/*
 * report_claim_cpus - a run file (the ring, the heartbeat, a burst) says the host has @n CPUs:
 * r->ncpu grows to @n when @n is within r->cpu_limit (what this host can have: its possible
 * CPUs, CPUSTAT_MAX_CPUS when unknown). Returns true when the claim is within the limit, false
 * when it is refused (r->ncpu unchanged).
 */
bool report_claim_cpus(struct node_model *r, uint64_t n);

/*
 * report_percpu_new - a per-CPU array of the model: r->ncpu bytes (at least 1), every slot
 * HISTORY_NO_SAMPLE, then the first min(@n, r->ncpu) from @src (may be NULL with @n 0). Every
 * reader of a per-CPU array loops to r->ncpu, so every such array is made here. Returns the
 * array (free()), or NULL when out of memory.
 */
uint8_t *report_percpu_new(const struct node_model *r, const uint8_t *src, unsigned n);

/*
 * report_keep_bursts - keep the bursts of r->bursts for which @keep(@ev, @arg) is true, in
 * order, and recount r->nlogged: bursts[0..nlogged) stay the ended ones and the rest the ones
 * still going on, whichever were dropped. Every filter of the burst list goes through here.
 */
void report_keep_bursts(struct node_model *r, bool (*keep)(const struct burst_event *ev, void *arg),
			void *arg);

/*
 * report_load_run - the sampler's files: history since @since_hist_ms, bursts that ended at or
 * after r->since_ms (plus the heartbeat's ongoing ones), the heartbeat. Sets the *_rc fields;
 * never fails as a whole. Returns 0 or -ENOMEM. (The kernel-event log: report_load_kevents,
 * or node_take_kevents.)
 */
int report_load_run(struct node_model *r, const char *run_dir, uint64_t since_hist_ms);

#endif
