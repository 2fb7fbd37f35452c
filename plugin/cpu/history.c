/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "cpu/history.h"
#include "base/fileio.h"
#include "base/state.h"
#include "base/util.h"
#include "host/hostid.h"

#define LOG_BUF (HISTORY_EVENTS_MAX * 2048 + 4096) /* escaped fields can triple */
#define HEARTBEAT_BUF (HISTORY_ACTIVE_MAX * 2048 + 256) /* active lines carry tasks, links */
#define HDR_SIZE 64
#define SLOT_HDR 20
static const char ring_magic[8] = "CZHIST1\n";

/* ---- escaping ---- */

static bool plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '+' || c == '-' || c == '<' || c == '@';
}

/* Appends @s escaped to @buf at *@off; -ENOBUFS when full. "" is written as "-". */
static int put_esc(char *buf, size_t size, size_t *off, const char *s)
{
	bool dash = streq(s, "-"); /* "-" alone means empty: escape a real one */

	if (!*s)
		s = "-";
	else if (dash)
		s = "";
	if (dash && buf_appendf(buf, size, off, "%%2D") < 0)
		return -ENOBUFS;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int r = plain(c) ? buf_appendf(buf, size, off, "%c", c)
				 : buf_appendf(buf, size, off, "%%%02X", c);

		if (r < 0)
			return r;
	}
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Unescapes [s, s+n) into @buf; "-" alone is "". */
static int get_esc(const char *s, size_t n, char *buf, size_t size)
{
	size_t o = 0;

	if (n == 1 && s[0] == '-')
		n = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			if (i + 2 >= n || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
				return -EINVAL;
			c = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else if (!plain((unsigned char)c)) {
			return -EINVAL;
		}
		if (o + 1 >= size)
			return -EINVAL;
		buf[o++] = c;
	}
	buf[o] = '\0';
	return 0;
}

/* ---- burst log ---- */

int burst_log_format(const struct burst_event *ev, char *buf, size_t size)
{
	size_t off = 0;
	int r;

	r = buf_appendf(buf, size, &off, "burst %u %" PRIu64 " %" PRIu64 " %.1f %.1f %s irqs=",
			ev->cpu, ev->start_ms, ev->end_ms, ev->peak_pct, ev->mean_pct,
			config_metric_name(ev->metric));
	r = r ?: put_esc(buf, size, &off, ev->irqs);
	r = r ?: buf_appendf(buf, size, &off, " tasks=");
	for (size_t i = 0; r == 0 && i < ev->ntasks && i < HISTORY_TASKS_MAX; i++) {
		const struct burst_task *t = &ev->task[i];

		r = buf_appendf(buf, size, &off, "%s%d/%d/", i ? "," : "", t->pid, t->tid);
		r = r ?: put_esc(buf, size, &off, t->comm);
		r = r ?: buf_appendf(buf, size, &off, "/%" PRIu64, t->stime_ms);
	}
	if (r == 0 && ev->ntasks == 0)
		r = buf_appendf(buf, size, &off, "-");
	r = r ?: buf_appendf(buf, size, &off, " stack=");
	r = r ?: put_esc(buf, size, &off, ev->stack);
	if (ev->profile[0] || ev->hot[0] || ev->why[0]) {
		r = r ?: buf_appendf(buf, size, &off, " profile=");
		r = r ?: put_esc(buf, size, &off, ev->profile);
		r = r ?: buf_appendf(buf, size, &off, " hot=");
		r = r ?: put_esc(buf, size, &off, ev->hot);
		if (ev->hot[0])
			r = r ?: buf_appendf(buf, size, &off, "/%u", ev->hot_pct);
		r = r ?: buf_appendf(buf, size, &off, " why=");
		r = r ?: put_esc(buf, size, &off, ev->why);
	}
	r = r ?: buf_appendf(buf, size, &off, "\n");
	return r < 0 ? r : (int)off;
}

