/* SPDX-License-Identifier: MIT */
/*
 * Pasted kernel log lines: strip the time/host prefix of each style klog.h lists, skip what is
 * not the kernel's, hand the message to klog_parse_message(). Also /dev/kmsg records.
 *
 * Formats, from their sources: dmesg(1) util-linux sys-utils/dmesg.c ("[%5lld.%06ld] ", -T
 * "[%a %b %e %H:%M:%S %Y] " via ctime-like formatting, -H/-e "[%b%d %H:%M] " then
 * "[%+5ld.%06ld] " deltas, -x "%-6s:%-6s: " facility:level, -r "<%d>" raw priority);
 * journalctl(1) output modes short ("%b %d %H:%M:%S host ident[pid]: "), short-precise (with
 * ".%06ld"), short-iso ("%Y-%m-%dT%H:%M:%S%z"), short-monotonic ("[%5lu.%06lu] host ident: ");
 * rsyslog's RFC 3339 template; /dev/kmsg: Documentation/ABI/testing/dev-kmsg.
 */
#include <errno.h>
#include <inttypes.h>
#include <time.h>

#include "klog/klog.h"
#include "base/util.h"

void klog_reader_init(struct klog_reader *rd)
{
	memset(rd, 0, sizeof(*rd));
}

struct cur {
	const char *p, *end;
};

static bool at(const struct cur *c, char ch)
{
	return c->p < c->end && *c->p == ch;
}

static bool digit(const struct cur *c)
{
	return c->p < c->end && *c->p >= '0' && *c->p <= '9';
}

static void skip_spaces(struct cur *c)
{
	while (c->p < c->end && *c->p == ' ')
		c->p++;
}

/* Up to @max digits into *@ret; false when none. */
static bool num(struct cur *c, unsigned max, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned n = 0;

	while (digit(c) && n < max) {
		v = v * 10 + (uint64_t)(*c->p++ - '0');
		n++;
	}
	*ret = v;
	return n > 0 && !digit(c);
}

/* Exactly two digits at @s (a "+0000" zone offset has no separator). */
static bool two(const char *s, uint64_t *ret)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return false;
	*ret = (uint64_t)(s[0] - '0') * 10 + (uint64_t)(s[1] - '0');
	return true;
}

/* ".ffffff" (any number of digits) as microseconds; absent: 0. */
static uint64_t frac_us(struct cur *c)
{
	uint64_t us = 0, scale = 100000;

	if (!at(c, '.'))
		return 0;
	c->p++;
	while (digit(c)) {
		us += (uint64_t)(*c->p++ - '0') * scale;
		scale /= 10;
	}
	return us;
}

static int month(const char *s, const char *end)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

	if (end - s < 3)
		return -1;
	for (int i = 0; i < 12; i++)
		if (memcmp(names + 3 * i, s, 3) == 0)
			return i;
	return -1;
}

static int64_t yearless_us(int mon, uint64_t day, uint64_t h, uint64_t m, uint64_t s)
{
	static const int before[12] = { 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334 };

	return ((int64_t)(before[mon] + (int)day - 1) * 86400 + (int64_t)(h * 3600 + m * 60 + s)) *
	       1000000;
}

/* "HH:MM:SS" (or "HH:MM" when @secs is false). */
static bool hms(struct cur *c, bool secs, uint64_t *h, uint64_t *m, uint64_t *s)
{
	*s = 0;
	if (!num(c, 2, h) || !at(c, ':') || (c->p++, !num(c, 2, m)))
		return false;
	if (!secs)
		return *h < 24 && *m < 60;
	return at(c, ':') && (c->p++, num(c, 2, s)) && *h < 24 && *m < 60 && *s < 61;
}

static void set_stamp(struct klog_event *e, const char *from, const char *to)
{
	size_t n = (size_t)(to - from);

	if (n >= sizeof(e->stamp))
		n = sizeof(e->stamp) - 1;
	for (size_t i = 0; i < n; i++)
		e->stamp[i] = from[i] >= ' ' && from[i] < 0x7f ? from[i] : '?';
	e->stamp[n] = '\0';
}

