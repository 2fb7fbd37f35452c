/* SPDX-License-Identifier: MIT */
/*
 * textsafe: for any bytes and every kind of output, the result is valid UTF-8 with no raw control
 * character, it never overruns the buffer, and a cut result is a prefix of the uncut one.
 */
#include <stdlib.h>
#include <string.h>

#include "base/textsafe.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const enum textsafe_kind kinds[] = { TEXTSAFE_TEXT, TEXTSAFE_PROM, TEXTSAFE_XML };
	char small[17];
	char *in = malloc(size + 1), *full;

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		full = textsafe_strdup(kinds[k], in);
		if (!full)
			break;
		if (!textsafe_valid_utf8(full, strlen(full)))
			abort();
		for (const unsigned char *p = (const unsigned char *)full; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort();
		textsafe(kinds[k], in, small, sizeof(small));
		if (strncmp(full, small, strlen(small)) != 0 ||
		    !textsafe_valid_utf8(small, strlen(small)))
			abort();
		free(full);
	}
	free(in);
	return 0;
}
