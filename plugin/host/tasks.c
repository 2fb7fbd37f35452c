/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>

#include "host/tasks.h"
#include "base/util.h"

int tasks_parse_stat(const char *buf, struct task_stat *ret)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')'), *p;
	struct task_stat s = { .cpu = -1 };
	uint64_t v;
	int field = 3; /* the first field after ") " is the state, field 3 */

	if (!open || !close || close < open || close[1] != ' ')
		return -EINVAL;
	if (parse_u64_n(buf, (size_t)(open - buf - 1), &v) < 0 || open[-1] != ' ' || v == 0 ||
	    v > INT32_MAX)
		return -EINVAL;
	s.tid = (int)v;
	snprintf(s.comm, sizeof(s.comm), "%.*s", (int)(close - open - 1), open + 1);
	p = close + 2;
	while (*p && *p != '\n') {
		size_t n = strcspn(p, " \n");

		if (n == 0)
			return -EINVAL;
		if (field == 15 && parse_u64_n(p, n, &s.stime) < 0)
			return -EINVAL;
		if (field == 39) {
			if (parse_u64_n(p, n, &v) < 0 || v > INT32_MAX)
				return -EINVAL;
			s.cpu = (int)v;
		}
		field++;
		p += n;
		if (*p == ' ')
			p++;
	}
	if (field <= 15)
		return -EINVAL;
	*ret = s;
	return 0;
}

int tasks_parse_stack(const char *text, char *buf, size_t size)
{
	const char *pos = text, *line;
	size_t len, off = 0;
	int frames = 0;

	if (size == 0)
		return -EINVAL;
	buf[0] = '\0';
	while (next_line(&pos, &line, &len)) {
		const char *f = memchr(line, ']', len);
		size_t n;

		if (len == 0)
			continue;
		if (!f || line[0] != '[' || (size_t)(f - line) + 2 > len || f[1] != ' ')
			return -EINVAL;
		f += 2;
		n = 0;
		while (f + n < line + len && f[n] != '+' && f[n] != ' ')
			n++;
		if (n == 0)
			return -EINVAL;
		if (off + n + 2 < size) {
			off += (size_t)snprintf(buf + off, size - off, "%s%.*s", off ? "<" : "",
						(int)n, f);
		}
		frames++;
	}
	return frames;
}

int tasks_tracker_init(struct tasks_tracker *t, unsigned ncpu)
{
	memset(t, 0, sizeof(*t));
	t->ncpu = ncpu;
	t->hz = sysconf(_SC_CLK_TCK);
	if (t->hz <= 0)
		t->hz = 100;
	t->core = calloc(ncpu ? ncpu : 1, sizeof(*t->core));
	return t->core ? 0 : -ENOMEM;
}

void tasks_tracker_free(struct tasks_tracker *t)
{
	free(t->prev);
	free(t->cur);
	free(t->core);
	memset(t, 0, sizeof(*t));
}

void tasks_forget(struct tasks_tracker *t)
{
	t->have_prev = false;
	t->nprev = 0;
}

void tasks_reset_core(struct tasks_tracker *t, unsigned cpu)
{
	if (cpu < t->ncpu)
		memset(&t->core[cpu], 0, sizeof(t->core[cpu]));
}

