// SPDX-License-Identifier: MIT
/* report_direct.h: built twice, for the full binary and (CZ_CHECK_BINARY) the check binary. */
#include <errno.h>

#include "cmd/report_direct.h"

#ifndef CZ_CHECK_BINARY
#include "agent/census_publish.h"
#include "host/systemd.h"

int report_direct_census(struct cz_ctx *ctx, uint64_t now_ms, struct census *ret, char *why,
			 size_t why_size)
{
	return census_take(ctx, now_ms, ret, why, why_size);
}

int report_direct_restarts(const struct cz_ctx *ctx, uint64_t now_ms,
			   struct systemd_restarts *ret, char *why, size_t why_size)
{
	return systemd_restarts_update(ctx->cfg.systemd.bus, ctx->cfg.paths.state,
				       ctx->state_flags, now_ms, ret, why, why_size);
}
#else
int report_direct_census(struct cz_ctx *ctx, uint64_t now_ms, struct census *ret, char *why,
			 size_t why_size)
{
	(void)ctx, (void)now_ms, (void)ret, (void)why, (void)why_size;
	return -ENOSYS;
}

int report_direct_restarts(const struct cz_ctx *ctx, uint64_t now_ms,
			   struct systemd_restarts *ret, char *why, size_t why_size)
{
	(void)ctx, (void)now_ms, (void)ret, (void)why, (void)why_size;
	return -ENOSYS;
}
#endif
