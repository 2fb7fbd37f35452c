/* SPDX-License-Identifier: MIT */
#ifndef CZ_ENA_LINK_H
#define CZ_ENA_LINK_H

/*
 * The link between the last two steps of the chain: which CPUs serve an interface's queue IRQs
 * (irq.h, from sysfs and /proc/interrupts) and whether those CPUs had a saturation burst within
 * ena.window (the sampler's burst log, history.h). `check ena` asks for it only when a device
 * shows a reset or a risk, so the cause can say "poll starvation q5 (cpu39 burst 6.2s)".
 */

#include <stddef.h>

#include "ena/ena.h"

/*
 * ena_link_queue_cpus - an ena_qc_source getter; @userdata is the struct cz_ctx. Writes one
 * entry per (queue, CPU) pair of @ifname's queue IRQs (at most @max) with the longest burst on
 * that CPU within ena.window. Returns the count, or -errno (no IRQ map: virtual interface,
 * missing /sys). A missing or corrupt burst log only means no burst is known (burst_ms 0).
 */
int ena_link_queue_cpus(void *userdata, const char *ifname, struct ena_queue_cpu *ret,
			size_t max);

/*
 * ena_link_fill - pure: the pairs of @map's queue IRQs, each with the longest of @evs on its
 * CPU (@nev events). Returns the count written (at most @max).
 */
struct irq_map;
struct burst_event;
size_t ena_link_fill(const struct irq_map *map, const struct burst_event *evs, size_t nev,
		     struct ena_queue_cpu *ret, size_t max);

#endif
