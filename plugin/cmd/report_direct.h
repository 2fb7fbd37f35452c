/* SPDX-License-Identifier: MIT */
#ifndef CZ_REPORT_DIRECT_H
#define CZ_REPORT_DIRECT_H

/*
 * What `report` run by hand (`make run`) finds out itself when no agent published it: the
 * zombie census (BPF) and the units with the most restarts (systemd's bus). The full binary
 * does both; the static check binary, which links neither libbpf nor libsystemd, is built from
 * the same file with CZ_CHECK_BINARY and answers -ENOSYS, so the report keeps what the agent
 * published and says nothing more. Chosen at link time, not through hooks in the context.
 */

#include <stddef.h>
#include <stdint.h>

#include "check/cz.h"

struct census;
struct systemd_restarts;

/* report_direct_census - take the census now (agent/census_publish.h's census_take): 0, -ENOSYS
 * in the check binary, or -errno with the one-line reason in @why. */
int report_direct_census(struct cz_ctx *ctx, uint64_t now_ms, struct census *ret, char *why,
			 size_t why_size);

/* report_direct_restarts - ask systemd now (host/systemd.h's systemd_restarts_update): as
 * report_direct_census. */
int report_direct_restarts(const struct cz_ctx *ctx, uint64_t now_ms,
			   struct systemd_restarts *ret, char *why, size_t why_size);

#endif
