/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: every state file as a reader meets it. The first byte picks the file (memcg history,
 * ENA state, the agent's burst log, its heartbeat); the rest is the payload, wrapped in a valid
 * state.h envelope (so the checksum is no barrier) and read back the way state_load() hands it
 * over (NUL-terminated). Whatever a payload parser accepts must format to text that parses and
 * formats again to the very same text (a reader never rewrites state it cannot reproduce).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ena/ena.h"
#include "cpu/history.h"
#include "memcg/memcg.h"
#include "base/state.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define FMT_MAX (HISTORY_EVENTS_MAX * 1024 + 4096)

static char fmt_a[FMT_MAX], fmt_b[FMT_MAX];
static struct burst_event ev[HISTORY_EVENTS_MAX];

static size_t memcg_text(const char *text, char *out)
{
	static struct memcg_history h;

	if (memcg_history_parse(text, &h) < 0)
		return 0;
	return memcg_history_format(&h, out, FMT_MAX);
}

static size_t ena_text(const char *text, size_t len, char *out)
{
	struct ena_state st;
	char *buf = NULL;
	ssize_t n;

	if (ena_state_parse(text, len, &st) < 0)
		return 0;
	n = ena_state_format(&st, &buf);
	ena_state_free(&st);
	if (n < 0 || (size_t)n >= FMT_MAX)
		__builtin_trap();
	memcpy(out, buf, (size_t)n);
	out[n] = '\0';
	free(buf);
	return (size_t)n;
}

static size_t bursts_text(const char *text, char *out)
{
	int n = burst_log_parse(text, 0, ev, HISTORY_EVENTS_MAX);
	size_t off = 0;

	if (n < 0)
		return 0;
	if (n > HISTORY_EVENTS_MAX)
		__builtin_trap();
	for (int i = 0; i < n; i++) {
		int w = burst_log_format(&ev[i], out + off, FMT_MAX - off);

		if (w < 0)
			__builtin_trap();
		off += (size_t)w;
	}
	out[off] = '\0';
	return off ? off : 1;	/* an empty log is valid: compare "" with "" */
}

static size_t heartbeat_text(const char *text, char *out)
{
	static struct heartbeat hb;
	int w;

	if (heartbeat_parse(text, &hb) < 0)
		return 0;
	w = heartbeat_format(&hb, out, FMT_MAX);
	if (w < 0)
		__builtin_trap();
	return (size_t)w;
}

static size_t to_text(unsigned kind, const char *text, size_t len, char *out)
{
	out[0] = '\0';
	switch (kind) {
	case 0: return memcg_text(text, out);
	case 1: return ena_text(text, len, out);
	case 2: return bursts_text(text, out);
	default: return heartbeat_text(text, out);
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char *const names[] = { "memcg", "ena", HISTORY_BURSTS, HISTORY_HEARTBEAT };
	const char *payload;
	char hdr[64], *file, *text;
	unsigned kind;
	size_t n, flen, la;
	int w;

	if (size < 1 || size > (1u << 20))
		return 0;
	kind = data[0] % 4;
	data++, size--;
	w = snprintf(hdr, sizeof(hdr), "cpuzombie-state %d %s\n", STATE_VERSION, names[kind]);
	flen = (size_t)w + size + 13;
	file = malloc(flen + 1);
	text = malloc(size + 1);
	if (!file || !text)
		goto out;
	memcpy(file, hdr, (size_t)w);
	memcpy(file + w, data, size);
	snprintf(file + w + size, 14, "end %08" PRIx32 "\n", state_crc32(data, size));
	if (state_parse_envelope(file, flen, names[kind], &payload, &n) != 0 || n != size ||
	    memcmp(payload, data, size) != 0)
		__builtin_trap();
	/* the wrong name never validates */
	if (state_parse_envelope(file, flen, names[(kind + 1) % 4], &payload, &n) == 0)
		__builtin_trap();
	memcpy(text, data, size);
	text[size] = '\0';
	la = to_text(kind, text, size, fmt_a);
	if (la && to_text(kind, fmt_a, strlen(fmt_a), fmt_b) == 0)
		__builtin_trap();	/* we wrote something we cannot read back */
	if (la && strcmp(fmt_a, fmt_b) != 0)
		__builtin_trap();	/* not a fixed point: state drifts on every rewrite */
out:
	free(file);
	free(text);
	return 0;
}
