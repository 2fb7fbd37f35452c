/* SPDX-License-Identifier: MIT */
#ifndef CZ_CZ_H
#define CZ_CZ_H

/*
 * What every subcommand receives: the effective config (file, then command-line overrides), the
 * opened host roots and the common options. Built once by main.c.
 */

#include <stdbool.h>
#include <stddef.h>

#include "base/config.h"
#include "host/hostfs.h"
#include "base/npd.h"

/* Exit codes of the non-check subcommands (checks use enum npd_status). */
enum cz_exit {
	CZ_EXIT_OK = 0,
	CZ_EXIT_PROBLEM = 1, /* a verdict: something is wrong on the node (report, ena-diff) */
	CZ_EXIT_ERROR = 2,   /* we could not do the job: bad usage, bad config, I/O */
};

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
	/* Load the configuration file and the command-line overrides again into *ret (the agent's
	 * SIGHUP); 0, or -errno after printing what was wrong. Set by main.c; NULL in tests. */
	int (*config_reload)(const struct cz_ctx *ctx, struct cz_config *ret);
};

/* A subcommand: returns the process exit code. */
typedef int (*cmd_fn)(struct cz_ctx *ctx);

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

/*
 * memcg_read - the I/O half of check memcg, shared with the report and the agent: fills *@r
 * (no state, no verdict). Returns NPD_OK, or NPD_UNKNOWN with the reason in @res.
 */
struct memcg_reading;
int memcg_read(struct cz_ctx *ctx, struct memcg_reading *r, struct npd_result *res);

/* Subcommands (cmd_*.c). */
int cmd_check(struct cz_ctx *ctx);
int cmd_config(struct cz_ctx *ctx);
int cmd_ena_diff(struct cz_ctx *ctx);
int cmd_agent(struct cz_ctx *ctx);
int cmd_kube_cycle(struct cz_ctx *ctx);
int cmd_report(struct cz_ctx *ctx);

#endif
