/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>

#include "cpu/folded.h"
#include "base/util.h"

#define KEY_MAX 4096 /* bytes of one "comm;frames" key */
#define FRAMES_MAX 8192 /* distinct frames folded_hot_frame() tracks */
#define COMM_KEY_MAX 65 /* a task name is 15 bytes; cap what callers pass */
#define OTHER_RESERVE 64 /* slots for "comm;[other]" once the stack limit is reached */

struct slot {
	char *key;
	uint64_t count;
};

struct sample_time {
	uint32_t t_ms;
	uint32_t slot; /* index into fold.slots */
};

struct fold {
	struct slot *slots;
	size_t cap, used, max;
	uint64_t samples;
	struct sample_time *times; /* kept when fold_keep_times() asked */
	size_t ntimes, max_times;
	uint64_t times_lost;
};

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

int fold_new(size_t max_stacks, struct fold **ret)
{
	_cleanup_free_ struct fold *f = calloc(1, sizeof(*f));
	size_t cap = 16;

	if (!f || max_stacks == 0)
		return f ? -EINVAL : -ENOMEM;
	while (cap < 2 * (max_stacks + OTHER_RESERVE + 1)) /* load factor <= 1/2 */
		cap *= 2;
	f->slots = calloc(cap, sizeof(*f->slots));
	if (!f->slots)
		return -ENOMEM;
	f->cap = cap;
	f->max = max_stacks;
	*ret = TAKE_PTR(f);
	return 0;
}

void fold_free(struct fold *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->cap; i++)
		free(f->slots[i].key);
	free(f->slots);
	free(f->times);
	free(f);
}

/* Appends @s made safe for a folded line; returns the new length (clamped to the buffer). */
static size_t put_name(char *buf, size_t at, size_t size, const char *s)
{
	for (; *s && at + 1 < size; s++) {
		unsigned char c = (unsigned char)*s;

		buf[at++] = c == ';' ? ':' : (c < 0x20 || c > 0x7e) ? '?' : (char)c;
	}
	buf[at] = '\0';
	return at;
}

static struct slot *find(struct fold *f, const char *key, size_t n, bool *found)
{
	size_t i = (size_t)fnv1a(key, n) & (f->cap - 1);

	for (;; i = (i + 1) & (f->cap - 1)) {
		struct slot *s = &f->slots[i];

		if (!s->key) {
			*found = false;
			return s;
		}
		if (strncmp(s->key, key, n) == 0 && s->key[n] == '\0') {
			*found = true;
			return s;
		}
	}
}

/* Counts @count samples of the stack under its key; the slot, or NULL when out of memory. */
static struct slot *add(struct fold *f, const char *comm, const char *const *frames, size_t n,
			uint64_t count)
{
	char key[KEY_MAX];
	size_t len = put_name(key, 0, COMM_KEY_MAX, comm && *comm ? comm : "[unknown]");
	struct slot *s;
	bool found;

	for (size_t i = 0; i < n && i < FOLD_DEPTH_MAX && len + 2 < sizeof(key); i++) {
		key[len++] = ';';
		len = put_name(key, len, sizeof(key), frames[i] ? frames[i] : "[unknown]");
	}
	s = find(f, key, len, &found);
	if (!found && f->used >= f->max) {
		len = put_name(key, 0, COMM_KEY_MAX, comm && *comm ? comm : "[unknown]");
		key[len++] = ';';
		len = put_name(key, len, sizeof(key), "[other]");
		s = find(f, key, len, &found);
		if (!found && f->used >= f->max + OTHER_RESERVE) { /* then one "[other]" for all */
			len = put_name(key, 0, sizeof(key), "[other]");
			s = find(f, key, len, &found);
		}
	}
	if (!found) {
		s->key = strndup(key, len);
		if (!s->key)
			return NULL;
		f->used++;
	}
	s->count += count;
	f->samples += count;
	return s;
}

int fold_add(struct fold *f, const char *comm, const char *const *frames, size_t n, uint64_t count)
{
	return add(f, comm, frames, n, count) ? 0 : -ENOMEM;
}

