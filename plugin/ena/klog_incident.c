/* SPDX-License-Identifier: MIT */
/*
 * Kernel-log events into resets, causes, verdicts and linked lockups (klog_incident.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>

#include "ena/klog_incident.h"
#include "base/util.h"

int klog_log_add(struct klog_log *l, const struct klog_event *e)
{
	bool noisy = e->kind == KLOG_ENA_STAT || e->kind == KLOG_ENA_TX_MISSED;

	if (l->n == KLOG_EVENTS_MAX || (noisy && l->n >= KLOG_EVENTS_MAX - KLOG_EVENTS_RESERVE)) {
		l->dropped++;
		return -E2BIG;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct klog_event *ev;

		if (cap > KLOG_EVENTS_MAX)
			cap = KLOG_EVENTS_MAX;
		ev = realloc(l->ev, cap * sizeof(*ev));
		if (!ev)
			return -ENOMEM;
		l->ev = ev;
		l->cap = cap;
	}
	l->ev[l->n++] = *e;
	return 0;
}

void klog_log_free(struct klog_log *l)
{
	if (!l)
		return;
	free(l->ev);
	memset(l, 0, sizeof(*l));
}

bool klog_is_lockup(const struct klog_event *e)
{
	switch (e->kind) {
	case KLOG_SOFT_LOCKUP:
	case KLOG_HARD_LOCKUP:
	case KLOG_HUNG_TASK:
	case KLOG_NETDEV_WATCHDOG:
		return true;
	case KLOG_RCU_STALL:
		return !e->cont;
	default:
		return false;
	}
}

/* A lockup that can starve a NAPI poll: a CPU stuck in the kernel. */
static bool is_starver(const struct klog_event *e)
{
	return (e->kind == KLOG_SOFT_LOCKUP || e->kind == KLOG_HARD_LOCKUP ||
		e->kind == KLOG_RCU_STALL) && !e->cont;
}

/* The CPU of lockup @i: its own, or (RCU stall) the first CPU line after it. */
static int lockup_cpu(const struct klog_log *l, size_t i)
{
	if (l->ev[i].cpu >= 0 || l->ev[i].kind != KLOG_RCU_STALL)
		return l->ev[i].cpu;
	for (size_t k = i + 1; k < l->n && k < i + 8; k++)
		if (l->ev[k].kind == KLOG_RCU_STALL && l->ev[k].cont)
			return l->ev[k].cpu;
	return -1;
}

/* ---- grouping ----------------------------------------------------------------------------- */

static bool same_device(const struct klog_reset *r, const struct klog_event *e)
{
	if (e->ifname[0] && r->ifname[0])
		return streq(e->ifname, r->ifname);
	if (e->pci[0] && r->pci[0])
		return streq(e->pci, r->pci);
	return true; /* a line that names no device: the device being reset */
}

struct group {
	struct klog_incident *inc;
	bool open[KLOG_RESETS_MAX];
};

static struct klog_reset *episode(struct group *g, const struct klog_event *e, size_t i)
{
	struct klog_incident *inc = g->inc;
	struct klog_reset *r;

	for (size_t k = inc->n_resets; k-- > 0;)
		if (g->open[k] && same_device(&inc->resets[k], e))
			return &inc->resets[k];
	if (inc->n_resets == KLOG_RESETS_MAX) {
		inc->dropped_resets++;
		return NULL;
	}
	g->open[inc->n_resets] = true;
	r = &inc->resets[inc->n_resets++];
	memset(r, 0, sizeof(*r));
	r->queue = r->cpu = r->lockup_cpu = -1;
	r->lockup = -1;
	r->first = i;
	/* the driver prints its statistics only at a reset (ena_timer_service(), ena_close()
	 * with the reset flag set): a dump alone is a reset whose other lines were not pasted */
	r->is_reset = e->kind == KLOG_ENA_STAT;
	return r;
}