static int parse_metric(const char *s, size_t n, enum cz_cpu_metric *ret)
{
	static const enum cz_cpu_metric all[] = { CZ_METRIC_SYSTEM, CZ_METRIC_SYSTEM_IRQ,
						  CZ_METRIC_BUSY };

	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		const char *name = config_metric_name(all[i]);

		if (strlen(name) == n && !strncmp(name, s, n)) {
			*ret = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

/* "12.5" (bounded) into a double. */
static int parse_pct(const char *s, size_t n, double *ret)
{
	char tmp[16];

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	return parse_double(tmp, ret) < 0 || *ret > 100.0 ? -EINVAL : 0;
}

/* Splits @line into space-separated tokens; returns the count (at most @max). */
static size_t split(const char *line, size_t len, const char **tok, size_t *tl, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len) {
		while (i < len && line[i] == ' ')
			i++;
		if (i >= len)
			break;
		if (n == max)
			return max + 1;
		tok[n] = line + i;
		while (i < len && line[i] != ' ')
			i++;
		tl[n] = (size_t)(line + i - tok[n]);
		n++;
	}
	return n;
}

static int parse_task(const char *s, size_t n, struct burst_task *t)
{
	const char *p[4];
	size_t l[4], k = 0, st = 0;
	uint64_t pid, tid;

	for (size_t i = 0; i <= n && k < 4; i++)
		if (i == n || s[i] == '/') {
			p[k] = s + st;
			l[k++] = i - st;
			st = i + 1;
		}
	if (k != 4 || st != n + 1 || parse_u64_n(p[0], l[0], &pid) < 0 ||
	    parse_u64_n(p[1], l[1], &tid) < 0 || pid > INT32_MAX || tid > INT32_MAX ||
	    get_esc(p[2], l[2], t->comm, sizeof(t->comm)) < 0 ||
	    parse_u64_n(p[3], l[3], &t->stime_ms) < 0)
		return -EINVAL;
	t->pid = (int)pid;
	t->tid = (int)tid;
	return 0;
}

static int parse_tasks(const char *s, size_t n, struct burst_event *ev)
{
	size_t st = 0;

	ev->ntasks = 0;
	if (n == 1 && s[0] == '-')
		return 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ',')
			continue;
		if (ev->ntasks >= HISTORY_TASKS_MAX ||
		    parse_task(s + st, i - st, &ev->task[ev->ntasks]) < 0)
			return -EINVAL;
		ev->ntasks++;
		st = i + 1;
	}
	return 0;
}

/* "hot=<frame>/<pct>" or "hot=-": the frame is escaped, so its '/' is not the separator. */
static int parse_hot(const char *s, size_t n, struct burst_event *ev)
{
	const char *slash = n == 1 && s[0] == '-' ? NULL : memrchr(s, '/', n);
	uint64_t pct;

	if (n == 1 && s[0] == '-')
		return 0;
	if (!slash || parse_u64_n(slash + 1, (size_t)(s + n - slash - 1), &pct) < 0 || pct > 100 ||
	    get_esc(s, (size_t)(slash - s), ev->hot, sizeof(ev->hot)) < 0 || !ev->hot[0])
		return -EINVAL;
	ev->hot_pct = (unsigned)pct;
	return 0;
}

/* The optional profile fields after stack= (see history.h). */
static int parse_profile(const char *const *t, const size_t *l, size_t n, struct burst_event *ev)
{
	if (n == 10)
		return 0;
	if (n != 13 || l[10] < 8 || strncmp(t[10], "profile=", 8) || l[11] < 4 ||
	    strncmp(t[11], "hot=", 4) || l[12] < 4 || strncmp(t[12], "why=", 4) ||
	    get_esc(t[10] + 8, l[10] - 8, ev->profile, sizeof(ev->profile)) < 0 ||
	    parse_hot(t[11] + 4, l[11] - 4, ev) < 0 ||
	    get_esc(t[12] + 4, l[12] - 4, ev->why, sizeof(ev->why)) < 0)
		return -EINVAL;
	/* a file name in the run dir, never a path: report opens it there */
	if (ev->profile[0] && (strchr(ev->profile, '/') || !startswith(ev->profile,
								      HISTORY_PROFILE_PREFIX)))
		return -EINVAL;
	return 0;
}

