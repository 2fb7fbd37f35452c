/* SPDX-License-Identifier: MIT */
#ifndef CZ_MEMCG_H
#define CZ_MEMCG_H

/*
 * Dying ("zombie") memory cgroups: pure parsers of what the kernel exposes, and the verdict.
 *
 * A memcg removed with rmdir stays allocated while any page it charged (page cache, slab) is
 * still around: the kernel counts it, kubelet/cAdvisor stat walks pay for it, but it has no
 * directory any more. So:
 *   cgroup v1 (and hybrid): dying = /proc/cgroups num_cgroups(memory) - directories in the
 *                            memory hierarchy (both count the root).
 *   cgroup v2:              root cgroup.stat nr_dying_subsys_memory / nr_subsys_memory (6.12+),
 *                            else nr_dying_descendants / nr_descendants + 1 (all controllers).
 * Nothing here walks per-memcg files: that walk is the very cost being hunted.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/npd.h"
#include "base/state.h"

struct memcg_controller {
	uint64_t hierarchy;   /* 0: not bound to a v1 hierarchy (v2, or unmounted) */
	uint64_t num_cgroups; /* live + dying memcgs, root included */
	bool enabled;
};

/*
 * memcg_parse_proc_cgroups - find the "memory" row of /proc/cgroups text. Columns are located
 * by the header ("#subsys_name hierarchy num_cgroups enabled"), so a kernel adding a column
 * does not break us. Returns 0 and fills *@ret, -ENODATA when there is no memory row, -EINVAL
 * for a missing header or short row, -ERANGE for a number that overflows. *@ret untouched on
 * failure.
 */
int memcg_parse_proc_cgroups(const char *text, struct memcg_controller *ret);

struct memcg_cgstat {
	uint64_t nr_descendants, nr_dying_descendants;
	bool has_subsys_memory; /* 6.12+: nr_subsys_memory / nr_dying_subsys_memory present */
	uint64_t nr_subsys_memory, nr_dying_subsys_memory;
};

/*
 * memcg_parse_cgroup_stat - parse a cgroup v2 cgroup.stat. nr_descendants and
 * nr_dying_descendants are required (-EINVAL without them); the per-subsystem memory counters
 * are optional. Unknown keys are skipped (the file grows with the kernel). *@ret untouched on
 * failure.
 */
int memcg_parse_cgroup_stat(const char *text, struct memcg_cgstat *ret);

/*
 * memcg_parse_meminfo_percpu - the Percpu line of /proc/meminfo in bytes (kB = 1024).
 * Returns 0, -ENODATA when absent (kernels before 4.16), -EINVAL when malformed.
 */
int memcg_parse_meminfo_percpu(const char *text, uint64_t *ret_bytes);

/*
 * memcg_parse_osrelease - "5.4.0-1103-aws" -> 5, 4. Returns 0 or -EINVAL.
 */
int memcg_parse_osrelease(const char *text, unsigned *ret_major, unsigned *ret_minor);

/*
 * memcg_find_mount - scan /proc/PID/mountinfo text for the cgroup v1 hierarchy carrying the
 * memory controller (@v2 false) or the cgroup2 mount (@v2 true), and write its mount point
 * relative to the host /sys root ("fs/cgroup/memory") into @buf. Octal escapes are decoded.
 * Returns 0, -ENOENT when there is no such mount, -EXDEV when it is mounted outside /sys, or
 * -ENAMETOOLONG.
 */
int memcg_find_mount(const char *mountinfo, bool v2, char *buf, size_t size);

enum memcg_source {
	MEMCG_V1,	   /* num_cgroups - directories */
	MEMCG_V2_SUBSYS,   /* nr_dying_subsys_memory */
	MEMCG_V2_DESCENDANTS, /* nr_dying_descendants: every controller's dying cgroups */
};

