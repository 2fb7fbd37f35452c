/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the small parsers every other parser and the config rely on: parse_u64(_n),
 * parse_double, parse_duration_ms, valid_name, the API server's RFC 3339 times (kube_parse_time,
 * with a round trip through kube_time), remediation.max_unavailable (remediate_budget), and the
 * kubeconfig's base64. Invariants: outputs untouched on failure; what parses formats back to the
 * same value.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "remediator/remediate.h"
#include "base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CANARY 0x5a5a5a5a5a5a5a5aull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), tbuf[64];
	uint64_t u = CANARY, t2;
	double d = 42.0;
	unsigned char *b64 = NULL;
	size_t b64n = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (parse_u64(s, &u) < 0 && u != CANARY)
		__builtin_trap();
	u = CANARY;
	if (parse_u64_n(s, size, &u) < 0 && u != CANARY)
		__builtin_trap();
	if (parse_double(s, &d) < 0 && d != 42.0)
		__builtin_trap();
	u = CANARY;
	if (parse_duration_ms(s, &u) < 0 && u != CANARY)
		__builtin_trap();
	(void)valid_name(s, 64);
	u = CANARY;
	if (kube_parse_time(s, &u) == 0) {
		/* whole milliseconds survive a MicroTime round trip */
		if (kube_parse_time(kube_time(u, true, tbuf, sizeof(tbuf)), &t2) != 0 || t2 != u)
			__builtin_trap();
	} else if (u != CANARY) {
		__builtin_trap();
	}
	(void)remediate_budget(s, size);
	if (base64_decode(s, size, &b64, &b64n) == 0) {
		if (!b64 || b64[b64n] != '\0' || b64n > size)
			__builtin_trap();
		free(b64);
	} else if (b64) {
		__builtin_trap();
	}
	free(s);
	return 0;
}
