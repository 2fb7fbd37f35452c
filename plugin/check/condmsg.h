/* SPDX-License-Identifier: MIT */
#ifndef CZ_CONDMSG_H
#define CZ_CONDMSG_H

/*
 * The numbers our condition messages carry, written and read back in one place, so the format
 * cannot drift between the checks that write it and `cpuzombie fleet`, which reads it from the
 * API server for thousands of nodes. Each writer below is what a check's verdict calls; each
 * parser is its exact inverse and is tested against the writers (tests/unit/test_condmsg.c),
 * including messages cut by NPD at max_output_length (80 by default, 256 in our configs).
 *
 *   memcg: "12840 dying memcgs vs 241 live (x53 >= x10); +310/h; top restarts: ecs.service=4211
 *           (+310/h), foo.service=3; Percpu 1.9GiB; ..."
 *          or, from the agent's zombie census (memcg/census.h), instead of the restarts:
 *          "69812 dying memcgs vs 240 live (x290 >= x10); 69790 were system.slice/ecs.service,
 *           14.0GiB pinned; ..."
 *   cpu:   "cpu3 100% sys 6.2s x4/10m; serves eth0-Tx-Rx-0 +more; top kubelet 5.1s; also cpu5 x2"
 *   ena:   "eth0 3 resets/1h: poll starvation q2 (cpu3 burst 6.2s); eth1 1 reset/1h; risk: ..."
 *
 * Parsers never invent a number: a field is reported only when its terminator is present, and
 * when the caller says the message may have been cut (@cut), a field that runs into the end of
 * the message is dropped rather than read short ("ecs.service=42" might have been "=4211").
 * Parsers are pure, take any bytes (condition messages are written by whoever can patch a node)
 * and only accept names made of a conservative character set.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/npd.h"
#include "host/systemd.h"

#define CONDMSG_NAME_MAX SYSTEMD_UNIT_MAX /* unit, task, interface, IRQ, cause names + NUL */

/* ---- memcg ---------------------------------------------------------------------------------- */

/*
 * condmsg_memcg_head - set @res to @st and the head of the memcg message: counts and ratio,
 * against the limits of @cfg ("... (x53 >= x10)" when a problem, "... (x1.2; limits 1000 dying
 * and x10)" otherwise).
 */
void condmsg_memcg_head(struct npd_result *res, enum npd_status st, uint64_t dying, uint64_t live,
			double ratio, const struct cz_config *cfg);

/* condmsg_memcg_growth - append the growth rate: "+310/h". */
void condmsg_memcg_growth(struct npd_result *res, double per_hour);

/*
 * condmsg_restarts_hint - "top restarts: ecs.service=4211 (+310/h), foo.service=3" with as many
 * units as fit in @size (at least the first, cut if it must). "" when @r has no unit. Returns the
 * length written. The memcg verdict appends it as is.
 */
size_t condmsg_restarts_hint(const struct systemd_restarts *r, char *buf, size_t size);

/*
 * condmsg_census_hint - the census's top group: "69790 were system.slice/ecs.service, 14.0GiB
 * pinned" into @buf; a key too long for @size is cut with "..." (then the parser drops it: a
 * cut key is not a name). Returns the length written.
 */
size_t condmsg_census_hint(uint64_t count, const char *key, uint64_t bytes, char *buf,
			   size_t size);

struct condmsg_memcg {
	bool has_counts;
	uint64_t dying, live;
	bool has_ratio;
	double ratio;			/* dying / live as printed (x53 -> 53) */
	bool has_growth;
	double growth_per_hour;
	bool has_leaker;		/* the unit with the most restarts */
	char leaker[CONDMSG_NAME_MAX];
	uint64_t leaker_restarts;
	bool has_group;			/* the census's top group */
	char group[CONDMSG_NAME_MAX];	/* its key: "system.slice/ecs.service", "a/b-*.scope" */
	uint64_t group_count;
};

/*
 * condmsg_memcg_parse - read a memcg message back. Returns 0 and fills *@ret when at least the
 * counts are there, -EINVAL when @msg is not a memcg message (an Unknown's reason, someone
 * else's text); *@ret is zeroed either way. @cut: @msg may have been cut at its end.
 */
int condmsg_memcg_parse(const char *msg, bool cut, struct condmsg_memcg *ret);

/* ---- cpu ------------------------------------------------------------------------------------ */

/*
 * condmsg_cpu_head - set @res to a problem and the head of the cpu message: the longest burst
 * (core, peak, metric label, length) and how many in the window: "cpu3 100% sys 6.2s x4/10m".
 */
void condmsg_cpu_head(struct npd_result *res, unsigned cpu, double peak_pct, const char *metric,
		      uint64_t len_ms, size_t count, const char *window);

/* condmsg_cpu_serves - append "serves IRQ" (" +more" when the core serves others too). */
void condmsg_cpu_serves(struct npd_result *res, const char *irq, bool more);

/*
 * condmsg_cpu_top - append the task with the most system time: "top kubelet 5.1s", and when the
 * burst has a profile (@hot not ""), the kernel function it spent most samples in and their
 * share: "top kubelet 5.1s in memcg_numa_stat_show 74%".
 */
void condmsg_cpu_top(struct npd_result *res, const char *comm, uint64_t stime_ms, const char *hot,
		     unsigned hot_pct);

struct condmsg_cpu {
	bool has_burst;
	unsigned cpu;
	double peak_pct;
	uint64_t len_ms;		/* to the 0.1 s printed */
	uint64_t count;
	bool has_irq;
	char irq[CONDMSG_NAME_MAX];
	bool has_top;
	char top[CONDMSG_NAME_MAX];	/* comm of the top task */
	uint64_t top_ms;
	bool has_hot;
	char hot[CONDMSG_NAME_MAX];	/* the hot kernel function of the burst's profile */
	unsigned hot_pct;
};

/* condmsg_cpu_parse - read a cpu problem message back. Returns as condmsg_memcg_parse(). */
int condmsg_cpu_parse(const char *msg, bool cut, struct condmsg_cpu *ret);

/* ---- ena ------------------------------------------------------------------------------------ */

/*
 * condmsg_ena_resets - append one interface's resets: "eth0 3 resets/1h: <cause>" (no ": " when
 * @cause is ""). The ENA verdict appends one per interface, most resets first.
 */
void condmsg_ena_resets(struct npd_result *res, const char *ifname, uint64_t resets,
			const char *window, const char *cause);

struct condmsg_ena {
	char ifname[CONDMSG_NAME_MAX];	/* the interface with the most resets (the first) */
	uint64_t resets;
	bool has_cause;
	char cause[CONDMSG_NAME_MAX];	/* its first cause, without counts: "poll starvation" */
};

/* condmsg_ena_parse - read an ENA problem message back. Returns as condmsg_memcg_parse(). */
int condmsg_ena_parse(const char *msg, bool cut, struct condmsg_ena *ret);

#endif
