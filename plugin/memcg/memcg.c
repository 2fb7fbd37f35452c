/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>

#include "check/condmsg.h"
#include "memcg/memcg.h"
#include "base/state.h"
#include "base/util.h"

#define MAX_FIELDS 16
#define FIELD_MAX 256

/* Split one line into at most MAX_FIELDS white-space separated fields (copied, NUL-ended). */
static int split(const char *line, size_t len, char f[MAX_FIELDS][FIELD_MAX])
{
	int n = 0;
	size_t i = 0;

	while (i < len) {
		size_t start, w;

		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i >= len)
			break;
		start = i;
		while (i < len && line[i] != ' ' && line[i] != '\t')
			i++;
		w = i - start;
		if (n >= MAX_FIELDS || w >= FIELD_MAX)
			return -E2BIG;
		memcpy(f[n], line + start, w);
		f[n][w] = '\0';
		n++;
	}
	return n;
}

/* A count of cgroups: the kernel keeps them in an int (struct cgroup_subsys's root count,
 * cgroup->nr_descendants, ->nr_dying_descendants, ->nr_dying_subsys[]), so a larger number is
 * a damaged or forged file, never a count: -ERANGE (as memcg_history_growth() refuses them). */
static int parse_count(const char *s, uint64_t *ret)
{
	uint64_t v;
	int r = parse_u64(s, &v);

	if (r < 0)
		return r;
	if (v > INT32_MAX)
		return -ERANGE;
	*ret = v;
	return 0;
}

int memcg_parse_proc_cgroups(const char *text, struct memcg_controller *ret)
{
	char f[MAX_FIELDS][FIELD_MAX];
	int col_h = -1, col_n = -1, col_e = -1, ncol = 0;
	const char *pos = text, *line;
	size_t len;
	bool header = false;

	while (next_line(&pos, &line, &len)) {
		int n = split(line, len, f);
		struct memcg_controller c;
		uint64_t en;
		int r;

		if (n == 0)
			continue;
		if (n < 0)
			return -EINVAL;
		if (!header) {
			/* "#subsys_name	hierarchy	num_cgroups	enabled" */
			if (!streq(f[0], "#subsys_name"))
				return -EINVAL;
			for (int i = 1; i < n; i++) {
				col_h = streq(f[i], "hierarchy") ? i : col_h;
				col_n = streq(f[i], "num_cgroups") ? i : col_n;
				col_e = streq(f[i], "enabled") ? i : col_e;
			}
			if (col_h < 0 || col_n < 0 || col_e < 0)
				return -EINVAL;
			ncol = n;
			header = true;
			continue;
		}
		if (!streq(f[0], "memory"))
			continue;
		if (n < ncol)
			return -EINVAL; /* truncated row */
		r = parse_u64(f[col_h], &c.hierarchy);
		if (r == 0)
			r = parse_count(f[col_n], &c.num_cgroups);
		if (r == 0)
			r = parse_u64(f[col_e], &en);
		if (r < 0)
			return r;
		if (en > 1)
			return -EINVAL;
		c.enabled = en == 1;
		*ret = c;
		return 0;
	}
	return header ? -ENODATA : -EINVAL;
}

int memcg_parse_cgroup_stat(const char *text, struct memcg_cgstat *ret)
{
	struct memcg_cgstat c = { 0 };
	bool has_d = false, has_dd = false, has_s = false, has_ds = false;
	char f[MAX_FIELDS][FIELD_MAX];
	const char *pos = text, *line;
	size_t len;

	while (next_line(&pos, &line, &len)) {
		uint64_t *dst = NULL;
		bool *seen = NULL;
		int n = split(line, len, f), r;

		if (n == 0 || n == -E2BIG)
			continue; /* blank, or a future key we do not know with a long value */
		if (n != 2)
			return -EINVAL;
		if (streq(f[0], "nr_descendants"))
			dst = &c.nr_descendants, seen = &has_d;
		else if (streq(f[0], "nr_dying_descendants"))
			dst = &c.nr_dying_descendants, seen = &has_dd;
		else if (streq(f[0], "nr_subsys_memory"))
			dst = &c.nr_subsys_memory, seen = &has_s;
		else if (streq(f[0], "nr_dying_subsys_memory"))
			dst = &c.nr_dying_subsys_memory, seen = &has_ds;
		else
			continue;
		if (*seen)
			return -EINVAL; /* a key twice: not a file the kernel wrote */
		r = parse_count(f[1], dst);
		if (r < 0)
			return r;
		*seen = true;
	}
	if (!has_d || !has_dd)
		return -EINVAL;
	c.has_subsys_memory = has_s && has_ds;
	*ret = c;
	return 0;
}

