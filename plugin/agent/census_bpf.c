/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/census_bpf.h"
#include "agent/census_rec.h"
#include "base/util.h"

void census_scan_free(struct census_scan *s)
{
	free(s->v);
	free(s->storage);
	*s = (struct census_scan){ 0 };
}

/* Index of each record's parent (records are in pre-order: a parent comes before its child). */
static int link_parents(const struct census_rec *rec, size_t n, size_t *parent)
{
	size_t nslots = 64, *slot;

	while (nslots < n * 2)
		nslots <<= 1;
	slot = calloc(nslots, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t want = rec[i].parent;
		size_t h;

		parent[i] = SIZE_MAX;
		for (h = (want * 0x9E3779B97F4A7C15ULL >> 20) & (nslots - 1); slot[h];
		     h = (h + 1) & (nslots - 1))
			if (rec[slot[h] - 1].self == want) {
				parent[i] = slot[h] - 1;
				break;
			}
		for (h = (rec[i].self * 0x9E3779B97F4A7C15ULL >> 20) & (nslots - 1); slot[h];
		     h = (h + 1) & (nslots - 1))
			;
		slot[h] = i + 1;
	}
	free(slot);
	return 0;
}

/* "a/b/c" for record @i: names up the parent chain, the root's own name left out. */
static size_t path_of(const struct census_rec *rec, const size_t *parent, size_t i, char *out,
		      size_t size)
{
	size_t chain[CENSUS_BPF_DEPTH_MAX + 1], n = 0, o = 0;

	for (size_t j = i; j != SIZE_MAX && parent[j] != SIZE_MAX && n < ARRAY_SIZE(chain);
	     j = parent[j])
		chain[n++] = j;
	while (n--) {
		int w = snprintf(out + o, size - o, "%s%s", o ? "/" : "", rec[chain[n]].name);

		if (w < 0 || (size_t)w >= size - o)
			return size - 1;	/* cut: snprintf left it terminated */
		o += (size_t)w;
	}
	if (o == 0)
		o = (size_t)snprintf(out, size, "/");
	return o;
}

/*
 * Each record's own pages: its usage minus its children's. A memcg's page counter is
 * hierarchical (a charge counts in every ancestor; v1's use_hierarchy=0 is gone since 5.11,
 * and the census needs 6.1's cgroup iterator), so a dying parent of dying children would
 * otherwise count their pages again, and the census's total would grow with the depth. The
 * records are read one by one, not at one instant: a child may show more than its parent has
 * left, which is 0, not a wrap-around.
 */
static void own_pages(const struct census_rec *rec, size_t n, const size_t *parent, uint64_t *own)
{
	for (size_t i = 0; i < n; i++)
		own[i] = rec[i].pages;
	for (size_t i = 0; i < n; i++) {
		size_t p = parent[i];

		if (p != SIZE_MAX)
			own[p] = own[p] > rec[i].pages ? own[p] - rec[i].pages : 0;
	}
}

int census_scan_records(const struct census_rec *rec, size_t n, const struct census_end *end,
			uint64_t page_size, struct census_scan *ret)
{
	struct census_scan s = { 0 };
	_cleanup_free_ size_t *parent = calloc(n ? n : 1, sizeof(*parent));
	_cleanup_free_ uint64_t *own = calloc(n ? n : 1, sizeof(*own));
	size_t ndying = 0, used = 0, cap;
	int r = parent && own ? link_parents(rec, n, parent) : -ENOMEM;

	if (r < 0)
		return r;
	own_pages(rec, n, parent, own);
	for (size_t i = 0; i < n; i++)
		ndying += rec[i].dying != 0;
	cap = ndying * 128 + 1;
	s.v = calloc(ndying ? ndying : 1, sizeof(*s.v));
	s.storage = malloc(cap);
	if (!s.v || !s.storage)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		char path[1024];
		size_t len;

		if (!rec[i].dying)
			continue;
		len = path_of(rec, parent, i, path, sizeof(path));
		if (used + len + 1 > cap) {
			char *g = realloc(s.storage, cap * 2 + len + 1);

			if (!g) {
				r = -ENOMEM;
				break;
			}
			s.storage = g;
			cap = cap * 2 + len + 1;
		}
		memcpy(s.storage + used, path, len + 1);
		s.v[s.n++] = (struct census_scan_item){ .path = (char *)(uintptr_t)used,
							.bytes = own[i] * page_size,
							.serial = rec[i].serial };
		used += len + 1;
	}
	if (r < 0) {
		census_scan_free(&s);
		return r;
	}
	for (size_t i = 0; i < s.n; i++)	/* offsets to pointers, now storage is final */
		s.v[i].path = s.storage + (uintptr_t)s.v[i].path;
	s.visited = end ? end->nodes : 0;
	s.truncated = end && (end->truncated || end->dropped);
	*ret = s;
	return 0;
}

#ifndef CZ_CENSUS_BPF

int census_bpf_scan(int cgroup_fd, uint32_t max_nodes, uint32_t expect, struct census_scan *ret)
{
	/* built where bpftool, clang, libbpf or the kernel's BTF were missing */
	return -EOPNOTSUPP;
}

