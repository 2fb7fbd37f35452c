/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "checks/history.h"
#include "base/state.h"
#include "base/util.h"

#define LOG_BUF (HISTORY_EVENTS_MAX * 2048 + 4096) /* escaped fields can triple */
#define HEARTBEAT_BUF (HISTORY_ACTIVE_MAX * 640 + 256) /* active lines carry tasks */
#define HDR_SIZE 64
#define SLOT_HDR 20
static const char ring_magic[8] = "CZHIST1\n";

/* ---- escaping ---- */

static int appendf(char *buf, size_t size, size_t *off, const char *fmt, ...) _printf_(4, 5);
static int appendf(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(buf + *off, size - *off, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= size - *off)
		return -ENOBUFS;
	*off += (size_t)w;
	return 0;
}


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
	if (dash && appendf(buf, size, off, "%%2D") < 0)
		return -ENOBUFS;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int w = plain(c) ? snprintf(buf + *off, size - *off, "%c", c)
				 : snprintf(buf + *off, size - *off, "%%%02X", c);

		if (w < 0 || (size_t)w >= size - *off)
			return -ENOBUFS;
		*off += (size_t)w;
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

	r = appendf(buf, size, &off, "burst %u %" PRIu64 " %" PRIu64 " %.1f %.1f %s irqs=", ev->cpu,
		    ev->start_ms, ev->end_ms, ev->peak_pct, ev->mean_pct,
		    config_metric_name(ev->metric));
	r = r ?: put_esc(buf, size, &off, ev->irqs);
	r = r ?: appendf(buf, size, &off, " tasks=");
	for (size_t i = 0; r == 0 && i < ev->ntasks && i < HISTORY_TASKS_MAX; i++) {
		const struct burst_task *t = &ev->task[i];

		r = appendf(buf, size, &off, "%s%d/%d/", i ? "," : "", t->pid, t->tid);
		r = r ?: put_esc(buf, size, &off, t->comm);
		r = r ?: appendf(buf, size, &off, "/%" PRIu64, t->stime_ms);
	}
	if (r == 0 && ev->ntasks == 0)
		r = appendf(buf, size, &off, "-");
	r = r ?: appendf(buf, size, &off, " stack=");
	r = r ?: put_esc(buf, size, &off, ev->stack);
	if (ev->profile[0] || ev->hot[0] || ev->why[0]) {
		r = r ?: appendf(buf, size, &off, " profile=");
		r = r ?: put_esc(buf, size, &off, ev->profile);
		r = r ?: appendf(buf, size, &off, " hot=");
		r = r ?: put_esc(buf, size, &off, ev->hot);
		if (ev->hot[0])
			r = r ?: appendf(buf, size, &off, "/%u", ev->hot_pct);
		r = r ?: appendf(buf, size, &off, " why=");
		r = r ?: put_esc(buf, size, &off, ev->why);
	}
	r = r ?: appendf(buf, size, &off, "\n");
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
	    parse_u64_n(t[2], l[2], &ev->start_ms) < 0 || parse_u64_n(t[3], l[3], &ev->end_ms) < 0 ||
	    ev->end_ms < ev->start_ms || parse_pct(t[4], l[4], &ev->peak_pct) < 0 ||
	    parse_pct(t[5], l[5], &ev->mean_pct) < 0 || parse_metric(t[6], l[6], &ev->metric) < 0)
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
		if (ev.end_ms < since_ms || max == 0)
			continue;
		if (n == max) { /* keep the newest: drop the oldest */
			memmove(ret, ret + 1, (max - 1) * sizeof(*ret));
			n--;
		}
		ret[n++] = ev;
	}
	return (int)n;
}

int burst_log_append(const char *run_dir, const struct burst_event *ev)
{
	_cleanup_(state_unlock) struct state_lock lk = { .fd = -1 };
	_cleanup_free_ struct burst_event *evs = calloc(HISTORY_EVENTS_MAX, sizeof(*evs));
	_cleanup_free_ char *buf = malloc(LOG_BUF);
	ssize_t n;
	int r, cnt = 0;
	size_t off = 0;

	if (!evs || !buf)
		return -ENOMEM;
	r = state_lock(run_dir, HISTORY_BURSTS, &lk);
	if (r < 0)
		return r;
	n = state_load(run_dir, HISTORY_BURSTS, buf, LOG_BUF);
	if (n >= 0)
		cnt = burst_log_parse(buf, 0, evs, HISTORY_EVENTS_MAX - 1);
	if (cnt < 0)
		cnt = 0; /* unreadable log: start a new one rather than stop recording */
	evs[cnt++] = *ev;
	for (int i = 0; i < cnt; i++) {
		r = burst_log_format(&evs[i], buf + off, LOG_BUF - off);
		if (r < 0)
			return r;
		off += (size_t)r;
	}
	return state_save(run_dir, HISTORY_BURSTS, buf, off);
}

int burst_log_read(const char *run_dir, uint64_t since_ms, struct burst_event *ret, size_t max)
{
	_cleanup_(state_unlock) struct state_lock lk = { .fd = -1 };
	_cleanup_free_ char *buf = malloc(LOG_BUF);
	ssize_t n;
	int r;

	if (!buf)
		return -ENOMEM;
	r = state_lock(run_dir, HISTORY_BURSTS, &lk);
	if (r < 0)
		return r;
	n = state_load(run_dir, HISTORY_BURSTS, buf, LOG_BUF);
	if (n == -ENOENT)
		return 0;
	if (n < 0)
		return (int)n;
	return burst_log_parse(buf, since_ms, ret, max);
}

