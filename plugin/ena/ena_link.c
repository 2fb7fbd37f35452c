/* SPDX-License-Identifier: MIT */
/* Which CPUs serve an ENA device's queue IRQs, and their bursts (ena_link.h). */
#include <errno.h>

#include "check/cz.h"
#include "ena/ena_link.h"
#include "cpu/history.h"
#include "host/irq.h"
#include "base/util.h"

#define LINES_MAX 4096

size_t ena_link_fill(const struct irq_map *map, const struct burst_event *evs, size_t nev,
		     struct ena_queue_cpu *ret, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < map->n; i++) {
		const struct irq_info *q = &map->irq[i];

		if (q->queue < 0)
			continue; /* the admin/AENQ vector, or unnamed */
		for (unsigned cpu = 0; cpu < IRQ_MAX_CPUS && n < max; cpu++) {
			uint64_t longest = 0;

			if (!irq_mask_test(q->cpus, IRQ_MASK_WORDS, cpu))
				continue;
			for (size_t e = 0; e < nev; e++)
				if (evs[e].cpu == cpu && evs[e].end_ms > evs[e].start_ms &&
				    evs[e].end_ms - evs[e].start_ms > longest)
					longest = evs[e].end_ms - evs[e].start_ms;
			ret[n++] = (struct ena_queue_cpu){ .queue = q->queue, .cpu = (int)cpu,
							   .burst_ms = longest };
		}
	}
	return n;
}

int ena_link_queue_cpus(void *userdata, const char *ifname, struct ena_queue_cpu *ret,
			size_t max)
{
	struct cz_ctx *ctx = userdata;
	_cleanup_free_ char *text = malloc(IRQ_INTERRUPTS_BUF);
	_cleanup_free_ struct irq_line *lines = calloc(LINES_MAX, sizeof(*lines));
	_cleanup_free_ struct irq_map *map = calloc(1, sizeof(*map));
	_cleanup_free_ struct burst_event *evs = calloc(HISTORY_EVENTS_MAX, sizeof(*evs));
	uint64_t now = now_realtime_ms(), window = ctx->cfg.ena.window_ms;
	int nl = 0, r, nev;
	ssize_t n;

	if (!text || !lines || !map || !evs)
		return -ENOMEM;
	/* names are only the fallback for IRQs sysfs does not list: a missing file costs them */
	n = hostfs_read(&ctx->hf, HOSTFS_PROC, "interrupts", text, IRQ_INTERRUPTS_BUF);
	if (n >= 0) {
		nl = irq_parse_interrupts(text, lines, LINES_MAX);
		if (nl < 0)
			nl = 0;
		else if (nl > LINES_MAX)
			nl = LINES_MAX;
	}
	r = irq_map_read(&ctx->hf, ifname, lines, (size_t)nl, map);
	if (r < 0)
		return r;
	nev = burst_log_read(ctx->cfg.paths.run, now > window ? now - window : 0, evs,
			     HISTORY_EVENTS_MAX);
	if (nev < 0)
		nev = 0;
	return (int)ena_link_fill(map, evs, (size_t)nev, ret, max);
}
