/* SPDX-License-Identifier: MIT */
/* libFuzzer: irq_parse_cpulist (effective_affinity_list / smp_affinity_list text). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/irq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t mask[IRQ_MASK_WORDS];
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)irq_parse_cpulist(s, mask, IRQ_MASK_WORDS);
	(void)irq_parse_cpulist(s, mask, 1);
	free(s);
	return 0;
}
