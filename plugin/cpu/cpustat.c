/* SPDX-License-Identifier: MIT */
/* /proc/stat per-CPU rows and shares, the mpstat way (cpustat.h). */
#include <errno.h>

#include "cpu/cpustat.h"
#include "base/util.h"

/* Parses one "cpuN f0 f1 ..." row (@line, @len bytes, not NUL-terminated). */
static int parse_row(const char *line, size_t len, unsigned *ret_cpu, struct cpustat_core *ret)
{
	const char *p = line + 3, *end = line + len;
	struct cpustat_core c = { .present = true };
	uint64_t cpu;
	size_t n = 0, tl;

	tl = 0;
	while (p + tl < end && p[tl] >= '0' && p[tl] <= '9')
		tl++;
	if (tl == 0 || tl > 5 || parse_u64_n(p, tl, &cpu) < 0)
		return -EINVAL;
	p += tl;
	for (;;) {
		uint64_t v;

		if (p < end && *p != ' ')
			return -EINVAL; /* "cpu3x ..." or a tab-glued token */
		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			break;
		tl = 0;
		while (p + tl < end && p[tl] != ' ')
			tl++;
		if (parse_u64_n(p, tl, &v) < 0)
			return -EINVAL;
		/* proc(5): fields may be appended in future kernels; keep the ones we know. */
		if (n < _CPUSTAT_FIELDS)
			c.f[n] = v;
		n++;
		p += tl;
	}
	if (n < 4) /* user nice system idle: present since Linux 1.x */
		return -EINVAL;
	*ret_cpu = (unsigned)cpu;
	*ret = c;
	return 0;
}

int cpustat_parse(const char *buf, struct cpustat_core *cores, size_t max)
{
	_cleanup_free_ struct cpustat_core *tmp = NULL;
	const char *pos = buf, *line;
	size_t len, used = 0;

	if (!buf || !cores || max == 0 || max > CPUSTAT_MAX_CPUS)
		return -EINVAL;
	tmp = calloc(max, sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	while (next_line(&pos, &line, &len)) {
		struct cpustat_core c;
		unsigned cpu;
		int r;

		if (len < 4 || strncmp(line, "cpu", 3) != 0 || line[3] == ' ')
			continue; /* the aggregate "cpu " row, intr, ctxt, ... */
		r = parse_row(line, len, &cpu, &c);
		if (r < 0)
			return r;
		if (cpu >= max)
			return -E2BIG;
		if (tmp[cpu].present)
			return -EINVAL;
		tmp[cpu] = c;
		if (cpu + 1 > used)
			used = cpu + 1;
	}
	if (used == 0)
		return -EINVAL;
	memcpy(cores, tmp, used * sizeof(*tmp));
	for (size_t i = used; i < max; i++)
		cores[i].present = false;
	return (int)used;
}

/* The eight fields mpstat sums for a CPU's interval (guest time is inside user/nice). */
static const enum cpustat_field total_fields[] = {
	CPUSTAT_USER, CPUSTAT_NICE,    CPUSTAT_SYSTEM,	CPUSTAT_IDLE,
	CPUSTAT_IOWAIT, CPUSTAT_IRQ, CPUSTAT_SOFTIRQ, CPUSTAT_STEAL,
};

static uint64_t delta(const struct cpustat_core *a, const struct cpustat_core *b,
		      enum cpustat_field f)
{
	return b->f[f] > a->f[f] ? b->f[f] - a->f[f] : 0;
}

int cpustat_share(const struct cpustat_core *prev, const struct cpustat_core *cur,
		  enum cz_cpu_metric m, double *ret_pct)
{
	uint64_t sum_prev = 0, sum_cur = 0, total = 0, part;

	if (!prev->present || !cur->present)
		return -ENODATA;
	for (size_t i = 0; i < ARRAY_SIZE(total_fields); i++) {
		sum_prev += prev->f[total_fields[i]];
		sum_cur += cur->f[total_fields[i]];
		total += delta(prev, cur, total_fields[i]);
	}
	if (sum_cur <= sum_prev || total == 0)
		return -ERANGE;
	switch (m) {
	case CZ_METRIC_SYSTEM:
		part = delta(prev, cur, CPUSTAT_SYSTEM);
		break;
	case CZ_METRIC_SYSTEM_IRQ:
		part = delta(prev, cur, CPUSTAT_SYSTEM) + delta(prev, cur, CPUSTAT_IRQ) +
		       delta(prev, cur, CPUSTAT_SOFTIRQ);
		break;
	case CZ_METRIC_BUSY:
		part = total - delta(prev, cur, CPUSTAT_IDLE) - delta(prev, cur, CPUSTAT_IOWAIT);
		break;
	default:
		return -EINVAL;
	}
	*ret_pct = 100.0 * (double)part / (double)total;
	return 0;
}

const char *cpustat_metric_short(enum cz_cpu_metric m)
{
	switch (m) {
	case CZ_METRIC_SYSTEM:
		return "sys";
	case CZ_METRIC_SYSTEM_IRQ:
		return "sys+irq";
	case CZ_METRIC_BUSY:
		return "busy";
	}
	return "?";
}

unsigned cpustat_possible_parse(const char *text)
{
	uint64_t v, hi = 0;
	bool any = false;

	for (const char *p = text; p && *p;) {
		size_t n = strspn(p, "0123456789");

		if (n > 0 && n < 6 && parse_u64_n(p, n, &v) == 0) {
			any = true;
			hi = v > hi ? v : hi;
		}
		p += n ? n : 1;
	}
	if (!any)
		return 0;
	return hi + 1 <= CPUSTAT_MAX_CPUS ? (unsigned)hi + 1 : CPUSTAT_MAX_CPUS;
}
