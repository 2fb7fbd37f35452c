/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "agent/units_publish.h"
#include "memcg/units.h"
#include "base/fileio.h"
#include "base/log.h"

int units_publish(struct units_publisher *p, const struct cz_config *cfg, uint64_t now_ms)
{
	static char buf[UNITS_FILE_MAX]; /* the agent's one periodic thread publishes */
	struct systemd_restarts r = { .t_ms = now_ms };
	char err[UNITS_ERR_MAX] = "";
	size_t n;
	int q;

	q = systemd_restarts_update(cfg->systemd.bus, cfg->paths.state, 0, now_ms, &r, err,
				    sizeof(err));
	r.t_ms = now_ms;
	if (q < 0 && p->last_rc >= 0)	/* log a change of state, not every period */
		log_warning("Failed to read unit restarts from systemd: %s", err);
	p->last_rc = q;
	if (q == 0)
		p->last = r;
	n = units_format(&r, q < 0 ? err : NULL, buf, sizeof(buf));
	if (n == 0)
		return log_error_errno(-ENOSPC, "Failed to format the unit restarts");
	q = fileio_write_atomic(cfg->paths.run, UNITS_FILE,
				&(struct iovec){ .iov_base = buf, .iov_len = n }, 1, 0644, 0);
	if (q < 0)
		return log_error_errno(q, "Failed to write '%s/%s': %m", cfg->paths.run,
				       UNITS_FILE);
	return 0;
}

int units_publish_due(struct units_publisher *p, const struct cz_config *cfg, uint64_t mono_ms,
		      uint64_t now_ms)
{
	int q;

	if (!cfg->memcg.systemd_hints || (p->next_ms && mono_ms < p->next_ms))
		return 0;
	p->next_ms = mono_ms + UNITS_PUBLISH_MS;
	q = units_publish(p, cfg, now_ms);
	return q < 0 ? q : 1;
}