const char *census_bpf_build(void)
{
	return "no (built without bpftool, clang, libbpf or the kernel's BTF)";
}

#else

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <census.skel.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "base/log.h"

/* libbpf's own messages go to our log at debug level (-v), never straight to stderr: every
 * failure they describe reaches the user once, as the census's one-line reason. */
static int libbpf_to_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)level;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	log_debug("%s", line);	/* libbpf's lines already begin with "libbpf: " */
	return 0;
}

static void set_print(void)
{
	libbpf_set_print(libbpf_to_log);
}

static void quiet_libbpf(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, set_print);
}

const char *census_bpf_build(void)
{
	static char s[64];

	/* the libbpf the loader found, not the headers' (the image's runtime stage has its own) */
	snprintf(s, sizeof(s), "bpf (CO-RE, libbpf %s)", libbpf_version_string());
	return s;
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* What the ring buffer delivered, in order. */
struct sink {
	uint64_t load_us, walk_us;
	struct census_rec *rec;
	size_t n, cap;
	struct census_end end;
	bool ended, bad;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct sink *k = ctx;

	if (size == sizeof(struct census_end)) {
		memcpy(&k->end, data, sizeof(k->end));
		k->ended = k->end.magic == CENSUS_END_MAGIC;
		return 0;
	}
	if (size != sizeof(struct census_rec)) {
		k->bad = true;
		return 0;
	}
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		struct census_rec *r = realloc(k->rec, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		k->rec = r;
		k->cap = cap;
	}
	memcpy(&k->rec[k->n], data, sizeof(*k->rec));
	k->rec[k->n].name[CENSUS_NAME_MAX - 1] = '\0';
	k->n++;
	return 0;
}

/*
 * Load, attach to @cgroup_fd, run the iterator once and drain the ring buffer (room for @room
 * records) into @k.
 */
static int run(int cgroup_fd, uint32_t max_nodes, uint32_t room, struct sink *k)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info info = { 0 };
	struct census_bpf *skel;
	struct bpf_link *link = NULL;
	struct ring_buffer *rb = NULL;
	size_t ring = 1u << 16;
	char buf[64];
	uint64_t t0 = mono_us(), t1 = 0;
	int fd = -1, r;

	/* room for @room records (each with the ring's 8-byte header), a power of two: the ring
	 * buffer is kernel memory charged to the agent's cgroup while the census runs */
	while (ring < (size_t)room * (sizeof(struct census_rec) + 8) + 4096 && ring < 1u << 30)
		ring <<= 1;
	quiet_libbpf();
	skel = census_bpf__open();
	if (!skel)
		return -errno ? -errno : -ENOMEM;
	skel->rodata->max_nodes = max_nodes;
	r = bpf_map__set_max_entries(skel->maps.records, (uint32_t)ring);
	if (r == 0)
		r = census_bpf__load(skel);
	if (r < 0)
		goto out;
	t1 = mono_us();
	k->load_us = t1 - t0;
	info.cgroup.cgroup_fd = (uint32_t)cgroup_fd;
	info.cgroup.order = BPF_CGROUP_ITER_SELF_ONLY;
	opts.link_info = &info;
	opts.link_info_len = sizeof(info);
	link = bpf_program__attach_iter(skel->progs.census, &opts);
	if (!link) {
		r = -errno;
		goto out;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	while ((r = (int)read(fd, buf, sizeof(buf))) > 0)
		;	/* the program writes nothing here: its output is the ring buffer */
	if (r < 0) {
		r = -errno;
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.records), on_record, k, NULL);
	if (!rb) {
		r = -errno;
		goto out;
	}
	r = ring_buffer__consume(rb);
	r = r < 0 ? r : 0;
	k->walk_us = mono_us() - t1;
out:
	ring_buffer__free(rb);
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	census_bpf__destroy(skel);
	return r < 0 ? r : (k->ended && !k->bad ? 0 : -EPROTO);
}

int census_bpf_scan(int cgroup_fd, uint32_t max_nodes, uint32_t expect, struct census_scan *ret)
{
	struct sink k = { 0 };
	struct census_scan s = { 0 };
	long page = sysconf(_SC_PAGESIZE);
	int r;

	max_nodes = max_nodes ? max_nodes : CENSUS_BPF_NODES_MAX;
	expect = expect < CENSUS_ROOM_MIN / 2 ? CENSUS_ROOM_MIN : expect * 2;
	r = run(cgroup_fd, max_nodes, expect < max_nodes ? expect : max_nodes, &k);
	if (r == 0 && k.end.dropped && expect < max_nodes) {
		/* more csses than the ring had room for: once more, with room for all of them */
		uint32_t all = k.end.nodes < max_nodes / 2 ? k.end.nodes * 2 : max_nodes;

		free(k.rec);
		k = (struct sink){ 0 };
		r = run(cgroup_fd, max_nodes, all, &k);
	}
	if (r == 0)
		r = census_scan_records(k.rec, k.n, &k.end, page > 0 ? (uint64_t)page : 4096, &s);
	free(k.rec);
	if (r < 0)
		return r;
	s.load_us = k.load_us;
	s.walk_us = k.walk_us;
	*ret = s;
	return 0;
}

#endif
