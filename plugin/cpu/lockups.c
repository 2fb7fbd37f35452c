// SPDX-License-Identifier: MIT
#include <string.h>

#include "cpu/lockups.h"
#include "klog/klog.h"

size_t kevents_soft_lockups(const struct kevents *k, uint64_t since_ms, struct burst_event *ev,
			    size_t n, size_t max, size_t *ret_added)
{
	size_t added = 0, first = n;

	for (size_t i = 0; i < k->n && n < max; i++) {
		struct klog_event e;
		uint64_t end, start;
		bool dup = false;

		if (kevents_event(k, i, &e) != 1 || e.kind != KLOG_SOFT_LOCKUP || e.cpu < 0)
			continue;
		end = k->ev[i].t_ms;
		start = end > e.n1 * 1000 ? end - e.n1 * 1000 : 0;
		if (end < since_ms)
			continue;
		for (size_t j = 0; j < first && !dup; j++)
			dup = ev[j].cpu == (unsigned)e.cpu && ev[j].start_ms <= end &&
			      ev[j].end_ms >= start;
		if (dup)
			continue;
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].cpu = (unsigned)e.cpu;
		ev[n].start_ms = start;
		ev[n].end_ms = end;
		ev[n].peak_pct = ev[n].mean_pct = 100.0;
		ev[n].metric = CZ_METRIC_SYSTEM;
		if (e.comm[0]) {
			ev[n].ntasks = 1;
			ev[n].task[0].pid = ev[n].task[0].tid = e.pid;
			memcpy(ev[n].task[0].comm, e.comm, sizeof(ev[n].task[0].comm));
			ev[n].task[0].stime_ms = end - start;
		}
		n++;
		added++;
	}
	if (ret_added)
		*ret_added = added;
	return n;
}
