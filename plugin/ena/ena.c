/* SPDX-License-Identifier: MIT */
/*
 * ENA counter semantics: classification, deltas, the verdict and its cause text, the reset
 * window and the state payload. Pure (see ena.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>

#include "ena/ena.h"
#include "base/state.h"
#include "base/util.h"

/* ---- names and classes ---------------------------------------------------------------------- */

bool ena_name_match(const char *pattern, const char *name, int *ret_queue)
{
	const char *p = pattern, *n = name;
	int queue = -1;

	while (*p) {
		if (*p == '*') {
			if (*n < '0' || *n > '9')
				return false;
			queue = 0;
			for (; *n >= '0' && *n <= '9'; n++)
				queue = queue < 100000 ? queue * 10 + (*n - '0') : queue;
			p++;
			continue;
		}
		if (*n == '\0')
			break;
		if (*p != *n)
			return false;
		p++;
		n++;
	}
	/* pattern left over: only a driver name cut to 31 characters may end early */
	if (*p && (*n != '\0' || (size_t)(n - name) != ETHTOOL_NAME_MAX))
		return false;
	if (*n)
		return false;
	if (ret_queue)
		*ret_queue = queue;
	return true;
}

/* Entry @i of a configured list, or of the default when @l is NULL; NULL past the end. */
static const char *list_at(const struct cz_strlist *l, const char *const *def, size_t i)
{
	if (l)
		return i < l->n ? l->item[i] : NULL;
	return def[i];
}

static bool list_match(const struct cz_strlist *l, const char *const *def, const char *name,
		       int *ret_queue)
{
	const char *pat;

	for (size_t i = 0; (pat = list_at(l, def, i)); i++)
		if (ena_name_match(pat, name, ret_queue))
			return true;
	return false;
}

enum ena_class ena_classify(const struct ena_lists *l, const char *name, int *ret_queue)
{
	int q = -1;
	enum ena_class c = ENA_CLASS_NONE;

	if (list_match(l->reset, ena_default_reset_counters, name, &q))
		c = ENA_CLASS_RESET;
	else if (list_match(l->risk, ena_default_risk_counters, name, &q))
		c = ENA_CLASS_RISK;
	else if (list_match(l->allowance, ena_default_allowance_counters, name, &q))
		c = ENA_CLASS_ALLOWANCE;
	if (ret_queue)
		*ret_queue = c == ENA_CLASS_NONE ? -1 : q;
	return c;
}

/* Counters the verdict reads whatever the lists say. */
static bool is_queue_cnt(const char *name)
{
	return ena_name_match("queue_*_tx_cnt", name, NULL) ||
	       ena_name_match("queue_*_rx_cnt", name, NULL);
}

static bool is_updown(const char *name)
{
	return streq(name, "interface_up") || streq(name, "interface_down");
}

int ena_filter(const struct ethtool_devdump *d, const struct ena_lists *l,
	       struct ethtool_devdump *ret)
{
	struct ethtool_devdump f = *d;

	f.n = 0;
	f.stats = calloc(d->n ? d->n : 1, sizeof(*f.stats));
	if (!f.stats)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		const char *name = d->stats[i].name;

		if (ena_classify(l, name, NULL) != ENA_CLASS_NONE || is_updown(name) ||
		    is_queue_cnt(name) || streq(name, ENA_CONNTRACK_AVAILABLE))
			f.stats[f.n++] = d->stats[i];
	}
	*ret = f;
	return 0;
}

bool ena_baseline_same(const struct ethtool_devdump *a, const struct ethtool_devdump *b)
{
	if (!streq(a->ifname, b->ifname) || !streq(a->driver, b->driver) ||
	    !streq(a->bus_info, b->bus_info) || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct ethtool_stat *x = &a->stats[i], *y = &b->stats[i];

		if (!streq(x->name, y->name))
			return false;
		if (x->value != y->value && !is_queue_cnt(x->name) &&
		    !streq(x->name, ENA_CONNTRACK_AVAILABLE))
			return false;
	}
	return true;
}

/* ---- the verdict ---------------------------------------------------------------------------- */

/* Bounded "; "-joined text. */
struct text {
	char *buf;
	size_t size, len;
};

