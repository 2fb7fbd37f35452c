/* SPDX-License-Identifier: MIT */
/*
 * ENA resets from the kernel-event log (ena_kernel.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>

#include "ena/ena_kernel.h"
#include "ena/klog_incident.h"
#include "base/state.h"
#include "base/util.h"

struct ena_kreset *ena_kernel_find(struct ena_kernel *kr, const char *pci, const char *ifname)
{
	for (size_t i = 0; pci && pci[0] && i < kr->n; i++)
		if (streq(kr->dev[i].pci, pci))
			return &kr->dev[i];
	for (size_t i = 0; ifname && ifname[0] && i < kr->n; i++)
		if (streq(kr->dev[i].ifname, ifname))
			return &kr->dev[i];
	return NULL;
}

/* "poll starvation q5 (cpu3 soft lockup 23s kubelet)" */
static void cause_text(const struct klog_log *l, const struct klog_reset *r, char *buf,
		       size_t size)
{
	char c[96];
	size_t n;

	if (r->cause == KLOG_ENA_TX_TIMEOUT && r->poll_starved)
		snprintf(c, sizeof(c), "poll starvation");
	else
		klog_reset_cause(r, c, sizeof(c));
	n = (size_t)snprintf(buf, size, "%s", c);
	if (r->queue >= 0 && n < size)
		n += (size_t)snprintf(buf + n, size - n, " q%d", r->queue);
	if (r->lockup >= 0 && n < size) {
		const struct klog_event *e = &l->ev[r->lockup];

		n += (size_t)snprintf(buf + n, size - n, " (");
		if (r->lockup_cpu >= 0 && n < size)
			n += (size_t)snprintf(buf + n, size - n, "cpu%d ", r->lockup_cpu);
		if (n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%s%s)",
					      e->kind == KLOG_SOFT_LOCKUP   ? "soft lockup"
					      : e->kind == KLOG_HARD_LOCKUP ? "hard lockup"
									    : "RCU stall",
					      e->comm[0] ? " " : "", e->comm);
	}
	if (r->outcome == KLOG_OUTCOME_FAILED && n < size)
		snprintf(buf + n, size - n, "; reset FAILED");
}

static void add_reset(struct ena_kernel *ret, const struct klog_log *l, const struct klog_reset *r,
		      uint64_t t_ms)
{
	struct ena_kreset *d = ena_kernel_find(ret, r->pci, r->ifname);

	if (!d) {
		if (ret->n == ENA_STATE_MAX_IFACES)
			return;
		d = &ret->dev[ret->n++];
		memset(d, 0, sizeof(*d));
	}
	if (r->ifname[0])
		memcpy(d->ifname, r->ifname, sizeof(d->ifname));
	if (r->pci[0])
		memcpy(d->pci, r->pci, sizeof(d->pci));
	d->resets++;
	if (t_ms >= d->last_ms) {
		d->last_ms = t_ms;
		d->failed = r->outcome == KLOG_OUTCOME_FAILED;
		cause_text(l, r, d->cause, sizeof(d->cause));
	}
}

int ena_kernel_resets(const struct kevents *k, uint64_t now_ms, uint64_t window_ms,
		      struct ena_kernel *ret)
{
	_cleanup_free_ struct klog_incident *inc = calloc(1, sizeof(*inc));
	struct klog_log l = { 0 };
	struct ena_lists def = { NULL, NULL, NULL };
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (!inc)
		return -ENOMEM;
	for (size_t i = 0; i < k->n && r == 0; i++) {
		struct klog_event e;

		if (kevents_event(k, i, &e) == 1)
			r = klog_log_add(&l, &e);
	}
	if (r == 0)
		r = klog_analyze(&l, &def, inc);
	for (size_t i = 0; r == 0 && i < inc->n_resets; i++) {
		const struct klog_reset *x = &inc->resets[i];
		uint64_t t_ms = (uint64_t)l.ev[x->first].t_us / 1000;

		if (x->is_reset && t_ms <= now_ms && now_ms - t_ms <= window_ms)
			add_reset(ret, &l, x, t_ms);
	}
	klog_log_free(&l);
	return r;
}

int ena_kernel_load(const char *run_dir, uint64_t now_ms, uint64_t window_ms,
		    struct ena_kernel *ret)
{
	_cleanup_free_ struct kevents *k = NULL;
	char path[PATH_MAX];
	int r;

	memset(ret, 0, sizeof(*ret));
	/* no agent, or agent.kmsg off: nothing to read, and no 80 KiB buffer to clear for it
	 * (check ena runs on every NPD interval) */
	if (snprintf(path, sizeof(path), "%s/%s", run_dir, RUN_KERNEL_EVENTS) < (int)sizeof(path) &&
	    access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	r = kevents_state_read(run_dir, &kevents_state, k);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if (r != STATE_LOADED)
		return 0;
	return ena_kernel_resets(k, now_ms, window_ms, ret);
}