int fold_keep_times(struct fold *f, size_t max)
{
	struct sample_time *t = reallocarray(f->times, max ? max : 1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	f->times = t;
	f->max_times = max;
	if (f->ntimes > max)
		f->ntimes = max;
	return 0;
}

int fold_add_at(struct fold *f, const char *comm, const char *const *frames, size_t n,
		uint32_t t_ms)
{
	struct slot *s = add(f, comm, frames, n, 1);

	if (!s)
		return -ENOMEM;
	if (f->ntimes < f->max_times)
		f->times[f->ntimes++] = (struct sample_time){ t_ms, (uint32_t)(s - f->slots) };
	else
		f->times_lost++;
	return 0;
}

uint64_t fold_times_lost(const struct fold *f)
{
	return f->times_lost;
}

uint64_t fold_samples(const struct fold *f)
{
	return f->samples;
}

static int by_count(const void *a, const void *b)
{
	const struct slot *x = *(const struct slot *const *)a, *y = *(const struct slot *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->key, y->key);
}

ssize_t fold_format(const struct fold *f, char *buf, size_t size)
{
	_cleanup_free_ const struct slot **v = calloc(f->used ? f->used : 1, sizeof(*v));
	size_t n = 0, at = 0, i;
	uint64_t rest = 0;
	char tail[48];
	int w;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < f->cap; i++)
		if (f->slots[i].key)
			v[n++] = &f->slots[i];
	qsort(v, n, sizeof(*v), by_count);
	for (i = 0; i < n; i++) {
		size_t need = strlen(v[i]->key) + 1 + 20 + 1;

		/* keep room for the "[truncated] N" line while anything may still be left out */
		if (at + need + sizeof(tail) > size)
			break;
		at += (size_t)snprintf(buf + at, size - at, "%s %" PRIu64 "\n", v[i]->key,
				       v[i]->count);
	}
	for (; i < n; i++)
		rest += v[i]->count;
	w = snprintf(tail, sizeof(tail), "[truncated] %" PRIu64 "\n", rest);
	if (size == 0 || (rest && at + (size_t)w >= size))
		return -ENOBUFS;
	if (rest) {
		memcpy(buf + at, tail, (size_t)w);
		at += (size_t)w;
	}
	buf[at] = '\0';
	return (ssize_t)at;
}

ssize_t fold_format_times(const struct fold *f, size_t lines, char *buf, size_t size)
{
	_cleanup_free_ const struct slot **v = NULL;
	_cleanup_free_ uint32_t *rank = NULL;
	size_t n = 0, at;

	if (f->ntimes == 0)
		return 0;
	if (lines == 0)
		return -EINVAL;
	v = calloc(f->used ? f->used : 1, sizeof(*v));
	rank = calloc(f->cap, sizeof(*rank));
	if (!v || !rank)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap; i++)
		if (f->slots[i].key)
			v[n++] = &f->slots[i];
	qsort(v, n, sizeof(*v), by_count); /* fold_format's order: a stack's line is its rank */
	for (size_t i = 0; i < n; i++)
		rank[v[i] - f->slots] = (uint32_t)(i < lines - 1 ? i : lines - 1);
	at = strlen(FOLDED_TIMES_HEADER);
	if (at >= size)
		return -ENOBUFS;
	memcpy(buf, FOLDED_TIMES_HEADER, at);
	for (size_t i = 0; i < f->ntimes; i++) {
		int w = snprintf(buf + at, size - at, "%" PRIu32 " %" PRIu32 "\n", f->times[i].t_ms,
				 rank[f->times[i].slot]);

		if (w < 0 || (size_t)w >= size - at)
			return -ENOBUFS;
		at += (size_t)w;
	}
	return (ssize_t)at;
}

int folded_times_parse(const char *text, size_t len, size_t nlines, struct folded_time *ret,
		       size_t max)
{
	size_t hl = strlen(FOLDED_TIMES_HEADER), n = 0;
	const char *p = text + hl, *end = text + len;

	if (len < hl || memcmp(text, FOLDED_TIMES_HEADER, hl) != 0)
		return -EINVAL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *sp = memchr(p, ' ', ll);
		uint64_t t, line;

		if (ll > 0) {
			if (!sp || parse_u64_n(p, (size_t)(sp - p), &t) < 0 ||
			    parse_u64_n(sp + 1, ll - (size_t)(sp + 1 - p), &line) < 0 ||
			    t > 86400000 || line >= nlines)
				return -EINVAL;
			if (n < max)
				ret[n] = (struct folded_time){ (uint32_t)t, (uint32_t)line };
			if (n++ == INT32_MAX)
				return -EINVAL;
		}
		p += ll + 1;
	}
	return (int)n;
}