static int parse_event(const char *line, size_t len, struct burst_event *ev)
{
	const char *t[13];
	size_t l[13], n;
	uint64_t cpu;

	memset(ev, 0, sizeof(*ev));
	n = split(line, len, t, l, 13);
	if ((n != 10 && n != 13) || l[0] != 5 || strncmp(t[0], "burst", 5) ||
	    parse_u64_n(t[1], l[1], &cpu) < 0 || cpu >= 8192 ||
	    parse_u64_n(t[2], l[2], &ev->start_ms) < 0 ||
	    parse_u64_n(t[3], l[3], &ev->end_ms) < 0 || ev->end_ms < ev->start_ms ||
	    parse_pct(t[4], l[4], &ev->peak_pct) < 0 || parse_pct(t[5], l[5], &ev->mean_pct) < 0 ||
	    parse_metric(t[6], l[6], &ev->metric) < 0)
		return -EINVAL;
	ev->cpu = (unsigned)cpu;
	if (l[7] < 5 || strncmp(t[7], "irqs=", 5) || l[8] < 6 || strncmp(t[8], "tasks=", 6) ||
	    l[9] < 6 || strncmp(t[9], "stack=", 6))
		return -EINVAL;
	if (get_esc(t[7] + 5, l[7] - 5, ev->irqs, sizeof(ev->irqs)) < 0 ||
	    parse_tasks(t[8] + 6, l[8] - 6, ev) < 0 ||
	    get_esc(t[9] + 6, l[9] - 6, ev->stack, sizeof(ev->stack)) < 0 ||
	    parse_profile(t, l, n, ev) < 0)
		return -EINVAL;
	return 0;
}

int burst_log_parse(const char *payload, uint64_t since_ms, struct burst_event *ret, size_t max)
{
	return burst_log_parse_range(payload, since_ms, 0, ret, max);
}

int burst_log_parse_range(const char *payload, uint64_t since_ms, uint64_t until_ms,
			  struct burst_event *ret, size_t max)
{
	const char *pos = payload, *line;
	size_t len, n = 0;
	struct burst_event ev;

	if (!payload || (max > 0 && !ret))
		return -EINVAL;
	while (next_line(&pos, &line, &len)) {
		if (len == 0)
			continue;
		if (parse_event(line, len, &ev) < 0)
			return -EINVAL;
		if (ev.end_ms < since_ms || (until_ms && ev.end_ms > until_ms) || max == 0)
			continue;
		if (n == max) { /* keep the newest: drop the oldest */
			memmove(ret, ret + 1, (max - 1) * sizeof(*ret));
			n--;
		}
		ret[n++] = ev;
	}
	return (int)n;
}

/* The cpu-bursts state: events parsed with a filter, formatted all. */
struct burst_log {
	uint64_t since_ms; /* in: keep the events that ended at or after */
	uint64_t until_ms; /* in: ...and not after (0: no limit) */
	size_t max;	   /* in: room in ev */
	size_t n;	   /* out */
	struct burst_event *ev;
};

static int log_state_parse(const char *payload, size_t len, void *obj)
{
	struct burst_log *l = obj;
	int r = burst_log_parse_range(payload, l->since_ms, l->until_ms, l->ev, l->max);

	if (r < 0)
		return r;
	l->n = (size_t)r;
	return 0;
}

static ssize_t log_state_format(const void *obj, char **ret)
{
	const struct burst_log *l = obj;
	_cleanup_free_ char *buf = malloc(LOG_BUF);
	size_t off = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		int r = burst_log_format(&l->ev[i], buf + off, LOG_BUF - off);

		if (r < 0)
			return r;
		off += (size_t)r;
	}
	*ret = TAKE_PTR(buf);
	return (ssize_t)off;
}

static const struct state_type burst_log_state = { HISTORY_BURSTS, LOG_BUF, true };

/* the typed calls STATE_CODEC generates below (base/state.h) */
static int burst_log_state_read(const char *dir, const struct state_type *t, struct burst_log *obj);
static int burst_log_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
				 struct burst_log *obj);
static int burst_log_state_commit(struct state_txn *txn, const struct burst_log *obj);
static int burst_log_state_write(const char *dir, const struct state_type *t,
				 const struct burst_log *obj);
STATE_CODEC(static, burst_log_state, struct burst_log, log_state_parse, log_state_format);