/* ---- heartbeat ---- */

int heartbeat_format(const struct heartbeat *hb, char *buf, size_t size)
{
	size_t off = 0;
	int r;

	r = appendf(buf, size, &off,
		    "pid %d\ntime_ms %" PRIu64 "\ninterval_ms %" PRIu64 "\nmetric %s\nncpu %u\n"
		    "stopped %d\n",
		    hb->pid, hb->time_ms, hb->interval_ms, config_metric_name(hb->metric), hb->ncpu,
		    hb->stopped ? 1 : 0);
	for (size_t i = 0; r == 0 && i < hb->nactive && i < HISTORY_ACTIVE_MAX; i++) {
		const struct burst_event *a = &hb->active[i];

		r = appendf(buf, size, &off, "active %u %" PRIu64 " %" PRIu64 " %.1f %.1f", a->cpu,
			    a->start_ms, a->end_ms, a->peak_pct, a->mean_pct);
		for (size_t k = 0; r == 0 && k < a->ntasks && k < HISTORY_TASKS_MAX; k++) {
			const struct burst_task *tk = &a->task[k];

			r = appendf(buf, size, &off, "%s%d/%d/", k ? "," : " tasks=", tk->pid,
				    tk->tid);
			r = r ?: put_esc(buf, size, &off, tk->comm);
			r = r ?: appendf(buf, size, &off, "/%" PRIu64, tk->stime_ms);
		}
		r = r ?: appendf(buf, size, &off, "\n");
	}
	return r < 0 ? r : (int)off;
}

static int parse_active(const char *const *t, const size_t *l, size_t n, struct burst_event *a)
{
	uint64_t cpu;

	memset(a, 0, sizeof(*a));
	if (n == 7 && (l[6] < 6 || strncmp(t[6], "tasks=", 6) ||
		       parse_tasks(t[6] + 6, l[6] - 6, a) < 0))
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
	const char *pos = payload, *line, *t[7];
	unsigned seen = 0;
	size_t len, l[7];
	uint64_t v;

	if (!hb || !payload)
		return -EINVAL;
	while (next_line(&pos, &line, &len)) {
		size_t n = split(line, len, t, l, 7);

		if ((n == 6 || n == 7) && tok_is(t[0], l[0], "active")) {
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
		if (parse_u64_n(t[1], l[1], &v) < 0)
			return -EINVAL;
		if (tok_is(t[0], l[0], "pid") && v <= INT32_MAX)
			hb->pid = (int)v, seen |= 2;
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

int heartbeat_write(const char *run_dir, const struct heartbeat *hb)
{
	_cleanup_(state_unlock) struct state_lock lk = { .fd = -1 };
	char buf[HEARTBEAT_BUF];
	int n = heartbeat_format(hb, buf, sizeof(buf)), r;

	if (n < 0)
		return n;
	r = state_lock(run_dir, HISTORY_HEARTBEAT, &lk);
	return r < 0 ? r : state_save_volatile(run_dir, HISTORY_HEARTBEAT, buf, (size_t)n);
}

int heartbeat_read(const char *run_dir, struct heartbeat *ret)
{
	_cleanup_(state_unlock) struct state_lock lk = { .fd = -1 };
	char buf[HEARTBEAT_BUF];
	ssize_t n;
	int r;

	r = state_lock(run_dir, HISTORY_HEARTBEAT, &lk);
	if (r < 0)
		return r;
	n = state_load(run_dir, HISTORY_HEARTBEAT, buf, sizeof(buf));
	return n < 0 ? (int)n : heartbeat_parse(buf, ret);
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

/* Reads the whole ring file (bounded by its expected size). */
static int read_file(int fd, uint64_t max, uint8_t **ret, size_t *ret_len)
{
	struct stat st;
	uint8_t *buf;
	size_t off = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + off, (size_t)st.st_size - off, (off_t)off);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		off += (size_t)n;
	}
	*ret = buf;
	*ret_len = off;
	return 0;
}

#define RING_MAX_SLOTS (1u << 20)
#define RING_MAX_FILE (256ull << 20)

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
	size_t len = 0;
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
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	r.slots = (unsigned)slots;
	r.interval_ms = (unsigned)interval_ms;
	r.slot_size = slot_size(ncpu);
	r.next_seq = 1;
	make_header(hdr, ncpu, r.slots, r.interval_ms);
	if (read_file(fd, RING_MAX_FILE, &img, &len) == 0 && len == size &&
	    !memcmp(img, hdr, HDR_SIZE)) {
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

int history_parse(const uint8_t *file, size_t len, uint64_t since_ms, struct history_series *ret)
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
		    get_u64(sl + 8) >= since_ms)
			idx[n++] = (struct seq_idx){ seq, sl };
	}
	qsort(idx, n, sizeof(*idx), cmp_seq);
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
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *img = NULL;
	size_t len;
	char path[512];
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", run_dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	r = read_file(fd, RING_MAX_FILE, &img, &len);
	return r < 0 ? r : history_parse(img, len, since_ms, ret);
}

void history_series_free(struct history_series *s)
{
	free(s->t_ms);
	free(s->pct);
	s->t_ms = NULL;
	s->pct = NULL;
	s->n = 0;
}
