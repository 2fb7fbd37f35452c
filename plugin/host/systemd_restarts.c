/* SPDX-License-Identifier: MIT */
/*
 * The pure half of systemd.h's unit restart counts: the state payload, growth between two
 * readings and the one-line hint. Apart from host/systemd.c (which talks to libsystemd) so that
 * the static check binary, which never talks to systemd, can still parse and print them.
 */
#include <errno.h>
#include <string.h>

#include "base/state.h"
#include "host/systemd.h"
#include "base/util.h"

int systemd_restarts_parse(const char *text, struct systemd_restarts *ret)
{
	struct systemd_restarts r = { 0 };
	const char *pos = text, *line;
	bool has_t = false;
	size_t len;

	while (next_line(&pos, &line, &len)) {
		const char *sp = memchr(line, ' ', len), *sp2;

		if (len == 0)
			continue;
		if (!sp || sp - line != 1)
			return -EINVAL;
		if (line[0] == 't') {
			if (parse_u64_n(sp + 1, len - 2, &r.t_ms) < 0)
				return -EINVAL;
			has_t = true;
			continue;
		}
		sp2 = memchr(sp + 1, ' ', len - 2);
		if (line[0] != 'u' || !sp2 || r.n == SYSTEMD_TOP_MAX)
			return -EINVAL;
		size_t nlen = len - (size_t)(sp2 + 1 - line);
		if (nlen == 0 || nlen >= SYSTEMD_UNIT_MAX || memchr(sp2 + 1, ' ', nlen) ||
		    parse_u64_n(sp + 1, (size_t)(sp2 - sp - 1), &r.u[r.n].restarts) < 0)
			return -EINVAL;
		memcpy(r.u[r.n].name, sp2 + 1, nlen);
		r.u[r.n].name[nlen] = '\0';
		r.n++;
	}
	if (!has_t)
		return -EINVAL;
	*ret = r;
	return 0;
}

size_t systemd_restarts_format(const struct systemd_restarts *r, char *buf, size_t size)
{
	size_t off = 0;
	int k;

	if (size == 0)
		return 0;
	buf[0] = '\0';
	k = snprintf(buf, size, "t %llu\n", (unsigned long long)r->t_ms);
	if (k < 0 || (size_t)k >= size)
		return 0;
	off = (size_t)k;
	for (size_t i = 0; i < r->n; i++) {
		k = snprintf(buf + off, size - off, "u %llu %s\n",
			     (unsigned long long)r->u[i].restarts, r->u[i].name);
		if (k < 0 || (size_t)k >= size - off) {
			buf[off] = '\0';
			break;
		}
		off += (size_t)k;
	}
	return off;
}

bool systemd_restarts_growth(const struct systemd_restarts *base, struct systemd_restarts *cur)
{
	uint64_t dt;

	for (size_t i = 0; i < cur->n; i++)
		cur->u[i].has_growth = false;
	if (!base || base->t_ms > cur->t_ms)
		return true;
	dt = cur->t_ms - base->t_ms;
	for (size_t i = 0; dt >= SYSTEMD_GROWTH_MIN_MS && i < cur->n; i++) {
		for (size_t j = 0; j < base->n; j++) {
			if (!streq(base->u[j].name, cur->u[i].name))
				continue;
			if (cur->u[i].restarts >= base->u[j].restarts) {
				cur->u[i].has_growth = true;
				cur->u[i].per_hour =
					(double)(cur->u[i].restarts - base->u[j].restarts) *
					3600000.0 / (double)dt;
			}
			break;
		}
	}
	return dt >= SYSTEMD_BASELINE_MIN_MS;
}

/* ---- the state file ---- */

#define RESTARTS_PAYLOAD_MAX (SYSTEMD_TOP_MAX * (SYSTEMD_UNIT_MAX + 32) + 64)

const struct state_type systemd_restarts_state = { STATE_SYSTEMD_RESTARTS, RESTARTS_PAYLOAD_MAX,
						     true };

STATE_CODEC_BOUNDED(, systemd_restarts_state, struct systemd_restarts, RESTARTS_PAYLOAD_MAX,
		    systemd_restarts_parse, systemd_restarts_format);