int burst_log_append(const char *run_dir, const struct burst_event *ev)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT;
	_cleanup_free_ struct burst_event *evs = calloc(HISTORY_EVENTS_MAX, sizeof(*evs));
	struct burst_log l = { .max = HISTORY_EVENTS_MAX - 1, .ev = evs,
			       .until_ms = now_realtime_ms() + HISTORY_FUTURE_SLACK_MS };
	int r;

	if (!evs)
		return -ENOMEM;
	r = burst_log_state_begin(&txn, run_dir, &burst_log_state, &l);
	if (r < 0)
		return r;
	if (r != STATE_LOADED)
		l.n = 0; /* unreadable log: start a new one rather than stop recording */
	evs[l.n++] = *ev;
	return burst_log_state_commit(&txn, &l);
}

int history_profile_times(const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);

	if (n < 7 || !streq(name + n - 7, ".folded") ||
	    snprintf(buf, size, "%.*s.times", (int)(n - 7), name) >= (int)size)
		return -EINVAL;
	return 0;
}

int burst_log_claim(const char *run_dir)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT;
	_cleanup_free_ struct burst_event *evs = calloc(HISTORY_EVENTS_MAX, sizeof(*evs));
	struct burst_log l = { .max = HISTORY_EVENTS_MAX, .ev = evs };
	int r;

	if (!evs)
		return -ENOMEM;
	r = burst_log_state_begin(&txn, run_dir, &burst_log_state, &l);
	return r < 0 ? r : 0;
}

int burst_log_read(const char *run_dir, uint64_t since_ms, struct burst_event *ret, size_t max)
{
	struct burst_log l = { .since_ms = since_ms, .max = max, .ev = ret,
			       .until_ms = now_realtime_ms() + HISTORY_FUTURE_SLACK_MS };
	int r = burst_log_state_read(run_dir, &burst_log_state, &l);

	return r < 0 ? r : r == STATE_LOADED ? (int)l.n : 0;
}

/* ---- heartbeat ---- */

int heartbeat_format(const struct heartbeat *hb, char *buf, size_t size)
{
	size_t off = 0;
	int r;

	r = buf_appendf(buf, size, &off, "pid %d\n", hb->pid);
	if (r == 0 && hb->host_pid > 0)
		r = buf_appendf(buf, size, &off, "host_pid %d\n", hb->host_pid);
	if (r == 0 && hostid_boot_id_valid(hb->boot_id))
		r = buf_appendf(buf, size, &off, "boot_id %s\n", hb->boot_id);
	r = r ?: buf_appendf(buf, size, &off,
			"time_ms %" PRIu64 "\ninterval_ms %" PRIu64 "\nmetric %s\nncpu %u\n"
			"stopped %d\n",
			hb->time_ms, hb->interval_ms, config_metric_name(hb->metric),
			hb->ncpu, hb->stopped ? 1 : 0);
	for (size_t i = 0; r == 0 && i < hb->nactive && i < HISTORY_ACTIVE_MAX; i++) {
		const struct burst_event *a = &hb->active[i];

		r = buf_appendf(buf, size, &off, "active %u %" PRIu64 " %" PRIu64 " %.1f %.1f",
				a->cpu, a->start_ms, a->end_ms, a->peak_pct, a->mean_pct);
		for (size_t k = 0; r == 0 && k < a->ntasks && k < HISTORY_TASKS_MAX; k++) {
			const struct burst_task *tk = &a->task[k];

			r = buf_appendf(buf, size, &off, "%s%d/%d/", k ? "," : " tasks=",
					tk->pid, tk->tid);
			r = r ?: put_esc(buf, size, &off, tk->comm);
			r = r ?: buf_appendf(buf, size, &off, "/%" PRIu64, tk->stime_ms);
		}
		/* the links known so far (mid-burst): the NIC IRQs, the profile and its hot frame
		 * */
		if (r == 0 && a->irqs[0]) {
			r = buf_appendf(buf, size, &off, " irqs=");
			r = r ?: put_esc(buf, size, &off, a->irqs);
		}
		if (r == 0 && a->profile[0]) {
			r = buf_appendf(buf, size, &off, " profile=");
			r = r ?: put_esc(buf, size, &off, a->profile);
		}
		if (r == 0 && a->hot[0]) {
			r = buf_appendf(buf, size, &off, " hot=");
			r = r ?: put_esc(buf, size, &off, a->hot);
			r = r ?: buf_appendf(buf, size, &off, "/%u", a->hot_pct);
		}
		r = r ?: buf_appendf(buf, size, &off, "\n");
	}
	return r < 0 ? r : (int)off;
}

