/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the node model's run-dir loaders (report_load_run, report_load_window) on a run dir
 * made from the input, then every renderer (text, JSON, SVG). The input is a header, then the
 * heartbeat's payload and the burst log's payload separated by a NUL:
 *
 *   [0] ring CPUs - 1 (mod 16)   [1] ring samples (mod 32)   [2] flags: bit 0 a --since/--until
 *   window, bit 1 a host limit of 4 CPUs, bit 2 the clock stepped back 20 s halfway through the
 *   ring's samples   [3..10] --since, [11..18] --until (ms before NOW)
 *
 * The ring is written by the sampler's own writer (history_ring_open/add); the two state files
 * in their envelope, so a payload the parsers accept is what the report reads. Invariants: every
 * per-CPU array is r->ncpu long (the JSON's now_pct has r->ncpu entries; ASan sees any read
 * past one), r->ncpu stays within the host's limit, bursts[0..nlogged) are the logged ones and
 * the heartbeat's bursts kept by a window stay ongoing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/state.h"
#include "cpu/history.h"
#include "node/model.h"
#include "view/render.h"
#include "node/report_window.h"
#include "view/svg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW 1714564800000ULL /* 2024-05-01 12:00:00 UTC: the seeds' payloads are around it */

static struct cz_config cfg;
static char dir[64];

/* The run dir is the fuzzer's own: removed when it exits. */
static void remove_dir(void)
{
	static const char *const names[] = { HISTORY_FILE, HISTORY_HEARTBEAT, HISTORY_BURSTS };
	char path[128];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static uint64_t take64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put_state(const char *name, const char *payload, size_t len)
{
	char path[128], head[64], tail[32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		__builtin_trap();
	snprintf(head, sizeof(head), "cpuzombie-state 1 %s\n", name);
	snprintf(tail, sizeof(tail), "end %08x\n", state_crc32(payload, len));
	fputs(head, f);
	fwrite(payload, 1, len, f);
	fputs(tail, f);
	fclose(f);
}

static void put_ring(unsigned ncpu, unsigned n, bool step_back, const uint8_t *pct,
		     size_t avail)
{
	struct history_ring ring;
	char path[128];
	uint8_t row[16];

	snprintf(path, sizeof(path), "%s/%s", dir, HISTORY_FILE);
	unlink(path); /* each input its own ring */
	if (history_ring_open(dir, ncpu, 900000, 1000, &ring) < 0)
		__builtin_trap();
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = NOW - (n - i) * 1000 - (step_back && i >= n / 2 ? 20000 : 0);

		for (unsigned c = 0; c < ncpu; c++)
			row[c] = avail ? pct[(i * ncpu + c) % avail] % 101 : 5;
		(void)history_ring_add(&ring, t, row);
	}
	history_ring_close(&ring);
}

static void render(const struct node_model *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_object *j, *now;

	if (!f)
		return;
	if (report_print(r, f) < 0)
		__builtin_trap();
	(void)svg_write(r, f);
	fclose(f);
	free(buf);
	j = report_json(r);
	if (!j)
		return;
	if (json_object_object_get_ex(json_object_object_get(j, "cores"), "now_pct", &now) &&
	    now && json_object_array_length(now) != r->ncpu)
		__builtin_trap();
	json_object_put(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *hb, *log, *end;
	struct node_model *r;
	unsigned ncpu, n, hb_active = 0;
	size_t hb_len;
	uint64_t since, until;

	if (size < 19)
		return 0;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/cz-fuzz-report-%ld", (long)getpid());
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			__builtin_trap();
		atexit(remove_dir);
		config_defaults(&cfg);
	}
	ncpu = data[0] % 16 + 1;
	n = data[1] % 32;
	since = NOW - take64(data + 3) % (7 * 86400000ULL);
	until = NOW - take64(data + 11) % (7 * 86400000ULL);
	hb = (const char *)data + 19;
	end = (const char *)data + size;
	log = memchr(hb, '\0', (size_t)(end - hb));
	hb_len = log ? (size_t)(log - hb) : (size_t)(end - hb);
	log = log ? log + 1 : end;
	put_ring(ncpu, n, data[2] & 4, data + 19, size - 19);
	put_state(HISTORY_HEARTBEAT, hb, hb_len);
	put_state(HISTORY_BURSTS, log, (size_t)(end - log));

	r = node_model_new(&cfg, NOW);
	if (!r)
		return 0;
	if (data[2] & 2)
		r->cpu_limit = 4;
	r->since_ms = NOW - cfg.cpu.lookback_ms;
	if (report_load_run(r, dir, NOW - cfg.cpu.history_ms) < 0)
		goto out;
	hb_active = (unsigned)(r->nbursts - r->nlogged);
	if ((data[2] & 1) && since < until) {
		unsigned kept = 0;

		for (size_t i = r->nlogged; i < r->nbursts; i++)
			kept += r->bursts[i].end_ms >= since && r->bursts[i].start_ms <= until;
		r->since_ms = since;
		if (report_load_window(r, dir, since, until) < 0)
			goto out;
		/* the heartbeat's bursts the window keeps are still going on */
		if (r->nbursts - r->nlogged != kept)
			__builtin_trap();
	} else if (r->nbursts - r->nlogged != hb_active) {
		__builtin_trap();
	}
	if (r->nlogged > r->nbursts || r->ncpu > (r->cpu_limit ? r->cpu_limit : 8192))
		__builtin_trap();
	for (size_t i = 1; r->hist_rc > 0 && i < r->hist.n; i++)
		if (r->hist.t_ms[i] <= r->hist.t_ms[i - 1])
			__builtin_trap(); /* a series is in time order */
	if (r->hist_rc > 0 && r->hist.n > 0) {
		/* node_read_now's fresh-ring case: the newest sample, sized to the model */
		r->now_pct = report_percpu_new(r, &r->hist.pct[(r->hist.n - 1) * r->hist.ncpu],
					       r->hist.ncpu);
		r->has_now = r->now_pct != NULL;
	}
	render(r);
out:
	node_model_free(r);
	return 0;
}