static void text_add(struct text *t, const char *fmt, ...) _printf_(2, 3);
static void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;

	if (t->len > 0)
		buf_appendf_cut(t->buf, t->size, &t->len, "; ");
	va_start(ap, fmt);
	(void)buf_vappendf(t->buf, t->size, &t->len, true, fmt, ap);
	va_end(ap);
}

static int rank(const struct ena_counter *c)
{
	if (streq(c->name, "reset_fail"))
		return 0;
	switch (c->cls) {
	case ENA_CLASS_RESET:
		return streq(c->name, "total_resets") ? 1 : 2;
	case ENA_CLASS_RISK:
		return 3;
	case ENA_CLASS_NONE:
		return 4;
	default:
		return 5;
	}
}

static int cmp_counter(const void *a, const void *b)
{
	const struct ena_counter *x = a, *y = b;
	int rx = rank(x), ry = rank(y);

	if (rx != ry)
		return rx - ry;
	if (x->delta != y->delta)
		return x->delta > y->delta ? -1 : 1;
	return strcmp(x->name, y->name);
}

static uint64_t moved_delta(const struct ena_verdict *v, const char *name)
{
	for (size_t i = 0; i < v->n_moved; i++)
		if (streq(v->moved[i].name, name))
			return v->moved[i].delta;
	return 0;
}

/* " (cpu39 burst 6.2s)" for the CPU serving @queue with the longest burst, or "". */
static void cpu_text(const struct ena_queue_cpu *qc, size_t n_qc, int queue, char *buf,
		     size_t size)
{
	const struct ena_queue_cpu *best = NULL;

	buf[0] = '\0';
	for (size_t i = 0; queue >= 0 && i < n_qc; i++)
		if (qc[i].queue == queue && (!best || qc[i].burst_ms > best->burst_ms))
			best = &qc[i];
	if (!best)
		return;
	if (best->burst_ms)
		snprintf(buf, size, " (cpu%d burst %" PRIu64 ".%" PRIu64 "s)", best->cpu,
			 best->burst_ms / 1000, best->burst_ms % 1000 / 100);
	else
		snprintf(buf, size, " (cpu%d)", best->cpu);
}

static const struct {
	const char *name;
	const char *label;
	bool queued; /* the cause is about one queue: name it and its CPU */
} reason_labels[] = {
	{ "suspected_poll_starvation", "poll starvation", true },
	{ "missing_tx_cmpl", "missing Tx completions", true },
	{ "missing_intr", "missing interrupt", true },
	{ "missing_first_intr", "missing first interrupt", true },
	{ "missing_admin_interrupt", "missing admin interrupt", false },
	{ "admin_to", "admin queue timeout", false },
	{ "os_netdev_wd", "netdev watchdog", true },
	{ "device_request_reset", "device requested reset", false },
};

static bool has_label(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(reason_labels); i++)
		if (streq(name, reason_labels[i].name))
			return true;
	return false;
}

/* The cause text of a reset-class counter that moved. */
static void cause_reset(struct text *t, const struct ena_counter *c, const struct ena_verdict *v,
			const struct ena_queue_cpu *qc, size_t n_qc)
{
	char cpu[48], q[16] = "";

	for (size_t i = 0; i < ARRAY_SIZE(reason_labels); i++) {
		if (!streq(c->name, reason_labels[i].name))
			continue;
		cpu[0] = '\0';
		if (reason_labels[i].queued && v->queue >= 0) {
			snprintf(q, sizeof(q), " q%d", v->queue);
			cpu_text(qc, n_qc, v->queue, cpu, sizeof(cpu));
		}
		if (c->delta > 1)
			text_add(t, "%s x%" PRIu64 "%s%s", reason_labels[i].label, c->delta, q,
				 cpu);
		else
			text_add(t, "%s%s%s", reason_labels[i].label, q, cpu);
		return;
	}
	text_add(t, "%s +%" PRIu64, c->name, c->delta);
}