/* The optional keyed fields of an active line after <mean%>, each at most once. */
static int parse_active_opt(const char *t, size_t l, unsigned *seen, struct burst_event *a)
{
	if (l >= 6 && !strncmp(t, "tasks=", 6) && !(*seen & 1)) {
		*seen |= 1;
		return parse_tasks(t + 6, l - 6, a);
	}
	if (l >= 5 && !strncmp(t, "irqs=", 5) && !(*seen & 2)) {
		*seen |= 2;
		return get_esc(t + 5, l - 5, a->irqs, sizeof(a->irqs));
	}
	if (l >= 8 && !strncmp(t, "profile=", 8) && !(*seen & 4)) {
		*seen |= 4;
		if (get_esc(t + 8, l - 8, a->profile, sizeof(a->profile)) < 0)
			return -EINVAL;
		/* a file name in the run dir, never a path (as in the burst log) */
		return strchr(a->profile, '/') || !startswith(a->profile, HISTORY_PROFILE_PREFIX) ?
			       -EINVAL : 0;
	}
	if (l >= 4 && !strncmp(t, "hot=", 4) && !(*seen & 8)) {
		*seen |= 8;
		return parse_hot(t + 4, l - 4, a);
	}
	return -EINVAL;
}

/* active <cpu> <start> <end> <peak> <mean> [tasks=] [irqs=] [profile=] [hot=] */
#define HB_TOKENS 10

static int parse_active(const char *const *t, const size_t *l, size_t n, struct burst_event *a)
{
	uint64_t cpu;

	unsigned seen = 0;

	memset(a, 0, sizeof(*a));
	for (size_t k = 6; k < n; k++)
		if (parse_active_opt(t[k], l[k], &seen, a) < 0)
			return -EINVAL;
	if (parse_u64_n(t[1], l[1], &cpu) < 0 || cpu >= 8192 ||
	    parse_u64_n(t[2], l[2], &a->start_ms) < 0 || parse_u64_n(t[3], l[3], &a->end_ms) < 0 ||
	    a->end_ms < a->start_ms || parse_pct(t[4], l[4], &a->peak_pct) < 0 ||
	    parse_pct(t[5], l[5], &a->mean_pct) < 0)
		return -EINVAL;
	a->cpu = (unsigned)cpu;
	return 0;
}

static bool tok_is(const char *t, size_t l, const char *s)
{
	return strlen(s) == l && !strncmp(t, s, l);
}

int heartbeat_parse(const char *payload, struct heartbeat *ret)
{
	_cleanup_free_ struct heartbeat *hb = calloc(1, sizeof(*hb));
	const char *pos = payload, *line, *t[HB_TOKENS];
	unsigned seen = 0;
	size_t len, l[HB_TOKENS];
	uint64_t v;

	if (!hb || !payload)
		return -EINVAL;
	while (next_line(&pos, &line, &len)) {
		size_t n = split(line, len, t, l, HB_TOKENS);

		if (n >= 6 && n <= HB_TOKENS && tok_is(t[0], l[0], "active")) {
			if (hb->nactive >= HISTORY_ACTIVE_MAX ||
			    parse_active(t, l, n, &hb->active[hb->nactive]) < 0)
				return -EINVAL;
			hb->nactive++;
			continue;
		}
		if (n != 2)
			return -EINVAL;
		if (tok_is(t[0], l[0], "metric")) {
			if (parse_metric(t[1], l[1], &hb->metric) < 0)
				return -EINVAL;
			seen |= 1;
			continue;
		}
		if (tok_is(t[0], l[0], "boot_id")) {
			if (l[1] != HOSTID_BOOT_ID_LEN || hb->boot_id[0])
				return -EINVAL;
			memcpy(hb->boot_id, t[1], l[1]);
			if (!hostid_boot_id_valid(hb->boot_id))
				return -EINVAL;
			continue;
		}
		if (parse_u64_n(t[1], l[1], &v) < 0)
			return -EINVAL;
		if (tok_is(t[0], l[0], "pid") && v <= INT32_MAX)
			hb->pid = (int)v, seen |= 2;
		else if (tok_is(t[0], l[0], "host_pid") && v > 0 && v <= INT32_MAX && !hb->host_pid)
			hb->host_pid = (int)v;
		else if (tok_is(t[0], l[0], "time_ms"))
			hb->time_ms = v, seen |= 4;
		else if (tok_is(t[0], l[0], "interval_ms") && v > 0)
			hb->interval_ms = v, seen |= 8;
		else if (tok_is(t[0], l[0], "ncpu") && v > 0 && v <= 8192)
			hb->ncpu = (unsigned)v, seen |= 16;
		else if (tok_is(t[0], l[0], "stopped") && v <= 1)
			hb->stopped = v == 1, seen |= 32;
		else
			return -EINVAL;
	}
	if (seen != 63)
		return -EINVAL;
	*ret = *hb;
	return 0;
}