struct when {
	enum klog_clock clock;
	int64_t t_us;
	const char *from, *to; /* the stamp text */
	char text[KLOG_STAMP_MAX]; /* or a stamp made here (kmsg records) */
};

/* "[  123.456789]", "[  +0.005106]", "[Jul14 14:17]", "[Tue Jul 14 14:17:34 2026]". */
static bool bracket_stamp(struct klog_reader *rd, struct cur *c, struct when *w)
{
	struct cur t = *c;
	uint64_t a, b, h, m, s, d, y;
	int mon;

	if (!at(&t, '['))
		return false;
	t.p++;
	skip_spaces(&t);
	if (at(&t, '+') || at(&t, '-')) { /* dmesg -H/-e: delta to the line before */
		bool neg = *t.p++ == '-';
		int64_t us;

		if (!num(&t, 12, &a) || !at(&t, '.'))
			return false;
		b = frac_us(&t);
		us = (int64_t)(a * 1000000 + b);
		rd->rel_us += neg ? -us : us;
		w->clock = rd->rel_base ? KLOG_CLOCK_YEARLESS : KLOG_CLOCK_REL;
		w->t_us = rd->rel_us;
	} else if (digit(&t)) { /* dmesg, journalctl -o short-monotonic */
		if (!num(&t, 12, &a) || !at(&t, '.'))
			return false;
		w->clock = KLOG_CLOCK_MONO;
		w->t_us = (int64_t)(a * 1000000 + frac_us(&t));
	} else if ((mon = month(t.p, t.end)) >= 0) { /* dmesg -H: "[Jul14 14:17]" */
		t.p += 3;
		skip_spaces(&t);
		if (!num(&t, 2, &d) || d < 1 || d > 31 || !at(&t, ' ') ||
		    (t.p++, !hms(&t, false, &h, &m, &s)))
			return false;
		rd->rel_base = true;
		rd->rel_us = yearless_us(mon, d, h, m, 0);
		w->clock = KLOG_CLOCK_YEARLESS;
		w->t_us = rd->rel_us;
	} else { /* dmesg -T: "[Tue Jul 14 14:17:34 2026]" */
		struct tm tm = { 0 };
		time_t tt;

		t.p += 3;
		if (!at(&t, ' ') || (t.p++, (mon = month(t.p, t.end)) < 0))
			return false;
		t.p += 3;
		skip_spaces(&t);
		if (!num(&t, 2, &d) || d < 1 || d > 31 || !at(&t, ' ') ||
		    (t.p++, !hms(&t, true, &h, &m, &s)) || !at(&t, ' ') || (t.p++, !num(&t, 4, &y)))
			return false;
		tm = (struct tm){ .tm_year = (int)y - 1900, .tm_mon = mon, .tm_mday = (int)d,
				  .tm_hour = (int)h, .tm_min = (int)m, .tm_sec = (int)s };
		tt = timegm(&tm);
		w->clock = KLOG_CLOCK_WALL;
		w->t_us = (int64_t)tt * 1000000;
	}
	if (!at(&t, ']'))
		return false;
	t.p++;
	w->from = c->p;
	w->to = t.p;
	if (at(&t, ' '))
		t.p++;
	*c = t;
	return true;
}

/* "host ident[pid]: " after a syslog/journal stamp; true (and past it) only for "kernel". */
static int host_ident(struct cur *c)
{
	const char *sp = memchr(c->p, ' ', (size_t)(c->end - c->p)), *id, *colon;

	if (!sp)
		return -1;
	id = sp + 1;
	colon = memchr(id, ':', (size_t)(c->end - id));
	if (!colon || colon + 1 >= c->end || colon[1] != ' ' ||
	    memchr(id, ' ', (size_t)(colon - id)))
		return -1;
	if (colon - id != 6 || memcmp(id, "kernel", 6) != 0)
		return 0; /* another program's line */
	c->p = colon + 2;
	return 1;
}

