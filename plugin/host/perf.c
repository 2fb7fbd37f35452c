/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "host/perf.h"
#include "base/util.h"

#define SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN)

/* a record that wraps the ring is copied out whole: header.size is a u16 */
#define WRAP_MAX 65536

struct perf_cpu {
	int fd;
	unsigned pages;
	void *base;	      /* the ring, mapped only between perf_cpu_start and perf_cpu_stop */
	unsigned char *wrap;  /* WRAP_MAX bytes while mapped (8-aligned: malloc) */
	size_t map_len, data_off, data_size;
	uint64_t lost;
	bool monotonic; /* sample times are CLOCK_MONOTONIC */
};

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int perf_sample_parse(const void *rec, size_t len, struct perf_sample *ret)
{
	const unsigned char *p = rec;
	struct perf_event_header h;
	uint32_t pt[2];
	uint64_t nr;
	size_t off = sizeof(h);

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, p, sizeof(h));
	if (h.type != PERF_RECORD_SAMPLE || h.size > len || h.size < sizeof(h) + 8 + 8 + 8 + 8)
		return -EINVAL;
	ret->ip = get_u64(p + off);
	off += 8;
	memcpy(pt, p + off, sizeof(pt));
	off += 8;
	ret->time_ns = get_u64(p + off);
	off += 8;
	nr = get_u64(p + off);
	off += 8;
	if (nr > (h.size - off) / 8)
		return -EINVAL;
	ret->pid = pt[0];
	ret->tid = pt[1];
	ret->user = (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
	ret->nips = 0;
	for (uint64_t i = 0; i < nr; i++, off += 8) {
		uint64_t ip = get_u64(p + off);

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) { /* a context marker, not a frame */
			ret->user |= ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (ret->nips < PERF_STACK_MAX)
			ret->ips[ret->nips++] = ip;
	}
	return 0;
}

int perf_cpu_open(int cpu, unsigned hz, unsigned pages, struct perf_cpu **ret)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = hz,
		.freq = 1,
		.sample_type = SAMPLE_TYPE,
		/* read(): was it on its CPU at all (perf_cpu_times) */
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
		/* opened now, while the agent holds CAP_PERFMON; it samples from perf_cpu_start */
		.disabled = 1,
		/* kernel frames are what we name; user stacks would need the task's own maps */
		.exclude_callchain_user = 1,
		/* sample times on the clock the agent's own times are on (since 4.1) */
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
	};
	_cleanup_free_ struct perf_cpu *p = NULL;
	int fd;

	if (hz == 0 || pages == 0 || (pages & (pages - 1)) != 0 || cpu < 0)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL) { /* a kernel before use_clockid: perf's own clock */
		attr.use_clockid = 0;
		attr.clockid = 0;
		fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	p->monotonic = attr.use_clockid;
	p->fd = fd;
	p->pages = pages;
	*ret = TAKE_PTR(p);
	return 0;
}

int perf_cpu_start(struct perf_cpu *p)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *meta;
	int r;

	if (p->base)
		return -EALREADY;
	if (page <= 0)
		return -EINVAL;
	p->wrap = malloc(WRAP_MAX);
	if (!p->wrap)
		return -ENOMEM;
	/* no capability: the pages count against perf_event_mlock_kb per CPU, then
	 * RLIMIT_MEMLOCK (kernel/events/core.c perf_mmap) */
	p->map_len = (size_t)page * (1 + p->pages);
	p->base = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (p->base == MAP_FAILED) {
		r = -errno;
		goto out_unmapped;
	}
	meta = p->base;
	/* data_offset/data_size exist since 4.1; before, data follows the first page */
	p->data_off = meta->data_offset ? (size_t)meta->data_offset : (size_t)page;
	p->data_size = meta->data_size ? (size_t)meta->data_size : (size_t)page * p->pages;
	if (ioctl(p->fd, PERF_EVENT_IOC_RESET, 0) < 0 ||
	    ioctl(p->fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		r = -errno;
		munmap(p->base, p->map_len);
		goto out_unmapped;
	}
	return 0;
out_unmapped:
	p->base = NULL;
	free(p->wrap);
	p->wrap = NULL;
	return r;
}

void perf_cpu_stop(struct perf_cpu *p)
{
	if (!p || !p->base)
		return;
	(void)ioctl(p->fd, PERF_EVENT_IOC_DISABLE, 0);
	munmap(p->base, p->map_len); /* the kernel frees the ring with its last mapping */
	p->base = NULL;
	free(p->wrap);
	p->wrap = NULL;
}

bool perf_cpu_started(const struct perf_cpu *p)
{
	return p && p->base;
}

int perf_cpu_set_hz(struct perf_cpu *p, unsigned hz)
{
	/* cpu-clock turns its frequency into a fixed period in ns when the event is made
	 * (perf_swevent_init_hrtimer clears attr.freq), so the ioctl takes a period: 1e9 / hz */
	uint64_t period = hz ? 1000000000ull / hz : 0;

	if (period == 0)
		return -EINVAL;
	return ioctl(p->fd, PERF_EVENT_IOC_PERIOD, &period) < 0 ? -errno : 0;
}

int perf_cpu_times(const struct perf_cpu *p, uint64_t *ret_enabled, uint64_t *ret_running)
{
	uint64_t v[3];
	ssize_t n = read(p->fd, v, sizeof(v));

	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(v))
		return -EIO;
	*ret_enabled = v[1];
	*ret_running = v[2];
	return 0;
}

int perf_cpu_drain(struct perf_cpu *p, perf_sample_fn fn, void *userdata)
{
	struct perf_event_mmap_page *meta = p->base;
	const unsigned char *data;
	uint64_t head, tail;
	struct perf_sample s;
	int n = 0;

	if (!p->base)
		return 0;
	data = (const unsigned char *)p->base + p->data_off;
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	if (head - tail > p->data_size) { /* cannot happen with a writable ring: start over */
		__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
		return -EBADMSG;
	}
	while (tail < head) {
		size_t at = (size_t)(tail % p->data_size);
		struct perf_event_header h;
		const unsigned char *rec;

		if (at + sizeof(h) <= p->data_size) {
			memcpy(&h, data + at, sizeof(h));
		} else {
			size_t first = p->data_size - at;

			memcpy(&h, data + at, first);
			memcpy((unsigned char *)&h + first, data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail) {
			__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
			return -EBADMSG;
		}
		if (at + h.size <= p->data_size) {
			rec = data + at;
		} else { /* the only copy: a record split by the ring's end */
			size_t first = p->data_size - at;

			memcpy(p->wrap, data + at, first);
			memcpy(p->wrap + first, data, h.size - first);
			rec = p->wrap;
		}
		if (h.type == PERF_RECORD_SAMPLE && perf_sample_parse(rec, h.size, &s) == 0) {
			fn(&s, userdata);
			n++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			p->lost += get_u64(rec + sizeof(h) + 8); /* { header; u64 id; u64 lost; } */
		}
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

bool perf_cpu_monotonic(const struct perf_cpu *p)
{
	return p && p->monotonic;
}

uint64_t perf_cpu_lost(const struct perf_cpu *p)
{
	return p ? p->lost : 0;
}

void perf_cpu_close(struct perf_cpu *p)
{
	if (!p)
		return;
	perf_cpu_stop(p);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}
