/* SPDX-License-Identifier: MIT */
#ifndef CZ_NODE_H
#define CZ_NODE_H

/*
 * The node model (report.h) gathered in one place, from the checks, the run dir, the state dir
 * and the host. `report` (text, JSON, SVG) reads it whole with node_read(); the agent's metrics
 * read the parts its cycle has not got already (it ran the checks and holds the census and the
 * units in memory). Each reader fills its part of @r and records its own error in it; nothing
 * here prints.
 */

#include <stdint.h>

#include "check/cz.h"
#include "cpu/check_cpu.h"
#include "ena/check_ena.h"
#include "memcg/check_memcg.h"
#include "node/model.h"

/* node_run_checks - every check that has a condition, into r->checks: NPD's verdicts. */
void node_run_checks(struct cz_ctx *ctx, struct node_model *r);

/* node_read_memcg - the memcg counts now (r->memcg_err on failure) and their growth from check
 * memcg's history; returns r->memcg_rc (enum npd_status). */
int node_read_memcg(struct cz_ctx *ctx, struct node_model *r);

/* node_take_memcg - node_read_memcg's part from what check memcg read in this cycle (@seen,
 * node/check_run.h's check_run_seen), when it read; else node_read_memcg(). Returns r->memcg_rc. */
int node_take_memcg(struct cz_ctx *ctx, struct node_model *r, const struct memcg_seen *seen);

/* node_read_canary - the memcg read-latency canary (rate-limited by its own state), timing the
 * hierarchy @seen was read from (memcg_read()'s reading, or NULL: the canary finds it). */
void node_read_canary(struct cz_ctx *ctx, struct node_model *r, const struct memcg_reading *seen);

/* node_read_published - what the agent published in the run dir for the checks: the zombie
 * census (when memcg.census_interval, and fresh) and the units' restarts (memcg.systemd_hints). */
void node_read_published(const struct cz_config *cfg, struct node_model *r);

/* node_read_reclaim - remediation.reclaim's last run, from the agent's state. */
void node_read_reclaim(const struct cz_config *cfg, struct node_model *r);

/*
 * node_ena_load - read an ENA state file (@t: ena_reset_state or ena_allowance_state) from
 * @state_dir without lock or write, into *@ret (ena_state_free it). Returns 0, -ENOENT (none
 * yet), -EBADMSG (corrupt or malformed; left for the check to move aside) or -errno.
 */
struct state_type;
int node_ena_load(const char *state_dir, const struct state_type *t, struct ena_state *ret);

/*
 * node_ena_metrics - what the metrics show of r->ena and r->allowance, into r->ena_metrics:
 * the reset-cause and allowance counters by ENA's classes under r->cfg's lists (per-queue ones
 * left out: they would explode the series count) and each interface's resets within
 * ena.window, once (the model's ENA state is read once). node_read_ena() and node_take_ena()
 * call it. Returns 0 or -ENOMEM (none set).
 */
int node_ena_metrics(struct node_model *r);

/* node_read_ena - the ENA reset and allowance state the checks keep. */
void node_read_ena(const struct cz_config *cfg, struct node_model *r);

/* node_take_ena - node_read_ena's part from what check ena and check ena-allowance left in
 * @seen (check_run_seen's ena) in this cycle, moved into @r (@seen is emptied); each one they
 * did not leave is read from the state dir. */
void node_take_ena(const struct cz_config *cfg, struct node_model *r, struct ena_seen *seen);

/* node_take_kevents - the kernel-event log into r->kev: what check cpu read in this cycle
 * (@seen, check_run_seen's cpu, moved: @seen is emptied), else report_load_kevents(). Returns 0 or
 * -ENOMEM. */
int node_take_kevents(const struct cz_config *cfg, struct node_model *r, struct cpu_seen *seen);

/* node_take_recovery - the hysteresis state of the conditions of check memcg, cpu and ena, in
 * that order, into r->recovery: from @seen (check_run_seen's recovery, what the agent's cycle
 * left after stepping them) when it holds the check, else read from the state dir. */
void node_take_recovery(const struct cz_config *cfg, struct node_model *r,
			const struct report_recovery *seen);

/* node_read_now - the current shares: the sampler's newest sample when fresh, else two reads of
 * /proc/stat NOW_SAMPLE_MS apart (the same share the sampler computes, cpu/cpustat.h). */
void node_read_now(struct cz_ctx *ctx, struct node_model *r);

/*
 * node_read - the whole model for `report`: the checks, memcg (canary, census, units and
 * reclaim only when memcg could be read), the sampler's files since cpu.history (and the
 * --since/--until window when @until), the current shares, the IRQ maps, the ENA state.
 * Returns 0 or -ENOMEM.
 */
int node_read(struct cz_ctx *ctx, struct node_model *r, uint64_t since, uint64_t until);

#endif
