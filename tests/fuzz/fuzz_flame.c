/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: a burst's profile as `flame` and `report --html` read it back from the run dir:
 * the input is a folded-stacks file, then a NUL, then its ".times" file (folded_times_parse).
 * flame_build merges them; what it builds is rendered as the standalone SVG and as the page's
 * data block. Invariants: no crash, no read past the input; the tree's samples add up (the
 * root's total is the sum of every node's own), every time points at a node, and the data
 * block holds no '<' or '&' (it must not end its element or open markup).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/folded.h"
#include "cpu/history.h"
#include "view/flame.h"
#include "view/flame_svg.h"
#include "view/html.h"
#include "view/html_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render(const struct flame *fl)
{
	struct burst_event ev = { .cpu = 1, .start_ms = 1000 };
	struct html_burst b = { .ev = &ev, .fl = fl };
	struct html_data *d = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	if (flame_svg_write(fl, "fuzz", f) != 0)
		abort();
	if (html_data_build(&b, 1, 1 << 22, &d) == 0) {
		fflush(f);
		size_t at = len;

		html_data_write(d, f);
		fflush(f);
		for (size_t i = at; i < len; i++)
			if (buf[i] == '&' || (buf[i] == '<' && i != at && i != len - 10))
				abort();
		html_data_free(d);
	}
	fclose(f);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(text, '\0', size);
	size_t flen = nul ? (size_t)(nul - text) : size;
	struct flame *fl = NULL;
	uint64_t self = 0;

	if (flame_build(text, flen, nul ? nul + 1 : NULL, nul ? size - flen - 1 : 0, &fl) != 0)
		return 0;
	for (size_t i = 0; i < fl->nnodes; i++)
		self += fl->node[i].self;
	if (self != fl->node[0].total)
		abort();
	for (size_t i = 0; i < fl->ntimes; i++)
		if (fl->times[i].node >= fl->nnodes)
			abort();
	render(fl);
	flame_free(fl);
	return 0;
}
