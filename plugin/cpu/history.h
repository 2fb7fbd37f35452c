/* SPDX-License-Identifier: MIT */
#ifndef CZ_HISTORY_H
#define CZ_HISTORY_H

/*
 * The sampler's files under the run dir (--run-dir, /run/cpuzombie): the interface between
 * `cpuzombie agent` and `check cpu`, the report, the heatmap and the ENA check.
 *
 * cpu-history   binary per-core ring, fixed size: slots = cpu.history / cpu.interval.
 *               Header (64 bytes, little-endian as written by the host): "CZHIST1\n", u32
 *               version (1), u32 ncpu, u32 slots, u32 interval_ms, u32 slot_size, then zeros.
 *               Slot i (at 64 + i * slot_size) holds the sample with sequence number seq where
 *               seq % slots == i: u64 seq (0 = empty), u64 t_ms (CLOCK_REALTIME ms), u32 crc32
 *               of seq, t_ms and the bytes, then ncpu bytes: the share in percent 0..100, or 255
 *               when the CPU had no usable sample (offline, counter reset). The writer only ever
 *               rewrites whole slots in place, so a killed agent leaves at worst one slot with a
 *               bad checksum, which readers skip; a file whose header does not match the
 *               current CPU count or interval is recreated.
 * cpu-bursts    state file (state.h envelope, atomic replace, flock): at most HISTORY_EVENTS_MAX
 *               bursts, oldest first, one per line:
 *                 burst <cpu> <start_ms> <end_ms> <peak%> <mean%> <metric> irqs=<a,b|-> \
 *                 tasks=<pid>/<tid>/<comm>/<stime_ms>[,...]|- stack=<f1<f2<...|-> \
 *                 [profile=<file>|- hot=<frame>/<pct>|- why=<text>|-]
 *               times CLOCK_REALTIME ms; comm and stack are %XX-escaped outside [A-Za-z0-9._:+-].
 *               The last three (burst profiles, agent/profiler.h) are optional, so a log of an
 *               older agent still reads: profile names the folded-stacks file in the run dir
 *               (HISTORY_PROFILE_PREFIX...), hot its hottest kernel function and its share of
 *               the samples (cpu/folded.h), why the reason there is no profile.
 * cpu-heartbeat state file rewritten every HISTORY_HEARTBEAT_MS by the agent: "pid N",
 *               optional "host_pid N" and "boot_id B" (host/hostid.h: what liveness is judged
 *               by; a heartbeat of an older agent has neither), "time_ms T", "interval_ms I",
 * "metric M", "ncpu N", "stopped 0|1", and one
 *               "active <cpu> <start_ms> <end_ms> <peak%> <mean%> [tasks=...] [irqs=...]
 *               [profile=<file>] [hot=<frame>/<pct>]" per burst still going on, with the tasks
 *               seen on that core so far, the NIC IRQs it serves and its profile so far (the
 *               file its end will write, and its hottest kernel function), escaped as in
 *               cpu-bursts: a reader mid-burst names the same links as after it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "host/tasks.h" /* struct burst_task */

#define HISTORY_EVENTS_MAX 256
#define HISTORY_TASKS_MAX 5 /* tasks kept per burst */
#define HISTORY_HEARTBEAT_MS 2000
#define HISTORY_ACTIVE_MAX 64
#define HISTORY_NO_SAMPLE 255
#define HISTORY_FILE "cpu-history"
#define HISTORY_BURSTS "cpu-bursts"
#define HISTORY_PROFILE_PREFIX "cpu-profile-" /* + "<cpu>-<start_ms>.folded" */
/* + "<cpu>-<start_ms>.times": the time of each sample of that profile (cpu/folded.h) */
#define HISTORY_PROFILES_MAX 32		       /* profile files kept; older ones roll off */
#define HISTORY_HEARTBEAT "cpu-heartbeat"
/* A stamp later than now by more than this is damage, not a sample: readers drop it (a clock
 * stepped back, a file written by hand). The memcg history does the same (memcg.h). */
#define HISTORY_FUTURE_SLACK_MS 10000

struct burst_event {
	unsigned cpu;
	uint64_t start_ms, end_ms; /* CLOCK_REALTIME */
	double peak_pct, mean_pct;
	enum cz_cpu_metric metric;
	char irqs[160];		   /* NIC IRQs the core served, "" if none */
	size_t ntasks;
	struct burst_task task[HISTORY_TASKS_MAX]; /* most system time first */
	char stack[256];	   /* top task's kernel stack "f1<f2<...", "" if unreadable */
	char profile[64];	   /* folded-stacks file in the run dir, "" when none */
	char hot[96];		   /* the profile's hottest kernel function, "" when none */
	unsigned hot_pct;	   /* ...and its share of the profile's samples */
	char why[64];		   /* why there is no profile, "" when there is or none was tried */
};

struct heartbeat {
	int pid;		/* getpid(): of the agent's pid namespace */
	int host_pid;		/* its pid in --proc-root's namespace (hostid.h), 0 = unknown */
	char boot_id[40];	/* the boot it ran in, "" = unknown */
	uint64_t time_ms, interval_ms;
	enum cz_cpu_metric metric;
	unsigned ncpu;
	bool stopped;
	size_t nactive;
	struct burst_event active[HISTORY_ACTIVE_MAX]; /* no metric, stack or why */
};

/* ---- burst event log ---- */

/*
 * burst_log_format - pure: one event as its log line (with '\n') into @buf. Returns the length,
 * or -ENOBUFS when it does not fit.
 */
int burst_log_format(const struct burst_event *ev, char *buf, size_t size);

