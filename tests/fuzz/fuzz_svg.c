/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: svg_write_span() on a report whose history and bursts come from the input (times
 * anywhere in the 64-bit range, shares 0..255, bursts on cores with and without rows, inverted
 * and zero-length bursts, an explicit window or the automatic one). The history's times
 * increase, as history_parse() guarantees. Invariants: the return is 0, -EINVAL (window) or
 * -ENODATA (no cores); on 0 the document is one <svg> that ends it, of bounded size.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node/model.h"
#include "view/svg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cz_config cfg;

static uint64_t take64(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int i = 0; i < 8 && *p < end; i++, (*p)++)
		v = v << 8 | **p;
	return v;
}

static void render(const struct node_model *r, uint64_t from, uint64_t to)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int e;

	if (!f)
		return;
	e = svg_write_span(r, from, to, f);
	fclose(f);
	if (e != 0 && e != -EINVAL && e != -ENODATA && e != -ENOMEM)
		__builtin_trap();
	if (e == 0 && (len < 7 || strcmp(buf + len - 7, "</svg>\n") != 0 || len > (64u << 20)))
		__builtin_trap();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct node_model *r;
	uint64_t t, step;
	size_t n;

	if (size < 12)
		return 0;
	config_defaults(&cfg);
	cfg.cpu.interval_ms = data[0] % 4 == 0 ? 0 : 1 + data[0] * 17u;
	r = node_model_new(&cfg, take64(&p, end));
	if (!r)
		return 0;
	r->ncpu = r->hist.ncpu = *p++ % 9; /* 0: nothing to draw */
	n = *p++ % 64;
	t = take64(&p, end);
	r->hist.t_ms = calloc(n + 1, sizeof(uint64_t));
	r->hist.pct = calloc((n + 1) * (r->ncpu + 1), 1);
	r->bursts = calloc(REPORT_BURSTS_MAX + HISTORY_ACTIVE_MAX, sizeof(*r->bursts));
	if (!r->hist.t_ms || !r->hist.pct || !r->bursts)
		goto out;
	for (size_t i = 0; i < n && p < end; i++) {
		step = *p++;
		if (t > UINT64_MAX - step * step)
			break;
		t += step * step;	/* increasing, from 0 ms to ~65 s apart */
		r->hist.t_ms[i] = t;
		for (unsigned c = 0; c < r->ncpu && p < end; c++)
			r->hist.pct[i * r->ncpu + c] = *p++;
		r->hist.n = i + 1;
	}
	for (size_t i = 0; i < 12 && end - p >= 17; i++) {
		struct burst_event *ev = &r->bursts[r->nbursts++];

		ev->cpu = *p++ % 12;
		ev->start_ms = take64(&p, end);
		ev->end_ms = take64(&p, end);
		ev->peak_pct = ev->mean_pct = 100;
		ev->ntasks = 1;
		snprintf(ev->task[0].comm, sizeof(ev->task[0].comm), "<&'\">");
	}
	r->nlogged = r->nbursts / 2;
	render(r, 0, 0);
	if (end - p >= 16) {
		uint64_t a = take64(&p, end);

		render(r, a, take64(&p, end));
	}
out:
	node_model_free(r);
	return 0;
}
