/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <time.h>

#include "memcg/canary.h"
#include "memcg/memcg.h"
#include "base/state.h"
#include "base/util.h"

#define READ_MAX (1024 * 1024) /* numa_stat of a many-node root stays far below */
#define CANARY_MNT_MAX 128	/* canary_file()'s mount buffer */

int canary_parse(const char *text, struct canary_result *ret)
{
	struct canary_result c = { 0 };
	const char *pos = text, *line, *v;
	size_t len, vl;
	unsigned seen = 0;
	uint64_t e;

	while (next_line(&pos, &line, &len)) {
		if (line_kv(line, len, "t_ms", &v, &vl) && parse_u64_n(v, vl, &c.t_ms) == 0)
			seen |= 1;
		else if (line_kv(line, len, "read_us", &v, &vl) &&
			 parse_u64_n(v, vl, &c.read_us) == 0)
			seen |= 2;
		else if (line_kv(line, len, "bytes", &v, &vl) && parse_u64_n(v, vl, &c.bytes) == 0)
			seen |= 4;
		else if (line_kv(line, len, "err", &v, &vl) && parse_u64_n(v, vl, &e) == 0 &&
			 e < 4096) {
			c.err = -(int)e;
			seen |= 8;
		} else if (line_kv(line, len, "file", &v, &vl) && vl > 0 && vl < sizeof(c.file)) {
			memcpy(c.file, v, vl);
			c.file[vl] = '\0';
			seen |= 16;
		} else if (len > 0) {
			return -EINVAL;
		}
	}
	if (seen != 31)
		return -EINVAL;
	*ret = c;
	return 0;
}

size_t canary_format(const struct canary_result *c, char *buf, size_t size)
{
	int k = snprintf(buf, size, "t_ms %llu\nread_us %llu\nbytes %llu\nerr %d\nfile %s\n",
			 (unsigned long long)c->t_ms, (unsigned long long)c->read_us,
			 (unsigned long long)c->bytes, -c->err, c->file[0] ? c->file : "-");

	if (k < 0 || size == 0)
		return 0;
	return (size_t)k < size ? (size_t)k : size - 1;
}

int canary_file(const struct hostfs *hf, char *buf, size_t size)
{
	static const char *const infos[] = { "1/mountinfo", "self/mountinfo" };
	const size_t text_size = 256 * 1024;
	_cleanup_free_ char *text = malloc(text_size);
	struct memcg_controller c;
	char mnt[CANARY_MNT_MAX] = "";
	int r;

	if (!text)
		return -ENOMEM;
	/* memcg_read() finds the same one (memcg_find_hierarchy): measure() takes its reading's */
	if (hostfs_read(hf, HOSTFS_PROC, "cgroups", text, text_size) < 0)
		return -ENOENT;
	r = memcg_parse_proc_cgroups(text, &c);
	if (r < 0)
		return r;
	for (size_t i = 0; !mnt[0] && i < ARRAY_SIZE(infos); i++)
		if (hostfs_read(hf, HOSTFS_PROC, infos[i], text, text_size) < 0 ||
		    memcg_find_mount(text, c.hierarchy == 0, mnt, sizeof(mnt)) < 0)
			mnt[0] = '\0';
	if (!mnt[0])
		snprintf(mnt, sizeof(mnt), "%s", c.hierarchy ? "fs/cgroup/memory" : "fs/cgroup");
	r = snprintf(buf, size, "%s/%s", mnt, c.hierarchy ? "memory.numa_stat" : "memory.stat");
	return r < 0 || (size_t)r >= size ? -ENAMETOOLONG : 0;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* The file canary_file() names, from the hierarchy memcg_read() found (@m), when it fits the
 * buffer canary_file() has (else canary_file() looks, and fails or falls back as it does). */
static int seen_file(const struct hostfs *hf, const struct memcg_reading *m, char *buf,
		     size_t size)
{
	int r;

	if (!m || !m->hierarchy[0] || strlen(m->hierarchy) >= CANARY_MNT_MAX)
		return canary_file(hf, buf, size);
	r = snprintf(buf, size, "%s/%s", m->hierarchy,
		     m->source == MEMCG_V1 ? "memory.numa_stat" : "memory.stat");
	return r < 0 || (size_t)r >= size ? -ENAMETOOLONG : 0;
}

static void measure(const struct hostfs *hf, uint64_t now_ms, const struct memcg_reading *m,
		    struct canary_result *c)
{
	_cleanup_free_ char *buf = malloc(READ_MAX);
	uint64_t t0;
	ssize_t n;

	memset(c, 0, sizeof(*c));
	c->t_ms = now_ms;
	c->fresh = true;
	c->err = seen_file(hf, m, c->file, sizeof(c->file));
	if (c->err < 0)
		return;
	if (!buf) {
		c->err = -ENOMEM;
		return;
	}
	t0 = now_us();
	n = hostfs_read(hf, HOSTFS_SYS, c->file, buf, READ_MAX);
	c->read_us = now_us() - t0;
	if (n < 0)
		c->err = (int)n;
	else
		c->bytes = (uint64_t)n;
}

int canary_run(const struct hostfs *hf, const char *state_dir, unsigned state_flags,
	       uint64_t every_ms, uint64_t now_ms, const struct memcg_reading *seen,
	       struct canary_result *ret)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT_FLAGS(state_flags);
	struct canary_result c;
	int r;

	if (every_ms == 0)
		return -ECANCELED;
	r = canary_state_begin(&txn, state_dir, &canary_state, &c);
	if (r < 0)
		return r;
	if (r == STATE_LOADED && c.t_ms <= now_ms && now_ms - c.t_ms < every_ms) {
		c.fresh = false;
		*ret = c;
		return 0;
	}
	measure(hf, now_ms, seen, &c);
	(void)canary_state_commit(&txn, &c); /* next run just measures again */
	*ret = c;
	return 0;
}

/* ---- the state file ---- */

#define CANARY_PAYLOAD_MAX 512

const struct state_type canary_state = { STATE_CANARY, CANARY_PAYLOAD_MAX, true };

STATE_CODEC_BOUNDED(, canary_state, struct canary_result, CANARY_PAYLOAD_MAX, canary_parse,
		    canary_format);