/*
 * burst_log_parse - pure: the events of a cpu-bursts payload that ended at or after @since_ms,
 * oldest first, at most @max (the newest are kept when there are more). Returns the number
 * stored or -EINVAL on a malformed line.
 */
int burst_log_parse(const char *payload, uint64_t since_ms, struct burst_event *ret, size_t max);

/*
 * burst_log_parse_range - the same, without the events that end after @until_ms (0: no limit):
 * stamps from the future are damage. Pure.
 */
int burst_log_parse_range(const char *payload, uint64_t since_ms, uint64_t until_ms,
			  struct burst_event *ret, size_t max);

/*
 * burst_log_append - add @ev to @run_dir/cpu-bursts under its lock, dropping the oldest beyond
 * HISTORY_EVENTS_MAX. A corrupt log starts afresh. Returns 0 or -errno.
 */
int burst_log_append(const char *run_dir, const struct burst_event *ev);

/*
 * burst_log_read - the events that ended at or after @since_ms and no later than now +
 * HISTORY_FUTURE_SLACK_MS (see burst_log_parse_range). Returns
 * the count (0 when there is no log yet) or -errno (-EBADMSG: the log was corrupt and moved
 * aside).
 */
int burst_log_read(const char *run_dir, uint64_t since_ms, struct burst_event *ret, size_t max);

/*
 * burst_log_claim - the writer's check of @run_dir/cpu-bursts at agent start: a file that is
 * corrupt or not ours (a FIFO, a symlink) is moved aside now, so readers find no log (no burst
 * yet) instead of an unreadable one until the first burst replaces it. Returns 0 or -errno.
 */
int burst_log_claim(const char *run_dir);

/*
 * history_profile_times - the name of the sample-times file beside the profile @name
 * ("....folded" -> "....times") into @buf. Returns 0, or -EINVAL when @name does not end in
 * ".folded" or the result does not fit. Pure.
 */
int history_profile_times(const char *name, char *buf, size_t size);

/* ---- heartbeat ---- */

/* heartbeat_format - pure: payload for @hb into @buf. Returns length or -ENOBUFS. */
int heartbeat_format(const struct heartbeat *hb, char *buf, size_t size);

/* heartbeat_parse - pure: the inverse. Returns 0 or -EINVAL; *@ret untouched on failure. */
int heartbeat_parse(const char *payload, struct heartbeat *ret);

/* heartbeat_write / heartbeat_read - the state file in @run_dir. 0 or -errno (-ENOENT). */
int heartbeat_write(const char *run_dir, const struct heartbeat *hb);
int heartbeat_read(const char *run_dir, struct heartbeat *ret);

/* ---- per-core ring ---- */

struct history_ring {
	int fd;
	unsigned ncpu, slots, interval_ms, slot_size;
	uint64_t next_seq;
	uint8_t *pending;   /* slots not yet written, contiguous by seq */
	unsigned npending, maxpending;
};

/*
 * history_ring_open - open or create @run_dir/cpu-history for @ncpu CPUs and @history_ms of
 * samples every @interval_ms (slots = history_ms / interval_ms, at least 1, at most 1<<20).
 * An existing file with the same geometry is continued. Returns 0 or -errno.
 */
int history_ring_open(const char *run_dir, unsigned ncpu, uint64_t history_ms,
		      uint64_t interval_ms, struct history_ring *ret);

/* history_ring_open_file - the same for the ring file @name in @run_dir (the tiers, tier.h). */
int history_ring_open_file(const char *run_dir, const char *name, unsigned ncpu,
			   uint64_t history_ms, uint64_t interval_ms, struct history_ring *ret);

/*
 * history_ring_add - queue one sample (@pct: ncpu bytes) taken at realtime @t_ms; written at
 * the next history_ring_flush() (or when the queue is full). Returns 0 or -errno.
 */
int history_ring_add(struct history_ring *r, uint64_t t_ms, const uint8_t *pct);

/* history_ring_flush - write queued slots with pwrite. Returns 0 or -errno. */
int history_ring_flush(struct history_ring *r);

/* history_ring_close - flush and close; safe on a closed/zeroed ring (fd 0 is never used). */
void history_ring_close(struct history_ring *r);

/* history_file_size - bytes the ring file takes for @ncpu CPUs and @slots slots. */
uint64_t history_file_size(unsigned ncpu, unsigned slots);

struct history_series {
	unsigned ncpu;
	size_t n;
	uint64_t *t_ms; /* n time stamps, increasing */
	uint8_t *pct;	/* n * ncpu shares: sample i, cpu c at pct[i * ncpu + c] */
};

/*
 * history_parse - pure: the valid samples at or after @since_ms of a whole ring file image,
 * in time order. On success fills *@ret (free with history_series_free) and returns the count;
 * -EINVAL for a bad header, -ENOMEM.
 */
int history_parse(const uint8_t *file, size_t len, uint64_t since_ms, struct history_series *ret);

/* history_parse_range - the same without the samples stamped after @until_ms (0: no limit). */
int history_parse_range(const uint8_t *file, size_t len, uint64_t since_ms, uint64_t until_ms,
			struct history_series *ret);

/* history_read - history_parse of @run_dir/cpu-history, without the samples stamped later than
 * now + HISTORY_FUTURE_SLACK_MS (one such slot stretched the heatmap to 106751970378 days).
 * -ENOENT when there is none. */
int history_read(const char *run_dir, uint64_t since_ms, struct history_series *ret);

/* history_read_file - the same for the ring file @name in @run_dir (the tiers, tier.h). */
int history_read_file(const char *run_dir, const char *name, uint64_t since_ms,
		      struct history_series *ret);

/* history_series_free - free the arrays; safe on a zeroed series. */
void history_series_free(struct history_series *s);

#endif