static void build_cause(struct ena_verdict *v, const struct ena_queue_cpu *qc, size_t n_qc)
{
	struct text t = { v->cause, sizeof(v->cause), 0 };
	char cpu[48];

	v->cause[0] = '\0';
	if (v->reset_fail)
		text_add(&t, "reset FAILED +%" PRIu64, moved_delta(v, "reset_fail"));
	/* named reasons first (they say why), then the other reset counters */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < v->n_moved; i++) {
			const struct ena_counter *c = &v->moved[i];

			if (c->cls == ENA_CLASS_RESET && c->delta > 0 &&
			    !streq(c->name, "total_resets") && !streq(c->name, "reset_fail") &&
			    has_label(c->name) == (pass == 0))
				cause_reset(&t, c, v, qc, n_qc);
		}
	if (v->restart)
		text_add(&t, "interface restarted (down/up +%" PRIu64 ", queue counters zeroed)",
			 moved_delta(v, "interface_up"));
	for (size_t i = 0; i < v->n_moved; i++) {
		const struct ena_counter *c = &v->moved[i];
		const char *shortname = c->name;

		if (c->cls != ENA_CLASS_RISK || c->delta == 0)
			continue;
		if (c->queue >= 0 && startswith(c->name, "queue_")) {
			shortname = strchr(c->name + 6, '_');
			shortname = shortname ? shortname + 1 : c->name;
			cpu[0] = '\0';
			if (c->queue != v->queue || !v->resets)
				cpu_text(qc, n_qc, c->queue, cpu, sizeof(cpu));
			text_add(&t, "%s q%d +%" PRIu64 "%s", shortname, c->queue, c->delta, cpu);
		} else
			text_add(&t, "%s +%" PRIu64, c->name, c->delta);
	}
}

/* A reset-class counter or interface_up that went down: the driver was reloaded. */
static bool reloaded(const struct ethtool_devdump *before, const struct ethtool_devdump *after,
		     const struct ena_lists *l)
{
	for (size_t i = 0; i < after->n; i++) {
		const struct ethtool_stat *s = &after->stats[i], *b;

		if (!streq(s->name, "interface_up") &&
		    ena_classify(l, s->name, NULL) != ENA_CLASS_RESET)
			continue;
		b = ethtool_dump_find_near(before, s->name, i);
		if (b && s->value < b->value)
			return true;
	}
	return false;
}

/* Collect moved counters into @v; sets *@zeroed when a queue packet counter went down. A
 * counter that went down counts from its new value when @from_new (the driver restarted it at
 * 0), else not at all. */
static void collect(const struct ethtool_devdump *before, const struct ethtool_devdump *after,
		    const struct ena_lists *l, bool from_new, struct ena_verdict *v, bool *zeroed)
{
	for (size_t i = 0; i < after->n; i++) {
		const struct ethtool_stat *s = &after->stats[i];
		const struct ethtool_stat *b = ethtool_dump_find_near(before, s->name, i);
		struct ena_counter *c;
		int q;
		enum ena_class cls;

		if (!b || b->value == s->value)
			continue; /* a counter new in this reading is its own baseline */
		if (is_queue_cnt(s->name)) {
			*zeroed |= s->value < b->value;
			continue;
		}
		cls = ena_classify(l, s->name, &q);
		if ((cls == ENA_CLASS_NONE && !is_updown(s->name)) || v->n_moved == ENA_MOVED_MAX)
			continue;
		c = &v->moved[v->n_moved++];
		memcpy(c->name, s->name, sizeof(c->name));
		c->cls = cls;
		c->queue = q;
		c->prev = b->value;
		c->cur = s->value;
		c->went_down = s->value < b->value;
		c->delta = c->went_down ? (from_new ? s->value : 0) : s->value - b->value;
	}
}