/* run dir, rewritten every 2 s: atomic, not fsync'ed */
static const struct state_type heartbeat_state = { HISTORY_HEARTBEAT, HEARTBEAT_BUF, false };

/* the typed calls STATE_CODEC generates below (base/state.h) */
static int heartbeat_state_read(const char *dir, const struct state_type *t, struct heartbeat *obj);
static int heartbeat_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
				 struct heartbeat *obj);
static int heartbeat_state_commit(struct state_txn *txn, const struct heartbeat *obj);
static int heartbeat_state_write(const char *dir, const struct state_type *t,
				 const struct heartbeat *obj);
STATE_CODEC_BOUNDED(static, heartbeat_state, struct heartbeat, HEARTBEAT_BUF, heartbeat_parse,
		    heartbeat_format);

int heartbeat_write(const char *run_dir, const struct heartbeat *hb)
{
	return heartbeat_state_write(run_dir, &heartbeat_state, hb);
}

int heartbeat_read(const char *run_dir, struct heartbeat *ret)
{
	int r = heartbeat_state_read(run_dir, &heartbeat_state, ret);

	return r == STATE_NONE ? -ENOENT : r < 0 ? r : 0;
}

/* ---- ring ---- */

static unsigned slot_size(unsigned ncpu)
{
	return (SLOT_HDR + ncpu + 7) & ~7u;
}

uint64_t history_file_size(unsigned ncpu, unsigned slots)
{
	return HDR_SIZE + (uint64_t)slots * slot_size(ncpu);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t slot_crc(const uint8_t *slot, unsigned ncpu)
{
	uint8_t tmp[16];

	memcpy(tmp, slot, 16);
	return state_crc32(tmp, 16) ^ state_crc32(slot + SLOT_HDR, ncpu);
}

static void make_header(uint8_t *h, unsigned ncpu, unsigned slots, unsigned interval_ms)
{
	memset(h, 0, HDR_SIZE);
	memcpy(h, ring_magic, 8);
	put_u32(h + 8, 1);
	put_u32(h + 12, ncpu);
	put_u32(h + 16, slots);
	put_u32(h + 20, interval_ms);
	put_u32(h + 24, slot_size(ncpu));
}

#define RING_MAX_SLOTS (1u << 20)
#define RING_MAX_FILE (256ull << 20)

/*
 * Open (or create) the ring file for writing: non-blocking, never through a symlink, and only a
 * regular file; anything else at the name is moved aside and a new file made.
 */
static int ring_open_fd(const char *run_dir, const char *name, const char *path)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		_cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
							    O_NONBLOCK | O_NOCTTY, 0600);
		struct stat st;
		int r;

		r = fd < 0 ? (errno == ENXIO ? -EBADFD : -errno) : fstat(fd, &st) < 0 ? -errno :
		    S_ISREG(st.st_mode) ? 0 : S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
		if (r == 0)
			return TAKE_FD(fd);
		if (!state_not_ours(r) || attempt > 0)
			return r;
		state_move_aside(run_dir, name, state_not_ours(r));
	}
	return -EBADFD;
}

