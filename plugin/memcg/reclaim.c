/* SPDX-License-Identifier: MIT */
/* Reclaim as a remediation, the pure half: see reclaim.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/npd.h"
#include "base/util.h"
#include "memcg/reclaim.h"

#define RECLAIM_STATE_MAX 1024

static const char *const method_names[] = {
	[RECLAIM_NONE] = "none",
	[RECLAIM_MEMORY_RECLAIM] = "memory.reclaim",
	[RECLAIM_DROP_CACHES] = "drop_caches",
};

static const char *const result_names[] = {
	[RECLAIM_RESULT_NONE] = "none",
	[RECLAIM_STARTED] = "started",
	[RECLAIM_OK] = "ok",
	[RECLAIM_PARTIAL] = "partial",
	[RECLAIM_FAILED] = "failed",
	[RECLAIM_DRY_RUN] = "dry_run",
};

const char *reclaim_method_name(enum reclaim_method m)
{
	return (unsigned)m < ARRAY_SIZE(method_names) ? method_names[m] : "none";
}

const char *reclaim_result_name(enum reclaim_result r)
{
	return (unsigned)r < ARRAY_SIZE(result_names) ? result_names[r] : "none";
}

void reclaim_observe(struct reclaim_state *s, int status, uint64_t now_ms, uint64_t for_ms)
{
	switch (status) {
	case NPD_PROBLEM:
		/* a sighting older than `for` (or from the future: the clock was set back) means
		 * nobody watched in between: the leak may have gone and come back */
		if (!s->since_ms || s->seen_ms > now_ms || now_ms - s->seen_ms > for_ms)
			s->since_ms = now_ms;
		s->seen_ms = now_ms;
		break;
	case NPD_OK:
		s->since_ms = 0;
		s->seen_ms = 0;
		break;
	default:
		break;	/* Unknown: no sighting, no recovery */
	}
}

static void dur(uint64_t ms, char *buf, size_t size)
{
	if (ms >= 3600000 && ms % 3600000 == 0)
		snprintf(buf, size, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms >= 60000)
		snprintf(buf, size, "%llum", (unsigned long long)(ms / 60000));
	else
		snprintf(buf, size, "%llus", (unsigned long long)(ms / 1000));
}

void reclaim_plan(const struct reclaim_input *in, const struct reclaim_state *s,
		  struct reclaim_plan *ret)
{
	const struct cz_config *cfg = in->cfg;
	char a[24], b[24];

	*ret = (struct reclaim_plan){ .verdict = RECLAIM_IDLE };
	if (cfg->remediation.reclaim == CZ_RECLAIM_OFF) {
		snprintf(ret->why, sizeof(ret->why), "remediation.reclaim is off");
		return;
	}
	if (in->status != NPD_PROBLEM || !s->since_ms) {
		snprintf(ret->why, sizeof(ret->why), "MemcgZombieLeak is not True");
		return;
	}
	if (in->now_ms < s->since_ms + cfg->remediation.for_ms) {
		ret->verdict = RECLAIM_WAIT;
		dur(in->now_ms - s->since_ms, a, sizeof(a));
		dur(cfg->remediation.for_ms, b, sizeof(b));
		snprintf(ret->why, sizeof(ret->why), "MemcgZombieLeak True for %s of %s", a, b);
		return;
	}
	/* a last reclaim in the future means the clock was set back: wait a whole interval */
	if (s->last_ms && (s->last_ms > in->now_ms ||
			   in->now_ms - s->last_ms < cfg->remediation.reclaim_interval_ms)) {
		ret->verdict = RECLAIM_RATE_LIMITED;
		dur(s->last_ms > in->now_ms ? 0 : in->now_ms - s->last_ms, a, sizeof(a));
		dur(cfg->remediation.reclaim_interval_ms, b, sizeof(b));
		snprintf(ret->why, sizeof(ret->why), "last reclaim %s ago, at most one per %s", a,
			 b);
		return;
	}
	ret->verdict = cfg->remediation.mode == CZ_REMEDIATE_DRY_RUN ? RECLAIM_WOULD : RECLAIM_GO;
	if (cfg->remediation.reclaim == CZ_RECLAIM_MEMORY_RECLAIM && in->has_memory_reclaim) {
		ret->method = RECLAIM_MEMORY_RECLAIM;
		snprintf(ret->why, sizeof(ret->why), "cgroup v2 proactive reclaim");
	} else {
		ret->method = RECLAIM_DROP_CACHES;
		if (cfg->remediation.reclaim == CZ_RECLAIM_DROP_CACHES)
			snprintf(ret->why, sizeof(ret->why), "as configured");
		else
			snprintf(
				ret->why, sizeof(ret->why), "%s",
				!in->v2 ? "memory.reclaim needs the memory controller on cgroup "
					  "v2: "
					  "vm.drop_caches=1 instead"
					: "this kernel has no memory.reclaim (5.19+): "
					  "vm.drop_caches=1 instead");
	}
}

