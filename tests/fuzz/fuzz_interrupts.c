/* SPDX-License-Identifier: MIT */
/* libFuzzer: irq_parse_interrupts and irq_queue_from_name on arbitrary text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/irq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct irq_line lines[32];
	char *s = malloc(size + 1);
	int n;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	n = irq_parse_interrupts(s, lines, 32);
	for (int i = 0; i < n && i < 32; i++)
		(void)irq_queue_from_name(lines[i].name, "eth0", "virtio2");
	(void)irq_queue_from_name(s, "eth0", "virtio2");
	free(s);
	return 0;
}
