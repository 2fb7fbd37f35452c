/* SPDX-License-Identifier: MIT */
#ifndef CZ_KEVENTS_H
#define CZ_KEVENTS_H

/*
 * The kernel-event log in the run dir ("kernel-events"): what the agent's /dev/kmsg follower
 * recognized, for `check ena`, `check cpu`, the report and the metrics. A state file (state.h
 * envelope, replaced atomically; readers take no lock), bounded: the last KEVENTS_MAX events.
 *
 * It keeps each event as the kernel's own text (printable ASCII, cut at KEVENT_MSG_MAX) with
 * its time and sequence number, and readers parse it again with klog_parse_message(): one
 * parser, so the live and the pasted path can never disagree about what a line means.
 *
 * Payload lines:
 *   boot <boot_id>|-            the boot the sequence numbers belong to
 *   next_seq <n>|-              records below n were read (resume point)
 *   lost <n>                    records overwritten before they were read (sequence gaps)
 *   overruns <n>                read(2) returned EPIPE (the ring buffer overtook the reader)
 *   count <kind> <n>            events recognized, by kind, since the run dir was created
 *   ev <t_ms> <seq> <text>      oldest first; t_ms CLOCK_REALTIME of the record
 * Only records of facility 0 (the kernel) are ever added: any root process can write
 * user-facility lines to /dev/kmsg, and those are never evidence.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "klog/klog.h"
#include "base/state.h"

#define RUN_KERNEL_EVENTS "kernel-events"
#define KEVENTS_MAX 256
#define KEVENT_MSG_MAX 300
#define KEVENTS_REPEAT_MS 10000 /* a missed-Tx line like the last kept one is counted, not kept */

struct kevent {
	uint64_t t_ms;
	uint64_t seq;
	char msg[KEVENT_MSG_MAX + 1];
};

struct kevents {
	char boot_id[40];
	bool have_seq;
	uint64_t next_seq;
	uint64_t lost, overruns;
	uint64_t count[KLOG_KIND_MAX];
	size_t n;
	struct kevent ev[KEVENTS_MAX];	/* oldest first */
};

/* The typed state (state.h) of RUN_KERNEL_EVENTS: parse/format below, run dir, not fsync'ed. */
struct state_type;
struct state_txn;
extern const struct state_type kevents_state;
/* kevents_state_read, _begin, _commit, _write: STATE_CODEC's typed calls (base/state.h) */
int kevents_state_read(const char *dir, const struct state_type *t, struct kevents *obj);
int kevents_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
			struct kevents *obj);
int kevents_state_commit(struct state_txn *txn, const struct kevents *obj);
int kevents_state_write(const char *dir, const struct state_type *t, const struct kevents *obj);

/*
 * kevents_record - account for one kernel record (@seq; @msg/@len its text) recognized as @e:
 * count it, and keep it unless it is a statistics line or repeats the last kept missed-Tx line
 * of the same queue within KEVENTS_REPEAT_MS. The oldest event goes when full. Returns true
 * when the event was kept.
 */
bool kevents_record(struct kevents *k, const struct klog_event *e, uint64_t t_ms, uint64_t seq,
		    const char *msg, size_t len);

/*
 * kevents_event - pure: event @i of @k parsed again into *@ret, with its time as
 * KLOG_CLOCK_WALL and a "HH:MM:SS" UTC stamp. Returns 1, or 0 when the text is no event any
 * more (a log written by another version).
 */
int kevents_event(const struct kevents *k, size_t i, struct klog_event *ret);

/* kevents_parse / kevents_format - the payload (kevents_state's codec; see state.h). */
int kevents_parse(const char *payload, size_t len, void *obj);
ssize_t kevents_format(const void *obj, char **ret);

#endif
