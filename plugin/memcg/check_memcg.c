/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie check memcg`: the I/O edge of the zombie-memcg check. Reads /proc/cgroups, the
 * memory hierarchy (v1: count its directories; v2: root cgroup.stat), /proc/meminfo and the
 * kernel release through the host roots, keeps a small growth history in the state dir, and
 * hands everything to memcg_verdict(). It never opens a per-memcg stat file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "memcg/census.h"
#include "memcg/check_memcg.h"
#include "check/condmsg.h"
#include "check/cz.h"
#include "memcg/memcg.h"
#include "memcg/memcg_root.h"
#include "memcg/memcg_where.h"
#include "memcg/pods.h"
#include "base/log.h"
#include "base/state.h"
#include "memcg/units.h"
#include "host/systemd.h"
#include "base/log.h"
#include "base/util.h"

#define COUNT_MAX 2000000 /* directories; far above any real node, bounds a hostile tree */
#define DEPTH_MAX 64

static int count_dirs(int dfd, unsigned depth, uint64_t *count)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > DEPTH_MAX)
		return -ELOOP;
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	while ((errno = 0, de = readdir(d))) {
		bool isdir = de->d_type == DT_DIR;
		int sub;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* removed meanwhile */
			isdir = S_ISDIR(st.st_mode);
		}
		if (!isdir)
			continue;
		if (++*count > COUNT_MAX) {
			r = -E2BIG;
			break;
		}
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0) {
			if (errno == ENOENT)
				continue; /* rmdir'ed while we walked: it is no longer live */
			r = -errno;
			break;
		}
		r = count_dirs(sub, depth + 1, count);
		if (r < 0)
			break;
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	return r;
}

static int read_v1(struct cz_ctx *ctx, const struct memcg_controller *c, struct memcg_reading *r,
		   struct npd_result *res)
{
	char rel[256], p[512];
	uint64_t dirs = 1; /* the hierarchy root, which /proc/cgroups counts too */
	int fd, e;

	memcg_find_hierarchy(&ctx->hf, false, rel, sizeof(rel));
	fd = hostfs_openat(&ctx->hf, HOSTFS_SYS, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return npd_unknown(res, fd, "cannot open memory hierarchy %s",
				   hostfs_path(&ctx->hf, HOSTFS_SYS, rel, p, sizeof(p)));
	e = count_dirs(fd, 0, &dirs);
	if (e < 0)
		return npd_unknown(res, e, "cannot walk memory hierarchy %s",
				   hostfs_path(&ctx->hf, HOSTFS_SYS, rel, p, sizeof(p)));
	r->source = MEMCG_V1;
	snprintf(r->hierarchy, sizeof(r->hierarchy), "%s", rel);
	r->live = dirs;
	/* Cgroups created between the two reads can make the difference negative: that is zero
	 * dying, not a wrap-around to 2^64. */
	r->dying = c->num_cgroups > dirs ? c->num_cgroups - dirs : 0;
	return NPD_OK;
}

static int read_v2(struct cz_ctx *ctx, struct memcg_reading *r, struct npd_result *res)
{
	char rel[256], file[300], buf[8192], p[512];
	struct memcg_cgstat st;
	ssize_t n;
	int e;

	memcg_find_hierarchy(&ctx->hf, true, rel, sizeof(rel));
	snprintf(file, sizeof(file), "%s/cgroup.stat", rel);
	n = hostfs_read(&ctx->hf, HOSTFS_SYS, file, buf, sizeof(buf));
	e = n < 0 ? (int)n : memcg_parse_cgroup_stat(buf, &st);
	if (e < 0)
		return npd_unknown(res, e, "cannot read %s",
				   hostfs_path(&ctx->hf, HOSTFS_SYS, file, p, sizeof(p)));
	snprintf(r->hierarchy, sizeof(r->hierarchy), "%s", rel);
	if (st.has_subsys_memory) {
		r->source = MEMCG_V2_SUBSYS;
		r->live = st.nr_subsys_memory;
		r->dying = st.nr_dying_subsys_memory;
	} else {
		r->source = MEMCG_V2_DESCENDANTS;
		r->live = st.nr_descendants + 1;
		r->dying = st.nr_dying_descendants;
	}
	return NPD_OK;
}

/* The hand-off's growth, from @h: what the state file now holds (report_memcg_growth's figure). */
static void seen_growth(struct memcg_seen *s, const struct memcg_history *h, uint64_t now)
{
	if (!s || !s->read || s->rc != NPD_OK)
		return;
	s->reading.has_growth = memcg_history_growth(h, now, s->reading.dying,
						     &s->reading.growth_per_hour);
	s->history = true;
}

/* Growth from the stored history; state trouble only costs us the growth figure. */
static void update_history(struct cz_ctx *ctx, struct memcg_reading *r, struct memcg_seen *seen)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT_FLAGS(ctx->state_flags);
	const char *dir = ctx->cfg.paths.state;
	struct memcg_history h = { 0 };
	uint64_t now = now_realtime_ms();
	int st, e;

	st = memcg_history_state_begin(&txn, dir, &memcg_history_state, &h);
	if (st < 0) {
		log_warning_errno(st, "Failed to read state '%s/%s': %m, ignoring", dir,
				  STATE_MEMCG);
		return;
	}
	r->has_growth = memcg_history_growth(&h, now, r->dying, &r->growth_per_hour);
	if (!memcg_history_add(&h, now, r->dying) && st == STATE_LOADED) {
		seen_growth(seen, &h, now); /* nothing new to keep: no write, no fsync */
		return;
	}
	e = memcg_history_state_commit(&txn, &h);
	if (e < 0)
		log_warning_errno(e, "Failed to save state '%s/%s': %m, ignoring", dir,
				  STATE_MEMCG);
	else
		seen_growth(seen, &h, now);
}

static void read_extras(struct cz_ctx *ctx, struct memcg_reading *r)
{
	char buf[8192];

	if (hostfs_read(&ctx->hf, HOSTFS_PROC, "meminfo", buf, sizeof(buf)) >= 0)
		r->has_percpu = memcg_parse_meminfo_percpu(buf, &r->percpu_bytes) == 0;
	if (hostfs_read(&ctx->hf, HOSTFS_PROC, "sys/kernel/osrelease", buf, sizeof(buf)) >= 0)
		r->has_kernel = memcg_parse_osrelease(buf, &r->kernel_major, &r->kernel_minor) == 0;
	r->exposed = memcg_exposed(r);
}

int memcg_read(struct cz_ctx *ctx, struct memcg_reading *r, struct npd_result *res)
{
	struct memcg_controller c;
	char buf[8192], p[512];
	ssize_t n;
	int e;

	memset(r, 0, sizeof(*r));
	n = hostfs_read(&ctx->hf, HOSTFS_PROC, "cgroups", buf, sizeof(buf));
	e = n < 0 ? (int)n : memcg_parse_proc_cgroups(buf, &c);
	if (e == -ENODATA)
		return npd_set(res, NPD_UNKNOWN, "no memory controller in %s",
			       hostfs_path(&ctx->hf, HOSTFS_PROC, "cgroups", p, sizeof(p)));
	if (e < 0)
		return npd_unknown(res, e, "cannot read %s",
				   hostfs_path(&ctx->hf, HOSTFS_PROC, "cgroups", p, sizeof(p)));
	if (!c.enabled)
		return npd_set(res, NPD_UNKNOWN,
			       "memory controller disabled (cgroup_disable=memory)");
	e = c.hierarchy != 0 ? read_v1(ctx, &c, r, res) : read_v2(ctx, r, res);
	if (e != NPD_OK)
		return e;
	read_extras(ctx, r);
	return NPD_OK;
}

/*
 * The group the dying memcgs came from, from the agent's zombie census in the run dir, into
 * @r->census (the line carries it before the restart hint, which still follows: the unit and
 * the group say different things). Returns 1 when @r->census is set: the group, or why there
 * is no fresh census when no other hint will follow (memcg.systemd_hints off); else 0.
 */
static int census_hint(struct cz_ctx *ctx, struct memcg_reading *r)
{
	static struct census c;	/* ~9 KiB, one check at a time */
	uint64_t every = ctx->cfg.memcg.census_interval_ms;
	char why[CENSUS_ERR_MAX + 32];
	int q;

	if (!every)
		return 0;
	/* two periods and a minute: one late census is not "no census" */
	q = census_load(ctx->cfg.paths.run, now_realtime_ms(), 2 * every + 60000, &c, why,
			sizeof(why));
	if (q == 0 && c.ngroups > 0) {
		condmsg_census_hint(c.group[0].count, c.group[0].key, c.group[0].bytes, r->census,
				    sizeof(r->census));
		return 1;
	}
	if (q < 0) {
		log_warning("no census hint: %s", why);
		if (!ctx->cfg.memcg.systemd_hints) {
			snprintf(r->census, sizeof(r->census), "census: %.120s", why);
			return 1;
		}
	}
	return 0;
}

int check_memcg(struct cz_ctx *ctx, const struct check_seen *cs, struct npd_result *res)
{
	struct memcg_seen *seen = cs ? cs->memcg : NULL;
	struct memcg_reading r;
	int e = memcg_read(ctx, &r, res);

	if (seen) { /* the agent's node model takes this reading (node_take_memcg) */
		seen->read = true;
		seen->history = false;
		seen->rc = e;
		seen->reading = r;
		snprintf(seen->msg, sizeof(seen->msg), "%s", e != NPD_OK ? res->msg : "");
	}
	if (e != NPD_OK)
		return e;
	update_history(ctx, &r, seen);
	if (seen && !seen->history)
		seen->read = false; /* state trouble: what the file holds is not known here */
	e = memcg_verdict(&r, &ctx->cfg, res);
	if (e == NPD_PROBLEM) {
		/* cgroup v2, or hybrid's unified hierarchy: which subtree holds them */
		char rel[256], sub[256];
		uint64_t n;

		memcg_find_hierarchy(&ctx->hf, true, rel, sizeof(rel));
		if (memcg_where_find(&ctx->hf, rel, sub, sizeof(sub), &n) == 0) {
			char uid[POD_UID_LEN + 1], pod[2 * POD_NAME_MAX + 8];

			/* a pod's cgroup: its namespace/name from what the agent published */
			if (memcg_where_pod_uid(sub, uid, sizeof(uid)) == 0 &&
			    pods_lookup(ctx->cfg.paths.run, uid, now_realtime_ms(), pod + 4,
					sizeof(pod) - 4) == 0) {
				memcpy(pod, "pod ", 4);
				memcg_where_format(pod, n, r.where, sizeof(r.where));
			} else {
				memcg_where_format(sub, n, r.where, sizeof(r.where));
			}
			e = memcg_verdict(&r, &ctx->cfg, res);
		}
	}
	if (e == NPD_PROBLEM && census_hint(ctx, &r) > 0)
		e = memcg_verdict(&r, &ctx->cfg, res);
	if (e == NPD_PROBLEM && ctx->cfg.memcg.systemd_hints) {
		/* name the crash-looping unit from what the agent published in the run dir: a
		 * check never talks to systemd (no libsystemd, no bus in NPD's container) */
		struct systemd_restarts sr;
		char why[256];
		int q = units_load(ctx->cfg.paths.run, now_realtime_ms(), &sr, why, sizeof(why));

		if (q < 0) {
			log_warning("no restart hint: %s", why);
			snprintf(r.hint, sizeof(r.hint), "%s", units_words(q));
		} else {
			condmsg_restarts_hint(&sr, r.hint, sizeof(r.hint));
		}
		if (r.hint[0])
			e = memcg_verdict(&r, &ctx->cfg, res);
	}
	return e;
}