static int diff(const struct ethtool_devdump *before, const struct ethtool_devdump *after,
		const struct ena_lists *l, const struct ena_queue_cpu *qc, size_t n_qc,
		bool across_reload, struct ena_verdict *ret)
{
	struct ena_verdict *v = ret;
	uint64_t best_risk = 0, reasons = 0;
	bool zeroed = false, has_total;

	if (!after || after->n == 0)
		return -EINVAL;
	has_total = ethtool_dump_find(after, "total_resets") != NULL;
	memset(v, 0, sizeof(*v));
	v->queue = -1;
	if (!before || reloaded(before, after, l)) {
		v->new_baseline = true;
		if (!before || !across_reload)
			return 0;
	}
	collect(before, after, l, v->new_baseline, v, &zeroed);
	qsort(v->moved, v->n_moved, sizeof(v->moved[0]), cmp_counter);
	for (size_t i = 0; i < v->n_moved; i++) {
		const struct ena_counter *c = &v->moved[i];

		if (c->cls == ENA_CLASS_RESET && streq(c->name, "total_resets"))
			v->resets = c->delta;
		else if (c->cls == ENA_CLASS_RESET && streq(c->name, "reset_fail"))
			v->reset_fail = c->delta > 0;
		else if (c->cls == ENA_CLASS_RESET)
			reasons += c->delta;
		else if (c->cls == ENA_CLASS_RISK && c->delta > 0) {
			v->risk = true;
			if (c->queue >= 0 && c->delta > best_risk) {
				best_risk = c->delta;
				v->queue = c->queue;
			}
		} else if (c->cls == ENA_CLASS_ALLOWANCE && c->delta > 0)
			v->throttled = true;
	}
	/* Upstream has no total_resets: every reset moves exactly one trigger counter. */
	if (!has_total)
		v->resets = reasons;
	if (v->resets == 0 && v->reset_fail)
		v->resets = 1;
	v->restart = v->resets == 0 && zeroed && moved_delta(v, "interface_up") > 0 &&
		     moved_delta(v, "interface_down") > 0;
	build_cause(v, qc, n_qc);
	return 0;
}

int ena_diff(const struct ethtool_devdump *before, const struct ethtool_devdump *after,
	     const struct ena_lists *l, const struct ena_queue_cpu *qc, size_t n_qc,
	     struct ena_verdict *ret)
{
	return diff(before, after, l, qc, n_qc, false, ret);
}

int ena_diff_across_reload(const struct ethtool_devdump *before,
			   const struct ethtool_devdump *after, const struct ena_lists *l,
			   struct ena_verdict *ret)
{
	return diff(before, after, l, NULL, 0, true, ret);
}

/* ---- allowance ------------------------------------------------------------------------------ */

int ena_allowance_diff(const struct ethtool_devdump *before, const struct ethtool_devdump *after,
		       const struct ena_lists *l, uint64_t floor, struct ena_allowance *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < after->n; i++) {
		const struct ethtool_stat *s = &after->stats[i], *b;
		struct ena_counter *c;

		if (streq(s->name, ENA_CONNTRACK_AVAILABLE)) {
			ret->has_available = true;
			ret->available = s->value;
			ret->below_floor = floor > 0 && s->value < floor;
			continue;
		}
		if (ena_classify(l, s->name, NULL) != ENA_CLASS_ALLOWANCE || !before)
			continue;
		b = ethtool_dump_find_near(before, s->name, i);
		if (!b || s->value <= b->value || ret->n_rose == ENA_MOVED_MAX)
			continue;
		c = &ret->rose[ret->n_rose++];
		memcpy(c->name, s->name, sizeof(c->name));
		c->cls = ENA_CLASS_ALLOWANCE;
		c->queue = -1;
		c->prev = b->value;
		c->cur = s->value;
		c->delta = s->value - b->value;
	}
	qsort(ret->rose, ret->n_rose, sizeof(ret->rose[0]), cmp_counter);
	return 0;
}

char *ena_allowance_format(const struct ena_allowance *a, uint64_t floor, char *buf, size_t size)
{
	struct text t = { buf, size, 0 };

	buf[0] = '\0';
	for (size_t i = 0; i < a->n_rose; i++)
		text_add(&t, "%s +%" PRIu64, a->rose[i].name, a->rose[i].delta);
	if (a->below_floor)
		text_add(&t, "%s %" PRIu64 " < %" PRIu64, ENA_CONNTRACK_AVAILABLE, a->available,
			 floor);
	return buf;
}

/* ---- history -------------------------------------------------------------------------------- */

void ena_history_prune(struct ena_history *h, uint64_t now_ms, uint64_t window_ms)
{
	size_t k = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct ena_event *e = &h->ev[i];

		if (e->t_ms > now_ms || now_ms - e->t_ms > window_ms)
			continue;
		h->ev[k++] = *e;
	}
	h->n = k;
}

