/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie config check [--config FILE]`: "configuration OK" (exit 0), or every error as
 * FILE:LINE lines (exit 2). main.c has already loaded the file; it lands here only on success.
 * With -v the effective configuration is printed too.
 */
#include "cmd/cmd.h"

int cmd_config(struct cz_ctx *ctx, const struct cmd_opts *o)
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
