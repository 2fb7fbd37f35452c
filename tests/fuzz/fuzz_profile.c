/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the burst profiler's parsers. The first byte picks one: a perf ring-buffer
 * PERF_RECORD_SAMPLE (perf_sample_parse), a /proc/kallsyms image (kallsyms_parse + lookups), or a
 * folded-stacks file as check cpu and report read it back from the run dir (folded_parse,
 * folded_hot_frame), and a fold built from the input's lines must format and parse back with the
 * same sample count. Invariants: no crash, no read past the input, outputs consistent.
 */
#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/folded.h"
#include "host/kallsyms.h"
#include "host/perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void folded(const char *text, size_t len)
{
	struct hot_frame h;
	struct folded_line l[32];
	struct fold *f = NULL;
	static char out[8192];
	uint64_t sum = 0;
	int n = folded_parse(text, len, l, 32);

	if (folded_hot_frame(text, len, &h) == 0 && (h.samples > h.total || !h.frame[0]))
		abort();
	if (n < 0 || fold_new(8, &f) < 0)
		return;
	for (int i = 0; i < n; i++) { /* frames = the line's ';'-separated parts, as given */
		char buf[512];
		const char *fr[64];
		size_t nf = 0;

		snprintf(buf, sizeof(buf), "%.*s", (int)l[i].len, l[i].stack);
		for (char *save = NULL, *t = strtok_r(buf, ";", &save); t && nf < 64;
		     t = strtok_r(NULL, ";", &save))
			fr[nf++] = t;
		if (nf && fold_add(f, fr[0], fr + 1, nf - 1, l[i].count % 1000) == 0)
			sum += l[i].count % 1000;
	}
	{
		ssize_t w = fold_format(f, out, sizeof(out));
		struct folded_line back[FOLD_STACKS_MAX];
		uint64_t again = 0;
		int m;

		if (w >= 0) {
			m = folded_parse(out, (size_t)w, back, FOLD_STACKS_MAX);
			if (m < 0)
				abort(); /* what we write must read back */
			for (int i = 0; i < m; i++)
				again += back[i].count;
			if (again != sum)
				abort(); /* counts add up, "[truncated]" included */
		}
	}
	fold_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: {
		struct perf_sample s;

		if (perf_sample_parse(data + 1, size - 1, &s) == 0 && s.nips > PERF_STACK_MAX)
			abort();
		break;
	}
	case 1: {
		struct kallsyms ks = { 0 };

		if (kallsyms_parse((const char *)data + 1, size - 1, &ks) > 0) {
			const char *mod = NULL;

			/* ascending, unique, each finds itself, names inside the string block */
			for (size_t i = 0; i < ks.n; i++)
				if ((i > 0 && kallsyms_addr(&ks, i - 1) >= kallsyms_addr(&ks, i)) ||
				    ks.name[i] >= ks.strings_len ||
				    kallsyms_lookup(&ks, kallsyms_addr(&ks, i), &mod) !=
					    ks.strings + ks.name[i] || !mod)
					abort();
			(void)kallsyms_lookup(&ks, 0, NULL);
			(void)kallsyms_lookup(&ks, UINT64_MAX, NULL);
		}
		kallsyms_free(&ks);
		break;
	}
	default:
		folded((const char *)data + 1, size - 1);
	}
	return 0;
}