static bool causes_reset(enum klog_kind k)
{
	return klog_kind_is_reset(k) && k != KLOG_ENA_TRIGGER && k != KLOG_ENA_RESET_DONE &&
	       k != KLOG_ENA_RESET_FAILED;
}

static void update(struct klog_reset *r, const struct klog_event *e)
{
	if (e->ifname[0] && !r->ifname[0])
		memcpy(r->ifname, e->ifname, sizeof(r->ifname));
	if (e->pci[0] && !r->pci[0])
		memcpy(r->pci, e->pci, sizeof(r->pci));
	if (klog_kind_is_reset(e->kind))
		r->is_reset = true;
	if (causes_reset(e->kind) && r->cause == KLOG_NONE)
		r->cause = e->kind;
	if (e->queue >= 0 && (r->queue < 0 || e->kind == r->cause))
		r->queue = e->queue;
	if (e->cpu >= 0 && e->kind != KLOG_NETDEV_WATCHDOG) /* that one is the watchdog's CPU */
		r->cpu = e->cpu;
	switch (e->kind) {
	case KLOG_ENA_TX_TIMEOUT:
		if (e->n1 > r->napi_us)
			r->napi_us = e->n1;
		break;
	case KLOG_ENA_POLL_STARVED:
		r->poll_starved = true;
		break;
	case KLOG_ENA_TX_MISSED:
		r->missed += e->n1;
		if (e->n2 * 1000 > r->napi_us)
			r->napi_us = e->n2 * 1000;
		break;
	case KLOG_ENA_TX_LOST:
		if (!e->cont) {
			r->lost = e->n1;
			r->threshold = e->n2;
		}
		break;
	case KLOG_ENA_RESET_DONE:
		r->outcome = KLOG_OUTCOME_COMPLETED;
		break;
	case KLOG_ENA_RESET_FAILED:
		r->outcome = KLOG_OUTCOME_FAILED;
		break;
	default:
		break;
	}
	if ((e->kind == KLOG_ENA_RESET_DONE || e->kind == KLOG_ENA_RESET_FAILED) && e->stat[0])
		memcpy(r->version, e->stat, sizeof(r->version));
}

/* ---- the statistics dump through the ethtool -S verdict ----------------------------------- */

static int dump_of(const struct klog_log *l, const struct klog_reset *r, struct ethtool_devdump *d)
{
	size_t n = 0;

	memset(d, 0, sizeof(*d));
	for (size_t i = r->first; i <= r->last; i++)
		n += l->ev[i].kind == KLOG_ENA_STAT && same_device(r, &l->ev[i]);
	if (n == 0)
		return 0;
	d->stats = calloc(n, sizeof(*d->stats));
	if (!d->stats)
		return -ENOMEM;
	snprintf(d->ifname, sizeof(d->ifname), "%s", r->ifname);
	snprintf(d->bus_info, sizeof(d->bus_info), "%s", r->pci);
	for (size_t i = r->first; i <= r->last; i++) {
		const struct klog_event *e = &l->ev[i];

		if (e->kind != KLOG_ENA_STAT || !same_device(r, e) || ethtool_dump_find(d, e->stat))
			continue;
		memcpy(d->stats[d->n].name, e->stat, sizeof(d->stats[0].name));
		d->stats[d->n++].value = e->n1;
	}
	return (int)d->n;
}

static int verdicts(const struct klog_log *l, const struct ena_lists *lists,
		    struct klog_incident *inc)
{
	struct ethtool_devdump prev[KLOG_RESETS_MAX] = { 0 };
	int r = 0;

