/* SPDX-License-Identifier: MIT */
/* Condition message formats and their parsers, side by side: see condmsg.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "check/condmsg.h"
#include "base/util.h"

/* ---- writers -------------------------------------------------------------------------------- */

void condmsg_memcg_head(struct npd_result *res, enum npd_status st, uint64_t dying, uint64_t live,
			double ratio, const struct cz_config *cfg)
{
	char rb[32];

	format_ratio(ratio, rb, sizeof(rb)); /* the shared spelling: check line, report, SVG */
	if (st == NPD_PROBLEM)
		npd_set(res, st, "%" PRIu64 " dying memcgs vs %" PRIu64 " live (%s >= x%g)", dying,
			live, rb, cfg->memcg.max_ratio);
	else
		npd_set(res, st,
			"%" PRIu64 " dying memcgs vs %" PRIu64 " live (%s; limits %" PRIu64
			" dying and x%g)",
			dying, live, rb, cfg->memcg.min_dying, cfg->memcg.max_ratio);
}

void condmsg_memcg_growth(struct npd_result *res, double per_hour)
{
	npd_append(res, "%+.0f/h", per_hour);
}

#define RESTARTS_PREFIX "top restarts: "

size_t condmsg_restarts_hint(const struct systemd_restarts *r, char *buf, size_t size)
{
	size_t off = 0;

	if (size == 0)
		return 0;
	buf[0] = '\0';
	for (size_t i = 0; i < r->n; i++) {
		char one[SYSTEMD_UNIT_MAX + 64], g[40] = "";
		int k;

		if (r->u[i].has_growth && r->u[i].per_hour >= 0.5)
			snprintf(g, sizeof(g), " (+%.0f/h)", r->u[i].per_hour);
		k = snprintf(one, sizeof(one), "%s%s=%llu%s", i ? ", " : RESTARTS_PREFIX,
			     r->u[i].name, (unsigned long long)r->u[i].restarts, g);
		if (k < 0)
			break;
		if (off + (size_t)k >= size) {
			if (i == 0) { /* the first unit is the point: cut it rather than drop it */
				snprintf(buf, size, "%s", one);
				off = strlen(buf);
			}
			break;
		}
		memcpy(buf + off, one, (size_t)k + 1);
		off += (size_t)k;
	}
	return off;
}

void condmsg_cpu_head(struct npd_result *res, unsigned cpu, double peak_pct, const char *metric,
		      uint64_t len_ms, size_t count, const char *window)
{
	npd_set(res, NPD_PROBLEM, "cpu%u %.0f%% %s %.1fs x%zu/%s", cpu, peak_pct, metric,
		(double)len_ms / 1000.0, count, window);
}

void condmsg_cpu_serves(struct npd_result *res, const char *irq, bool more)
{
	npd_append(res, "serves %s%s", irq, more ? " +more" : "");
}

void condmsg_cpu_top(struct npd_result *res, const char *comm, uint64_t stime_ms, const char *hot,
		     unsigned hot_pct)
{
	if (hot && hot[0])
		npd_append(res, "top %s %.1fs in %s %u%%", comm, (double)stime_ms / 1000.0, hot,
			   hot_pct);
	else
		npd_append(res, "top %s %.1fs", comm, (double)stime_ms / 1000.0);
}

void condmsg_ena_resets(struct npd_result *res, const char *ifname, uint64_t resets,
			const char *window, const char *cause)
{
	npd_append(res, "%s %" PRIu64 " reset%s/%s%s%s", ifname, resets, resets == 1 ? "" : "s",
		   window, cause[0] ? ": " : "", cause);
}

/* ---- scanning ------------------------------------------------------------------------------- */

static bool lit(const char **p, const char *s)
{
	size_t n = strlen(s);

	if (strncmp(*p, s, n) != 0)
		return false;
	*p += n;
	return true;
}

/* Decimal digits (at most 19, so no overflow) into *@ret; advances. */
static bool scan_u64(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9' && n < 19)
		v = v * 10 + (uint64_t)(s[n++] - '0');
	if (n == 0 || (s[n] >= '0' && s[n] <= '9'))
		return false;
	*p = s + n;
	*ret = v;
	return true;
}

/* "12" or "12.5" (printf %.Nf output) into *@ret; advances. */
static bool scan_dec(const char **p, double *ret)
{
	const char *s = *p;
	uint64_t ip, fp = 0;
	double scale = 1;

	if (!scan_u64(&s, &ip))
		return false;
	if (*s == '.') {
		const char *f = ++s;

		if (!scan_u64(&s, &fp) || s - f > 9)
			return false;
		for (const char *q = f; q < s; q++)
			scale *= 10;
	}
	*p = s;
	*ret = (double)ip + (double)fp / scale;
	return true;
}

static bool name_char(char c, bool spaces)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("_.:@/+-\\", c) != NULL || (spaces && c == ' ');
}

/*
 * Copy the name at *@p, up to (not including) the first byte for which @stop is true or which is
 * not a name character, into @buf; advances. Fails on an empty or too long name.
 */
