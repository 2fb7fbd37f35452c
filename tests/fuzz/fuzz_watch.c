/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: a watch stream body as a server (or anything between) might send it, cut into
 * chunks at the first byte's choice, through the line splitter with a small cap, each line
 * through the event parser, each event's object through the remediator's cache trims. Never
 * crash, never hold more than the cap, never accept an event without a resourceVersion.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "kube/watch.h"
#include "remediator/remediator.h"

#define CAP 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_line(const char *line, size_t n, void *userdata)
{
	struct watch_event ev = { 0 };
	char err[256];

	(void)userdata;
	if (n > CAP)
		__builtin_trap();
	if (watch_event_parse(line, n, &ev, err, sizeof(err)) == 0) {
		if (ev.type != WATCH_ERROR && !ev.rv[0])
			__builtin_trap();
		json_object_put(remediator_node_trim(ev.object));
		json_object_put(remediator_lease_trim(ev.object));
	}
	watch_event_clear(&ev);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct watch_lines w;
	char err[256];
	size_t chunk;

	log_set_max_level((enum log_prio)0);
	if (size == 0)
		return 0;
	chunk = (size_t)data[0] + 1;
	data++, size--;
	watch_lines_init(&w, CAP);
	while (size > 0) {
		size_t k = size < chunk ? size : chunk;

		if (watch_lines_feed(&w, (const char *)data, k, on_line, NULL, err, sizeof(err)) < 0)
			break;
		if (watch_lines_pending(&w) > CAP)
			__builtin_trap();
		data += k, size -= k;
	}
	watch_lines_done(&w);
	return 0;
}