	for (size_t k = 0; k < inc->n_resets && r >= 0; k++) {
		struct klog_reset *x = &inc->resets[k];
		struct ethtool_devdump cur, zero = { 0 };
		const struct ethtool_devdump *base = NULL;

		r = dump_of(l, x, &cur);
		if (r <= 0)
			continue;
		x->n_stats = (size_t)r;
		for (size_t j = k; j-- > 0;)
			if (prev[j].n && streq(prev[j].ifname, cur.ifname)) {
				base = &prev[j];
				break;
			}
		if (!base) { /* the first dump: its counters count since the driver loaded */
			zero = cur;
			zero.stats = calloc(cur.n, sizeof(*cur.stats));
			if (!zero.stats) {
				ethtool_dump_free(&cur);
				r = -ENOMEM;
				break;
			}
			for (size_t i = 0; i < cur.n; i++)
				memcpy(zero.stats[i].name, cur.stats[i].name,
				       sizeof(zero.stats[i].name));
			base = &zero;
			x->since_load = true;
		}
		x->has_verdict = ena_diff(base, &cur, lists, NULL, 0, &x->verdict) == 0;
		ethtool_dump_free(&zero);
		prev[k] = cur;
	}
	for (size_t k = 0; k < KLOG_RESETS_MAX; k++)
		ethtool_dump_free(&prev[k]);
	return r < 0 ? r : 0;
}

/* ---- linking lockups ---------------------------------------------------------------------- */

static void link_lockup(const struct klog_log *l, struct klog_incident *inc, size_t n_starvers)
{
	for (size_t k = 0; k < inc->n_resets; k++) {
		struct klog_reset *r = &inc->resets[k];
		const struct klog_event *f = &l->ev[r->first];
		int64_t best = INT64_MAX;

		for (size_t i = 0; i < l->n; i++) {
			const struct klog_event *e = &l->ev[i];
			int cpu;
			int64_t dt;

			if (!is_starver(e))
				continue;
			cpu = lockup_cpu(l, i);
			if (r->cpu >= 0 && cpu == r->cpu) {
				r->lockup = (ssize_t)i, r->lockup_cpu = cpu;
				break;
			}
			if (e->clock != KLOG_CLOCK_NONE && e->clock == f->clock) {
				dt = e->t_us > f->t_us ? e->t_us - f->t_us : f->t_us - e->t_us;
				if (dt <= KLOG_LINK_US && dt < best && r->cpu < 0) {
					best = dt;
					r->lockup = (ssize_t)i, r->lockup_cpu = cpu;
				}
			} else if (n_starvers == 1 && r->cpu < 0 && f->clock == KLOG_CLOCK_NONE) {
				r->lockup = (ssize_t)i, r->lockup_cpu = cpu;
			}
		}
	}
}

int klog_analyze(const struct klog_log *l, const struct ena_lists *lists,
		 struct klog_incident *ret)
{
	struct group g = { .inc = ret };
	size_t n_starvers = 0;

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < l->n; i++) {
		const struct klog_event *e = &l->ev[i];
		struct klog_reset *r;

		ret->n_lockups += klog_is_lockup(e);
		n_starvers += is_starver(e);
		if (!klog_kind_is_ena(e->kind) && e->kind != KLOG_NETDEV_WATCHDOG)
			continue;
		if (e->kind == KLOG_NETDEV_WATCHDOG) {
			/* only into a reset of that device already open (the ENA lines follow it)
			 * */
			for (size_t k = ret->n_resets; k-- > 0;)
				if (g.open[k] && e->ifname[0] &&
				    streq(e->ifname, ret->resets[k].ifname))
					update(&ret->resets[k], e);
			continue;
		}
		r = episode(&g, e, i);
		if (!r)
			continue;
		update(r, e);
		r->last = i;
		if (e->kind == KLOG_ENA_RESET_DONE || e->kind == KLOG_ENA_RESET_FAILED)
			g.open[r - ret->resets] = false;
	}
	link_lockup(l, ret, n_starvers);
	return verdicts(l, lists, ret);
}

/* ---- words -------------------------------------------------------------------------------- */

const char *klog_reset_reason(const struct klog_reset *r)
{
	if (r->poll_starved)
		return "suspected_poll_starvation";
	switch (r->cause) {
	case KLOG_ENA_TX_TIMEOUT: return "os_netdev_wd";
	case KLOG_ENA_TX_LOST: return "missing_tx_cmpl";
	case KLOG_ENA_NO_INTERRUPT: return "missing_intr";
	case KLOG_ENA_KEEPALIVE: return "keep_alive_to";
	case KLOG_ENA_ADMIN: return "admin_to";
	case KLOG_ENA_DEVICE_REQUEST: return "device_request_reset";
	default: return "";
	}
}

