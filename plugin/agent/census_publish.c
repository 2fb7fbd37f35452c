/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent/census_bpf.h"
#include "agent/census_publish.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"
#include "memcg/memcg_root.h"
#include "memcg/memcg.h"

struct census_seen {
	uint64_t serial, first_ms;
};

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int by_serial(const void *a, const void *b)
{
	const struct census_scan_item *x = a, *y = b;

	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* How many memory csses to expect: /proc/cgroups' num_cgroups (live + dying), else the last
 * census's count; the ring buffer is sized from it. */
static uint32_t expect_nodes(struct cz_ctx *ctx, const struct census_publisher *p)
{
	struct memcg_controller c;
	char buf[4096];
	uint64_t n = p->last.visited;

	if (hostfs_read(&ctx->hf, HOSTFS_PROC, "cgroups", buf, sizeof(buf)) >= 0 &&
	    memcg_parse_proc_cgroups(buf, &c) == 0 && c.num_cgroups > n)
		n = c.num_cgroups;
	return n > UINT32_MAX / 4 ? UINT32_MAX / 4 : (uint32_t)n;
}

/* Group @s's memcgs, each with when it was first seen dying (remembered in @p). */
static int build(struct census_publisher *p, struct census_scan *s, uint64_t now_ms,
		 struct census *c)
{
	_cleanup_free_ struct census_dying *d = calloc(s->n ? s->n : 1, sizeof(*d));
	struct census_seen *seen = calloc(s->n ? s->n : 1, sizeof(*seen));
	size_t j = 0;
	int r;

	if (!d || !seen) {
		free(seen);
		return -ENOMEM;
	}
	qsort(s->v, s->n, sizeof(*s->v), by_serial);
	for (size_t i = 0; i < s->n; i++) {	/* both sorted by serial: one merge */
		while (j < p->nseen && p->seen[j].serial < s->v[i].serial)
			j++;
		seen[i].serial = s->v[i].serial;
		seen[i].first_ms = j < p->nseen && p->seen[j].serial == s->v[i].serial
					   ? p->seen[j].first_ms : now_ms;
		d[i] = (struct census_dying){ s->v[i].path, s->v[i].bytes, seen[i].first_ms };
	}
	free(p->seen);
	p->seen = seen;
	p->nseen = s->n;
	r = census_build(d, s->n, now_ms, s->visited, s->truncated, c);
	return r;
}

/* Whether this process holds what loading the census needs: CAP_BPF and CAP_PERFMON, or
 * CAP_SYS_ADMIN. Then a refusal came from elsewhere: a seccomp profile, an LSM. */
static bool holds_bpf_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };
	uint64_t eff;

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	eff = d[0].effective | (uint64_t)d[1].effective << 32;
	return (eff >> CAP_SYS_ADMIN & 1) || ((eff >> CAP_BPF & 1) && (eff >> CAP_PERFMON & 1));
}

static const char *reason(int r)
{
	switch (r) {
	case -EOPNOTSUPP:
		return "built without the BPF census";
	case -EPERM:
	case -EACCES:
		/* CRI-O's and podman's RuntimeDefault seccomp profile (containers/common) lets
		 * bpf()
		 * through only with CAP_SYS_ADMIN; containerd's and Docker's also with CAP_BPF */
		if (holds_bpf_caps())
			return "bpf() refused with CAP_BPF and CAP_PERFMON held: seccomp? (CRI-O's "
			       "RuntimeDefault needs CAP_SYS_ADMIN for bpf())";
		return "no capability to load the census BPF program (CAP_BPF, CAP_PERFMON)";
	case -ENOENT:
		return "no memory cgroup hierarchy";
	case -ENODATA:
		return "no memory controller in /proc/cgroups";
	default:
		return NULL;
	}
}

/* Count now into *@c (@p remembers when each was first seen); on failure the reason in @err.
 * Returns 0 or -errno. */