struct memcg_reading {
	enum memcg_source source;
	uint64_t live, dying;
	bool has_percpu;
	uint64_t percpu_bytes;
	bool has_growth;
	double growth_per_hour; /* dying memcgs per hour, from stored history */
	bool has_kernel;
	unsigned kernel_major, kernel_minor;
	bool exposed;		/* memcg_exposed(), set with the kernel release by the reader */
	char hierarchy[256];	/* where the hierarchy read is mounted (sys root), or "" */
	char hint[128];		/* e.g. "top restarts: ecs.service=4211", or "" */
	char census[160];	/* the agent's census: "69790 were a/b, 1GiB pinned", or "" */
	char where[80];		/* cgroup v2: "most under system.slice (12000)", or "" */
};

/*
 * memcg_exposed - cgroup v1 memory on a kernel before 5.8: every read of the root
 * memory.numa_stat walks all dying memcgs (fixed in 5.8; memory.stat was fixed in 5.2).
 */
bool memcg_exposed(const struct memcg_reading *r);

/*
 * memcg_ratio - dying per live memcg, the number the verdict compares with max_ratio (no live
 * memcg counts as one, so the ratio stays finite). Every output uses this one.
 */
double memcg_ratio(const struct memcg_reading *r);

/*
 * memcg_verdict - problem when dying >= min_dying AND dying/live >= max_ratio (both, so a tiny
 * hierarchy with 80 dying / 3 live is not an alarm). Writes the one-line message, most
 * important first. Returns the status.
 */
int memcg_verdict(const struct memcg_reading *r, const struct cz_config *cfg,
		  struct npd_result *res);

/* ---- growth history (the payload of the "memcg" state file) ---- */

#define MEMCG_HISTORY_MAX 64
#define MEMCG_HISTORY_SPACING_MS (5 * 60 * 1000) /* 64 samples span 5h20m */

struct memcg_sample {
	uint64_t t_ms, dying;
};

struct memcg_history {
	size_t n;
	struct memcg_sample s[MEMCG_HISTORY_MAX]; /* oldest first */
};

/*
 * memcg_history_parse - "s <t_ms> <dying>" lines. Returns 0 or -EINVAL (the caller starts a new
 * history); *@ret untouched on failure.
 */
int memcg_history_parse(const char *text, struct memcg_history *ret);

/*
 * memcg_history_add - append (now, dying) unless the newest sample is younger than
 * MEMCG_HISTORY_SPACING_MS; drop samples from the future (clock stepped back) and the oldest
 * when full. Returns true when the history changed (and so must be saved): most NPD runs
 * change nothing and write nothing, which keeps a check at the exec floor.
 */
bool memcg_history_add(struct memcg_history *h, uint64_t now_ms, uint64_t dying);

/*
 * memcg_history_growth - dying memcgs per hour between the oldest sample of the last 6 hours
 * (at least 10 minutes old) and now, ignoring counts above INT32_MAX (the kernel keeps them in
 * an int: a larger one is a damaged state file). Returns true and writes *@ret, or false when
 * there is not enough history.
 */
bool memcg_history_growth(const struct memcg_history *h, uint64_t now_ms, uint64_t dying,
			  double *ret);

/* memcg_history_format - the payload text; returns bytes written (cut at @size). */
size_t memcg_history_format(const struct memcg_history *h, char *buf, size_t size);

/* The "memcg" state file (STATE_MEMCG, base/state.h) holds a struct memcg_history. */
struct state_type;
struct state_txn;
extern const struct state_type memcg_history_state;
/* memcg_history_state_read, _begin, _commit, _write: STATE_CODEC's typed calls (base/state.h) */
int memcg_history_state_read(const char *dir, const struct state_type *t,
			     struct memcg_history *obj);
int memcg_history_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
			      struct memcg_history *obj);
int memcg_history_state_commit(struct state_txn *txn, const struct memcg_history *obj);
int memcg_history_state_write(const char *dir, const struct state_type *t,
			      const struct memcg_history *obj);

#endif
