/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie check ena` (condition ENADeviceReset) and `check ena-allowance` (NPD temporary
 * rule, event ENAAllowanceExceeded): the I/O edge around ena.c's pure verdicts.
 *
 * Each read holds RTNL and may wait on the device's admin queue (ENI stats are an admin
 * command), so a check reads the devices at most every ena.min_read_interval; in between it
 * answers from its state. State is one file per check in the state dir, keyed by bus_info so
 * a renamed interface keeps its baseline; the reset check also keeps the reset events of the
 * last ena.window there, which keeps the condition True for the window instead of flapping.
 *
 * The state is rewritten (durably: two fsyncs) only when a reading tells the verdicts something
 * new: a counter moved, an event came or expired, a device came, went or changed. A reading that
 * changes nothing (most of them) leaves the file alone and only moves the lock file's stamp (a
 * write(2), see base/state.h), which the rate limit reads. The stored read times then lag the
 * last read; a rewrite at least every window/REFRESH_DIV bounds that lag, and what judges a
 * baseline's age allows for it (older than the window plus the lag), so a baseline is never
 * judged too old or forgotten earlier than with a rewrite on every read: no reset is missed.
 * A lost stamp (a crash) only makes the next run read the devices again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>

#include "check/condmsg.h"
#include "check/cz.h"
#include "ena/check_ena.h"
#include "ena/ena.h"
#include "ena/ena_kernel.h"
#include "ena/ena_link.h"
#include "base/log.h"
#include "base/state.h"
#include "base/util.h"

/* A reading that changed nothing still rewrites the state when the stored one is older than
 * window/REFRESH_DIV (5 minutes of the default hour). */
#define REFRESH_DIV 12

static uint64_t refresh_ms(const struct cz_config *cfg)
{
	return cfg->ena.window_ms / REFRESH_DIV;
}

/* How old a baseline may be: the window, plus what its stored read time may lag the last read. */
static uint64_t keep_ms(const struct cz_config *cfg)
{
	return cfg->ena.window_ms + refresh_ms(cfg);
}

void ena_devices_free(struct ena_devices *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		ethtool_dump_free(&d->d[i]);
	d->n = 0;
}

static bool wanted(const struct cz_config *cfg, char **only, size_t n_only, const char *ifname)
{
	if (n_only > 0) {
		for (size_t i = 0; i < n_only; i++)
			if (streq(only[i], ifname))
				return true;
		return false;
	}
	return cfg->ena.interfaces.n == 0 || config_strlist_has(&cfg->ena.interfaces, ifname);
}

static void note_failure(struct ena_devices *ret, const char *ifname, int r)
{
	if (r == -ENODEV || r == -ENXIO) {
		ret->gone++; /* vanished or renamed since the listing */
		return;
	}
	if (ret->failed++ == 0) {
		ret->first_err = r;
		snprintf(ret->failed_if, sizeof(ret->failed_if), "%s", ifname);
	}
}

int ena_read_devices(const struct cz_config *cfg, const struct ethtool_ops *ops, char **only,
		     size_t n_only, struct ena_devices *ret)
{
	char names[ETHTOOL_MAX_DUMPS][ETHTOOL_IFNAME_MAX + 1];
	int n = ops->list(ops->userdata, names, ETHTOOL_MAX_DUMPS);

	memset(ret, 0, sizeof(*ret));
	if (n < 0)
		return n;
	for (int i = 0; i < n && ret->n < ETHTOOL_MAX_DUMPS; i++) {
		struct ethtool_devdump d = { 0 };
		int r;

		if (!valid_ifname(names[i]) || !wanted(cfg, only, n_only, names[i]))
			continue;
		r = ethtool_read_drvinfo(ops, names[i], &d);
		if (r == -EOPNOTSUPP && n_only == 0)
			continue; /* lo and friends: no driver info, certainly not ENA */
		if (r < 0) {
			note_failure(ret, names[i], r);
			continue;
		}
		if (n_only == 0 && !config_strlist_has(&cfg->ena.drivers, d.driver))
			continue;
		r = ethtool_read_stats(ops, names[i], &d);
		if (r < 0) {
			ethtool_dump_free(&d);
			note_failure(ret, names[i], r);
			continue;
		}
		ret->d[ret->n++] = d;
	}
	return 0;
}

/*
 * Lock and load a check's state. A corrupt or unreadable payload is a new baseline (noted).
 * Returns the enum state_status or -errno; *@ret_read_ms is when the devices were last read:
 * the stamp when it is later than the state's own time.
 */
/* The hand-off: @payload (NULL: no file) parsed as node_read_ena() would read it back. */
static void seen_set(struct ena_seen_one *s, const char *payload, size_t len)
{
	int r = 0;

	if (!s)
		return;
	ena_state_free(&s->st);
	memset(&s->st, 0, sizeof(s->st));
	if (payload)
		r = ena_state_parse(payload, len, &s->st);
	s->rc = !payload ? -ENOENT : r == -EINVAL ? -EBADMSG : r;
	s->set = true;
}

void ena_seen_free(struct ena_seen *s)
{
	ena_state_free(&s->reset.st);
	ena_state_free(&s->allowance.st);
	memset(s, 0, sizeof(*s));
}

static int load(const char *dir, const struct state_type *t, struct state_txn *txn,
		struct ena_state *st, struct ena_seen_one *seen, uint64_t *ret_read_ms)
{
	_cleanup_free_ char *payload = NULL;
	size_t len = 0;
	uint64_t stamp;
	int r;

	memset(st, 0, sizeof(*st));
	r = state_begin(txn, dir, t, &payload, &len);
	if (r == STATE_LOADED) {
		r = ena_state_parse(payload, len, st);
		if (r == -ENOMEM)
			return r;
		r = r < 0 ? state_discard(txn) : STATE_LOADED;
	}
	if (r < 0)
		return r;
	/* a discarded file was moved aside (or, read-only, left): the reader's word is not ours */
	if (r != STATE_DISCARDED)
		seen_set(seen, r == STATE_LOADED ? payload : NULL, len);
	*ret_read_ms = st->read_ms;
	if (st->read_ms && state_stamp_get(txn, &stamp) == 0 && stamp > st->read_ms)
		*ret_read_ms = stamp;
	return r;
}

/* Read less than ena.min_read_interval ago: answer from the state (each read holds RTNL). */
static bool read_recently(const struct cz_config *cfg, uint64_t read_ms, uint64_t now_ms)
{
	return read_ms && now_ms >= read_ms && now_ms - read_ms < cfg->ena.min_read_interval_ms;
}

/* Forget devices not seen for @keep_ms and without events in the window. Returns true when
 * something was dropped (the state must be saved). */
static bool forget_old(struct ena_state *st, uint64_t now_ms, uint64_t window_ms, uint64_t keep_ms)
{
	size_t k = 0, events = 0, n = st->n;

	for (size_t i = 0; i < st->n; i++) {
		struct ena_ifstate *f = &st->ifs[i];

		events += f->hist.n;
		ena_history_prune(&f->hist, now_ms, window_ms);
		events -= f->hist.n;
		if (f->hist.n == 0 && (f->read_ms > now_ms || now_ms - f->read_ms > keep_ms)) {
			ethtool_dump_free(&f->base);
			continue;
		}
		if (k != i) {
			st->ifs[k] = *f;
			memset(f, 0, sizeof(*f));
		}
		k++;
	}
	st->n = k;
	return events > 0 || k != n;
}

struct pass {
	const struct cz_config *cfg;
	struct ena_lists l;
	uint64_t now_ms;
	uint64_t stored_ms;	/* the state's read time: devices read then carry it too */
	size_t stored_n;	/* how many devices carry it */
	size_t same;		/* of those, read again in this pass with nothing new */
	bool changed;		/* the state must be rewritten */
	size_t seen;		/* ENA devices read in this pass */
	char seen_if[ETHTOOL_IFNAME_MAX + 1];
	char risk[NPD_MSG_MAX / 2];
	char notes[NPD_MSG_MAX / 2];
	const struct ena_qc_source *src; /* queue -> CPU, asked only when something happened */
	struct ena_seen_one *handoff;	 /* the agent's (check_seen's ena), or NULL */
};

/* Before a read: remember which devices the stored state says the last read saw. */
static void pass_start(struct pass *p, const struct ena_state *st, int status)
{
	p->stored_ms = st->read_ms;
	p->changed = status != STATE_LOADED || !st->read_ms;
	for (size_t i = 0; i < st->n; i++)
		p->stored_n += st->ifs[i].read_ms == st->read_ms;
}

/* After a read: the state must be rewritten when it changed, when a device the last read saw
 * was not read again, or when its stored time is due a refresh (or lies in the future). */
static bool pass_dirty(const struct pass *p)
{
	return p->changed || p->same != p->stored_n || p->now_ms < p->stored_ms ||
	       p->now_ms - p->stored_ms >= refresh_ms(p->cfg);
}

/* Store @d (filtered) as the new baseline of @key; returns the entry or NULL. */
static struct ena_ifstate *rebase(struct pass *p, struct ena_state *st, const char *key,
				  const struct ethtool_devdump *d)
{
	struct ena_ifstate *f = ena_state_find(st, key);
	struct ethtool_devdump filtered;

	if (!f)
		f = ena_state_add(st, key);
	if (!f || ena_filter(d, &p->l, &filtered) < 0) {
		p->changed = true;
		return NULL;
	}
	/* read_ms moves to now: a second reading of the same key in one pass is a change */
	if (f->read_ms == p->stored_ms && ena_baseline_same(&f->base, &filtered))
		p->same++;
	else
		p->changed = true;
	ethtool_dump_free(&f->base);
	f->base = filtered;
	f->read_ms = p->now_ms;
	return f;
}

/* "ena,ena_express" for messages. */
static const char *drivers_text(const struct cz_config *cfg, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < cfg->ena.drivers.n && len + 1 < size; i++) {
		int w = snprintf(buf + len, size - len, "%s%s", i ? "," : "",
				 cfg->ena.drivers.item[i]);

		len = w < 0 ? size : len + (size_t)w;
	}
	return buf;
}

/* Appends "; text" to a bounded buffer. */
static void add_note(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
static void add_note(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 3 >= size)
		return; /* no room for "; " and a character */
	if (len)
		buf_appendf_cut(buf, size, &len, "; ");
	va_start(ap, fmt);
	(void)buf_vappendf(buf, size, &len, true, fmt, ap);
	va_end(ap);
}

#define QC_MAX 512

/* Compare one device with its baseline and record what happened. */
/* ena_diff, then again with the device's queue -> CPU map when there is something to explain */
static int diff_linked(struct pass *p, const struct ena_ifstate *f,
		       const struct ethtool_devdump *d, struct ena_verdict *v)
{
	_cleanup_free_ struct ena_queue_cpu *qc = NULL;
	int r = ena_diff(&f->base, d, &p->l, NULL, 0, v), n;

	if (r < 0 || !p->src || !(v->resets || v->reset_fail || v->cause[0]))
		return r;
	qc = calloc(QC_MAX, sizeof(*qc));
	if (!qc)
		return r;
	n = p->src->get(p->src->userdata, d->ifname, qc, QC_MAX);
	return n > 0 ? ena_diff(&f->base, d, &p->l, qc, (size_t)n, v) : r;
}

static void compare_one(struct pass *p, struct ena_state *st, const struct ethtool_devdump *d)
{
	uint64_t keep = keep_ms(p->cfg);
	struct ena_verdict v;
	struct ena_ifstate *f;
	char key[ETHTOOL_INFO_MAX + 8], age[32];

	if (ethtool_dump_key(d, key, sizeof(key)) < 0)
		return;
	f = ena_state_find(st, key);
	if (f && diff_linked(p, f, d, &v) == 0) {
		bool stale = f->read_ms > p->now_ms || p->now_ms - f->read_ms > keep;

		if ((v.resets || v.reset_fail) && stale)
			add_note(p->notes, sizeof(p->notes),
				 "%s %" PRIu64 " resets in %s before now, "
				 "older baseline than the window",
				 d->ifname, v.resets,
				 format_duration(p->now_ms - f->read_ms, age, sizeof(age)));
		else if (v.resets || v.reset_fail) {
			ena_history_add(&f->hist, p->now_ms, v.resets ? v.resets : 1, v.cause);
			p->changed = true;
		} else if (v.new_baseline)
			add_note(p->notes, sizeof(p->notes),
				 "%s counters went down (driver reloaded): new baseline",
				 d->ifname);
		else if (v.cause[0])
			add_note(p->risk, sizeof(p->risk), "%s %s", d->ifname, v.cause);
	} else if (!f)
		add_note(p->notes, sizeof(p->notes), "%s first reading", d->ifname);
	f = rebase(p, st, key, d);
	if (!f)
		add_note(p->notes, sizeof(p->notes), "%s not remembered (state full)", d->ifname);
}

/*
 * Forget what is old, then rewrite the state when anything changed (or after a read, when its
 * stored time is due a refresh); after a read that changed nothing only move the stamp (the
 * rate limit's time). 0 or -errno from the rewrite; a stamp that cannot be written is ignored:
 * the next run reads the devices again.
 */
/* Replace the state with @st; the hand-off then holds what was written. */
static int commit(struct state_txn *txn, const struct ena_state *st, struct ena_seen_one *seen)
{
	_cleanup_free_ char *payload = NULL;
	ssize_t n;
	int r;

	if (txn->flags & STATE_READ_ONLY)
		return 0;
	n = ena_state_format(st, &payload);
	if (n < 0)
		return (int)n;
	r = state_commit(txn, payload, (size_t)n);
	if (r == 0)
		seen_set(seen, payload, (size_t)n);
	return r;
}

static int save(struct state_txn *txn, struct pass *p, struct ena_state *st, bool read)
{
	int r;

	if (forget_old(st, p->now_ms, p->cfg->ena.window_ms, keep_ms(p->cfg)) ||
	    (read && pass_dirty(p)))
		return commit(txn, st, p->handoff);
	if (!read)
		return 0; /* a rate-limited answer that changed nothing leaves everything alone */
	r = state_stamp_set(txn, p->now_ms);
	if (r < 0)
		(void)log_debug_errno(r, "Failed to write the stamp of state '%s': %m, ignoring",
				      txn->t->name);
	return 0;
}

static int read_pass(struct pass *p, const struct ethtool_ops *ops, struct ena_state *st,
		     struct npd_result *res)
{
	struct ena_devices devs;
	int r = ena_read_devices(p->cfg, ops, NULL, 0, &devs);

	if (r < 0)
		return npd_unknown(res, r, "cannot list network interfaces");
	if (devs.n == 0 && devs.failed > 0)
		return npd_unknown(res, devs.first_err, "cannot read ethtool stats of %s",
				   devs.failed_if);
	for (size_t i = 0; i < devs.n; i++) {
		compare_one(p, st, &devs.d[i]);
		if (p->seen++ == 0)
			memcpy(p->seen_if, devs.d[i].ifname, sizeof(p->seen_if));
	}
	if (devs.failed > 0)
		add_note(p->notes, sizeof(p->notes), "%s unreadable: %s", devs.failed_if,
			 strerror(-devs.first_err));
	ena_devices_free(&devs);
	st->read_ms = p->now_ms;
	return NPD_OK;
}

/* One device's resets for the message: counters and kernel log merged. */
struct reset_line {
	const char *name, *cause;
	uint64_t n;
	bool klog;	/* the kernel log saw more resets than the counters */
};

/* Per device, max(counter resets, logged resets): both see the same resets, so never added. */
static size_t merge_lines(struct ena_state *st, struct ena_kernel *kr, struct reset_line *out)
{
	bool used[ENA_STATE_MAX_IFACES] = { false };
	size_t n = 0;

	for (size_t i = 0; i < st->n; i++) {
		struct ena_ifstate *f = &st->ifs[i];
		uint64_t nc = ena_history_resets(&f->hist);
		struct ena_kreset *k = kr ? ena_kernel_find(kr, f->base.bus_info, f->base.ifname) :
					    NULL;
		uint64_t nk = k ? k->resets : 0;
		const char *cc = nc ? f->hist.ev[f->hist.n - 1].cause : "";

		if (k)
			used[k - kr->dev] = true;
		if (!nc && !nk)
			continue;
		out[n++] = (struct reset_line){ f->base.ifname[0] ? f->base.ifname : f->key,
						cc[0] || !k ? cc : k->cause, nc > nk ? nc : nk,
						nk > nc };
	}
	for (size_t i = 0; kr && i < kr->n; i++)
		if (!used[i] && kr->dev[i].resets)
			out[n++] = (struct reset_line){ kr->dev[i].ifname[0] ? kr->dev[i].ifname :
							kr->dev[i].pci, kr->dev[i].cause,
							kr->dev[i].resets, true };
	return n;
}

static int resets_verdict(struct pass *p, struct ena_state *st, struct ena_kernel *kr,
			  struct npd_result *res)
{
	struct reset_line lines[2 * ENA_STATE_MAX_IFACES];
	bool done[2 * ENA_STATE_MAX_IFACES] = { false }, problem = false;
	size_t nl = merge_lines(st, kr, lines);
	char win[32], drv[128];

	format_duration(p->cfg->ena.window_ms, win, sizeof(win));
	npd_set(res, NPD_OK, "%s", "");
	/* most resets first: a simple selection, there are a handful of devices */
	for (;;) {
		const struct reset_line *best = NULL;
		size_t bi = 0;

		for (size_t i = 0; i < nl; i++)
			if (!done[i] && (!best || lines[i].n > best->n))
				best = &lines[i], bi = i;
		if (!best)
			break;
		problem = true;
		done[bi] = true;
		if (best->klog) { /* the kernel log saw more: say so after the cause */
			char c[ENA_CAUSE_MAX + 16];

			snprintf(c, sizeof(c), "%s%skernel log", best->cause,
				 best->cause[0] ? "; " : "");
			condmsg_ena_resets(res, best->name, best->n, win, c);
		} else {
			condmsg_ena_resets(res, best->name, best->n, win, best->cause);
		}
	}
	if (problem)
		res->status = NPD_PROBLEM;
	else if (p->seen == 0)
		npd_append(res, "No ENA interface (drivers: %s)",
			   drivers_text(p->cfg, drv, sizeof(drv)));
	else if (p->seen == 1)
		npd_append(res, "%s: no ENA resets in %s", p->seen_if, win);
	else
		npd_append(res, "%zu ENA interfaces: no resets in %s", p->seen, win);
	if (p->risk[0])
		npd_append(res, "risk: %s", p->risk);
	if (p->notes[0])
		npd_append(res, "%s", p->notes);
	return res->status;
}

int ena_check_resets(const struct cz_config *cfg, const struct ethtool_ops *ops,
		     const char *state_dir, uint64_t now_ms, const struct ena_qc_source *src,
		     struct npd_result *res)
{
	return ena_check_resets_kernel(cfg, ops, state_dir, now_ms, src, NULL, res);
}

static int check_resets(const struct cz_config *cfg, const struct ethtool_ops *ops,
			const char *state_dir, unsigned state_flags, uint64_t now_ms,
			const struct ena_qc_source *src, struct ena_kernel *kr,
			struct ena_seen_one *seen, struct npd_result *res);

int ena_check_resets_kernel(const struct cz_config *cfg, const struct ethtool_ops *ops,
			    const char *state_dir, uint64_t now_ms, const struct ena_qc_source *src,
			    struct ena_kernel *kr, struct npd_result *res)
{
	return check_resets(cfg, ops, state_dir, 0, now_ms, src, kr, NULL, res);
}

static int check_resets(const struct cz_config *cfg, const struct ethtool_ops *ops,
			const char *state_dir, unsigned state_flags, uint64_t now_ms,
			const struct ena_qc_source *src, struct ena_kernel *kr,
			struct ena_seen_one *seen, struct npd_result *res)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT_FLAGS(state_flags);
	_cleanup_(ena_state_free) struct ena_state st = { 0 };
	struct pass p = { .cfg = cfg, .l = ena_lists_from_config(cfg), .now_ms = now_ms,
			  .src = src, .handoff = seen };
	uint64_t last_read = 0;
	bool read = false;
	int r, status;

	status = load(state_dir, &ena_reset_state, &txn, &st, seen, &last_read);
	if (status < 0)
		return npd_unknown(res, status, "cannot read state '%s/ena'", state_dir);
	if (status == STATE_DISCARDED)
		add_note(p.notes, sizeof(p.notes), "state was corrupt: new baseline");
	if (!read_recently(cfg, last_read, now_ms)) {
		pass_start(&p, &st, status);
		r = read_pass(&p, ops, &st, res);
		if (r != NPD_OK)
			return r;
		read = true;
	} else {
		/* rate-limited: answer for the devices the last read saw */
		for (size_t i = 0; i < st.n; i++)
			if (st.ifs[i].read_ms == st.read_ms && p.seen++ == 0)
				memcpy(p.seen_if, st.ifs[i].base.ifname, sizeof(p.seen_if));
	}
	r = save(&txn, &p, &st, read);
	if (r < 0)
		return npd_unknown(res, r, "cannot save state '%s/ena'", state_dir);
	return resets_verdict(&p, &st, kr, res);
}

/* One device for the allowance check: what rose since its last reading. */
static void allowance_one(struct pass *p, struct ena_state *st, const struct ethtool_devdump *d,
			  bool *problem)
{
	uint64_t floor = p->cfg->ena.conntrack_floor;
	struct ena_allowance a;
	struct ena_ifstate *f;
	char key[ETHTOOL_INFO_MAX + 8], text[NPD_MSG_MAX / 2];

	if (ethtool_dump_key(d, key, sizeof(key)) < 0)
		return;
	f = ena_state_find(st, key);
	ena_allowance_diff(f ? &f->base : NULL, d, &p->l, floor, &a);
	if (a.n_rose || a.below_floor) {
		*problem = true;
		add_note(p->risk, sizeof(p->risk), "%s %s", d->ifname,
			 ena_allowance_format(&a, floor, text, sizeof(text)));
	} else if (!f)
		add_note(p->notes, sizeof(p->notes), "%s first reading", d->ifname);
	if (!rebase(p, st, key, d))
		add_note(p->notes, sizeof(p->notes), "%s not remembered (state full)", d->ifname);
}

static int check_allowance(const struct cz_config *cfg, const struct ethtool_ops *ops,
			   const char *state_dir, unsigned state_flags, uint64_t now_ms,
			   struct ena_seen_one *seen, struct npd_result *res);

int ena_check_allowance(const struct cz_config *cfg, const struct ethtool_ops *ops,
			const char *state_dir, uint64_t now_ms, struct npd_result *res)
{
	return check_allowance(cfg, ops, state_dir, 0, now_ms, NULL, res);
}

static int check_allowance(const struct cz_config *cfg, const struct ethtool_ops *ops,
			   const char *state_dir, unsigned state_flags, uint64_t now_ms,
			   struct ena_seen_one *seen, struct npd_result *res)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT_FLAGS(state_flags);
	_cleanup_(ena_state_free) struct ena_state st = { 0 };
	struct pass p = { .cfg = cfg, .l = ena_lists_from_config(cfg), .now_ms = now_ms,
			  .handoff = seen };
	struct ena_devices devs;
	uint64_t last_read = 0;
	bool problem = false;
	char buf[128];
	int r, status;

	status = load(state_dir, &ena_allowance_state, &txn, &st, seen, &last_read);
	if (status < 0)
		return npd_unknown(res, status, "cannot read state '%s/ena-allowance'", state_dir);
	if (read_recently(cfg, last_read, now_ms))
		return npd_set(res, NPD_OK, "not read: last read less than %s ago",
			       format_duration(cfg->ena.min_read_interval_ms, buf, sizeof(buf)));
	if (status == STATE_DISCARDED)
		add_note(p.notes, sizeof(p.notes), "state was corrupt: new baseline");
	pass_start(&p, &st, status);
	r = ena_read_devices(cfg, ops, NULL, 0, &devs);
	if (r < 0)
		return npd_unknown(res, r, "cannot list network interfaces");
	if (devs.n == 0 && devs.failed > 0)
		return npd_unknown(res, devs.first_err, "cannot read ethtool stats of %s",
				   devs.failed_if);
	for (size_t i = 0; i < devs.n; i++)
		allowance_one(&p, &st, &devs.d[i], &problem);
	p.seen = devs.n;
	ena_devices_free(&devs);
	st.read_ms = now_ms;
	r = save(&txn, &p, &st, true);
	if (r < 0)
		return npd_unknown(res, r, "cannot save state '%s/ena-allowance'", state_dir);
	if (problem)
		npd_set(res, NPD_PROBLEM, "%s", p.risk);
	else if (p.seen == 0)
		npd_set(res, NPD_OK, "No ENA interface (drivers: %s)",
			drivers_text(cfg, buf, sizeof(buf)));
	else
		npd_set(res, NPD_OK, "no ENA allowance exceeded on %zu interface%s", p.seen,
			p.seen == 1 ? "" : "s");
	if (p.notes[0])
		npd_append(res, "%s", p.notes);
	return res->status;
}

/* ---- the check_fn entry points ----------------------------------------------------------------
 * */

static int with_kernel(struct cz_ctx *ctx, struct ena_seen *seen, struct npd_result *res,
		       bool allowance)
{
	struct ethtool_ops ops;
	int r = ethtool_ops_kernel(&ops);

	if (r < 0)
		return npd_unknown(res, r, "cannot open a socket for SIOCETHTOOL");
	if (allowance) {
		r = check_allowance(&ctx->cfg, &ops, ctx->cfg.paths.state, ctx->state_flags,
				    now_realtime_ms(),
				    seen ? &seen->allowance : NULL, res);
	} else {
		/* causes name the CPU serving the queue and its burst: the NIC IRQ map and the
		 * sampler's burst log (ena_link.c), read only when a device has news */
		struct ena_qc_source src = { ena_link_queue_cpus, ctx };
		/* resets the kernel logged (the agent's kernel-event log): also on drivers without
		 * reason counters, and after a reload zeroed them */
		_cleanup_free_ struct ena_kernel *kr = calloc(1, sizeof(*kr));
		uint64_t now = now_realtime_ms();

		if (kr && ena_kernel_load(ctx->cfg.paths.run, now, ctx->cfg.ena.window_ms, kr) < 0)
			kr->n = 0; /* unreadable log: the counters alone, as without an agent */
		r = check_resets(&ctx->cfg, &ops, ctx->cfg.paths.state, ctx->state_flags, now,
				 &src, kr, seen ? &seen->reset : NULL, res);
	}
	ethtool_ops_kernel_close(&ops);
	return r;
}

int check_ena(struct cz_ctx *ctx, const struct check_seen *cs, struct npd_result *res)
{
	return with_kernel(ctx, cs ? cs->ena : NULL, res, false);
}

int check_ena_allowance(struct cz_ctx *ctx, const struct check_seen *cs, struct npd_result *res)
{
	return with_kernel(ctx, cs ? cs->ena : NULL, res, true);
}
