/* SPDX-License-Identifier: MIT */
/* libFuzzer: /proc/<pid>/task/<tid>/stat and stack parsers, and the burst log parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/history.h"
#include "host/tasks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct burst_event ev[8];
	struct task_stat st;
	char stack[256], *s = malloc(size + 1);
	struct heartbeat *hb = malloc(sizeof(*hb));

	if (!s || !hb)
		goto out;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)tasks_parse_stat(s, &st);
	(void)tasks_parse_stack(s, stack, sizeof(stack));
	(void)burst_log_parse(s, 0, ev, 8);
	(void)heartbeat_parse(s, hb);
out:
	free(hb);
	free(s);
	return 0;
}