static int count(struct census_publisher *p, struct cz_ctx *ctx, uint64_t now_ms,
		 struct census *c, char *err, size_t err_size, uint64_t *load_us, uint64_t *walk_us)
{
	struct census_scan s = { 0 };
	int fd, q;

	fd = memcg_open_root(&ctx->hf);
	q = fd < 0 ? fd : census_bpf_scan(fd, 0, expect_nodes(ctx, p), &s);
	if (fd >= 0)
		close(fd);
	if (q == 0)
		q = build(p, &s, now_ms, c);
	*load_us = s.load_us, *walk_us = s.walk_us;
	census_scan_free(&s);
	if (q < 0 && fd < 0 && q != -ENOENT && q != -ENODATA)
		/* the hierarchy itself could not be opened (a missing or unreadable host mount):
		 * not the BPF program's refusal, whatever the errno */
		snprintf(err, err_size, "cannot open the memory cgroup hierarchy: %s",
			 strerror(-q));
	else if (q < 0)
		snprintf(err, err_size, "%s", reason(q) ? reason(q) : strerror(-q));
	return q;
}

int census_take(struct cz_ctx *ctx, uint64_t now_ms, struct census *ret, char *why,
		size_t why_size)
{
	struct census_publisher p = { 0 };
	uint64_t load_us, walk_us;
	int q = count(&p, ctx, now_ms, ret, why, why_size, &load_us, &walk_us);

	census_publisher_done(&p);
	return q;
}

int census_publish(struct census_publisher *p, struct cz_ctx *ctx, uint64_t mono_ms,
		   uint64_t now_ms)
{
	static char buf[CENSUS_FILE_MAX];	/* the agent's one periodic thread publishes */
	static struct census c;
	const struct cz_config *cfg = &ctx->cfg;
	char err[CENSUS_ERR_MAX] = "";
	uint64_t t0 = mono_us(), load_us = 0, walk_us = 0;
	size_t n;
	int q;

	p->next_ms = mono_ms + cfg->memcg.census_interval_ms;
	q = count(p, ctx, now_ms, &c, err, sizeof(err), &load_us, &walk_us);
	p->last_us = mono_us() - t0;
	if (q < 0) {
		if (q != p->last_rc)	/* a change of state, not every period */
			log_warning_errno(q, "Zombie census off: %s", err);
		c = (struct census){ .t_ms = now_ms };
		p->has_last = false;	/* no metrics from an old census */
	} else {
		p->last = c;
		p->has_last = true;
		if (p->last_rc < 0 || ctx->verbose)
			log_info(
				"Zombie census: %llu dying memcgs in %llu csses, %.1f ms (load "
				"%.1f, "
				"walk %.1f)%s",
				(unsigned long long)c.dying, (unsigned long long)c.visited,
				(double)p->last_us / 1000.0, (double)load_us / 1000.0,
				(double)walk_us / 1000.0, c.truncated ? " (cut short)" : "");
	}
	p->last_rc = q;
	n = census_format(&c, q < 0 ? err : NULL, buf, sizeof(buf));
	if (n == 0)
		return log_error_errno(-ENOSPC, "Failed to format the zombie census");
	q = fileio_write_atomic(cfg->paths.run, CENSUS_FILE,
				&(struct iovec){ .iov_base = buf, .iov_len = n }, 1, 0644, 0);
	if (q < 0)
		return log_error_errno(q, "Failed to write '%s/%s': %m", cfg->paths.run,
				       CENSUS_FILE);
	return 0;
}

int census_publish_due(struct census_publisher *p, struct cz_ctx *ctx, uint64_t mono_ms,
		       uint64_t now_ms)
{
	int q;

	if (!ctx->cfg.memcg.census_interval_ms || (p->next_ms && mono_ms < p->next_ms))
		return 0;
	q = census_publish(p, ctx, mono_ms, now_ms);
	return q < 0 ? q : 1;
}

void census_publisher_done(struct census_publisher *p)
{
	free(p->seen);
	p->seen = NULL;
	p->nseen = 0;
}
