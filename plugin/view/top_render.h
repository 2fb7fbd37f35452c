/* SPDX-License-Identifier: MIT */
#ifndef CZ_TOP_RENDER_H
#define CZ_TOP_RENDER_H

/*
 * `cpuzombie top`'s screen, pure: a model of what the node says now (filled by cmd/cmd_top.c
 * from the run dir, or from its own inline sampler when no agent runs) into text. No I/O, no
 * clock, no terminal state: the caller writes the text and owns the terminal.
 *
 * The screen (top_render): a title line (node, time, where the data comes from, "paused"), one
 * row per core with its share as a bar and a heatmap line of its last samples (oldest left,
 * one cell per sample: " .:-=+*#%@" by share), a bursting core highlighted and followed by a
 * row with its burst: length so far, top task, the kernel function of its profile, the NIC
 * queue it serves; then the node's dying memcgs, the ENA counters that moved, the last
 * kernel-log events. Rows are cut at the width, the screen at the height (the bursting cores'
 * rows are kept before the others). With @color, ANSI SGR highlights; without, none.
 * The line (top_render_line): one plain line of the same (not a TTY: one a second).
 *
 * Every outside string (task names, kernel messages, interface and counter names) passes
 * through textsafe (TEXTSAFE_TEXT): no byte from a task name reaches the terminal raw.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpu/history.h"

#define TOP_HEAT_MAX 512   /* samples kept per core for the heatmap line */
#define TOP_EVENTS_MAX 4   /* kernel-log events shown */
#define TOP_ENA_MAX 4      /* moving ENA counters shown */
#define TOP_BURSTS_MAX 8   /* bursts shown */

struct top_ena_move {
	char ifname[32];
	char counter[64];
	uint64_t delta;
};

struct top_model {
	uint64_t now_ms;	   /* CLOCK_REALTIME, for the title */
	char node[256];		   /* "" = unknown */
	char source[400];	   /* "agent pid 123" or "inline sampling (no agent: ...)" */
	bool paused;
	double threshold_pct;	   /* cpu.threshold_pct: a bar at or above it is hot */
	const char *metric;	   /* "sys", "sys+irq", "busy" */
	unsigned ncpu;
	const uint8_t *shares;	   /* ncpu: the last sample, 0..100 or HISTORY_NO_SAMPLE */
	const uint8_t *heat;	   /* nheat * ncpu, oldest first: heat[i * ncpu + c] */
	size_t nheat;
	const struct burst_event *bursts; /* going on now */
	size_t nbursts;
	bool have_memcg;
	uint64_t dying, live;
	char memcg_note[160];	   /* why no memcg reading, or "" */
	struct top_ena_move ena[TOP_ENA_MAX];
	size_t nena;
	char ena_note[96];	   /* "no ENA interface", "counters read every 5s", ... */
	const char
		*events[TOP_EVENTS_MAX]; /* kernel-log messages, newest last (raw: escaped here) */
	char event_time[TOP_EVENTS_MAX][12];
	size_t nevents;
};

/*
 * top_render - the screen for @cols x @rows into @buf (NUL-terminated): rows separated by "\r\n",
 * each ended by "erase to end of line", the screen by "erase below", after "cursor home".
 * Returns the length, or -ENOBUFS (@size too small for even the title).
 */
ssize_t top_render(const struct top_model *m, unsigned cols, unsigned rows, bool color,
		   char *buf, size_t size);

/* top_render_line - one plain line (no escape, no newline) of @m into @buf; returns the length. */
ssize_t top_render_line(const struct top_model *m, char *buf, size_t size);

/* top_heat_cell - pure: the heatmap character of a share (HISTORY_NO_SAMPLE: ' '... '?'). */
char top_heat_cell(uint8_t share);

#endif