static bool scan_name(const char **p, const char *stops, bool spaces, char *buf, size_t size)
{
	const char *s = *p;
	size_t n = 0;

	while (s[n] && !strchr(stops, s[n]) && name_char(s[n], spaces))
		n++;
	if (n == 0 || n >= size)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*p = s + n;
	return true;
}

/* The start of the next "; "-separated segment after @p, or NULL. */
static const char *next_segment(const char *p)
{
	const char *q = strstr(p, "; ");

	return q ? q + 2 : NULL;
}

/* Does the field that ended at @p end properly: at one of @stops, or at the end if not cut? */
static bool ends(const char *p, const char *stops, bool cut)
{
	return *p ? strchr(stops, *p) != NULL : !cut;
}

/* ---- memcg ---------------------------------------------------------------------------------- */

static void memcg_leaker(const char *p, bool cut, struct condmsg_memcg *m)
{
	char name[CONDMSG_NAME_MAX];
	uint64_t n;

	if (!lit(&p, RESTARTS_PREFIX) || !scan_name(&p, "=", false, name, sizeof(name)) ||
	    !lit(&p, "=") || !scan_u64(&p, &n) || !ends(p, " ,;", cut))
		return;
	memcpy(m->leaker, name, sizeof(name));
	m->leaker_restarts = n;
	m->has_leaker = true;
}

#define CENSUS_WERE " were "

size_t condmsg_census_hint(uint64_t count, const char *key, uint64_t bytes, char *buf,
			   size_t size)
{
	char b[32], head[32];
	int h, t, k;

	if (size == 0)
		return 0;
	format_bytes(bytes, b, sizeof(b));
	h = snprintf(head, sizeof(head), "%llu" CENSUS_WERE, (unsigned long long)count);
	t = (int)strlen(", ") + (int)strlen(b) + (int)strlen(" pinned");
	k = (int)strlen(key);
	if (h + k + t >= (int)size) /* cut the key, never the numbers */
		k = (int)size - 1 - h - t - 3 > 0 ? (int)size - 1 - h - t - 3 : 0;
	h = snprintf(buf, size, "%s%.*s%s, %s pinned", head, k, key,
		     k < (int)strlen(key) ? "..." : "", b);
	return h < 0 ? 0 : (size_t)h < size ? (size_t)h : size - 1;
}

/* "<N> were <key>, " (the key: printable, no space, no "..."): the census's top group. */
static void memcg_group(const char *p, bool cut, struct condmsg_memcg *m)
{
	const char *end;
	uint64_t n;

	if (!scan_u64(&p, &n) || !lit(&p, CENSUS_WERE))
		return;
	end = strstr(p, ", ");
	if (!end || end == p || (size_t)(end - p) >= sizeof(m->group))
		return;
	for (const char *q = p; q < end; q++)
		if (*q <= ' ' || *q >= 0x7f || *q == ';')
			return;
	if (end - p >= 3 && !memcmp(end - 3, "...", 3))
		return;	/* cut to fit: not the key */
	memcpy(m->group, p, (size_t)(end - p));
	m->group[end - p] = '\0';
	m->group_count = n;
	m->has_group = true;
	(void)cut;	/* the key ends at ", ": a message cut inside it has none */
}

int condmsg_memcg_parse(const char *msg, bool cut, struct condmsg_memcg *ret)
{
	const char *p = msg;
	struct condmsg_memcg m = { 0 };

	memset(ret, 0, sizeof(*ret));
	if (!scan_u64(&p, &m.dying) || !lit(&p, " dying memcgs vs "))
		return -EINVAL;
	if (!scan_u64(&p, &m.live) || !lit(&p, " live ("))
		return -EINVAL;
	m.has_counts = true;
	m.has_ratio = lit(&p, "x") && scan_dec(&p, &m.ratio) && (*p == ' ' || *p == ';');
	if (!m.has_ratio)
		m.ratio = 0;
	for (const char *s = next_segment(p); s; s = next_segment(s)) {
		const char *q = s;
		double g;
		bool neg = *q == '-';

		if (!m.has_growth && (*q == '+' || *q == '-') && (q++, scan_dec(&q, &g)) &&
		    lit(&q, "/h")) {
			m.growth_per_hour = neg ? -g : g;
			m.has_growth = true;
		} else if (!m.has_leaker && startswith(s, RESTARTS_PREFIX)) {
			memcg_leaker(s, cut, &m);
		} else if (!m.has_group && *s >= '0' && *s <= '9') {
			memcg_group(s, cut, &m);
		}
	}
	*ret = m;
	return 0;
}

/* ---- cpu ------------------------------------------------------------------------------------ */

/*
 * " in <function> <pct>%" at the end of a top segment (s..*end): the profile's hot function.
 * Kernel symbols hold no space, so it is read from the end; *end is moved before it.
 */
