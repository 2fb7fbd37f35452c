/* SPDX-License-Identifier: MIT */
/*
 * The condition message parsers (check/condmsg.h): any bytes parse without harm; and messages
 * the writers make from fuzzed numbers and names, cut at every length as NPD would, never read
 * back a field that differs from what was written.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "check/condmsg.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static uint64_t take(const unsigned char **d, size_t *n, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && *n; i++, (*d)++, (*n)--)
		v = v << 8 | **d;
	return v;
}

/* A name for the writers: up to 40 bytes of the input, mapped onto what checks print. */
static void name(const unsigned char **d, size_t *n, char *buf, size_t size, const char *set)
{
	size_t len = 1 + take(d, n, 1) % 40, k = strlen(set);

	for (size_t i = 0; i < len && i + 1 < size; i++)
		buf[i] = set[take(d, n, 1) % k], buf[i + 1] = '\0';
}

static void check_cuts(const struct npd_result *res, const struct condmsg_memcg *m0,
		       const struct condmsg_cpu *c0, const struct condmsg_ena *e0)
{
	char line[NPD_MSG_MAX];
	size_t len = strlen(res->msg);

	for (size_t k = 1; k <= len; k++) {
		struct condmsg_memcg m;
		struct condmsg_cpu c;
		struct condmsg_ena e;

		memcpy(line, res->msg, k);
		line[k] = '\0';
		if (m0 && condmsg_memcg_parse(line, k < len, &m) == 0) {
			if (m.dying != m0->dying || m.live != m0->live)
				abort();
			if (m.has_leaker && (strcmp(m.leaker, m0->leaker) ||
					     m.leaker_restarts != m0->leaker_restarts))
				abort();
			if (m.has_growth && m.growth_per_hour != m0->growth_per_hour)
				abort();
		}
		if (c0 && condmsg_cpu_parse(line, k < len, &c) == 0) {
			if (c.cpu != c0->cpu || c.count != c0->count || c.len_ms != c0->len_ms)
				abort();
			if (c.has_top && (strcmp(c.top, c0->top) || c.top_ms != c0->top_ms))
				abort();
			if (c.has_irq && strcmp(c.irq, c0->irq))
				abort();
		}
		if (e0 && condmsg_ena_parse(line, k < len, &e) == 0) {
			if (strcmp(e.ifname, e0->ifname) || e.resets != e0->resets)
				abort();
			if (e.has_cause && strcmp(e.cause, e0->cause))
				abort();
		}
	}
}

static void written(const unsigned char *d, size_t n)
{
	static const char unit_set[] = "abcdefghijklmnopqrstuvwxyz0123456789-_.@:";
	static const char comm_set[] = "abcdefgXYZ019/:-_ ()[]";
	struct cz_config cfg;
	struct npd_result res;
	struct systemd_restarts sr = { .n = 1 };
	struct condmsg_memcg m;
	struct condmsg_cpu c;
	struct condmsg_ena e;
	char hint[128], comm[48], irq[48], ifn[24];
	uint64_t dying = take(&d, &n, 4), live = take(&d, &n, 2), restarts = take(&d, &n, 3);
	double g = (double)(int16_t)take(&d, &n, 2);

	config_defaults(&cfg);
	name(&d, &n, sr.u[0].name, sizeof(sr.u[0].name), unit_set);
	sr.u[0].restarts = restarts;
	condmsg_memcg_head(&res, NPD_PROBLEM, dying, live, live ? (double)dying / (double)live : 0,
			   &cfg);
	condmsg_memcg_growth(&res, g);
	condmsg_restarts_hint(&sr, hint, sizeof(hint));
	npd_append(&res, "%s", hint);
	if (condmsg_memcg_parse(res.msg, false, &m) != 0 || m.dying != dying || m.live != live)
		abort();
	check_cuts(&res, &m, NULL, NULL);

	name(&d, &n, comm, 16, comm_set);
	name(&d, &n, irq, sizeof(irq), unit_set);
	condmsg_cpu_head(&res, (unsigned)take(&d, &n, 1), 100, "sys", take(&d, &n, 3),
			 (size_t)take(&d, &n, 1), "10m");
	condmsg_cpu_serves(&res, irq, take(&d, &n, 1) & 1);
	if (comm[0] != ' ' && comm[strlen(comm) - 1] != ' ')
		condmsg_cpu_top(&res, comm, take(&d, &n, 3), (take(&d, &n, 1) & 1) ? "read_iter_zero" : "",
				(unsigned)(take(&d, &n, 1) % 101));
	if (condmsg_cpu_parse(res.msg, false, &c) != 0)
		abort();
	check_cuts(&res, NULL, &c, NULL);

	name(&d, &n, ifn, sizeof(ifn), unit_set);
	npd_set(&res, NPD_PROBLEM, "%s", "");
	condmsg_ena_resets(&res, ifn, take(&d, &n, 2), "1h",
			   take(&d, &n, 1) & 1 ? "poll starvation q3 (cpu7 burst 6.2s)" : "");
	if (condmsg_ena_parse(res.msg, false, &e) != 0)
		abort();
	check_cuts(&res, NULL, NULL, &e);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	struct condmsg_memcg m;
	struct condmsg_cpu c;
	struct condmsg_ena e;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	for (int cut = 0; cut < 2; cut++) {
		(void)condmsg_memcg_parse(s, cut, &m);
		(void)condmsg_cpu_parse(s, cut, &c);
		(void)condmsg_ena_parse(s, cut, &e);
	}
	free(s);
	written(data, size);
	return 0;
}
