/* SPDX-License-Identifier: MIT */
#ifndef CZ_CZ_H
#define CZ_CZ_H

/*
 * What every check (and every subcommand) receives: the effective config (file, then
 * command-line overrides) and the opened host roots, built once per run by cmd/cmd_common.c's
 * cmd_args(). The subcommands are declared in cmd/cmd.h; each check's I/O edge, which the
 * report and the agent share, in its domain's check_X.h; the table of checks and its runner in
 * node/checks.h and node/check_run.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "host/hostfs.h"
#include "base/npd.h"

/* Exit codes of the non-check subcommands (checks use enum npd_status). */
enum cz_exit {
	CZ_EXIT_OK = 0,
	CZ_EXIT_PROBLEM = 1, /* a verdict: something is wrong on the node (report, ena-diff) */
	CZ_EXIT_ERROR = 2,   /* we could not do the job: bad usage, bad config, I/O */
};

struct memcg_seen;
struct ena_seen;
struct cpu_seen;

/*
 * Where a check leaves what it read, passed to it with each run (node/checks.h's check_fn), so
 * that one agent cycle reads each thing once: its node model takes these (node/node.h's
 * node_take_*). Each member is its domain's record (memcg/check_memcg.h, ena/check_ena.h,
 * cpu/check_cpu.h), or NULL: nobody wants it (NPD's check, report, a trigger). Data only.
 */
struct check_seen {
	struct memcg_seen *memcg;
	struct ena_seen *ena;
	struct cpu_seen *cpu;
};

/* What a check receives: the effective config and the opened host roots. Nothing of the
 * subcommands' options (cmd/cmd.h) nor of the agent's (agent/agent.h). */
struct cz_ctx {
	struct cz_config cfg;
	struct hostfs hf;
	int verbose; /* -v count: a check may print diagnostics to stderr */
	/* how the checks open their state (base/state.h enum state_flags): STATE_READ_ONLY when
	 * `report` runs them, so their baselines stay as they were and nothing is created */
	unsigned state_flags;
};

#endif