/* "Jul 14 14:17:34[.ffffff] " (syslog, journalctl short/short-precise). */
static bool syslog_stamp(struct cur *c, struct when *w)
{
	struct cur t = *c;
	uint64_t d, h, m, s, us;
	int mon = month(t.p, t.end);

	if (mon < 0 || (t.p += 3, !at(&t, ' ')))
		return false;
	skip_spaces(&t);
	if (!num(&t, 2, &d) || d < 1 || d > 31 || !at(&t, ' ') || (t.p++, !hms(&t, true, &h, &m,
		&s)))
		return false;
	us = frac_us(&t);
	if (!at(&t, ' '))
		return false;
	w->clock = KLOG_CLOCK_YEARLESS;
	w->t_us = yearless_us(mon, d, h, m, s) + (int64_t)us;
	w->from = c->p;
	w->to = t.p;
	t.p++;
	*c = t;
	return true;
}

/* "2026-07-14T14:17:34[.ffffff](Z|+hh:mm|+hhmm) " (journalctl -o short-iso, RFC 3339). */
static bool iso_stamp(struct cur *c, struct when *w)
{
	struct cur t = *c;
	uint64_t y, mo, d, h, m, s, us, oh = 0, om = 0;
	struct tm tm;
	int sign = 0;

	if (!num(&t, 4, &y) || !at(&t, '-') || (t.p++, !num(&t, 2, &mo)) || !at(&t, '-') ||
	    (t.p++, !num(&t, 2, &d)) || !(at(&t, 'T') || at(&t, ' ')) ||
	    (t.p++, !hms(&t, true, &h, &m, &s)) || mo < 1 || mo > 12 || d < 1 || d > 31)
		return false;
	us = frac_us(&t);
	if (at(&t, 'Z')) {
		t.p++;
	} else if (at(&t, '+') || at(&t, '-')) {
		sign = *t.p++ == '-' ? -1 : 1;
		if (t.end - t.p < 4 || !two(t.p, &oh))
			return false;
		t.p += 2;
		if (at(&t, ':'))
			t.p++;
		if (t.end - t.p < 2 || !two(t.p, &om))
			return false;
		t.p += 2;
	}
	if (!at(&t, ' '))
		return false;
	tm = (struct tm){ .tm_year = (int)y - 1900, .tm_mon = (int)mo - 1, .tm_mday = (int)d,
			  .tm_hour = (int)h, .tm_min = (int)m, .tm_sec = (int)s };
	w->clock = KLOG_CLOCK_WALL;
	w->t_us = ((int64_t)timegm(&tm) - sign * (int64_t)(oh * 3600 + om * 60)) * 1000000 +
		  (int64_t)us;
	w->from = c->p;
	w->to = t.p;
	t.p++;
	*c = t;
	return true;
}

/* "<6>" (dmesg -r); returns false for a facility other than the kernel's. */
static bool raw_prio(struct cur *c, bool *ret_foreign)
{
	struct cur t = *c;
	uint64_t pri;

	*ret_foreign = false;
	if (!at(&t, '<') || (t.p++, !num(&t, 10, &pri)) || !at(&t, '>'))
		return false;
	t.p++;
	*ret_foreign = pri >= 8;
	*c = t;
	return true;
}

/* "kern  :err   : " (dmesg -x); *@ret_foreign for other facilities. */
static bool decoded_prio(struct cur *c, bool *ret_foreign)
{
	const char *p = c->p;

	*ret_foreign = false;
	if (c->end - p < 15 || p[6] != ':' || p[13] != ':' || p[14] != ' ')
		return false;
	for (int i = 0; i < 6; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == ' ' || p[i] == '0' || p[i] == '1' ||
		      p[i] == '2' || p[i] == '3' || p[i] == '4' || p[i] == '5' || p[i] == '6' ||
		      p[i] == '7'))
			return false;
	*ret_foreign = memcmp(p, "kern  ", 6) != 0;
	c->p += 15;
	return true;
}

