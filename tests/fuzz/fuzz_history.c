/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: history_parse() on a cpu-history ring file image (the agent writes it, check cpu and
 * the report read it). Odd first byte: the raw bytes as they are. Even: the bytes become a ring
 * whose header geometry is consistent and whose every slot carries a correct CRC, so the fuzzer
 * explores what lies behind the checksum (sequence numbers, times, shares) instead of bouncing
 * off it. Invariants: never more samples than slots, every sample at or after @since, samples in
 * sequence order, and the returned arrays are fully readable.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/history.h"
#include "base/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR 64
#define SLOT_HDR 20

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A consistent ring from @data: ncpu 1..16, slots 1..64, the rest of @data tiled into slots. */
static uint8_t *make_ring(const uint8_t *data, size_t size, size_t *ret_len)
{
	unsigned ncpu = data[1] % 16 + 1, slots = data[2] % 64 + 1;
	unsigned ss = (SLOT_HDR + ncpu + 7) & ~7u;
	size_t len = (size_t)history_file_size(ncpu, slots);
	uint8_t *f = calloc(1, len);

	if (!f)
		return NULL;
	for (size_t i = HDR, k = 3; i < len && size > 3; i++, k = k + 1 < size ? k + 1 : 3)
		f[i] = data[k];
	memcpy(f, "CZHIST1\n", 8);
	memcpy(f + 8, &(uint32_t){ 1 }, 4);
	memcpy(f + 12, &ncpu, 4);
	memcpy(f + 16, &slots, 4);
	memcpy(f + 20, &(uint32_t){ 250 }, 4);
	memcpy(f + 24, &ss, 4);
	for (unsigned i = 0; i < slots; i++) {
		uint8_t *sl = f + HDR + (size_t)i * ss;
		uint64_t seq = rd64(sl);
		uint32_t crc;

		if (data[0] & 2) {	/* mostly well-placed sequence numbers */
			seq = seq - seq % slots + i;
			memcpy(sl, &seq, 8);
		}
		crc = state_crc32(sl, 16) ^ state_crc32(sl + SLOT_HDR, ncpu);
		memcpy(sl + 16, &crc, 4);
	}
	*ret_len = len;
	return f;
}

static void check(const uint8_t *file, size_t len, uint64_t since)
{
	struct history_series s = { 0 };
	int n = history_parse(file, len, since, &s);
	unsigned slots = len >= HDR ? rd32(file + 16) : 0;
	volatile unsigned sum = 0;

	if (n < 0)
		return;
	if ((size_t)n != s.n || s.n > slots || s.ncpu == 0)
		__builtin_trap();
	for (size_t i = 0; i < s.n; i++) {
		if (s.t_ms[i] < since)
			__builtin_trap();
		for (unsigned c = 0; c < s.ncpu; c++)
			sum += s.pct[i * s.ncpu + c];
	}
	history_series_free(&s);
	/* the same with an upper bound (stamps from the future dropped): within both, and never
	 * more samples than without it */
	if (history_parse_range(file, len, since, since + 1000000, &s) < 0)
		__builtin_trap();
	if (s.n > (size_t)n)
		__builtin_trap();
	for (size_t i = 0; i < s.n; i++)
		if (s.t_ms[i] < since || s.t_ms[i] > since + 1000000)
			__builtin_trap();
	history_series_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *ring;
	size_t len;

	if (size < 4)
		return 0;
	if (data[0] & 1) {
		check(data, size, 0);
		return 0;
	}
	ring = make_ring(data, size, &len);
	if (!ring)
		return 0;
	check(ring, len, 0);
	check(ring, len, rd64(ring + HDR + 8));	/* since = first slot's time */
	free(ring);
	return 0;
}
