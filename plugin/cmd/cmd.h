/* SPDX-License-Identifier: MIT */
#ifndef CZ_CMD_H
#define CZ_CMD_H

/*
 * The subcommands, one file each (cmd_X.c), as git's builtin/: each parses its own options with
 * its own getopt_long table and usage (cmd_X_usage), the common options through one shared
 * helper (cmd_common.c: cmd_getopt, cmd_args), then calls down into the layers and prints.
 * main.c parses the common options before the subcommand's name and dispatches.
 */

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "check/cz.h"

/* Where the image ships the static check binary that install-plugin hands to NPD's container. */
#define CZ_PLUGIN_BINARY "/opt/cpuzombie/bin/cpuzombie"

/*
 * The common options' getopt codes (above any subcommand's own, which stay below 1000), their
 * short letters, and their rows: a subcommand's table is its own rows, then CMD_COMMON_OPTIONS.
 */
enum {
	CMD_OPT_CONFIG = 1000,
	CMD_OPT_PROC,
	CMD_OPT_SYS,
	CMD_OPT_STATE,
	CMD_OPT_RUN,
	CMD_OPT_NODE,
	CMD_OPT_KUBECONFIG,
	CMD_OPT_MAXOUT,
	CMD_OPT_VERSION,
	CMD_OPT_HELP,
};
#define CMD_COMMON_SHORT "vh"
#define CMD_COMMON_OPTIONS                                                                        \
	{ "config", required_argument, NULL, CMD_OPT_CONFIG },                                    \
	{ "proc-root", required_argument, NULL, CMD_OPT_PROC },                                   \
	{ "sys-root", required_argument, NULL, CMD_OPT_SYS },                                     \
	{ "state-dir", required_argument, NULL, CMD_OPT_STATE },                                  \
	{ "run-dir", required_argument, NULL, CMD_OPT_RUN },                                      \
	{ "node-name", required_argument, NULL, CMD_OPT_NODE },                                   \
	{ "kubeconfig", required_argument, NULL, CMD_OPT_KUBECONFIG },                            \
	{ "max-output", required_argument, NULL, CMD_OPT_MAXOUT },                                \
	{ "verbose", no_argument, NULL, 'v' },                                                    \
	{ "version", no_argument, NULL, CMD_OPT_VERSION },                                        \
	{ "help", no_argument, NULL, CMD_OPT_HELP },                                              \
	{ NULL, 0, NULL, 0 }

/*
 * What a subcommand runs with: the common options (given before its name or after it), what
 * was wrong with the command line, and the context cmd_args() sets up from them. Large (the
 * config): main.c keeps it static.
 */
struct cmd_env {
	struct cz_overrides ov;	 /* --config, --proc-root, --sys-root, --state-dir, --run-dir,
				  * --kubeconfig, --node-name */
	uint64_t max_output;	 /* --max-output, bytes of the check line (0: the default) */
	int verbose;		 /* -v count */
	bool help, version;
	bool npd_line;		 /* the subcommand is `check`: a failure is one NPD line too */
	char err[256];		 /* what was wrong with the command line or the setup */
	const char *config_path; /* after cmd_args: the file loaded, or NULL for the defaults */
	bool hf_open;		 /* ctx.hf is open (main.c closes it) */
	char **getopt_argv;	 /* the argv cmd_getopt() is walking */
	struct cz_ctx ctx;	 /* after cmd_args: the effective config and the host roots */
};

/*
 * cmd_getopt - the next option of a subcommand's @argv (@argv[0] is its name; options and words
 * may mix), by @shorts (CMD_COMMON_SHORT and its own letters) and @options (its own rows, then
 * CMD_COMMON_OPTIONS). The common options are taken into @env here. Returns the code of one of
 * the subcommand's own options (optarg set), 0 at the end (optind: the first word), or -EINVAL
 * with env->err saying what was wrong (logged).
 */
int cmd_getopt(struct cmd_env *env, int argc, char **argv, const char *shorts,
	       const struct option *options);

/*
 * cmd_common_option - take common option @c (a CMD_OPT_* code, 'v' or 'h') with @arg into @env;
 * main.c's parse before the subcommand and cmd_getopt() after it. Returns 0, -EINVAL with
 * env->err (a bad --max-output, logged), or -ENOENT: @c is no common option.
 */
int cmd_common_option(struct cmd_env *env, int c, const char *arg);

/*
 * cmd_error - what was wrong with the command line, into env->err, and logged. Returns -EINVAL.
 */
