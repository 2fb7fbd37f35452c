/* SPDX-License-Identifier: MIT */
/*
 * Subcommand dispatch only: parse the common options before the subcommand's name, find it and
 * run it (it parses its own options, cmd.h), and return its exit code.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#ifndef CZ_CHECK_BINARY
#include "agent/census_bpf.h"
#endif
#include "base/log.h"
#include "base/util.h"

struct cmd {
	const char *name;
	cmd_fn run;
	const char *usage; /* the subcommand's own (cmd_X_usage), or NULL: not in this binary */
};

/*
 * The static check binary (cpuzombie-check: this file built with CZ_CHECK_BINARY) holds only
 * the offline subcommands: it links no libcurl and no libsystemd. An online one (ONLINE(fn))
 * answers there with one line and exit 2 instead of running.
 */
#ifdef CZ_CHECK_BINARY
static int cmd_online_only(int argc, char **argv, struct cmd_env *env)
{
	(void)argc, (void)env;
	log_error("'%s' is not in this binary (the static check binary runs checks, report, "
		  "ena-diff and config check); run the full cpuzombie", argv[0]);
	return CZ_EXIT_ERROR;
}
#define ONLINE(fn, usage) cmd_online_only, NULL
#else
#define ONLINE(fn, usage) fn, usage
#endif

/* One row per subcommand: each parses its own options (cmd.h). */
static const struct cmd cmds[] = {
	{ "check", cmd_check, cmd_check_usage },
	{ "config", cmd_config, cmd_config_usage },
	{ "ena-diff", cmd_ena_diff, cmd_ena_diff_usage },
	{ "explain", cmd_explain, cmd_explain_usage },
	{ "agent", ONLINE(cmd_agent, cmd_agent_usage) },
	{ "remediator", ONLINE(cmd_remediator, cmd_remediator_usage) },
	{ "cleanup", ONLINE(cmd_cleanup, cmd_cleanup_usage) },
	{ "report", cmd_report, cmd_report_usage },
	{ "flame", cmd_flame, cmd_flame_usage },
	{ "top", cmd_top, cmd_top_usage },
	{ "fleet", ONLINE(cmd_fleet, cmd_fleet_usage) },
	{ "install-plugin", ONLINE(cmd_install_plugin, cmd_install_plugin_usage) },
	{ "own-state", ONLINE(cmd_own_state, cmd_own_state_usage) },
	{ NULL, NULL, NULL },
};

/* Every subcommand's usage (@only: that one's), then the common options. */
static void usage(FILE *out, const struct cmd *only)
{
	bool online = false;

	cmd_usage_head(out);
	for (const struct cmd *c = cmds; c->name; c++) {
		if (only && c != only)
			continue;
		if (c->usage)
			fprintf(out, "cpuzombie %s\n", c->usage);
		else
			online = true;
	}
	if (online) /* the check binary */
		fprintf(out, "Full binary only: agent, remediator, cleanup, fleet, install-plugin, "
			     "own-state.\n");
	cmd_usage_common(out);
}

/*
 * The common options before the subcommand's name, from argv[1] (it stops at the first word).
 * Returns the index of that word, or -EINVAL (env->err says why, logged).
 */
static int parse_common(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = { CMD_COMMON_OPTIONS };
	int c;

	opterr = 0; /* we print our own one-line error */
	optind = 0;
	while ((c = getopt_long(argc, argv, "+" CMD_COMMON_SHORT, options, NULL)) != -1) {
		int r;

		if (c == '?' || c == ':')
			return cmd_error(env, "unknown or incomplete option '%.32s'",
					 argv[optind - 1]);
		r = cmd_common_option(env, c, optarg);
		if (r < 0)
			return r;
	}
	return optind;
}

static const struct cmd *find_cmd(const char *name)
{
	for (const struct cmd *c = cmds; c->name; c++)
		if (streq(c->name, name))
			return c;
	return NULL;
}

/*
 * fds 0-2 closed by whoever started us: hold them with /dev/null opened read-only, so that no
 * file we open becomes "stdout" and a write to a closed stdout still fails (EBADF) - and is
 * reported by finish_stdout() - instead of landing in that file.
 */
static void hold_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int n;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		n = open("/dev/null", O_RDONLY | O_NOCTTY);
		if (n >= 0 && n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
}

/*
 * Every command's output is its answer: a write that failed (stdout closed, /dev/full, a pipe
 * whose reader left - SIGPIPE is ignored) turns any exit code into 2, said on stderr.
 */
static int finish_stdout(int r)
{
	int err = 0;

	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout))
		err = errno ? errno : EIO;
	if (fclose(stdout) != 0 && !err)
		err = errno ? errno : EIO;
	if (!err)
		return r;
	log_error_errno(err, "Failed to write to standard output: %m");
	return CZ_EXIT_ERROR;
}

static int run(int argc, char **argv);

int main(int argc, char **argv)
{
	hold_std_fds();
	signal(SIGPIPE, SIG_IGN);
	return finish_stdout(run(argc, argv));
}

/*
 * Installed as kubectl-cpuzombie, kubectl runs us for `kubectl cpuzombie ARGS` (its plugin
 * convention: argv[0] is the file name): that is `cpuzombie fleet ARGS` unless ARGS name a
 * subcommand. Returns the argv to use (@argv, or a static copy with "fleet" inserted).
 */
static char **plugin_argv(int *argc, char **argv)
{
	static char *av[512];
	const char *base = *argc > 0 ? strrchr(argv[0], '/') : NULL;

	if (*argc < 1 || !streq(base ? base + 1 : argv[0], "kubectl-cpuzombie") ||
	    (*argc > 1 && find_cmd(argv[1])) || *argc + 2 > (int)ARRAY_SIZE(av))
		return argv;
	av[0] = argv[0];
	av[1] = (char *)"fleet";
	memcpy(av + 2, argv + 1, (size_t)(*argc - 1) * sizeof(*av));
	av[++*argc] = NULL;
	return av;
}

static int run(int argc, char **argv)
{
	static struct cmd_env env; /* static: ~160 KiB (the config), not zeroed on the stack */
	const struct cmd *c = NULL;
	int first, r;

	argv = plugin_argv(&argc, argv);
	first = parse_common(argc, argv, &env);
	if (first >= 0 && first < argc)
		c = find_cmd(argv[first]);
	if (env.version) {
		printf("cpuzombie %s\n", CZ_VERSION);
		if (env.verbose) /* build options on their own lines: --version stays one line */
#ifdef CZ_CHECK_BINARY
			printf("binary: static check binary (offline commands)\n"
			       "census: no (the check binary reads the agent's census)\n");
#else
			printf("binary: full\ncensus: %s\n", census_bpf_build());
#endif
		return CZ_EXIT_OK;
	}
	if (env.help) {
		usage(stdout, c);
		return CZ_EXIT_OK;
	}
	if (first < 0)
		return CZ_EXIT_ERROR;
	if (!c) {
		if (first < argc)
			log_error("unknown command '%s'", argv[first]);
		usage(stderr, NULL);
		return CZ_EXIT_ERROR;
	}
	/* the subcommand parses the rest, its name standing in for the program name */
	r = c->run(argc - first, argv + first, &env);
	if (env.hf_open)
		hostfs_close(&env.ctx.hf);
	return r;
}