int memcg_parse_meminfo_percpu(const char *text, uint64_t *ret_bytes)
{
	char f[MAX_FIELDS][FIELD_MAX];
	const char *pos = text, *line;
	size_t len;

	while (next_line(&pos, &line, &len)) {
		uint64_t kb;
		int n;

		if (len < 7 || memcmp(line, "Percpu:", 7) != 0)
			continue;
		n = split(line, len, f);
		if (n != 3 || !streq(f[2], "kB") || parse_u64(f[1], &kb) < 0)
			return -EINVAL;
		if (kb > UINT64_MAX / 1024)
			return -ERANGE;
		*ret_bytes = kb * 1024;
		return 0;
	}
	return -ENODATA;
}

int memcg_parse_osrelease(const char *text, unsigned *ret_major, unsigned *ret_minor)
{
	uint64_t v[2];
	const char *p = text;

	for (int i = 0; i < 2; i++) {
		const char *s = p;

		while (*p >= '0' && *p <= '9')
			p++;
		if (p == s || p - s > 6 || parse_u64_n(s, (size_t)(p - s), &v[i]) < 0)
			return -EINVAL;
		if (i == 0) {
			if (*p != '.')
				return -EINVAL;
			p++;
		}
	}
	*ret_major = (unsigned)v[0];
	*ret_minor = (unsigned)v[1];
	return 0;
}

/* Decode mountinfo's octal escapes ("\040" for a space) into @buf. */
static int unescape(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; *s; s++) {
		char c = *s;

		if (c == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			c = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		}
		if (n + 1 >= size)
			return -ENAMETOOLONG;
		buf[n++] = c;
	}
	buf[n] = '\0';
	return 0;
}

static bool has_option(const char *opts, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = opts; p && *p;) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);

		if (l == nl && memcmp(p, name, nl) == 0)
			return true;
		p = c ? c + 1 : NULL;
	}
	return false;
}

int memcg_find_mount(const char *mountinfo, bool v2, char *buf, size_t size)
{
	char f[MAX_FIELDS][FIELD_MAX], mp[FIELD_MAX];
	const char *pos = mountinfo, *line;
	size_t len;

	while (next_line(&pos, &line, &len)) {
		int n = split(line, len, f), dash = -1;
		const char *rel;

		if (n < 0)
			continue; /* a long line (e.g. overlay options) is never a cgroup mount */
		for (int i = 6; i < n; i++)
			if (streq(f[i], "-")) {
				dash = i;
				break;
			}
		if (dash < 0 || dash + 3 >= n)
			continue;
		if (v2 ? !streq(f[dash + 1], "cgroup2")
		       : !(streq(f[dash + 1], "cgroup") && has_option(f[dash + 3], "memory")))
			continue;
		if (!streq(f[3], "/"))
			continue; /* a bind mount of a sub-cgroup, not the hierarchy's root */
		if (unescape(f[4], mp, sizeof(mp)) < 0)
			return -ENAMETOOLONG;
		rel = startswith(mp, "/sys/");
		if (!rel)
			return -EXDEV;
		if (strlen(rel) + 1 > size)
			return -ENAMETOOLONG;
		memcpy(buf, rel, strlen(rel) + 1);
		return 0;
	}
	return -ENOENT;
}

bool memcg_exposed(const struct memcg_reading *r)
{
	return r->source == MEMCG_V1 && r->has_kernel &&
	       (r->kernel_major < 5 || (r->kernel_major == 5 && r->kernel_minor < 8));
}

static const char *source_note(enum memcg_source s)
{
	switch (s) {
	case MEMCG_V1:
		return "v1";
	case MEMCG_V2_SUBSYS:
		return "v2";
	default:
		return "v2 nr_dying_descendants, all controllers";
	}
}

double memcg_ratio(const struct memcg_reading *r)
{
	return (double)r->dying / (double)(r->live ? r->live : 1);
}

int memcg_verdict(const struct memcg_reading *r, const struct cz_config *cfg,
		  struct npd_result *res)
{
	double ratio = memcg_ratio(r);
	bool many = r->dying >= cfg->memcg.min_dying;
	bool high = ratio >= cfg->memcg.max_ratio;
	enum npd_status st = many && high ? NPD_PROBLEM : NPD_OK;
	char pb[32];