/* @in as printable ASCII without spaces, '?' for anything else (the state is "key value"). */
static void plain(const char *in, char *out, size_t size)
{
	size_t i = 0;

	for (; in && in[i] && i + 1 < size; i++)
		out[i] = in[i] > ' ' && in[i] < 0x7f ? in[i] : '?';
	out[i] = '\0';
}

void reclaim_begin(struct reclaim_state *s, enum reclaim_method method, const char *target,
		   bool dry_run, uint64_t now_ms, uint64_t before)
{
	plain(method == RECLAIM_MEMORY_RECLAIM ? target : NULL, s->target, sizeof(s->target));
	s->last_ms = now_ms;
	s->method = method;
	s->result = dry_run ? RECLAIM_DRY_RUN : RECLAIM_STARTED;
	s->before = before;
	s->after = before;
	s->took_ms = 0;
	s->err = 0;
	if (dry_run)
		s->runs[RECLAIM_DRY_RUN]++;
}

void reclaim_end(struct reclaim_state *s, int err, uint64_t after, uint64_t took_ms)
{
	s->result = err == 0 ? RECLAIM_OK : err == -EAGAIN ? RECLAIM_PARTIAL : RECLAIM_FAILED;
	s->err = s->result == RECLAIM_FAILED ? -err : 0;
	s->after = after;
	s->took_ms = took_ms;
	s->runs[s->result]++;
	if (s->result != RECLAIM_FAILED && after < s->before)
		s->freed += s->before - after;
}

/* The number after "@key" and blanks at the start of a line of @text, times @unit. */
static bool stat_value(const char *text, const char *key, uint64_t unit, uint64_t *ret)
{
	const char *pos = text, *line;
	size_t n, k = strlen(key);

	while (text && next_line(&pos, &line, &n)) {
		size_t i = k, j;
		uint64_t v;

		if (n <= k || strncmp(line, key, k) != 0 || (line[k] != ' ' && line[k] != '\t'))
			continue;
		while (i < n && (line[i] == ' ' || line[i] == '\t'))
			i++;
		for (j = i; j < n && line[j] >= '0' && line[j] <= '9'; j++)
			;
		if (j == i || parse_u64_n(line + i, j - i, &v) < 0 || v > UINT64_MAX / unit)
			return false;
		*ret = v * unit;
		return true;
	}
	return false;
}

int reclaim_amount(const char *memory_stat, const char *meminfo, uint64_t *ret)
{
	uint64_t v;

	if (!stat_value(memory_stat, "inactive_file", 1, &v) &&
	    !stat_value(meminfo, "Inactive(file):", 1024, &v))
		return -EINVAL;
	*ret = v < (1u << 20) ? 1u << 20 : v;
	return 0;
}

uint64_t reclaim_active_allowance(const char *memory_stat, uint64_t dying)
{
	uint64_t v, cap = dying > UINT64_MAX / RECLAIM_ACTIVE_PER_MEMCG
			      ? UINT64_MAX : dying * RECLAIM_ACTIVE_PER_MEMCG;

	if (!stat_value(memory_stat, "active_file", 1, &v))
		return 0;
	/* whole 4 KiB pages: the kernel reclaims pages and reads the ask in pages */
	return (v < cap ? v : cap) & ~(uint64_t)4095;
}

static const char *what(enum reclaim_method m)
{
	return m == RECLAIM_MEMORY_RECLAIM ? "memory.reclaim" : "vm.drop_caches=1";
}

char *reclaim_message(const struct reclaim_state *s, char *buf, size_t size)
{
	char on[RECLAIM_TARGET_MAX + 8] = "";

	if (s->method == RECLAIM_MEMORY_RECLAIM)
		snprintf(on, sizeof(on), " of %s", s->target[0] ? s->target : "/");
	switch (s->result) {
	case RECLAIM_DRY_RUN:
		snprintf(buf, size, "dry-run: would reclaim with %s%s: %llu dying memcgs",
			 what(s->method), on, (unsigned long long)s->before);
		break;
	case RECLAIM_FAILED:
		snprintf(buf, size, "reclaim with %s%s refused: %s (%s)", what(s->method), on,
			 strerror(s->err), s->method == RECLAIM_MEMORY_RECLAIM
			 ? "the agent needs root and the host's /sys/fs/cgroup writable"
			 : "the agent needs root and the host's /proc/sys/vm writable");
		break;
	case RECLAIM_STARTED:
		snprintf(buf, size, "reclaim with %s%s started with %llu dying memcgs",
			 what(s->method), on, (unsigned long long)s->before);
		break;
	default:
		snprintf(buf, size, "%s%s freed %llu of %llu dying memcgs (%llu left) in %.1f s%s",
			 what(s->method), on,
			 (unsigned long long)(s->after < s->before ? s->before - s->after : 0),
			 (unsigned long long)s->before, (unsigned long long)s->after,
			 (double)s->took_ms / 1000.0,
			 s->result == RECLAIM_PARTIAL ? " (the kernel reclaimed less than asked)"
						      : "");
		break;
	}
	return buf;
}

/* ---- the state file ---- */