/* "6.6s" from microseconds. */
static char *secs(uint64_t us, char *buf, size_t size)
{
	us += 50000; /* to the nearest tenth */
	snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "s", us / 1000000, us % 1000000 / 100000);
	return buf;
}

char *klog_reset_cause(const struct klog_reset *r, char *buf, size_t size)
{
	char t[32];

	switch (r->cause) {
	case KLOG_ENA_TX_TIMEOUT:
		if (r->poll_starved)
			snprintf(buf, size, "poll starvation (NAPI scheduled, not run for %s)",
				 secs(r->napi_us, t, sizeof(t)));
		else
			snprintf(buf, size, "Tx timeout (netdev watchdog)");
		break;
	case KLOG_ENA_TX_LOST:
		snprintf(buf, size, "lost Tx completions %" PRIu64 " > %" PRIu64 "%s", r->lost,
			 r->threshold, r->poll_starved ? " (poll starvation)" : "");
		break;
	case KLOG_ENA_NO_INTERRUPT: snprintf(buf, size, "missing interrupt"); break;
	case KLOG_ENA_KEEPALIVE: snprintf(buf, size, "keep-alive watchdog timeout"); break;
	case KLOG_ENA_ADMIN: snprintf(buf, size, "admin queue timeout"); break;
	case KLOG_ENA_DEVICE_REQUEST: snprintf(buf, size, "device requested reset"); break;
	default:
		snprintf(buf, size, r->is_reset ? "cause not in the log" : "missed Tx completions");
		break;
	}
	return buf;
}

struct text {
	char *buf;
	size_t size, len;
};

static void add(struct text *t, const char *fmt, ...) _printf_(2, 3);
static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)buf_vappendf(t->buf, t->size, &t->len, true, fmt, ap);
	va_end(ap);
}

static void lockup_words(struct text *t, const struct klog_event *e, int cpu)
{
	if (cpu >= 0)
		add(t, "cpu%d ", cpu);
	switch (e->kind) {
	case KLOG_SOFT_LOCKUP: add(t, "soft lockup %" PRIu64 "s", e->n1); break;
	case KLOG_HARD_LOCKUP: add(t, "hard lockup"); break;
	case KLOG_RCU_STALL: add(t, "RCU stall"); break;
	case KLOG_HUNG_TASK: add(t, "task blocked %" PRIu64 "s", e->n1); break;
	default: add(t, "%s", klog_kind_name(e->kind)); break;
	}
	if (e->comm[0])
		add(t, " (%s)", e->comm);
}

char *klog_reset_chain(const struct klog_log *l, const struct klog_reset *r, char *buf,
		       size_t size)
{
	struct text t = { buf, size, 0 };
	char c[96], s[32];

	buf[0] = '\0';
	if (r->lockup >= 0) {
		lockup_words(&t, &l->ev[r->lockup], r->lockup_cpu);
		add(&t, " -> ");
	}
	add(&t, "%s", r->ifname[0] ? r->ifname : r->pci[0] ? r->pci : "ENA device");
	if (r->queue >= 0)
		add(&t, " q%d", r->queue);
	if (r->cause == KLOG_ENA_TX_TIMEOUT && r->poll_starved)
		add(&t, " Tx stopped %s, NAPI scheduled but not run",
		    secs(r->napi_us, s, sizeof(s)));
	else if (r->cause == KLOG_ENA_TX_TIMEOUT)
		add(&t, " Tx stopped, NAPI last ran %s ago", secs(r->napi_us, s, sizeof(s)));
	else if (r->missed)
		add(&t, " Tx not completed (%" PRIu64 ")", r->missed);
	if (r->cpu >= 0)
		add(&t, " [napi cpu%d]", r->cpu);
	if (r->cause == KLOG_ENA_TX_TIMEOUT && r->poll_starved)
		add(&t, " -> poll starvation");
	else if (r->cause == KLOG_NONE && r->has_verdict && r->verdict.cause[0])
		add(&t, " -> statistics: %s", r->verdict.cause);
	else if (r->cause != KLOG_NONE || r->is_reset)
		add(&t, " -> %s", klog_reset_cause(r, c, sizeof(c)));
	if (r->is_reset) {
		add(&t, " -> reset (%s", r->outcome == KLOG_OUTCOME_COMPLETED ? "completed" :
			r->outcome == KLOG_OUTCOME_FAILED ? "FAILED" : "outcome not logged");
		if (r->version[0])
			add(&t, ", ENA %s", r->version);
		add(&t, ")");
	}
	return buf;
}