static void remember_if(struct klog_reader *rd, const struct klog_event *e)
{
	if (!e->ifname[0] || !klog_kind_is_ena(e->kind))
		return; /* statistics lines too: the rest of a bare dump follows its first line */
	for (size_t i = 0; i < ARRAY_SIZE(rd->ena_if); i++)
		if (streq(rd->ena_if[i], e->ifname))
			return;
	memmove(rd->ena_if[1], rd->ena_if[0], sizeof(rd->ena_if) - sizeof(rd->ena_if[0]));
	memcpy(rd->ena_if[0], e->ifname, sizeof(rd->ena_if[0]));
}

/* The per-CPU line under an RCU stall header: "\t3-....: (5249 ticks this GP) idle=..."
 * (print_cpu_stall_info() in kernel/rcu/tree_stall.h, after the "rcu: " pr_fmt). */
static bool rcu_cpu_line(const char *s, const char *end, struct klog_event *ret)
{
	struct cur c = { s, end };
	uint64_t cpu;

	if (end - s >= 5 && memcmp(s, "rcu: ", 5) == 0)
		c.p += 5;
	while (c.p < c.end && (*c.p == ' ' || *c.p == '\t'))
		c.p++;
	if (!num(&c, 6, &cpu) || !at(&c, '-') || c.end - c.p < 6 || c.p[5] != ':')
		return false;
	memset(ret, 0, sizeof(*ret));
	ret->kind = KLOG_RCU_STALL;
	ret->cont = true;
	ret->queue = ret->pid = -1;
	ret->cpu = cpu < 1000000 ? (int)cpu : -1;
	return true;
}

/* Strip the prefixes; returns false for a line that is not the kernel's. */
static bool strip(struct klog_reader *rd, struct cur *c, struct when *w)
{
	bool foreign = false;
	struct kmsg_record k;
	const char *nl;
	int r;

	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
	if (c->p < c->end && *c->p >= '0' && *c->p <= '9' &&
	    kmsg_parse_record(c->p, (size_t)(c->end - c->p), &k) == 0) {
		if (k.facility != 0)
			return false;
		nl = memchr(k.msg, '\n', k.msg_len);
		w->clock = KLOG_CLOCK_MONO;
		w->t_us = (int64_t)k.usec;
		snprintf(w->text, sizeof(w->text), "[%5" PRIu64 ".%06" PRIu64 "]", k.usec / 1000000,
			 k.usec % 1000000);
		c->p = k.msg;
		c->end = nl ? nl : k.msg + k.msg_len;
		return true;
	}
	if (iso_stamp(c, w) || syslog_stamp(c, w)) {
		if ((r = host_ident(c)) <= 0)
			return false;
		bracket_stamp(rd, c, &(struct when){ 0 }); /* syslog keeps the kernel's own stamp */
		return true;
	}
	if ((raw_prio(c, &foreign) || decoded_prio(c, &foreign)) && foreign)
		return false;
	if (bracket_stamp(rd, c, w)) {
		struct cur t = *c;

		if (host_ident(&t) == 1) /* journalctl -o short-monotonic */
			*c = t;
	}
	return true;
}

int klog_reader_line(struct klog_reader *rd, const char *line, size_t len, struct klog_event *ret)
{
	struct cur c = { line, line + (len > KLOG_LINE_MAX ? KLOG_LINE_MAX : len) };
	struct when w = { .clock = KLOG_CLOCK_NONE };
	struct klog_event e;
	int found;

	rd->line++;
	if (!strip(rd, &c, &w)) {
		rd->skipped_foreign++;
		return 0;
	}
	rd->kernel_lines++;
	if (rd->rcu_pending && rcu_cpu_line(c.p, c.end, &e))
		found = 1;
	else
		found = klog_parse_message(c.p, (size_t)(c.end - c.p), rd->ena_if,
					   ARRAY_SIZE(rd->ena_if), &e);
	rd->rcu_pending = found && e.kind == KLOG_RCU_STALL && (e.cpu < 0 || e.cont);
	if (!found)
		return 0;
	e.line = rd->line;
	e.clock = w.clock;
	e.t_us = w.t_us;
	if (w.from)
		set_stamp(&e, w.from, w.to);
	else if (w.text[0])
		memcpy(e.stamp, w.text, sizeof(e.stamp));
	remember_if(rd, &e);
	*ret = e;
	return 1;
}

