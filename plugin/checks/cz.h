/* SPDX-License-Identifier: MIT */
#ifndef CZ_CZ_H
#define CZ_CZ_H

/*
 * What every subcommand receives: the effective config (file, then command-line overrides), the
 * opened host roots and the common options. Built once by main.c. Also the table of checks
 * (checks.c). The subcommands themselves are declared in cmd/cmd.h; each check's I/O edge, which
 * the report and the agent share, in its own check_X.h.
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

struct systemd_restarts;

/*
 * The unit restart counts of host/systemd.h (systemd_restarts_update's signature): read over
 * the bus, growth against the state file. Only the full binary talks to systemd; main.c sets
 * cz_ctx.restarts_update there and leaves it NULL in the static check binary.
 */
typedef int (*cz_restarts_fn)(const char *bus, const char *state_dir, uint64_t now_ms,
			      struct systemd_restarts *ret);

struct cz_ctx {
	struct cz_config cfg;
	struct hostfs hf;
	const char *config_path; /* the file loaded, or NULL for the embedded defaults */
	size_t max_output;	 /* --max-output, bytes of the check line */
	int verbose;		 /* -v count */
	bool once;		 /* agent --once */
	bool json;		 /* report --json */
	const char *svg_path;	 /* report --svg FILE */
	int argc;		 /* positional arguments after the subcommand words */
	char **argv;
	cz_restarts_fn restarts_update; /* NULL: no systemd in this binary */
};

/*
 * A check: reads through ctx->hf, writes its verdict into @res and returns res->status. Never
 * prints to stdout (main prints the line); may print diagnostics to stderr when ctx->verbose.
 */
typedef int (*check_fn)(struct cz_ctx *ctx, struct npd_result *res);

struct check_def {
	const char *name;
	check_fn run;
	const char *summary;
};

/* checks_find - the check called @name, or NULL. */
const struct check_def *checks_find(const char *name);

/* checks_all - the table of every check, terminated by an entry whose name is NULL. */
const struct check_def *checks_all(void);

/* The checks (one file each). */
int check_memcg(struct cz_ctx *ctx, struct npd_result *res);
int check_ena(struct cz_ctx *ctx, struct npd_result *res);
int check_ena_allowance(struct cz_ctx *ctx, struct npd_result *res);
int check_cpu(struct cz_ctx *ctx, struct npd_result *res);

#endif