int folded_parse(const char *text, size_t len, struct folded_line *ret, size_t max)
{
	const char *p = text, *end = text + len;
	size_t n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *sp;
		uint64_t c;

		for (size_t i = 0; i < ll; i++) /* fold_format writes printable ASCII only */
			if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
				return -EINVAL;
		if (ll > 0) {
			sp = memrchr(p, ' ', ll);
			if (!sp || sp == p ||
			    parse_u64_n(sp + 1, ll - (size_t)(sp + 1 - p), &c) < 0)
				return -EINVAL;
			if (n < max)
				ret[n] = (struct folded_line){ p, (size_t)(sp - p), c };
			n++;
		}
		p += ll + 1;
	}
	return (int)(!ret || n < max ? n : max); /* no @ret: how many there are */
}

/* Frames that are on every syscall's or interrupt's way, or generic helpers: never the answer. */
static const char *const plumbing[] = {
	"entry_SYSCALL", "entry_INT80", "do_syscall_", "x64_sys_call", "__x64_sys_", "__ia32_sys_",
	"__arm64_sys_", "__se_sys_", "__do_sys_", "invoke_syscall", "el0_", "el0t_", "el0_svc",
	"syscall_exit", "syscall_enter", "ksys_", "vfs_", "new_sync_", "seq_read", "seq_printf",
	"seq_puts", "seq_put_", "seq_write", "asm_", "common_interrupt", "irq_exit", "__irq_exit",
	"do_softirq", "__do_softirq", "handle_softirqs", "sysvec_", "vsnprintf", "snprintf",
	"sprintf", "format_decode", "number", "string", "memcpy", "memset", "__memcpy", "__memset",
	"copy_user", "rep_movs", "rep_stos", "_copy_to_user", "_copy_from_user", "_raw_spin",
	"__raw_spin", "native_queued_spin", "queued_spin", "_cond_resched", "__cond_resched",
	"preempt_schedule", "cpuidle", "default_idle", "do_idle", "cpu_startup_entry",
	"start_secondary", "secondary_startup", "pv_native_safe_halt", "intel_idle",
	"arch_cpu_idle", "__x86_return_thunk", "srso_", "ret_from_fork", "kthread",
	"worker_thread", "process_one_work", "smpboot_thread_fn", "[user]", "[unknown]",
	"[other]", "[truncated]",
};

bool folded_is_plumbing(const char *f, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(plumbing); i++) {
		size_t k = strlen(plumbing[i]);

		if (n >= k && memcmp(f, plumbing[i], k) == 0)
			return true;
	}
	return false;
}

struct frame_count {
	const char *name;
	size_t len, depth;
	uint64_t count;
	uint64_t last_line; /* the line that last counted it: a frame counts once per stack */
};

static struct frame_count *frame_slot(struct frame_count *t, size_t cap, const char *name,
				      size_t len)
{
	size_t i = (size_t)fnv1a(name, len) & (cap - 1);

	for (size_t probes = 0; probes < cap; probes++, i = (i + 1) & (cap - 1))
		if (!t[i].name || (t[i].len == len && memcmp(t[i].name, name, len) == 0))
			return &t[i];
	return NULL;
}

static void set_name(char *dst, size_t size, const char *s, size_t n)
{
	snprintf(dst, size, "%.*s", (int)(n < size ? n : size - 1), s);
}

/* True when the stack of @l has the frame @f (a whole ';'-delimited element after the comm). */
static bool has_frame(const struct folded_line *l, const char *f, size_t flen)
{
	const char *p = l->stack, *end = l->stack + l->len;

	while ((p = memchr(p, ';', (size_t)(end - p))) != NULL) {
		p++;
		if ((size_t)(end - p) >= flen && memcmp(p, f, flen) == 0 &&
		    (p + flen == end || p[flen] == ';'))
			return true;
	}
	return false;
}