int history_ring_open(const char *run_dir, unsigned ncpu, uint64_t history_ms,
		      uint64_t interval_ms, struct history_ring *ret)
{
	return history_ring_open_file(run_dir, HISTORY_FILE, ncpu, history_ms, interval_ms, ret);
}

int history_ring_open_file(const char *run_dir, const char *name, unsigned ncpu,
			   uint64_t history_ms, uint64_t interval_ms, struct history_ring *ret)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *img = NULL;
	uint64_t slots = interval_ms ? history_ms / interval_ms : 0, size;
	uint8_t hdr[HDR_SIZE];
	struct history_ring r = { .fd = -1, .ncpu = ncpu };
	ssize_t len = -1;
	char path[512];

	if (ncpu == 0 || ncpu > 8192 || interval_ms == 0 || interval_ms > UINT32_MAX)
		return -EINVAL;
	slots = slots < 1 ? 1 : slots > RING_MAX_SLOTS ? RING_MAX_SLOTS : slots;
	size = history_file_size(ncpu, (unsigned)slots);
	if (size > RING_MAX_FILE)
		return -EFBIG;
	if (snprintf(path, sizeof(path), "%s/%s", run_dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(run_dir, 0700) < 0 && errno != EEXIST) /* as state.c makes it */
		return -errno;
	fd = ring_open_fd(run_dir, name, path);
	if (fd < 0)
		return fd;
	r.slots = (unsigned)slots;
	r.interval_ms = (unsigned)interval_ms;
	r.slot_size = slot_size(ncpu);
	r.next_seq = 1;
	make_header(hdr, ncpu, r.slots, r.interval_ms);
	img = malloc(size + 1);
	if (!img)
		return -ENOMEM;
	len = fileio_pread_all(fd, (char *)img, size + 1); /* -EFBIG: bigger than ours */
	if (len == (ssize_t)size && !memcmp(img, hdr, HDR_SIZE)) {
		for (unsigned i = 0; i < r.slots; i++) { /* continue after the newest valid slot */
			const uint8_t *s = img + HDR_SIZE + (size_t)i * r.slot_size;
			uint64_t seq = get_u64(s);

			if (seq && seq % r.slots == i && get_u32(s + 16) == slot_crc(s, ncpu) &&
			    seq >= r.next_seq)
				r.next_seq = seq + 1;
		}
	} else if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)size) < 0 ||
		   pwrite(fd, hdr, HDR_SIZE, 0) != HDR_SIZE) {
		return -errno;
	}
	r.maxpending = 16;
	r.pending = malloc((size_t)r.maxpending * r.slot_size);
	if (!r.pending)
		return -ENOMEM;
	r.fd = TAKE_FD(fd);
	*ret = r;
	return 0;
}

int history_ring_flush(struct history_ring *r)
{
	uint64_t first;
	size_t bytes;
	off_t off;

	if (r->npending == 0)
		return 0;
	first = r->next_seq - r->npending;
	off = (off_t)(HDR_SIZE + (first % r->slots) * r->slot_size);
	bytes = (size_t)r->npending * r->slot_size;
	r->npending = 0;
	if (pwrite(r->fd, r->pending, bytes, off) != (ssize_t)bytes)
		return errno ? -errno : -EIO;
	return 0;
}

int history_ring_add(struct history_ring *r, uint64_t t_ms, const uint8_t *pct)
{
	uint8_t *s;
	int e = 0;

	if (r->fd < 0)
		return -EBADF;
	/* pending slots must be contiguous in the file: flush at wrap-around and when full */
	if (r->npending == r->maxpending || (r->npending > 0 && r->next_seq % r->slots == 0))
		e = history_ring_flush(r);
	s = r->pending + (size_t)r->npending * r->slot_size;
	memset(s, 0, r->slot_size);
	memcpy(s, &r->next_seq, 8);
	memcpy(s + 8, &t_ms, 8);
	memcpy(s + SLOT_HDR, pct, r->ncpu);
	put_u32(s + 16, slot_crc(s, r->ncpu));
	r->npending++;
	r->next_seq++;
	return e;
}

