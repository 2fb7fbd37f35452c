/* SPDX-License-Identifier: MIT */
/*
 * The options every subcommand takes, and the start every subcommand makes (cmd.h): its
 * getopt loop hands the common options here (cmd_getopt), and cmd_args() loads the config and
 * opens the host roots once its own options are parsed. Both binaries link it.
 */
#include <errno.h>
#include <stdarg.h>

#include "cmd/cmd.h"
#include "base/log.h"
#include "base/util.h"

void cmd_usage_head(FILE *out)
{
	fprintf(out,
		"Usage: cpuzombie [OPTIONS] COMMAND ...\n\n"
		"Finds the CPU-zombie chain on a Kubernetes node: leaked (dying) memory cgroups,\n"
		"single cores saturated in system time, and the ENA NIC resets they cause.\n\n");
}

void cmd_usage_common(FILE *out)
{
	fprintf(out,
		"Common options:\n"
		"  --config FILE      configuration (default " CZ_DEFAULT_CONFIG_PATH
		" if it exists,\n"
		"                     else built-in defaults)\n"
		"  --proc-root DIR    host /proc (default /proc; /host/proc in a container)\n"
		"  --sys-root DIR     host /sys (default /sys)\n"
		"  --state-dir DIR    persistent state (default /var/lib/cpuzombie)\n"
		"  --run-dir DIR      sampler history and heartbeat (default /run/cpuzombie)\n"
		"  --node-name NAME   Kubernetes node name (default $NODE_NAME)\n"
		"  --kubeconfig FILE  kubeconfig (default: in-cluster service account)\n"
		"  --max-output BYTES longest check line (default 256; match NPD's "
		"max_output_length)\n"
		"  -v, --verbose      diagnostics on stderr\n"
		"  --version, --help  (-v --version: also how this binary was built)\n");
}

void cmd_usage(FILE *out, const char *usage)
{
	cmd_usage_head(out);
	if (usage)
		fprintf(out, "cpuzombie %s\n", usage);
	cmd_usage_common(out);
}

int cmd_error(struct cmd_env *env, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(env->err, sizeof(env->err), fmt, ap);
	va_end(ap);
	log_error("%s", env->err);
	return -EINVAL;
}

int cmd_common_option(struct cmd_env *env, int c, const char *arg)
{
	switch (c) {
	case CMD_OPT_CONFIG: env->ov.config = arg; break;
	case CMD_OPT_PROC: env->ov.proc = arg; break;
	case CMD_OPT_SYS: env->ov.sys = arg; break;
	case CMD_OPT_STATE: env->ov.state = arg; break;
	case CMD_OPT_RUN: env->ov.run = arg; break;
	case CMD_OPT_NODE: env->ov.node = arg; break;
	case CMD_OPT_KUBECONFIG: env->ov.kubeconfig = arg; break;
	case CMD_OPT_MAXOUT:
		if (parse_u64(arg, &env->max_output) < 0 || env->max_output == 0 ||
		    env->max_output >= NPD_MSG_MAX)
			return cmd_error(env, "--max-output: expected 1..%d, got '%.32s'",
					 NPD_MSG_MAX - 1, arg);
		break;
	case 'v': env->verbose++; break;
	case 'h':
	case CMD_OPT_HELP: env->help = true; break;
	case CMD_OPT_VERSION: env->version = true; break;
	default: return -ENOENT;
	}
	return 0;
}

int cmd_getopt(struct cmd_env *env, int argc, char **argv, const char *shorts,
	       const struct option *options)
{
	int c;

	if (env->getopt_argv != argv) { /* a new argv: restart getopt on it */
		env->getopt_argv = argv;
		opterr = 0; /* we print our own one-line error */
		optind = 0;
	}
	while ((c = getopt_long(argc, argv, shorts, options, NULL)) != -1) {
		int r;

		if (c == '?' || c == ':')
			return cmd_error(env, "unknown or incomplete option '%.32s'",
					 argv[optind - 1]);
		r = cmd_common_option(env, c, optarg);
		if (r == -ENOENT)
			return c; /* the subcommand's own */
		if (r < 0)
			return r;
	}
	return 0;
}

int cmd_fail(struct cmd_env *env)
{
	if (env->npd_line) {
		struct npd_result res;

		npd_set(&res, NPD_UNKNOWN, "%s", env->err);
		return npd_emit(&res, NPD_DEFAULT_MAX_OUTPUT, stdout);
	}
	return CZ_EXIT_ERROR;
}

/* The config this run uses (config_load_effective): a bad option comes back as -EDOM and is
 * the command line's error; a bad file's lines go to stderr as they are, and its first one
 * (file, line and key) leads env->err: NPD shows only stdout. */
static int load_config(struct cmd_env *env)
{
	static char errs[8192]; /* static: not probed page by page on every exec */
	size_t n;
	unsigned more = 0;
	int r = config_load_effective(&env->ov, &env->ctx.cfg, &env->config_path, errs,
				      sizeof(errs));

	if (r == -EDOM)
		return cmd_error(env, "%s", errs);
	if (r >= 0)
		return 0;
	fprintf(stderr, "%s", errs);
	n = strcspn(errs, "\n");
	for (const char *p = errs + n; *p; p++)
		more += *p == '\n' && p[1] != '\0';
	snprintf(env->err, sizeof(env->err), "bad config: %.*s%s", (int)n, errs,
		 more ? " (and more: cpuzombie config check)" : "");
	return r;
}

int cmd_args(struct cmd_env *env, int r, int argc, char **argv, const char *usage,
	     int *ret_argc, char ***ret_argv)
{
	env->getopt_argv = NULL; /* the parse is over: another one starts afresh */
	if (r < 0)
		return cmd_fail(env);
	if (env->help) {
		cmd_usage(stdout, usage);
		return CZ_EXIT_OK;
	}
	*ret_argc = argc - optind;
	*ret_argv = argv + optind;
	env->ctx.verbose = env->verbose;
	if (env->verbose)
		log_set_max_level(LOG_PRIO_DEBUG); /* -v: the diagnostics behind log_debug() */
	if (load_config(env) < 0)
		return cmd_fail(env);
	if (hostfs_open(&env->ctx.hf, env->ctx.cfg.paths.proc, env->ctx.cfg.paths.sys) < 0) {
		cmd_error(env, "bad --proc-root or --sys-root");
		return cmd_fail(env);
	}
	env->hf_open = true;
	return CMD_RUN;
}

int cmd_args_common(struct cmd_env *env, int argc, char **argv, const char *usage,
		    int *ret_argc, char ***ret_argv)
{
	static const struct option options[] = { CMD_COMMON_OPTIONS };
	int r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options);

	return cmd_args(env, r, argc, argv, usage, ret_argc, ret_argv);
}
