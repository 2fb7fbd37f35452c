/* SPDX-License-Identifier: MIT */
/* remediation.reclaim, the agent's I/O edge: see reclaimer.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/reclaimer.h"
#include "base/log.h"
#include "base/npd.h"
#include "base/state.h"
#include "base/util.h"
#include "memcg/check_memcg.h"
#include "memcg/memcg_root.h"
#include "memcg/memcg_where.h"
#include "memcg/reclaim.h"
#include "kube/event.h"

#define SETTLE_STEP_MS 250
#define SETTLE_STABLE 3		/* the same count this many times in a row: the kernel is done */

/* Where memory.reclaim goes on cgroup v2: the subtree holding the zombies, or the root. */
struct target {
	bool v2;
	char rel[256];		/* the v2 mount, relative to the sys root */
	char sub[256];		/* below it; "" = the root */
	uint64_t dying;		/* the dying memcgs below it */
};

static int dying_now(struct cz_ctx *ctx, uint64_t *ret, bool *v2)
{
	struct memcg_reading r;
	struct npd_result res;
	int e = memcg_read(ctx, &r, &res);

	if (e != NPD_OK)
		return log_warning_errno(EIO, "Cannot count the dying memcgs: %s", res.msg);
	*ret = r.dying;
	if (v2)
		*v2 = r.source != MEMCG_V1;
	return 0;
}

static void target_find(struct cz_ctx *ctx, struct target *t)
{
	uint64_t n;

	memcg_find_hierarchy(&ctx->hf, true, t->rel, sizeof(t->rel));
	if (memcg_where_find(&ctx->hf, t->rel, t->sub, sizeof(t->sub), &n) < 0)
		t->sub[0] = '\0';	/* the root: all of them (t->dying, from the caller) */
	else
		t->dying = n;
}

static void target_file(const struct target *t, const char *file, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s/%s", t->rel, t->sub[0] ? "/" : "", t->sub, file);
}

/* memory.reclaim opened for writing: -ENOENT when the kernel has none (before 5.19). */
static int open_reclaim(struct cz_ctx *ctx, const struct target *t)
{
	char rel[600];

	target_file(t, "memory.reclaim", rel, sizeof(rel));
	return hostfs_openat(&ctx->hf, HOSTFS_SYS, rel, O_WRONLY | O_NOFOLLOW);
}

static int write_all(int fd, const char *s)
{
	ssize_t w = write(fd, s, strlen(s));

	if (w < 0)
		return -errno;
	return (size_t)w == strlen(s) ? 0 : -EIO;
}

static int do_reclaim(struct cz_ctx *ctx, enum reclaim_method m, const struct target *t)
{
	_cleanup_close_ int fd = -1;
	char rel[600], buf[8192], info[8192], num[32];
	uint64_t amount, extra;
	ssize_t a, b;

	if (m == RECLAIM_DROP_CACHES) {
		/* 1: page cache only. 2 and 3 also drop slab (dentries, inodes) of live work */
		fd = hostfs_openat(&ctx->hf, HOSTFS_PROC, "sys/vm/drop_caches", O_WRONLY);
		return fd < 0 ? fd : write_all(fd, "1");
	}
	target_file(t, "memory.stat", rel, sizeof(rel));
	a = hostfs_read(&ctx->hf, HOSTFS_SYS, rel, buf, sizeof(buf));
	b = hostfs_read(&ctx->hf, HOSTFS_PROC, "meminfo", info, sizeof(info));
	if (reclaim_amount(a >= 0 ? buf : NULL, b >= 0 ? info : NULL, &amount) < 0)
		return log_warning_errno(ENODATA, "No inactive_file in %s or meminfo", rel);
	extra = reclaim_active_allowance(a >= 0 ? buf : NULL, t->dying);
	amount = amount > UINT64_MAX - extra ? UINT64_MAX : amount + extra;
	fd = open_reclaim(ctx, t);
	if (fd < 0)
		return fd;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)amount);
	return write_all(fd, num);	/* -EAGAIN: the kernel found less than asked */
}

/* The dying count once the kernel has freed what it will: the same count SETTLE_STABLE times
 * in a row, or RECLAIM_SETTLE_MS. Freeing a memcg waits for RCU and a work item. */
static uint64_t settle(struct cz_ctx *ctx, uint64_t before)
{
	uint64_t last = before, now = before, waited = 0;
	unsigned same = 0;

	while (waited < RECLAIM_SETTLE_MS && same < SETTLE_STABLE) {
		usleep(SETTLE_STEP_MS * 1000);
		waited += SETTLE_STEP_MS;
		if (dying_now(ctx, &now, NULL) < 0)
			break;
		same = now == last ? same + 1 : 0;
		last = now;
	}
	return last;
}

/* ", top group K: N -> M": the census's largest group before, and what the new census finds. */
static void census_words(struct cz_ctx *ctx, struct census_publisher *cp, bool had,
			 const struct census_group *g, char *buf, size_t size)
{
	uint64_t left = 0;

	buf[0] = '\0';
	if (!cp || !had || !ctx->cfg.memcg.census_interval_ms)
		return;
	(void)census_publish(cp, ctx, now_monotonic_ms(), now_realtime_ms());
	if (!cp->has_last)
		return;
	for (size_t i = 0; i < cp->last.ngroups; i++)
		if (streq(cp->last.group[i].key, g->key))
			left = cp->last.group[i].count;
	snprintf(buf, size, "; top group %.120s: %llu -> %llu", g->key,
		 (unsigned long long)g->count, (unsigned long long)left);
}