/* The task with most samples among the stacks that have @frame (all stacks when NULL). */
static void top_comm(const struct folded_line *l, size_t n, const char *frame, size_t flen,
		     char *comm, size_t size)
{
	struct {
		const char *name;
		size_t len;
		uint64_t sum;
	} c[64];
	size_t nc = 0, best = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		const char *semi = memchr(l[i].stack, ';', l[i].len);
		size_t clen = semi ? (size_t)(semi - l[i].stack) : l[i].len, k;

		if (frame && !has_frame(&l[i], frame, flen))
			continue;
		for (k = 0; k < nc && (c[k].len != clen || memcmp(c[k].name, l[i].stack, clen));
		     k++)
			;
		if (k == nc) {
			if (nc == ARRAY_SIZE(c))
				/* more than 64 tasks on one core: the top one is among the first */
				continue;
			c[nc++] = (typeof(c[0])){ l[i].stack, clen, 0 };
		}
		c[k].sum += l[i].count;
		if (best == SIZE_MAX || c[k].sum > c[best].sum)
			best = k;
	}
	if (best != SIZE_MAX)
		set_name(comm, size, c[best].name, c[best].len);
}

int folded_hot_frame(const char *text, size_t len, struct hot_frame *ret)
{
	_cleanup_free_ struct folded_line *l = NULL;
	_cleanup_free_ struct frame_count *t = NULL;
	const struct frame_count *best = NULL;
	struct hot_frame h = { 0 };
	int n;

	n = folded_parse(text, len, NULL, 0);
	if (n < 0)
		return n;
	l = calloc((size_t)FOLD_STACKS_MAX + 2, sizeof(*l));
	t = calloc(FRAMES_MAX, sizeof(*t));
	if (!l || !t)
		return -ENOMEM;
	n = folded_parse(text, len, l, FOLD_STACKS_MAX + 2);
	for (int i = 0; i < n; i++) {
		const char *p = memchr(l[i].stack, ';', l[i].len), *end = l[i].stack + l[i].len;

		/* counts that overflow the total are damage, not a profile (fuzz_profile found a
		 * frame of 3 samples "out of" 2 after a 2^64-1 line wrapped the sum) */
		if (__builtin_add_overflow(h.total, l[i].count, &h.total))
			return -EINVAL;
		for (size_t depth = 1; p && p < end; depth++) {
			const char *f = p + 1, *semi = memchr(f, ';', (size_t)(end - f));
			size_t flen = semi ? (size_t)(semi - f) : (size_t)(end - f);
			struct frame_count *c;

			p = semi;
			if (flen == 0 || folded_is_plumbing(f, flen) ||
			    !(c = frame_slot(t, FRAMES_MAX, f, flen)))
				continue;
			if (!c->name)
				*c = (struct frame_count){ f, flen, depth, 0, 0 };
			if (c->last_line == (uint64_t)i + 1)
				continue;
			c->last_line = (uint64_t)i + 1;
			c->count += l[i].count;
			if (depth > c->depth)
				c->depth = depth;
		}
	}
	if (h.total == 0)
		return -ENODATA;
	for (size_t i = 0; i < FRAMES_MAX; i++)
		if (t[i].name && (!best || t[i].count > best->count ||
				  (t[i].count == best->count && t[i].depth > best->depth)))
			best = &t[i];
	if (best) {
		set_name(h.frame, sizeof(h.frame), best->name, best->len);
		h.samples = best->count;
		top_comm(l, (size_t)n, best->name, best->len, h.comm, sizeof(h.comm));
	} else { /* everything was plumbing: name the heaviest stack's leaf */
		const struct folded_line *m = &l[0];
		const char *leaf;

		for (int i = 1; i < n; i++)
			if (l[i].count > m->count)
				m = &l[i];
		size_t end = m->len;

		/* the last non-empty frame after the comm; "[unknown]" when there is none */
		while (end > 0 && m->stack[end - 1] == ';')
			end--;
		leaf = memrchr(m->stack, ';', end);
		if (leaf)
			set_name(h.frame, sizeof(h.frame), leaf + 1,
				 (size_t)(m->stack + end - leaf - 1));
		else
			set_name(h.frame, sizeof(h.frame), "[unknown]", 9);
		h.samples = m->count;
		top_comm(l, (size_t)n, NULL, 0, h.comm, sizeof(h.comm));
	}
	*ret = h;
	return 0;
}