void history_ring_close(struct history_ring *r)
{
	if (r->fd > 0) {
		(void)history_ring_flush(r);
		close(r->fd);
	}
	r->fd = -1;
	free(r->pending);
	r->pending = NULL;
}

struct seq_idx {
	uint64_t seq;
	const uint8_t *slot;
};

static int cmp_seq(const void *a, const void *b)
{
	const struct seq_idx *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * In time order, as the series promises: slots in write order whose stamps went back (the clock
 * stepped back between two runs of the sampler, or a hostile file) would send a renderer's
 * column computed from (t - first) out of its array. Walking back from the newest, a slot is
 * kept only when stamped before the one kept after it: the newest samples win. Returns the
 * count kept, moved to the front of @idx in order.
 */
static size_t keep_time_order(struct seq_idx *idx, size_t n)
{
	size_t k = n;

	for (size_t i = n; i-- > 0;) {
		if (k < n && get_u64(idx[i].slot + 8) >= get_u64(idx[k].slot + 8))
			continue;
		idx[--k] = idx[i];
	}
	memmove(idx, idx + k, (n - k) * sizeof(*idx));
	return n - k;
}

int history_parse(const uint8_t *file, size_t len, uint64_t since_ms, struct history_series *ret)
{
	return history_parse_range(file, len, since_ms, 0, ret);
}

int history_parse_range(const uint8_t *file, size_t len, uint64_t since_ms, uint64_t until_ms,
			struct history_series *ret)
{
	_cleanup_free_ struct seq_idx *idx = NULL;
	struct history_series s = { 0 };
	unsigned ncpu, slots, ss;
	size_t n = 0;

	if (len < HDR_SIZE || memcmp(file, ring_magic, 8) || get_u32(file + 8) != 1)
		return -EINVAL;
	ncpu = get_u32(file + 12);
	slots = get_u32(file + 16);
	ss = get_u32(file + 24);
	if (ncpu == 0 || ncpu > 8192 || slots == 0 || slots > RING_MAX_SLOTS ||
	    ss != slot_size(ncpu) || len != history_file_size(ncpu, slots))
		return -EINVAL;
	idx = calloc(slots, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (unsigned i = 0; i < slots; i++) {
		const uint8_t *sl = file + HDR_SIZE + (size_t)i * ss;
		uint64_t seq = get_u64(sl);

		if (seq && seq % slots == i && get_u32(sl + 16) == slot_crc(sl, ncpu) &&
		    get_u64(sl + 8) >= since_ms && (!until_ms || get_u64(sl + 8) <= until_ms))
			idx[n++] = (struct seq_idx){ seq, sl };
	}
	qsort(idx, n, sizeof(*idx), cmp_seq);
	n = keep_time_order(idx, n);
	s.ncpu = ncpu;
	s.t_ms = calloc(n ? n : 1, sizeof(*s.t_ms));
	s.pct = calloc(n ? n : 1, ncpu);
	if (!s.t_ms || !s.pct) {
		history_series_free(&s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		s.t_ms[i] = get_u64(idx[i].slot + 8);
		memcpy(s.pct + i * ncpu, idx[i].slot + SLOT_HDR, ncpu);
	}
	s.n = n;
	*ret = s;
	return (int)n;
}

int history_read(const char *run_dir, uint64_t since_ms, struct history_series *ret)
{
	return history_read_file(run_dir, HISTORY_FILE, since_ms, ret);
}

int history_read_file(const char *run_dir, const char *name, uint64_t since_ms,
		      struct history_series *ret)
{
	_cleanup_free_ char *img = NULL;
	size_t len;
	char path[512];
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", run_dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = fileio_read_alloc_at(AT_FDCWD, path, FILEIO_OURS, RING_MAX_FILE, &img, &len);
	return r < 0 ? r : history_parse_range((const uint8_t *)img, len, since_ms,
					       now_realtime_ms() + HISTORY_FUTURE_SLACK_MS, ret);
}

void history_series_free(struct history_series *s)
{
	free(s->t_ms);
	free(s->pct);
	s->t_ms = NULL;
	s->pct = NULL;
	s->n = 0;
}
