/* SPDX-License-Identifier: MIT */
#ifndef CZ_KMSG_FOLLOW_H
#define CZ_KMSG_FOLLOW_H

/*
 * The agent follows the kernel log: /dev/kmsg (agent.kmsg; "" = off) opened non-blocking,
 * polled from the sampler loop, every record of facility 0 (the kernel) handed to the kernel
 * message parser (klog/klog.h), what it recognizes kept in the run dir's kernel-event log
 * (klog/kevents.h) for `check ena`, `check cpu`, the report and the metrics.
 *
 * /dev/kmsg (Documentation/ABI/testing/dev-kmsg): each read(2) returns one record,
 * "PRI,SEQ,USEC,FLAGS;text\n" plus " KEY=value" lines; -EAGAIN when there is nothing new;
 * -EPIPE when the ring buffer overwrote the record we were at (the next read continues with the
 * oldest one left). A FIFO given as agent.kmsg (tests) is read as a stream of such lines.
 *
 * Resume: the next sequence number to read is kept in the log with the boot id
 * (/proc/sys/kernel/random/boot_id); an agent restarted in the same boot skips what it has
 * already read, a new boot starts from the oldest record the kernel still holds. A gap in the
 * sequence numbers counts as lost records, a -EPIPE as an overrun; neither is an error.
 * Only facility 0 is evidence: records written from user space (facility 1 and up, what any
 * root process can `echo > /dev/kmsg`) are skipped and counted.
 */

#include <stdint.h>

#include "check/cz.h"

struct kmsg_follow;

/*
 * kmsg_follow_open - open agent.kmsg and load the kernel-event log from the run dir. *@ret is
 * NULL (and 0 returned) when agent.kmsg is "". Returns 0 or -errno (the path could not be
 * opened: the caller logs it and runs without); *@ret untouched on failure.
 */
int kmsg_follow_open(const struct cz_ctx *ctx, struct kmsg_follow **ret);

/*
 * kmsg_follow_poll - read what is new (at most a bounded number of reads per call, so a flood
 * cannot stall the sampler), record what is recognized, save the log when it changed. Returns
 * the number of events recorded, or -errno when the log could not be saved. NULL: 0.
 */
int kmsg_follow_poll(struct kmsg_follow *f);

/* kmsg_follow_free - save what is pending, close and free. Accepts NULL. */
void kmsg_follow_free(struct kmsg_follow *f);

#endif
