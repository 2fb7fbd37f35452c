/* SPDX-License-Identifier: MIT */
#ifndef CZ_IRQ_H
#define CZ_IRQ_H

/*
 * NIC -> IRQs -> CPUs: which cores serve a network interface's interrupts.
 *
 * For interface IF, the IRQs are the PCI function's MSI/MSI-X vectors, listed as the entries of
 * the msi_irqs directory found walking up from /sys/class/net/IF/device (the netdev's device is
 * the PCI function for ENA, a virtio device whose parent is the PCI function for virtio_net).
 * Without msi_irqs (INTx, non-PCI) the IRQs are found by name in /proc/interrupts: "IF",
 * "IF-...", "<device>-..." (virtio) or "...@pci:<bdf>" (ENA's admin vector).
 * Names come from /proc/interrupts (ENA: "ena-mgmnt@pci:<bdf>" on MSI-X index 0, "IF-Tx-Rx-<q>"
 * on index q+1; vectors allocated but not requested have no name). The CPUs serving an IRQ come
 * from /proc/irq/N/effective_affinity_list (where the interrupt is really delivered), else
 * smp_affinity_list (what was asked). With threaded NAPI (/sys/class/net/IF/threaded = 1) the
 * poll runs in "napi/IF-N" kernel threads that the scheduler may place elsewhere.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/hostfs.h"

#define IRQ_NAME_MAX 64
#define IRQ_MAX_CPUS 1024		 /* CPUs above this are not tracked in the masks */
#define IRQ_MASK_WORDS (IRQ_MAX_CPUS / 64)
#define IRQ_MAP_MAX 256			 /* vectors per interface (ENA: 1 + up to 128 queues) */
#define IRQ_IFACES_MAX 32
#define IRQ_INTERRUPTS_BUF (1024 * 1024) /* /proc/interrupts read buffer */

/* One row of /proc/interrupts with a numeric IRQ. */
struct irq_line {
	unsigned irq;
	char chip[48];		 /* "PCI-MSIX-0000:27:00.0", "IR-PCI-MSI", "IO-APIC" */
	int msix_index;		 /* MSI/MSI-X vector index from the hwirq column, -1 unknown */
	char name[IRQ_NAME_MAX]; /* actions, "" for an allocated but unrequested vector */
};

struct irq_info {
	unsigned irq;
	char name[IRQ_NAME_MAX];
	int queue;			/* from the name ("eth0-Tx-Rx-5" -> 5), -1 if none */
	int msix_index;			/* -1 unknown */
	uint64_t cpus[IRQ_MASK_WORDS];	/* CPUs the IRQ is delivered to */
	char cpulist[64];		/* the kernel's text, e.g. "0-3"; "" when unreadable */
};

enum irq_source {
	IRQ_SOURCE_MSI,	       /* sysfs msi_irqs of the PCI function */
	IRQ_SOURCE_PROC_NAMES, /* names matched in /proc/interrupts */
};

struct irq_map {
	char ifname[32];
	char device[64];  /* basename of the netdev's device ("virtio2", "0000:27:00.0") */
	char pci[32];	  /* PCI_SLOT_NAME of the function holding msi_irqs, "" if none */
	char driver[32];  /* basename of device/driver, "" if none */
	int threaded;	  /* /sys/class/net/IF/threaded: 1, 0, or -1 (kernel without it) */
	enum irq_source source;
	size_t n;
	struct irq_info irq[IRQ_MAP_MAX];
};

/*
 * irq_parse_cpulist - pure: a kernel CPU list ("0-3,8,10-11", "" or "\n" = none) into @mask
 * (@words 64-bit words, cleared first). CPUs >= 64 * @words are ignored. Returns the number of
 * CPUs set, or -EINVAL on syntax errors (reversed ranges, non-digits, missing numbers); @mask is
 * untouched on failure.
 */
int irq_parse_cpulist(const char *s, uint64_t *mask, size_t words);

/* irq_mask_test - true when @cpu is set in @mask of @words words. */
bool irq_mask_test(const uint64_t *mask, size_t words, unsigned cpu);

/*
 * irq_parse_interrupts - pure: the numbered rows of /proc/interrupts text @buf into @ret (at
 * most @max; further rows are counted, not stored). The header row is optional (some captures
 * drop it); per-CPU count columns are the leading numbers of a row; named rows ("NMI:") are
 * skipped. Returns the number of rows, or -EINVAL when a numbered row is malformed.
 */
int irq_parse_interrupts(const char *buf, struct irq_line *ret, size_t max);

/*
 * irq_queue_from_name - pure: the queue number a NIC driver put in an IRQ name, or -1.
 * Understands ENA "IF-Tx-Rx-<q>", Intel "IF-TxRx-<q>", "IF-rx-<q>"/"IF-tx-<q>" and virtio_net
 * "<dev>-input.<q>"/"<dev>-output.<q>" where @dev is the netdev's virtio device (may be NULL).
 */
int irq_queue_from_name(const char *name, const char *ifname, const char *dev);

/*
 * irq_map_read - the IRQs of interface @ifname (validated with valid_ifname) into *@ret, with
 * @lines/@nlines the parsed /proc/interrupts (names; may be 0 lines). Returns the number of IRQs
 * (0 when the interface has none, e.g. veth), -ENOENT when there is no such interface or it
 * has no device (virtual), -EINVAL for a bad name, or another -errno.
 */
int irq_map_read(const struct hostfs *hf, const char *ifname, const struct irq_line *lines,
		 size_t nlines, struct irq_map *ret);

/*
 * irq_map_all - maps of every interface with a device and at least one IRQ. Reads
 * /proc/interrupts once. On success *@ret_maps is a malloc()ed array (caller frees; NULL when
 * there are none) and the count is returned; -errno otherwise.
 */
int irq_map_all(const struct hostfs *hf, struct irq_map **ret_maps);

/*
 * irq_served_by - pure: writes up to @size bytes of "name,name" (queue names first) of the IRQs
 * in @maps delivered to @cpu; unnamed vectors appear as "irqN". Returns the count of IRQs.
 */
size_t irq_served_by(const struct irq_map *maps, size_t nmaps, unsigned cpu, char *buf,
		     size_t size);

#endif