static void cpu_hot(const char *s, const char **end, struct condmsg_cpu *c)
{
	const char *e = *end, *sp1, *sp2, *q;
	uint64_t pct;

	if (e - s < 8 || e[-1] != '%')
		return;
	for (sp1 = e - 1; sp1 > s && *sp1 != ' '; sp1--)
		;
	for (sp2 = sp1 - 1; sp2 > s && *sp2 != ' '; sp2--)
		;
	q = sp1 + 1;
	if (sp2 - s < 3 || memcmp(sp2 - 3, " in", 3) != 0 || !scan_u64(&q, &pct) || q != e - 1 ||
	    pct > 100 || sp1 - sp2 - 1 <= 0 || (size_t)(sp1 - sp2 - 1) >= sizeof(c->hot))
		return;
	memcpy(c->hot, sp2 + 1, (size_t)(sp1 - sp2 - 1));
	c->hot[sp1 - sp2 - 1] = '\0';
	c->hot_pct = (unsigned)pct;
	c->has_hot = true;
	*end = sp2 - 3;
}

static void cpu_top(const char *s, struct condmsg_cpu *c)
{
	const char *end = strstr(s, "; "), *sp, *q;
	size_t len;
	double secs;

	if (!end)
		end = s + strlen(s);
	cpu_hot(s, &end, c);
	/* the comm may hold spaces: the time is after the last one */
	for (sp = end; sp > s && sp[-1] != ' '; sp--)
		;
	if (sp <= s + 1)
		return;
	q = sp;
	if (!scan_dec(&q, &secs) || !lit(&q, "s") || q != end)
		return;
	len = (size_t)(sp - 1 - s);
	if (len == 0 || len >= sizeof(c->top))
		return;
	for (size_t i = 0; i < len; i++) /* a comm is any text: printable ASCII but our separator */
		if (s[i] < 0x20 || s[i] > 0x7e || s[i] == ';')
			return;
	memcpy(c->top, s, len);
	c->top[len] = '\0';
	c->top_ms = (uint64_t)llround(secs * 1000.0);
	c->has_top = true;
}

int condmsg_cpu_parse(const char *msg, bool cut, struct condmsg_cpu *ret)
{
	const char *p = msg;
	struct condmsg_cpu c = { 0 };
	uint64_t cpu;
	double len;
	char metric[16];

	memset(ret, 0, sizeof(*ret));
	if (!lit(&p, "cpu") || !scan_u64(&p, &cpu) || cpu > UINT32_MAX || !lit(&p, " ") ||
	    !scan_dec(&p, &c.peak_pct) || !lit(&p, "% ") ||
	    !scan_name(&p, " ", false, metric, sizeof(metric)) || !lit(&p, " ") ||
	    !scan_dec(&p, &len) || !lit(&p, "s x") || !scan_u64(&p, &c.count) || !lit(&p, "/"))
		return -EINVAL;
	c.cpu = (unsigned)cpu;
	c.len_ms = (uint64_t)llround(len * 1000.0);
	c.has_burst = true;
	for (const char *s = next_segment(p); s; s = next_segment(s)) {
		const char *q = s;

		if (!c.has_irq && lit(&q, "serves ") &&
		    scan_name(&q, " ;", false, c.irq, sizeof(c.irq)) && ends(q, " ;", cut))
			c.has_irq = true;
		else if (!c.has_top && lit(&q, "top "))
			cpu_top(q, &c);
	}
	if (!c.has_irq)
		c.irq[0] = '\0';
	*ret = c;
	return 0;
}

/* ---- ena ------------------------------------------------------------------------------------ */

int condmsg_ena_parse(const char *msg, bool cut, struct condmsg_ena *ret)
{
	const char *p = msg, *q;
	struct condmsg_ena e = { 0 };
	char cause[CONDMSG_NAME_MAX];

	memset(ret, 0, sizeof(*ret));
	if (!scan_name(&p, " ", false, e.ifname, sizeof(e.ifname)) || !lit(&p, " ") ||
	    !scan_u64(&p, &e.resets) || !(lit(&p, " resets/") || lit(&p, " reset/")))
		return -EINVAL;
	while (*p && *p != ';' && *p != ':' && *p != ' ')
		p++; /* the window: "1h" */
	if (lit(&p, ": ") && (q = p, scan_name(&q, ";", true, cause, sizeof(cause)))) {
		/* the cause's label ends before its qualifiers: " x3", " q2", " (cpu..", " +2" */
		size_t n = strlen(cause), k;
		bool qualified = false;

		for (k = 0; k + 1 < n; k++)
			if (cause[k] == ' ' && (cause[k + 1] == '(' ||
						(strchr("xq+", cause[k + 1]) && k + 2 < n &&
						 cause[k + 2] >= '0' && cause[k + 2] <= '9'))) {
				qualified = true;
				break;
			}
		if (!qualified)
			k = n;
		cause[k] = '\0';
		while (k > 0 && cause[k - 1] == ' ')
			cause[--k] = '\0';
		/* something after the label (a qualifier, the next cause) says it is whole */
		if (k > 0 && (qualified || *q || !cut)) {
			memcpy(e.cause, cause, sizeof(cause));
			e.has_cause = true;
		}
	}
	*ret = e;
	return 0;
}