void ena_history_add(struct ena_history *h, uint64_t t_ms, uint64_t resets, const char *cause)
{
	struct ena_event *e;

	if (h->n == ENA_EVENTS_MAX) {
		memmove(&h->ev[0], &h->ev[1], (ENA_EVENTS_MAX - 1) * sizeof(h->ev[0]));
		h->n--;
	}
	e = &h->ev[h->n++];
	e->t_ms = t_ms;
	e->resets = resets;
	snprintf(e->cause, sizeof(e->cause), "%s", cause);
}

uint64_t ena_history_resets(const struct ena_history *h)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < h->n; i++)
		sum += h->ev[i].resets;
	return sum;
}

/* ---- state ---------------------------------------------------------------------------------- */

void ena_state_free(struct ena_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		ethtool_dump_free(&s->ifs[i].base);
	free(s->ifs);
	memset(s, 0, sizeof(*s));
}

struct ena_ifstate *ena_state_find(struct ena_state *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->ifs[i].key, key))
			return &s->ifs[i];
	return NULL;
}

struct ena_ifstate *ena_state_add(struct ena_state *s, const char *key)
{
	struct ena_ifstate *f;

	if (s->n == ENA_STATE_MAX_IFACES || strlen(key) >= sizeof(f->key))
		return NULL;
	if (s->n == s->cap) {
		/* grown as needed: an entry is ~3.5 KiB, and a check runs on every exec (room for
		 * all 64 at once was 224 KiB to clear per run) */
		size_t cap = s->cap ? s->cap * 2 : 4;
		struct ena_ifstate *ifs = reallocarray(s->ifs, cap, sizeof(*ifs));

		if (!ifs)
			return NULL;
		s->ifs = ifs;
		s->cap = cap;
	}
	f = &s->ifs[s->n++];
	memset(f, 0, sizeof(*f));
	memcpy(f->key, key, strlen(key) + 1);
	return f;
}

/* One space-free token of [*p, end) into @buf; "-" stands for "". */
static int take_word(const char **p, const char *end, char *buf, size_t size)
{
	const char *s = *p;
	size_t n = 0;

	while (s < end && *s == ' ')
		s++;
	while (s + n < end && s[n] != ' ')
		n++;
	if (n == 0 || n >= size)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (streq(buf, "-"))
		buf[0] = '\0';
	*p = s + n;
	return 0;
}

static int take_u64(const char **p, const char *end, uint64_t *ret)
{
	char w[24];

	return take_word(p, end, w, sizeof(w)) < 0 ? -EINVAL : parse_u64(w, ret);
}

