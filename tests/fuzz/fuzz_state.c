/* SPDX-License-Identifier: MIT */
/* The state file envelope (header, version, checksum trailer). */
#include "base/state.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *p;
	size_t n;

	if (state_parse_envelope((const char *)data, size, "memcg", &p, &n) == 0 &&
	    (p < (const char *)data || p + n > (const char *)data + size))
		__builtin_trap();
	return 0;
}