/* ---- lines of a stream ------------------------------------------------------------------- */

size_t klog_lines_feed(struct klog_lines *ls, const char *data, size_t n, const char **ret_line,
		       size_t *ret_len)
{
	const char *nl = memchr(data, '\n', n);
	size_t seg = nl ? (size_t)(nl - data) : n, take = nl ? seg + 1 : n, room;

	*ret_line = NULL;
	if (!ls->nul_line && memchr(data, '\0', seg))
		ls->nul_line = ls->lines + 1;
	if (ls->skipping) { /* the tail of an over-long line: up to its end, unread */
		ls->skipping = !nl;
		ls->lines += !!nl;
		return take;
	}
	room = KLOG_LINE_MAX - ls->len;
	memcpy(ls->buf + ls->len, data, seg < room ? seg : room);
	if (seg > room || (!nl && seg == room)) { /* over-long: keep the head, skip the tail */
		ls->len = 0;
		ls->skipping = !nl;
		ls->lines += !!nl;
		*ret_line = ls->buf;
		*ret_len = KLOG_LINE_MAX;
		return take;
	}
	ls->len += seg;
	if (nl) {
		*ret_line = ls->buf;
		*ret_len = ls->len;
		ls->len = 0;
		ls->lines++;
	}
	return take;
}

bool klog_lines_end(struct klog_lines *ls, const char **ret_line, size_t *ret_len)
{
	if (ls->skipping || ls->len == 0) {
		ls->lines += ls->skipping; /* an over-long last line: its head was given already */
		ls->skipping = false;
		return false;
	}
	*ret_line = ls->buf;
	*ret_len = ls->len;
	ls->len = 0;
	ls->lines++;
	return true;
}

/* ---- /dev/kmsg ---------------------------------------------------------------------------- */

static bool field_u64(struct cur *c, char stop, uint64_t *ret)
{
	const char *s = c->p;

	while (c->p < c->end && *c->p != stop)
		c->p++;
	if (c->p >= c->end || parse_u64_n(s, (size_t)(c->p - s), ret) < 0)
		return false;
	c->p++;
	return true;
}

int kmsg_parse_record(const char *rec, size_t len, struct kmsg_record *ret)
{
	struct cur c = { rec, rec + len };
	uint64_t pri, seq, usec;
	const char *semi;
	char flag;

	if (!field_u64(&c, ',', &pri) || pri >= (1u << 31) || !field_u64(&c, ',', &seq))
		return -EINVAL;
	semi = memchr(c.p, ';', (size_t)(c.end - c.p));
	if (!semi)
		return -EINVAL;
	{
		const char *comma = memchr(c.p, ',', (size_t)(semi - c.p));
		struct cur u = { c.p, comma ? comma : semi };

		if (parse_u64_n(u.p, (size_t)(u.end - u.p), &usec) < 0 || !comma ||
		    comma + 1 >= semi)
			return -EINVAL;
		flag = comma[1];
		if (comma + 2 != semi && comma[2] != ',')
			return -EINVAL; /* FLAGS is one character; more fields follow a ',' */
	}
	*ret = (struct kmsg_record){ .facility = (unsigned)(pri >> 3), .level = (unsigned)(pri & 7),
				     .seq = seq, .usec = usec, .flag = flag, .msg = semi + 1,
				     .msg_len = (size_t)(c.end - semi - 1) };
	return 0;
}
