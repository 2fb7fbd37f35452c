/* SPDX-License-Identifier: MIT */
#ifndef CZ_TASKS_H
#define CZ_TASKS_H

/*
 * Who ran on a hot core: the system time each thread gained while a core was in a burst.
 *
 * /proc/<pid>/task/<tid>/stat gives a thread's cumulative stime (field 15, clock ticks) and the
 * CPU it last ran on (field 39, "processor"). The tracker rescans every thread while some core
 * is hot and attributes each thread's stime gained since the previous scan to the core it is on
 * now; a thread born between scans gained all of its stime then. For each watched core it keeps
 * the threads with the most attributed time, and reads the kernel stack
 * (/proc/<pid>/task/<tid>/stack, root only, CONFIG_STACKTRACE) of the thread that gained most in
 * the latest scan: for the memcg case it shows mem_cgroup_* frames without a profiler. A thread
 * that migrates between scans has that interval counted on its new core: an approximation
 * bounded by the scan period.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/hostfs.h"

#define TASKS_MAX 262144 /* threads per scan; the rest are not looked at */
#define TASKS_TOP 16	 /* candidates kept per core before tasks_take() picks the top */

/* A thread that ran on a hot core (a burst's culprits, in the burst log). */
struct burst_task {
	int pid, tid;
	char comm[17];	   /* TASK_COMM_LEN 16 */
	uint64_t stime_ms; /* system time on the burst's core during the burst */
};


struct task_stat {
	int pid, tid;
	char comm[17];
	uint64_t stime; /* clock ticks */
	int cpu;	/* processor, -1 when the kernel is too old to have it */
};

/*
 * tasks_parse_stat - pure: a /proc/<pid>/task/<tid>/stat line. comm is between the first '('
 * and the last ')' (it may contain spaces and parentheses). Returns 0 and fills *@ret (pid is
 * left to the caller: the line holds the tid), -EINVAL on malformed input; *@ret untouched then.
 */
int tasks_parse_stat(const char *buf, struct task_stat *ret);

/*
 * tasks_parse_stack - pure: a /proc/<pid>/stack text ("[<0>] func+0x1a/0x40") to "func<func<..."
 * (innermost first) in @buf of @size. Returns the number of frames, or -EINVAL when a line is
 * not in that form.
 */
int tasks_parse_stack(const char *text, char *buf, size_t size);

struct tasks_core {
	size_t n;
	struct burst_task top[TASKS_TOP]; /* stime_ms here holds clock ticks until taken */
	char stack[256];
};

struct tasks_tracker {
	unsigned ncpu;
	long hz;
	bool have_prev;
	size_t nprev, capprev, capcur;
	struct task_stat *prev, *cur; /* sorted by tid; cur is tasks_scan's scratch */
	struct tasks_core *core;      /* ncpu entries */
};

/* tasks_tracker_init - allocate for @ncpu CPUs. Returns 0 or -ENOMEM. */
int tasks_tracker_init(struct tasks_tracker *t, unsigned ncpu);

/* tasks_tracker_free - free everything; safe on a zeroed tracker. */
void tasks_tracker_free(struct tasks_tracker *t);

/*
 * tasks_scan - read every thread's stat under /proc and attribute stime gained since the last
 * scan to cores with @watch[cpu] set (@watch has ncpu entries). The first scan after
 * tasks_forget() only takes a baseline. Returns the number of threads read or -errno.
 */
int tasks_scan(struct tasks_tracker *t, const struct hostfs *hf, const bool *watch);

/*
 * tasks_account - pure part of tasks_scan: attribute @cur (sorted by tid, @n entries) against
 * the previous scan, then make @cur the previous scan. Returns, in *@ret_best, for each watched
 * core (ncpu entries) the index in @cur of the thread that gained most in this scan (-1 if
 * none); @ret_best may be NULL. @cur is copied: the caller keeps it.
 */
void tasks_account(struct tasks_tracker *t, struct task_stat *cur, size_t n, const bool *watch,
		   int *ret_best);

/* tasks_forget - drop the baseline (no core is hot any more). */
void tasks_forget(struct tasks_tracker *t);

/* tasks_reset_core - forget what was attributed to @cpu (a new run starts there). */
void tasks_reset_core(struct tasks_tracker *t, unsigned cpu);

/*
 * tasks_take - the top threads of @cpu (most stime first, at most @max, stime in ms) into @ret
 * and its last stack into @stack (@stack_size bytes, "" when none); then resets the core.
 * Returns the number of threads written.
 */
size_t tasks_take(struct tasks_tracker *t, unsigned cpu, struct burst_task *ret, size_t max,
		  char *stack, size_t stack_size);

/*
 * tasks_peek - like tasks_take without the stack and without resetting the core: the top threads
 * of a burst still going on (the heartbeat shows them). Returns the number written.
 */
size_t tasks_peek(const struct tasks_tracker *t, unsigned cpu, struct burst_task *ret, size_t max);

#endif
