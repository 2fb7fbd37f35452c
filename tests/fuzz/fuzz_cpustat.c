/* SPDX-License-Identifier: MIT */
/* libFuzzer: cpustat_parse + cpustat_share on arbitrary /proc/stat text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpustat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cpustat_core a[64], b[64];
	char *s = malloc(size + 1);
	int n;
	double pct;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	n = cpustat_parse(s, a, 64);
	if (n > 0 && cpustat_parse(s + size / 2, b, 64) > 0)
		for (int i = 0; i < n; i++)
			(void)cpustat_share(&a[i], &b[i], (enum cz_cpu_metric)(i % 3), &pct);
	free(s);
	return 0;
}
