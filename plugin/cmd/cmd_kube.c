/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie kube-cycle [--once]`: a hidden developer subcommand that runs the checks that map to
 * node conditions and calls kube_agent_cycle() with their results, once (--once) or every
 * agent.check_interval, until the agent loop (agent.c) calls kube_agent_cycle() itself.
 *
 * TEST ONLY: $CZ_TEST_FORCE_RESULTS names a file of lines "CHECK STATUS MESSAGE" (STATUS 0/1/2)
 * that replaces the checks' results. It is read by this hidden subcommand only, never by `check`
 * or `agent`, and the summary line says "FORCED RESULTS" when it is used.
 */
#include <errno.h>

#include "cluster/conditions.h"
#include "agent/kube_agent.h"
#include "base/util.h"

#define MAX_RESULTS 8

static int forced(const char *path, const char *names[], struct npd_result res[], size_t *n)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[NPD_MSG_MAX + 64];

	if (!f)
		return -errno;
	*n = 0;
	while (fgets(line, sizeof(line), f) && *n < MAX_RESULTS) {
		char name[32];
		int st, off = 0;
		const struct cond_def *d;

		if (sscanf(line, "%31s %d %n", name, &st, &off) < 2 || st < 0 || st > 2 ||
		    !(d = conditions_for_check(name)))
			return -EINVAL;
		line[strcspn(line, "\n")] = '\0';
		names[*n] = d->check;
		npd_set(&res[*n], (enum npd_status)st, "%s", line + off);
		(*n)++;
	}
	return 0;
}

int cmd_kube_cycle(struct cz_ctx *ctx)
{
	const char *force = getenv("CZ_TEST_FORCE_RESULTS");
	struct kube_agent *ka = NULL;
	char err[512] = "", summary[1024];
	int r;

	r = kube_agent_new(&ctx->cfg, &ka, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "cpuzombie: kube-cycle: %s\n", err);
		return CZ_EXIT_ERROR;
	}
	for (;;) {
		const char *names[MAX_RESULTS];
		struct npd_result res[MAX_RESULTS];
		size_t n = 0;

		if (force && *force) {
			r = forced(force, names, res, &n);
			if (r < 0) {
				fprintf(stderr, "cpuzombie: kube-cycle: bad CZ_TEST_FORCE_RESULTS "
						"'%s': %s\n", force, strerror(-r));
				kube_agent_free(ka);
				return CZ_EXIT_ERROR;
			}
		} else {
			n = kube_agent_run_checks(ctx, names, res, MAX_RESULTS);
		}
		r = kube_agent_cycle(ka, ctx, names, res, n, summary, sizeof(summary));
		printf("%s%s\n", force && *force ? "FORCED RESULTS; " : "", summary);
		fflush(stdout);
		if (ctx->once)
			break;
		usleep((useconds_t)(ctx->cfg.agent.check_interval_ms * 1000));
	}
	kube_agent_free(ka);
	return r < 0 ? CZ_EXIT_ERROR : CZ_EXIT_OK;
}
