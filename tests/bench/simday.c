/* SPDX-License-Identifier: MIT */
/*
 * simday RUN_DIR NCPU: a simulated day of the agent's run-dir files, written through the
 * agent's own code (history.c), as fast as the CPU allows:
 *   - the per-core ring with cpu.history 24h at cpu.interval 250ms: 345,600 samples, flushed
 *     every 4 samples (once a second, like the agent);
 *   - the burst log: one burst a minute all day (1,440), every field at a realistic length.
 * Prints "key value" lines: the ring's size against the formula, the valid samples read back,
 * the burst log's size after HISTORY_EVENTS_MAX events and after the day, the events read back,
 * and the CPU time each part took (user + sys, from getrusage).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cpu/history.h"

#define DAY_MS (24ull * 3600 * 1000)
#define INTERVAL_MS 250ull
#define T0_MS 1767225600000ull /* 2026-01-01T00:00:00Z */

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
	       ru.ru_stime.tv_usec / 1e3;
}

static long long file_size(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) < 0 ? -errno : (long long)st.st_size;
}

static int ring_day(const char *run, unsigned ncpu)
{
	struct history_ring r;
	struct history_series s = { 0 };
	uint64_t slots = DAY_MS / INTERVAL_MS, i;
	uint8_t *pct = calloc(ncpu, 1);
	double t;
	int n;

	if (!pct || history_ring_open(run, ncpu, DAY_MS, INTERVAL_MS, &r) < 0)
		return -1;
	t = cpu_ms();
	for (i = 0; i < slots; i++) {
		for (unsigned c = 0; c < ncpu; c++)
			pct[c] = (uint8_t)((i * 7 + c * 13) % 101);
		if (history_ring_add(&r, T0_MS + i * INTERVAL_MS, pct) < 0 ||
		    (i % 4 == 3 && history_ring_flush(&r) < 0))
			return -1;
	}
	history_ring_close(&r);
	printf("ring_write_cpu_ms %.1f\n", cpu_ms() - t);
	printf("ring_samples_written %llu\n", (unsigned long long)slots);
	printf("ring_bytes %lld\n", file_size(run, HISTORY_FILE));
	printf("ring_formula_bytes %llu\n", (unsigned long long)history_file_size(ncpu, slots));
	n = history_read(run, 0, &s);
	printf("ring_samples_read %d\n", n);
	history_series_free(&s);
	free(pct);
	return n < 0 ? -1 : 0;
}

static void fill_event(struct burst_event *ev, unsigned i, unsigned ncpu)
{
	memset(ev, 0, sizeof(*ev));
	ev->cpu = i % ncpu;
	ev->start_ms = T0_MS + i * 60000ull;
	ev->end_ms = ev->start_ms + 4750;
	ev->peak_pct = 100;
	ev->mean_pct = 97.5;
	ev->metric = CZ_METRIC_SYSTEM;
	snprintf(ev->irqs, sizeof(ev->irqs), "27,28,29,30");
	ev->ntasks = HISTORY_TASKS_MAX;
	for (unsigned t = 0; t < HISTORY_TASKS_MAX; t++) {
		ev->task[t].pid = 4000 + (int)t;
		ev->task[t].tid = 4100 + (int)t;
		snprintf(ev->task[t].comm, sizeof(ev->task[t].comm), "kubelet-%u", t);
		ev->task[t].stime_ms = 4000 - t * 500;
	}
	snprintf(ev->stack, sizeof(ev->stack), "mem_cgroup_iter<mem_cgroup_nr_lru_pages<"
		 "memcg_numa_stat_show<seq_read_iter<vfs_read<ksys_read<do_syscall_64");
}

static int log_day(const char *run, unsigned ncpu)
{
	struct burst_event ev;
	struct burst_event *back = calloc(HISTORY_EVENTS_MAX, sizeof(*back));
	unsigned per_day = (unsigned)(DAY_MS / 60000);
	double t = cpu_ms();
	int n;

	if (!back)
		return -1;
	for (unsigned i = 0; i < per_day; i++) {
		fill_event(&ev, i, ncpu);
		if (burst_log_append(run, &ev) < 0)
			return -1;
		if (i + 1 == HISTORY_EVENTS_MAX)
			printf("log_bytes_at_max %lld\n", file_size(run, HISTORY_BURSTS));
	}
	printf("log_append_cpu_ms_each %.3f\n", (cpu_ms() - t) / per_day);
	printf("log_events_appended %u\n", per_day);
	printf("log_bytes_after_day %lld\n", file_size(run, HISTORY_BURSTS));
	n = burst_log_read(run, 0, back, HISTORY_EVENTS_MAX);
	printf("log_events_read %d\n", n);
	printf("log_events_max %d\n", HISTORY_EVENTS_MAX);
	free(back);
	return n < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	unsigned ncpu;

	if (argc != 3 || (ncpu = (unsigned)strtoul(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: simday RUN_DIR NCPU\n");
		return 2;
	}
	if (ring_day(argv[1], ncpu) < 0 || log_day(argv[1], ncpu) < 0) {
		fprintf(stderr, "simday: failed in '%s'\n", argv[1]);
		return 1;
	}
	return 0;
}