/* The state's number lines, by key. */
static const struct {
	const char *key;
	size_t off;
} u64_keys[] = {
	{ "since", offsetof(struct reclaim_state, since_ms) },
	{ "seen", offsetof(struct reclaim_state, seen_ms) },
	{ "last", offsetof(struct reclaim_state, last_ms) },
	{ "before", offsetof(struct reclaim_state, before) },
	{ "after", offsetof(struct reclaim_state, after) },
	{ "took_ms", offsetof(struct reclaim_state, took_ms) },
	{ "freed", offsetof(struct reclaim_state, freed) },
};

/* "@key <u64>" for one of u64_keys into @s: true when @line was one (and a valid number). */
static bool parse_u64_line(const char *line, size_t n, struct reclaim_state *s)
{
	const char *v;
	size_t vl;

	for (size_t i = 0; i < ARRAY_SIZE(u64_keys); i++)
		if (line_kv(line, n, u64_keys[i].key, &v, &vl))
			return parse_u64_n(v, vl, (uint64_t *)((char *)s + u64_keys[i].off)) == 0;
	return false;
}

int reclaim_state_parse(const char *payload, size_t len, struct reclaim_state *obj)
{
	struct reclaim_state s = { 0 };
	const char *pos = payload, *line, *v;
	size_t n, vl;
	uint64_t u;
	int i;

	(void)len;
	while (next_line(&pos, &line, &n)) {
		if (parse_u64_line(line, n, &s))
			continue;
		if (line_kv(line, n, "target", &v, &vl) && vl < sizeof(s.target)) {
			char t[RECLAIM_TARGET_MAX];

			memcpy(t, v, vl);
			t[vl] = '\0';
			plain(streq(t, "-") ? NULL : t, s.target, sizeof(s.target));
			continue;
		}
		if (line_kv(line, n, "err", &v, &vl) && parse_u64_n(v, vl, &u) == 0 && u < 4096) {
			s.err = (int)u;
			continue;
		}
		if (line_kv(line, n, "method", &v, &vl) &&
		    (i = name_index(method_names, ARRAY_SIZE(method_names), v, vl)) >= 0) {
			s.method = (enum reclaim_method)i;
			continue;
		}
		if (line_kv(line, n, "result", &v, &vl) &&
		    (i = name_index(result_names, ARRAY_SIZE(result_names), v, vl)) >= 0) {
			s.result = (enum reclaim_result)i;
			continue;
		}
		if (n > 5 && strncmp(line, "runs ", 5) == 0) {	/* "runs <result> <n>" */
			const char *sp = memchr(line + 5, ' ', n - 5);

			i = sp ? name_index(result_names, ARRAY_SIZE(result_names), line + 5,
					(size_t)(sp - line - 5)) : -1;
			if (i >= 0 && parse_u64_n(sp + 1, n - (size_t)(sp + 1 - line), &u) == 0) {
				s.runs[i] = u;
				continue;
			}
		}
		if (n > 0)
			return -EINVAL;
	}
	*(struct reclaim_state *)obj = s;
	return 0;
}

ssize_t reclaim_state_format(const struct reclaim_state *obj, char **ret)
{
	const struct reclaim_state *s = obj;
	char *buf = malloc(RECLAIM_STATE_MAX);
	size_t o;
	int k;

	if (!buf)
		return -ENOMEM;
	k = snprintf(buf, RECLAIM_STATE_MAX,
		     "since %llu\nseen %llu\nlast %llu\nmethod %s\nresult %s\nbefore %llu\n"
		     "after %llu\ntook_ms %llu\nerr %d\nfreed %llu\ntarget %s\n",
		     (unsigned long long)s->since_ms, (unsigned long long)s->seen_ms,
		     (unsigned long long)s->last_ms, reclaim_method_name(s->method),
		     reclaim_result_name(s->result), (unsigned long long)s->before,
		     (unsigned long long)s->after, (unsigned long long)s->took_ms, s->err,
		     (unsigned long long)s->freed, s->target[0] ? s->target : "-");
	o = k > 0 ? (size_t)k : 0;
	for (size_t i = 1; i < RECLAIM_RESULT_COUNT && o < RECLAIM_STATE_MAX; i++) {
		k = snprintf(buf + o, RECLAIM_STATE_MAX - o, "runs %s %llu\n", result_names[i],
			     (unsigned long long)s->runs[i]);
		o += k > 0 ? (size_t)k : 0;
	}
	if (o >= RECLAIM_STATE_MAX) {
		free(buf);
		return -ENOSPC;
	}
	*ret = buf;
	return (ssize_t)o;
}

/* Not durable: after a power loss the node rebooted, and its dying memcgs went with it. Still
 * replaced atomically, so a crash-looping agent always finds when it last reclaimed. */
const struct state_type reclaim_state_type = {
	.name = STATE_RECLAIM,
	.max = RECLAIM_STATE_MAX,
	.durable = false,
};

STATE_CODEC(, reclaim_state, struct reclaim_state, reclaim_state_parse, reclaim_state_format);