static void tell(struct cz_ctx *ctx, struct kube_client *kc, const struct reclaim_state *s,
		 const char *msg)
{
	bool bad = s->result == RECLAIM_FAILED;
	const char *reason = s->result == RECLAIM_DRY_RUN ? "CpuzombieReclaimDryRun"
			     : bad ? "CpuzombieReclaimFailed" : "CpuzombieReclaim";

	log_fields_full(bad ? LOG_PRIO_ERR : LOG_PRIO_WARNING,
			&(struct log_fields){ LOG_MID_KUBE, "memcg", -1, NULL }, "%s", msg);
	/* the node's name as its UID, as kubelet's Events have it: `kubectl describe node` asks
	 * for both the UID and the name, and this way the Event costs no GET of the node */
	if (kc && ctx->cfg.kubernetes.node_name[0])
		(void)event_post(kc, &(struct event_desc){ ctx->cfg.kubernetes.node_name,
							    ctx->cfg.kubernetes.node_name,
							    bad ? "Warning" : "Normal", reason, msg,
							    s->last_ms });
}

int reclaimer_cycle(struct cz_ctx *ctx, int status, struct kube_client *kc,
		    struct census_publisher *census, char *out, size_t size)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT;
	const struct cz_config *cfg = &ctx->cfg;
	struct reclaim_state s = { 0 };
	struct reclaim_input in = { cfg, now_realtime_ms(), status, false, false };
	struct reclaim_plan plan;
	struct target t = { 0 };
	struct census_group top = { 0 };
	char msg[512], extra[200];
	uint64_t before = 0, after, t0, since, seen;
	bool had = census && census->has_last && census->last.ngroups > 0;
	int r, e;

	snprintf(out, size, "reclaim: %s", config_reclaim_name(cfg->remediation.reclaim));
	if (cfg->remediation.reclaim == CZ_RECLAIM_OFF)
		return 0;
	r = reclaim_state_begin(&txn, cfg->paths.state, &reclaim_state_type, &s);
	if (r < 0) {
		snprintf(out, size, "reclaim: cannot keep its state: %s", strerror(-r));
		return log_error_errno(r, "Reclaim off this cycle: cannot lock or read '%s/%s': %m",
				       cfg->paths.state, STATE_RECLAIM);
	}
	since = s.since_ms, seen = s.seen_ms;
	reclaim_observe(&s, status, in.now_ms, cfg->remediation.for_ms);
	if (status == NPD_PROBLEM && dying_now(ctx, &before, &in.v2) == 0) {
		t.v2 = in.v2;
		t.dying = before;
		if (t.v2) {
			_cleanup_close_ int fd = -1;

			target_find(ctx, &t);
			fd = open_reclaim(ctx, &t);
			in.has_memory_reclaim = fd >= 0 || fd != -ENOENT;
		}
	} else {
		in.status = status == NPD_PROBLEM ? NPD_UNKNOWN : status; /* never act blind */
	}
	reclaim_plan(&in, &s, &plan);
	snprintf(out, size, "reclaim: %s", plan.why);
	if (plan.verdict != RECLAIM_WOULD && plan.verdict != RECLAIM_GO) {
		if (s.since_ms == since && s.seen_ms == seen)
			return 0;	/* a healthy node: nothing to write, cycle after cycle */
		r = reclaim_state_commit(&txn, &s);
		return r < 0 ? log_error_errno(r, "Failed to save the reclaim state: %m") : 0;
	}
	if (had)
		top = census->last.group[0];
	reclaim_begin(&s, plan.method, t.sub, plan.verdict == RECLAIM_WOULD, in.now_ms, before);
	/* the attempt is on disk before the write: a crash in it is never repeated sooner */
	r = reclaim_state_commit(&txn, &s);
	if (r < 0)
		return log_error_errno(r, "Not reclaiming: cannot save the reclaim state: %m");
	if (plan.verdict == RECLAIM_WOULD) {
		reclaim_message(&s, msg, sizeof(msg));
		tell(ctx, kc, &s, msg);
		snprintf(out, size, "reclaim: %s", msg);
		return 1;
	}
	log_info("Reclaiming %llu dying memcgs with %s (%s)", (unsigned long long)before,
		 reclaim_method_name(plan.method), plan.why);
	t0 = now_monotonic_ms();
	e = do_reclaim(ctx, plan.method, &t);
	after = e == 0 || e == -EAGAIN ? settle(ctx, before) : before;
	reclaim_end(&s, e, after, now_monotonic_ms() - t0);
	r = reclaim_state_commit(&txn, &s);
	if (r < 0)
		log_error_errno(r, "Failed to save the reclaim's outcome: %m");
	reclaim_message(&s, msg, sizeof(msg));
	census_words(ctx, census, had && s.result != RECLAIM_FAILED, &top, extra, sizeof(extra));
	strncat(msg, extra, sizeof(msg) - strlen(msg) - 1);
	tell(ctx, kc, &s, msg);
	snprintf(out, size, "reclaim: %s", msg);
	return s.result == RECLAIM_FAILED ? -s.err : 1;
}
