/* SPDX-License-Identifier: MIT */
/*
 * The YAML configuration loader: any bytes give 0 or an error list, never a crash - and never
 * take long. Each input is tried twice: as it is, and (the first byte choosing how much) its
 * remaining bytes repeated up to the 1 MiB size cap, so the shapes that only hurt when large
 * (40k keys, 40k-deep flows, 60k anchors, 40k %TAG lines: issue 16) are tried at the size a
 * real file may have. fuzz_config.flags gives this target a per-input time limit of a second,
 * so a superlinear shape is a fuzzer timeout, not a slow run.
 */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

#define CAP (1024 * 1024)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void load(const char *text, size_t len)
{
	struct cz_config cfg;
	char errs[2048];

	(void)config_load_string("fuzz", text, len, &cfg, errs, sizeof(errs));
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static char *big;
	size_t unit, want, n = 0;

	load((const char *)data, size);
	if (size < 2)
		return 0;
	if (!big && !(big = malloc(CAP)))
		return 0;
	unit = size - 1;
	want = (size_t)1 << (10 + data[0] % 11); /* 1 KiB .. 1 MiB */
	for (; n + unit <= want; n += unit)
		memcpy(big + n, data + 1, unit);
	if (n > unit)
		load(big, n);
	return 0;
}