	/* Most important first: counts and ratio against the limits, then what explains them.
	 * The numbers go through condmsg.h, whose parser `cpuzombie fleet` reads them back with. */
	condmsg_memcg_head(res, st, r->dying, r->live, ratio, cfg);
	if (r->has_growth)
		condmsg_memcg_growth(res, r->growth_per_hour);
	if (st == NPD_PROBLEM && r->census[0])
		npd_append(res, "%s", r->census);
	if (st == NPD_PROBLEM && r->hint[0])
		npd_append(res, "%s", r->hint);
	if (st == NPD_PROBLEM && r->where[0])
		npd_append(res, "%s", r->where);
	if (r->has_percpu)
		npd_append(res, "Percpu %s", format_bytes(r->percpu_bytes, pb, sizeof(pb)));
	if (memcg_exposed(r))
		npd_append(res, "kernel %u.%u < 5.8: each numa_stat read walks them",
			   r->kernel_major, r->kernel_minor);
	if (r->source != MEMCG_V1)
		npd_append(res, "%s", source_note(r->source));
	return st;
}

int memcg_history_parse(const char *text, struct memcg_history *ret)
{
	struct memcg_history h = { 0 };
	char f[MAX_FIELDS][FIELD_MAX];
	const char *pos = text, *line;
	size_t len;

	while (next_line(&pos, &line, &len)) {
		int n = split(line, len, f);

		if (n == 0)
			continue;
		if (n != 3 || !streq(f[0], "s") || h.n >= MEMCG_HISTORY_MAX)
			return -EINVAL;
		if (parse_u64(f[1], &h.s[h.n].t_ms) < 0 || parse_u64(f[2], &h.s[h.n].dying) < 0)
			return -EINVAL;
		if (h.n > 0 && h.s[h.n].t_ms < h.s[h.n - 1].t_ms)
			return -EINVAL; /* we only ever write them in order */
		h.n++;
	}
	*ret = h;
	return 0;
}

bool memcg_history_add(struct memcg_history *h, uint64_t now_ms, uint64_t dying)
{
	bool changed = false;

	/* The wall clock can step back (NTP, a VM restored): forget samples "from the future". */
	while (h->n > 0 && h->s[h->n - 1].t_ms > now_ms) {
		h->n--;
		changed = true;
	}
	if (h->n > 0 && now_ms - h->s[h->n - 1].t_ms < MEMCG_HISTORY_SPACING_MS)
		return changed;
	if (h->n == MEMCG_HISTORY_MAX) {
		memmove(&h->s[0], &h->s[1], (MEMCG_HISTORY_MAX - 1) * sizeof(h->s[0]));
		h->n--;
	}
	h->s[h->n].t_ms = now_ms;
	h->s[h->n].dying = dying;
	h->n++;
	return true;
}

bool memcg_history_growth(const struct memcg_history *h, uint64_t now_ms, uint64_t dying,
			  double *ret)
{
	const uint64_t window = 6 * 3600 * 1000ull, min_age = 10 * 60 * 1000ull;

	/* the kernel counts cgroups in an int: a larger stored count is damage, not history (2^64-1
	 * printed as -18445780794045861888/h) */
	if (dying > INT32_MAX)
		return false;
	for (size_t i = 0; i < h->n; i++) {
		uint64_t t = h->s[i].t_ms;

		if (t > now_ms || now_ms - t > window || h->s[i].dying > INT32_MAX)
			continue;
		if (now_ms - t < min_age)
			return false;
		*ret = ((double)dying - (double)h->s[i].dying) * 3600000.0 / (double)(now_ms - t);
		return true;
	}
	return false;
}

size_t memcg_history_format(const struct memcg_history *h, char *buf, size_t size)
{
	size_t off = 0;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < h->n; i++) {
		int w = snprintf(buf + off, size - off, "s %" PRIu64 " %" PRIu64 "\n", h->s[i].t_ms,
				 h->s[i].dying);

		if (w < 0 || (size_t)w >= size - off)
			break;
		off += (size_t)w;
	}
	return off;
}

/* ---- the state file ---- */

#define HISTORY_PAYLOAD_MAX (MEMCG_HISTORY_MAX * 48 + 64)

const struct state_type memcg_history_state = { STATE_MEMCG, HISTORY_PAYLOAD_MAX, true };

STATE_CODEC_BOUNDED(, memcg_history_state, struct memcg_history, HISTORY_PAYLOAD_MAX,
		    memcg_history_parse, memcg_history_format);
