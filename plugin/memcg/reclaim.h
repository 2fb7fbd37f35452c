/* SPDX-License-Identifier: MIT */
#ifndef CZ_RECLAIM_H
#define CZ_RECLAIM_H

/*
 * Reclaim as a remediation, the pure half: its state, the plan and the words. The agent
 * (agent/reclaimer.h) is the I/O edge: it feeds in the memcg check's status each cycle, asks
 * reclaim_plan() what to do, writes vm.drop_caches or a cgroup's memory.reclaim, counts the
 * dying memcgs before and after, and tells the node (an Event), the journal and the metrics.
 *
 * Why reclaim frees zombies: a removed memcg stays allocated ("dying") while anything still
 * charges it, and what charges it is nearly always page cache its tasks read or wrote. Nobody
 * touches those pages again, so they sit on the inactive list until memory pressure comes,
 * which on a node with free memory is never. Dropping that cache uncharges them, and the kernel
 * frees the memcg (measured on 6.18: vm.drop_caches=1 took 65 memory cgroups to 9).
 *
 * The guards, all here (table-tested in tests/unit/test_reclaim.c):
 *   - remediation.reclaim is not off;
 *   - MemcgZombieLeak (the agent's own `check memcg`) has been True for remediation.for: the
 *     agent remembers since when in this state, and a gap in its watch longer than `for` (agent
 *     down, check Unknown) starts the clock again, since it did not see the leak go on;
 *   - at most one reclaim (or dry run) per remediation.reclaim_interval. The attempt is
 *     recorded before the write, so an agent that crashes in the middle, or crash-loops, never
 *     repeats it sooner;
 *   - remediation.mode dry-run: say what would be done, change nothing;
 *   - method: memory.reclaim on cgroup v2 where the kernel has it (5.19+), of the subtree that
 *     holds the zombies; else (v1, hybrid, older kernels, or configured) vm.drop_caches=1:
 *     page cache only, never slab (2 or 3 would also drop dentries and inodes of live work).
 * It is independent of cordon/drain and of the Lease budget: it evicts nothing.
 *
 * The state (STATE_RECLAIM in the state dir, "key value" lines): since, seen, last, and the
 * last reclaim's method, result and before/after counts, with running totals for the metrics.
 * Not fsync'ed: after a power loss the node rebooted and its dying memcgs are gone anyway.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/state.h"

#define STATE_RECLAIM "reclaim"
#define RECLAIM_TARGET_MAX 160

/* What was used: the state's and the metrics' spelling via reclaim_method_name(). */
enum reclaim_method {
	RECLAIM_NONE,
	RECLAIM_MEMORY_RECLAIM,	/* <cgroup>/memory.reclaim */
	RECLAIM_DROP_CACHES,	/* /proc/sys/vm/drop_caches = 1 */
};

/* How the last reclaim ended. */
enum reclaim_result {
	RECLAIM_RESULT_NONE,
	RECLAIM_STARTED,	/* recorded before the write; still so = the agent died in it */
	RECLAIM_OK, /* written (memory.reclaim: the kernel reclaimed all it was asked) */
	RECLAIM_PARTIAL,	/* memory.reclaim: EAGAIN, the kernel found less to reclaim */
	RECLAIM_FAILED,		/* the write was refused (no privilege, read-only mount...) */
	RECLAIM_DRY_RUN,	/* would have reclaimed */
	RECLAIM_RESULT_COUNT
};

struct reclaim_state {
	uint64_t since_ms;	/* MemcgZombieLeak True, continuously watched, since; 0 = not */
	uint64_t seen_ms;	/* the last cycle that saw it True */
	uint64_t last_ms;	/* the last reclaim or dry run began; 0 = never */
	enum reclaim_method method;
	enum reclaim_result result;
	uint64_t before, after;	/* dying memcgs before and after the last reclaim */
	uint64_t took_ms;	/* the write and the kernel's freeing */
	int err;		/* RECLAIM_FAILED: the errno (positive) */
	char target[RECLAIM_TARGET_MAX]; /* memory.reclaim: the subtree, "" the root; printable
					  * ASCII without spaces (anything else became '?') */
	/* running totals, for counters */
	uint64_t runs[RECLAIM_RESULT_COUNT];	/* by result, of both methods */
	uint64_t freed;		/* sum of before - after over the reclaims */
};

extern const struct state_type reclaim_state_type;

/* reclaim_state_parse / reclaim_state_format - pure: the payload of reclaim_state_type ("since
 * <ms>" ... lines; empty: a fresh state); parse returns 0 or -EINVAL (@obj untouched), format a
 * malloc()ed text and its length or -errno. */
int reclaim_state_parse(const char *payload, size_t len, struct reclaim_state *obj);
ssize_t reclaim_state_format(const struct reclaim_state *obj, char **ret);
/* reclaim_state_read, _begin, _commit, _write: STATE_CODEC's typed calls (base/state.h) */
int reclaim_state_read(const char *dir, const struct state_type *t, struct reclaim_state *obj);
int reclaim_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
			struct reclaim_state *obj);