static void dev_words(struct text *t, const struct klog_event *e)
{
	if (e->ifname[0])
		add(t, "%s ", e->ifname);
	else if (e->pci[0])
		add(t, "%s ", e->pci);
	if (e->queue >= 0)
		add(t, "q%d ", e->queue);
}

char *klog_event_describe(const struct klog_event *e, char *buf, size_t size)
{
	struct text t = { buf, size, 0 };
	char s[32];

	buf[0] = '\0';
	if (klog_kind_is_ena(e->kind) || e->kind == KLOG_NETDEV_WATCHDOG)
		dev_words(&t, e);
	switch (e->kind) {
	case KLOG_ENA_TX_TIMEOUT:
		add(&t, "Tx timeout: NAPI last ran %s ago", secs(e->n1, s, sizeof(s)));
		if (e->n2)
			add(&t, " (threshold %s)", secs(e->n2, s, sizeof(s)));
		break;
	case KLOG_ENA_POLL_STARVED: add(&t, "NAPI scheduled but not run: poll starvation"); break;
	case KLOG_ENA_TX_MISSED:
		if (e->cont)
			add(&t, "missed Tx completions (details)");
		else
			add(&t, "%" PRIu64 " Tx completion%s missed", e->n1, e->n1 == 1 ? "" : "s");
		break;
	case KLOG_ENA_TX_LOST:
		if (e->cont)
			add(&t, "lost Tx completions (details)");
		else
			add(&t, "lost Tx completions %" PRIu64 " > %" PRIu64 ": reset", e->n1,
			    e->n2);
		break;
	case KLOG_ENA_NO_INTERRUPT: add(&t, "no interrupt (MSI-X): reset"); break;
	case KLOG_ENA_KEEPALIVE: add(&t, "keep-alive watchdog timeout: reset"); break;
	case KLOG_ENA_ADMIN: add(&t, "admin queue timeout: reset"); break;
	case KLOG_ENA_DEVICE_REQUEST: add(&t, "device requested a reset"); break;
	case KLOG_ENA_TRIGGER: add(&t, "reset starts"); break;
	case KLOG_ENA_RESET_DONE: add(&t, "reset completed%s%s", e->stat[0] ? ", ENA " : "",
				      e->stat); break;
	case KLOG_ENA_RESET_FAILED: add(&t, "reset FAILED"); break;
	case KLOG_ENA_STAT: add(&t, "%s = %" PRIu64, e->stat, e->n1); break;
	case KLOG_NETDEV_WATCHDOG:
		add(&t, "NETDEV WATCHDOG: transmit queue timed out");
		if (e->n1)
			add(&t, " after %" PRIu64 "ms", e->n1);
		break;
	default:
		lockup_words(&t, e, e->cpu);
		if (e->pid >= 0)
			add(&t, " pid %d", e->pid);
		break;
	}
	if (e->cpu >= 0 && (klog_kind_is_ena(e->kind) || e->kind == KLOG_NETDEV_WATCHDOG))
		add(&t, " [cpu%d]", e->cpu);
	return buf;
}
