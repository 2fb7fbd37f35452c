/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie config check [--config FILE]`: "configuration OK" (exit 0), or every error as
 * FILE:LINE lines (exit 2). cmd_args() has already loaded the file; it lands here only on
 * success. With -v the effective configuration is printed too.
 */
#include "cmd/cmd.h"
#include "base/util.h"

const char cmd_config_usage[] =
	"config check [--config FILE]\n"
	"    Validate a configuration: 'configuration OK' or FILE:LINE errors (exit 2).\n"
	"    With -v, print the effective configuration.\n";

struct config_opts {
	const char *config_path; /* the file loaded, or NULL for the embedded defaults */
	int argc;		 /* the words after the options: "check" */
	char **argv;
};

static int config_main(struct cz_ctx *ctx, const struct config_opts *o)
{
	if (o->argc != 1 || !streq(o->argv[0], "check")) {
		fprintf(stderr, "usage: cpuzombie config check [--config FILE]\n");
		return CZ_EXIT_ERROR;
	}
	printf("configuration OK (%s)\n", o->config_path ? o->config_path : "built-in defaults");
	if (ctx->verbose && config_dump(&ctx->cfg, stdout) < 0)
		return CZ_EXIT_ERROR;
	return CZ_EXIT_OK;
}

int cmd_config(int argc, char **argv, struct cmd_env *env)
{
	struct config_opts o = { 0 };
	int r;

	r = cmd_args_common(env, argc, argv, cmd_config_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	o.config_path = env->config_path;
	return config_main(&env->ctx, &o);
}