int cmd_error(struct cmd_env *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The result of cmd_args() when the subcommand goes on to run. */
#define CMD_RUN (-1)

/*
 * cmd_args - the end of a subcommand's parse: @r is cmd_getopt()'s last answer. A bad option
 * fails (exit CZ_EXIT_ERROR; for `check` one NPD line too, env->npd_line); --help prints
 * @usage; else the words after the options go to *@ret_argc and *@ret_argv, the config is loaded
 * (the file, then the common options) and the host roots opened into env->ctx. Returns CMD_RUN
 * to go on, or the exit code to return now.
 */
int cmd_args(struct cmd_env *env, int r, int argc, char **argv, const char *usage,
	     int *ret_argc, char ***ret_argv);

/* cmd_args_common - the whole parse of a subcommand that has no options of its own: the common
 * ones (cmd_getopt), then cmd_args(). */
int cmd_args_common(struct cmd_env *env, int argc, char **argv, const char *usage,
		    int *ret_argc, char ***ret_argv);

/* cmd_fail - a subcommand that cannot start: for `check`, env->err as its one NPD line. Returns
 * the exit code (CZ_EXIT_ERROR, or NPD's Unknown, also 2). */
int cmd_fail(struct cmd_env *env);

/* cmd_usage - "Usage:" and what cpuzombie is, the subcommand's @usage (NULL: none), the common
 * options, on @out. */
void cmd_usage(FILE *out, const char *usage);

/* cmd_usage_head / cmd_usage_common - the two halves around the subcommands' usages. */
void cmd_usage_head(FILE *out);
void cmd_usage_common(FILE *out);

/* A subcommand: @argv[0] is its name. Returns the process exit code (CZ_EXIT_*, or NPD's for
 * `check`). */
typedef int (*cmd_fn)(int argc, char **argv, struct cmd_env *env);

/* `check NAME`: one NPD line on stdout, exit 0 OK, 1 problem, 2 unknown. */
int cmd_check(int argc, char **argv, struct cmd_env *env);
extern const char cmd_check_usage[];
/* `config check`: "configuration OK" or FILE:LINE errors, exit 2. */
int cmd_config(int argc, char **argv, struct cmd_env *env);
extern const char cmd_config_usage[];
/* `ena-diff BEFORE AFTER`: the ENA verdict of two saved `ethtool -S` texts. */
int cmd_ena_diff(int argc, char **argv, struct cmd_env *env);
extern const char cmd_ena_diff_usage[];
/* `explain FILE|- [--json]`: kernel log text into ENA resets, lockups and a timeline. */
int cmd_explain(int argc, char **argv, struct cmd_env *env);
extern const char cmd_explain_usage[];
/* `agent [--once]`: the sampler loop and periodic work (full binary only). */
int cmd_agent(int argc, char **argv, struct cmd_env *env);
extern const char cmd_agent_usage[];
/* `remediator [--once]`: the cluster's one remediator, leader elected (full binary only). */
int cmd_remediator(int argc, char **argv, struct cmd_env *env);
extern const char cmd_remediator_usage[];
/* `report [--json|--svg FILE]`: everything this node says, for a human. */
int cmd_report(int argc, char **argv, struct cmd_env *env);
extern const char cmd_report_usage[];
/* `fleet` (also `kubectl cpuzombie`): where the chain concentrates across the cluster (full
 * binary only). */
int cmd_fleet(int argc, char **argv, struct cmd_env *env);
extern const char cmd_fleet_usage[];
/* `flame BURST-ID [--out FILE]`: one burst's flame graph as an interactive SVG. */
int cmd_flame(int argc, char **argv, struct cmd_env *env);
extern const char cmd_flame_usage[];
/* `top [--once]`: the node live, every second, from the run dir (or sampling inline). */
int cmd_top(int argc, char **argv, struct cmd_env *env);
extern const char cmd_top_usage[];
/* `cleanup`: remove our conditions, cpuzombie.io/ annotations and taints from all nodes, and
 * our Leases (the chart's uninstall hook; full binary only). */
int cmd_cleanup(int argc, char **argv, struct cmd_env *env);
extern const char cmd_cleanup_usage[];
/* `install-plugin DEST_DIR [--from FILE]`: copy the static check binary to DEST_DIR/bin/cpuzombie
 * atomically, never through a symlink (the chart's init container; full binary only). */
int cmd_install_plugin(int argc, char **argv, struct cmd_env *env);
extern const char cmd_install_plugin_usage[];
/* `own-state UID DIR...`: chown each DIR (itself, never through a symlink) to UID:UID,
 * 1..65534 (the chart's state-owner init container, for the state and run directories of node
 * containers that run as non-root; full binary only). */
int cmd_own_state(int argc, char **argv, struct cmd_env *env);
extern const char cmd_own_state_usage[];

#endif
