/* SPDX-License-Identifier: MIT */
#ifndef CZ_CANARY_H
#define CZ_CANARY_H

/*
 * The memcg read-latency canary: time one read of the root memory.numa_stat (cgroup v1) or the
 * root memory.stat (v2), the file runc/cAdvisor read for kubelet on every stats pass. On cgroup
 * v1 before 5.8 that read walks every dying memcg (0.7 s at 10,000), so its latency is what
 * kubelet pays for the zombies, measured rather than inferred.
 *
 * The read itself costs what it measures, so it is rate-limited by memcg.latency_canary (state
 * file "canary": the last time and result) and run only by the agent and the report, never by
 * `check memcg` (NPD's hot path).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/hostfs.h"
#include "base/state.h"

struct memcg_reading; /* memcg/memcg.h */

#define CANARY_STATE "canary" /* STATE_CANARY */

struct canary_result {
	uint64_t t_ms;		/* when the read was timed (CLOCK_REALTIME) */
	uint64_t read_us;	/* how long the open+read took */
	uint64_t bytes;		/* file size read */
	int err;		/* 0, or -errno of the read (then read_us is meaningless) */
	char file[96];		/* relative to the sys root: "fs/cgroup/memory/memory.numa_stat" */
	bool fresh;		/* read now (false: the stored result, rate limit in force) */
};

/* canary_parse - pure: the state payload into *@ret. Returns 0 or -EINVAL (untouched). */
int canary_parse(const char *text, struct canary_result *ret);

/* canary_format - pure: the state payload; returns bytes written (cut at @size). */
size_t canary_format(const struct canary_result *c, char *buf, size_t size);

/*
 * canary_file - the file to time, relative to the sys root, from /proc/cgroups and mountinfo
 * read through @hf. Returns 0 or -errno (-ENODATA: no memory controller).
 */
int canary_file(const struct hostfs *hf, char *buf, size_t size);

/*
 * canary_run - the stored result when it is younger than @every_ms, else time one read now and
 * store it (locked, atomic; @state_flags as base/state.h's: STATE_READ_ONLY stores nothing).
 * @every_ms 0 = off: returns -ECANCELED. Returns 0 and fills *@ret
 * (a failed read is a result too: ret->err), or -errno when there is nothing to report.
 * @seen: memcg_read()'s reading of this cycle (its hierarchy is the one timed, as canary_file()
 * would find it), or NULL: canary_file() finds it.
 */
int canary_run(const struct hostfs *hf, const char *state_dir, unsigned state_flags,
	       uint64_t every_ms, uint64_t now_ms, const struct memcg_reading *seen,
	       struct canary_result *ret);

/* The "canary" state file (STATE_CANARY, base/state.h) holds a struct canary_result. */
struct state_type;
struct state_txn;
extern const struct state_type canary_state;
/* canary_state_read, _begin, _commit, _write: STATE_CODEC's typed calls (base/state.h) */
int canary_state_read(const char *dir, const struct state_type *t, struct canary_result *obj);
int canary_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
		       struct canary_result *obj);
int canary_state_commit(struct state_txn *txn, const struct canary_result *obj);
int canary_state_write(const char *dir, const struct state_type *t,
		       const struct canary_result *obj);

#endif
