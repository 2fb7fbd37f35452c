/* SPDX-License-Identifier: MIT */
#ifndef CZ_CZ_H
#define CZ_CZ_H

/*
 * What every subcommand receives: the effective config (file, then command-line overrides), the
 * opened host roots and the common options. Built once by main.c. The subcommands are declared
 * in cmd/cmd.h; each check's I/O edge, which the report and the agent share, in its domain's
 * check_X.h; the table of checks in node/checks.h.
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

#define CZ_GROUP_BY_MAX 6	/* fleet --group-by labels */

struct systemd_restarts;
struct census;

struct cz_ctx {
	struct cz_config cfg;
	struct hostfs hf;
	const char *config_path; /* the file loaded, or NULL for the embedded defaults */
	size_t max_output;	 /* --max-output, bytes of the check line */
	int verbose;		 /* -v count */
	bool once;		 /* agent --once */
	bool json;		 /* report --json */
	const char *svg_path;	 /* report --svg FILE */
	const char *since, *until; /* report --since/--until TIME (base/timespec.h), or NULL */
	const char *selector;	 /* fleet -l/--selector: a label selector */
	const char *group_by[CZ_GROUP_BY_MAX]; /* fleet --group-by LABEL (repeatable) */
	size_t n_group_by;
	bool nodes;		 /* fleet --nodes: the nodes behind each line */
	uint64_t chunk_size;	 /* fleet --chunk-size: nodes per page (0 = 500) */
	int argc;		 /* positional arguments after the subcommand words */
	char **argv;
	/* Load the configuration file and the command-line overrides again into *ret (the agent's
	 * SIGHUP); 0, or -errno after printing what was wrong. Set by main.c; NULL in tests. */
	int (*config_reload)(const struct cz_ctx *ctx, struct cz_config *ret);
	/* Ask the host's systemd for the units with the most restarts (host/systemd.h's
	 * systemd_restarts_update). Set by the full binary's main.c only: `report` run by hand on a
	 * host where no agent published them (`make run`) still names the leaker. NULL in the
	 * static check binary, which never talks to systemd, and in the checks' paths. */
	int (*restarts_direct)(const char *bus, const char *state_dir, uint64_t now_ms,
			       struct systemd_restarts *ret, char *why, size_t why_size);
	/* Take the zombie census here and now (agent/census_publish.h's census_take): set by the
	 * full binary's main.c only, so that `report` run by hand where no agent published one
	 * (`make run`) still names the groups the dying memcgs came from. NULL in the static check
	 * binary (no libbpf) and in the checks' paths: a check never loads BPF. */
	int (*census_direct)(struct cz_ctx *ctx, uint64_t now_ms, struct census *ret, char *why,
			     size_t why_size);
};

#endif