int reclaim_state_commit(struct state_txn *txn, const struct reclaim_state *obj);
int reclaim_state_write(const char *dir, const struct state_type *t,
			const struct reclaim_state *obj);

/* What the agent knows this cycle. */
struct reclaim_input {
	const struct cz_config *cfg;
	uint64_t now_ms;
	int status;		/* the memcg check's NPD status this cycle */
	bool v2;		/* the memory controller is on cgroup v2 */
	bool has_memory_reclaim; /* v2 and the target has memory.reclaim (5.19+) */
};

enum reclaim_verdict {
	RECLAIM_IDLE,		/* off, or no leak */
	RECLAIM_WAIT,		/* leak, not yet True for remediation.for */
	RECLAIM_RATE_LIMITED,	/* leak, but the last reclaim was less than reclaim_interval ago */
	RECLAIM_WOULD,		/* dry-run */
	RECLAIM_GO,
};

struct reclaim_plan {
	enum reclaim_verdict verdict;
	enum reclaim_method method;
	char why[200];		/* one line: why this verdict (and, for a fallback, why that) */
};

/* reclaim_method_name / reclaim_result_name - "drop_caches", "ok", ... ("none" for 0). */
const char *reclaim_method_name(enum reclaim_method m);
const char *reclaim_result_name(enum reclaim_result r);

/*
 * reclaim_observe - pure: fold this cycle's memcg @status at @now_ms into @s (since/seen):
 * Problem keeps or starts the clock (restarted when the last sighting is older than @for_ms);
 * OK stops it; Unknown leaves it alone, so a long blind spot restarts it at the next sighting.
 */
void reclaim_observe(struct reclaim_state *s, int status, uint64_t now_ms, uint64_t for_ms);

/* reclaim_plan - pure: what to do now, given @in and the state @s (after reclaim_observe). */
void reclaim_plan(const struct reclaim_input *in, const struct reclaim_state *s,
		  struct reclaim_plan *ret);

/*
 * reclaim_begin - pure: record in @s that a reclaim (or, @dry_run, a dry run) with @method on
 * @target (memory.reclaim's subtree; NULL or "" for the root or drop_caches) starts at @now_ms
 * with @before dying memcgs. The caller saves @s before acting.
 */
void reclaim_begin(struct reclaim_state *s, enum reclaim_method method, const char *target,
		   bool dry_run, uint64_t now_ms, uint64_t before);

/*
 * reclaim_end - pure: record how it ended: @err 0 (done), -EAGAIN (memory.reclaim did part) or
 * another -errno (refused), with @after dying memcgs and @took_ms.
 */
void reclaim_end(struct reclaim_state *s, int err, uint64_t after, uint64_t took_ms);

/*
 * reclaim_amount - pure: the bytes to ask memory.reclaim for: the "inactive_file" of the
 * target's memory.stat text @memory_stat, or, when that is NULL or lacks it (the root cgroup on
 * older kernels), "Inactive(file):" of /proc/meminfo text @meminfo (kB). At least 1 MiB.
 * Returns 0 or -EINVAL when neither has it.
 */
int reclaim_amount(const char *memory_stat, const char *meminfo, uint64_t *ret);

/*
 * reclaim_active_allowance - pure: the bytes of active file pages memory.reclaim may take
 * beyond reclaim_amount: the "active_file" of the target's memory.stat text @memory_stat, at
 * most RECLAIM_ACTIVE_PER_MEMCG for each of the @dying memcgs below the target, in whole 4 KiB
 * pages; 0 when the text is NULL or lacks it. Why: a zombie whose pages were touched again after it
 * first read them
 * (a directory or inode-table block the next writers used too) sits on the active list, which
 * an inactive_file-sized ask never reaches (measured on 6.1: 4 of 32 zombies left). Past the
 * inactive pages the kernel deactivates in proportion, but scans a dying memcg's whole small
 * list at every priority and a live one's 1/4096 (get_scan_count), so the extra goes to the
 * zombies first, and live work's hot pages lose at most this much.
 */
#define RECLAIM_ACTIVE_PER_MEMCG (8u << 10)
uint64_t reclaim_active_allowance(const char *memory_stat, uint64_t dying);

/*
 * reclaim_message - pure: the Event's, the log's and the report's line for the reclaim recorded
 * in @s, into @buf: "vm.drop_caches=1 freed 56 of 65 dying memcgs (9 left) in 1.2 s",
 * "dry-run: would reclaim with vm.drop_caches=1: 65 dying memcgs", or the refusal with its
 * reason and what to grant. Returns @buf.
 */
char *reclaim_message(const struct reclaim_state *s, char *buf, size_t size);

#endif