static int state_stat(struct ena_ifstate *f, const char *p, const char *end)
{
	struct ethtool_devdump *d = &f->base;
	struct ethtool_stat st;

	if (take_word(&p, end, st.name, sizeof(st.name)) < 0 || !st.name[0] ||
	    take_u64(&p, end, &st.value) < 0 || p != end || d->n >= ETHTOOL_MAX_STATS)
		return -EINVAL;
	if (d->n == 0 || (d->n >= 16 && (d->n & (d->n - 1)) == 0)) {
		struct ethtool_stat *ns =
			realloc(d->stats, (d->n < 16 ? 16 : d->n * 2) * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		d->stats = ns;
	}
	d->stats[d->n++] = st;
	return 0;
}

static int state_event(struct ena_ifstate *f, const char *p, const char *end)
{
	uint64_t t, resets;
	char cause[ENA_CAUSE_MAX];
	size_t n;

	if (take_u64(&p, end, &t) < 0 || take_u64(&p, end, &resets) < 0 || p == end || *p != ' ')
		return -EINVAL;
	p++;
	n = (size_t)(end - p);
	if (n >= sizeof(cause))
		return -EINVAL;
	memcpy(cause, p, n);
	cause[n] = '\0';
	ena_history_add(&f->hist, t, resets, cause);
	return 0;
}

static int state_iface(struct ena_state *s, struct ena_ifstate **cur, const char *p,
		       const char *end)
{
	char key[ETHTOOL_INFO_MAX + 8];
	struct ena_ifstate *f;
	struct ethtool_devdump *d;

	if (take_word(&p, end, key, sizeof(key)) < 0 || !key[0] || ena_state_find(s, key))
		return -EINVAL;
	f = ena_state_add(s, key);
	if (!f)
		return -ENOMEM;
	d = &f->base;
	if (take_u64(&p, end, &f->read_ms) < 0 ||
	    take_word(&p, end, d->ifname, sizeof(d->ifname)) < 0 ||
	    take_word(&p, end, d->driver, sizeof(d->driver)) < 0 ||
	    take_word(&p, end, d->bus_info, sizeof(d->bus_info)) < 0 || p != end)
		return -EINVAL;
	d->has_drvinfo = true;
	*cur = f;
	return 0;
}

static int state_line(struct ena_state *s, struct ena_ifstate **cur, const char *line, size_t len)
{
	const char *end = line + len, *p;

	if ((p = startswith(line, "read ")) && p <= end && s->n == 0)
		return take_u64(&p, end, &s->read_ms) < 0 || p != end ? -EINVAL : 0;
	if ((p = startswith(line, "iface ")) && p <= end)
		return state_iface(s, cur, p, end);
	if ((p = startswith(line, "stat ")) && p <= end && *cur)
		return state_stat(*cur, p, end);
	if ((p = startswith(line, "event ")) && p <= end && *cur)
		return state_event(*cur, p, end);
	return -EINVAL;
}

int ena_state_parse(const char *text, size_t len, struct ena_state *ret)
{
	struct ena_state s = { 0 };
	struct ena_ifstate *cur = NULL;
	_cleanup_free_ char *copy = malloc(len + 1);
	const char *pos, *line;
	size_t l;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (strlen(copy) != len)
		return -EINVAL;
	pos = copy;
	while (r >= 0 && next_line(&pos, &line, &l))
		r = l == 0 ? -EINVAL : state_line(&s, &cur, line, l);
	if (r < 0) {
		ena_state_free(&s);
		return r;
	}
	*ret = s;
	return 0;
}

/* A field for the space-separated format: "-" for empty, spaces and control bytes as '?'. */
static const char *field(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; s[n] && n < size - 1; n++)
		buf[n] = s[n] > 0x20 && s[n] < 0x7f ? s[n] : '?';
	buf[n] = '\0';
	return n ? buf : "-";
}

ssize_t ena_state_format(const struct ena_state *s, char **ret_buf)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return -ENOMEM;
	fprintf(f, "read %" PRIu64 "\n", s->read_ms);
	for (size_t i = 0; i < s->n; i++) {
		const struct ena_ifstate *e = &s->ifs[i];
		const struct ethtool_devdump *d = &e->base;
		char a[ETHTOOL_INFO_MAX + 1], b[ETHTOOL_INFO_MAX + 1], c[ETHTOOL_INFO_MAX + 1];

		fprintf(f, "iface %s %" PRIu64 " %s %s %s\n", e->key, e->read_ms,
			field(d->ifname, a, sizeof(a)), field(d->driver, b, sizeof(b)),
			field(d->bus_info, c, sizeof(c)));
		for (size_t k = 0; k < e->hist.n; k++)
			fprintf(f, "event %" PRIu64 " %" PRIu64 " %s\n", e->hist.ev[k].t_ms,
				e->hist.ev[k].resets, e->hist.ev[k].cause);
		for (size_t k = 0; k < d->n; k++)
			fprintf(f, "stat %s %" PRIu64 "\n", d->stats[k].name, d->stats[k].value);
	}
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret_buf = buf;
	return (ssize_t)size;
}

struct ena_lists ena_lists_from_config(const struct cz_config *cfg)
{
	return (struct ena_lists){ &cfg->ena.reset_counters, &cfg->ena.risk_counters,
				   &cfg->ena.allowance_counters };
}

/* ---- the state files ---- */

const struct state_type ena_reset_state = { STATE_ENA, ENA_STATE_MAX, true };
const struct state_type ena_allowance_state = { STATE_ENA_ALLOWANCE, ENA_STATE_MAX, true };

STATE_CODEC(, ena_state, struct ena_state, ena_state_parse, ena_state_format);