static int cmp_tid(const void *a, const void *b)
{
	const struct task_stat *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Adds @ticks for thread @s to core @c's candidates, evicting the smallest when full. */
static void core_add(struct tasks_core *c, const struct task_stat *s, uint64_t ticks)
{
	size_t i, min = 0;

	for (i = 0; i < c->n; i++)
		if (c->top[i].tid == s->tid)
			break;
	if (i == c->n) {
		if (c->n < TASKS_TOP) {
			c->n++;
		} else {
			for (size_t j = 1; j < c->n; j++)
				if (c->top[j].stime_ms < c->top[min].stime_ms)
					min = j;
			if (c->top[min].stime_ms >= ticks)
				return;
			i = min;
		}
		memset(&c->top[i], 0, sizeof(c->top[i]));
		c->top[i].pid = s->pid;
		c->top[i].tid = s->tid;
	}
	memcpy(c->top[i].comm, s->comm, sizeof(c->top[i].comm));
	c->top[i].stime_ms += ticks;
}

void tasks_account(struct tasks_tracker *t, struct task_stat *cur, size_t n, const bool *watch,
		   int *ret_best)
{
	_cleanup_free_ uint64_t *best = calloc(t->ncpu ? t->ncpu : 1, sizeof(*best));

	for (unsigned c = 0; ret_best && c < t->ncpu; c++)
		ret_best[c] = -1;
	for (size_t i = 0; t->have_prev && best && i < n; i++) {
		const struct task_stat *s = &cur[i], *p;
		uint64_t d;

		if (s->cpu < 0 || (unsigned)s->cpu >= t->ncpu || !watch[s->cpu])
			continue;
		p = bsearch(s, t->prev, t->nprev, sizeof(*s), cmp_tid);
		d = !p ? s->stime : s->stime > p->stime ? s->stime - p->stime : 0;
		if (d == 0)
			continue;
		core_add(&t->core[s->cpu], s, d);
		if (d > best[s->cpu]) {
			best[s->cpu] = d;
			if (ret_best)
				ret_best[s->cpu] = (int)i;
		}
	}
	/* this scan becomes the baseline of the next one */
	if (n > t->capprev) {
		struct task_stat *np = realloc(t->prev, n * sizeof(*np));

		if (!np) {
			tasks_forget(t);
			return;
		}
		t->prev = np;
		t->capprev = n;
	}
	if (n)
		memcpy(t->prev, cur, n * sizeof(*cur));
	t->nprev = n;
	t->have_prev = true;
}

/* Appends the threads of process @pid (dir fd @pfd of /proc/<pid>) to t->cur. */
static void scan_process(struct tasks_tracker *t, int pfd, int pid, size_t *n)
{
	_cleanup_close_ int tfd = openat(pfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (tfd < 0 || !(d = fdopendir(tfd)))
		return;
	TAKE_FD(tfd);
	while ((de = readdir(d)) && *n < TASKS_MAX) {
		char rel[300], buf[1024];
		uint64_t tid;
		ssize_t len;
		int fd;

		if (parse_u64(de->d_name, &tid) < 0)
			continue;
		snprintf(rel, sizeof(rel), "%s/stat", de->d_name);
		fd = openat(dirfd(d), rel, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue; /* exited meanwhile */
		len = hostfs_pread_all(fd, buf, sizeof(buf));
		close(fd);
		if (len <= 0 || tasks_parse_stat(buf, &t->cur[*n]) < 0)
			continue;
		t->cur[*n].pid = pid;
		(*n)++;
		if (*n == t->capcur) {
			size_t cap = t->capcur * 2 > TASKS_MAX ? TASKS_MAX : t->capcur * 2;
			struct task_stat *nc = realloc(t->cur, cap * sizeof(*nc));

			if (!nc || cap == t->capcur)
				break;
			t->cur = nc;
			t->capcur = cap;
		}
	}
	closedir(d);
}

/* Reads the kernel stack of the core's leading thread into its slot. */
static void read_top_stack(const struct hostfs *hf, struct tasks_core *c)
{
	const struct burst_task *top = NULL;
	char rel[64], text[8192];

	for (size_t i = 0; i < c->n; i++)
		if (!top || c->top[i].stime_ms > top->stime_ms)
			top = &c->top[i];
	if (!top)
		return;
	snprintf(rel, sizeof(rel), "%d/task/%d/stack", top->pid, top->tid);
	if (hostfs_read(hf, HOSTFS_PROC, rel, text, sizeof(text)) > 0)
		(void)tasks_parse_stack(text, c->stack, sizeof(c->stack));
}

int tasks_scan(struct tasks_tracker *t, const struct hostfs *hf, const bool *watch)
{
	_cleanup_close_ int pfd = hostfs_openat(hf, HOSTFS_PROC, ".", O_RDONLY | O_DIRECTORY);
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	if (pfd < 0)
		return pfd;
	if (!t->cur) {
		t->capcur = 4096;
		t->cur = malloc(t->capcur * sizeof(*t->cur));
		if (!t->cur)
			return -ENOMEM;
	}
	d = fdopendir(pfd);
	if (!d)
		return -errno;
	TAKE_FD(pfd);
	while ((de = readdir(d)) && n < TASKS_MAX) {
		uint64_t pid;
		int fd;

		if (parse_u64(de->d_name, &pid) < 0 || pid > INT32_MAX)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		scan_process(t, fd, (int)pid, &n);
		close(fd);
	}
	closedir(d);
	qsort(t->cur, n, sizeof(*t->cur), cmp_tid);
	tasks_account(t, t->cur, n, watch, NULL);
	for (unsigned c = 0; c < t->ncpu; c++)
		if (watch[c])
			read_top_stack(hf, &t->core[c]);
	return (int)n;
}

static int cmp_top(const void *a, const void *b)
{
	const struct burst_task *x = a, *y = b;

	return (x->stime_ms < y->stime_ms) - (x->stime_ms > y->stime_ms);
}

size_t tasks_peek(const struct tasks_tracker *t, unsigned cpu, struct burst_task *ret, size_t max)
{
	struct burst_task top[TASKS_TOP];
	const struct tasks_core *c;
	size_t n = 0;

	if (cpu >= t->ncpu || !t->core)
		return 0;
	c = &t->core[cpu];
	memcpy(top, c->top, c->n * sizeof(top[0]));
	qsort(top, c->n, sizeof(top[0]), cmp_top);
	for (size_t i = 0; i < c->n && n < max; i++, n++) {
		ret[n] = top[i];
		ret[n].stime_ms = top[i].stime_ms * 1000 / (uint64_t)t->hz;
	}
	return n;
}

size_t tasks_take(struct tasks_tracker *t, unsigned cpu, struct burst_task *ret, size_t max,
		  char *stack, size_t stack_size)
{
	struct tasks_core *c;
	size_t n = 0;

	if (stack_size > 0)
		stack[0] = '\0';
	if (cpu >= t->ncpu)
		return 0;
	c = &t->core[cpu];
	qsort(c->top, c->n, sizeof(c->top[0]), cmp_top);
	for (size_t i = 0; i < c->n && n < max; i++) {
		ret[n] = c->top[i];
		ret[n].stime_ms = c->top[i].stime_ms * 1000 / (uint64_t)t->hz;
		n++;
	}
	if (stack_size > 0)
		snprintf(stack, stack_size, "%s", c->stack);
	tasks_reset_core(t, cpu);
	return n;
}
