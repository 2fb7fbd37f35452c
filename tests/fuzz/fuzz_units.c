/* SPDX-License-Identifier: MIT */
/*
 * The systemd units the agent publishes in the run dir (memcg/units.h), a directory another
 * container shares: units_parse() on any bytes. Invariants: what it accepts has printable
 * ASCII unit names inside their bounds, formats back, and parses back the same; the hint made
 * from it fits its buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "check/condmsg.h"
#include "memcg/units.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct systemd_restarts r, back;
	static char text[UNITS_FILE_MAX + 1], out[UNITS_FILE_MAX], err[UNITS_ERR_MAX], hint[128];
	int q;

	if (size > UNITS_FILE_MAX)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	q = units_parse(text, &r, err, sizeof(err));
	if (q < 0)
		return 0;
	if (q == 1) {
		for (const char *p = err; *p; p++)
			if (*p < 32 || *p >= 127)
				abort();
		return 0;
	}
	if (r.n > SYSTEMD_TOP_MAX)
		abort();
	for (size_t i = 0; i < r.n; i++) {
		size_t len = strnlen(r.u[i].name, SYSTEMD_UNIT_MAX);

		if (len == 0 || len >= SYSTEMD_UNIT_MAX)
			abort();
		for (size_t k = 0; k < len; k++)
			if (r.u[i].name[k] <= 32 || r.u[i].name[k] >= 127)
				abort();
	}
	if (units_format(&r, NULL, out, sizeof(out)) == 0 ||
	    units_parse(out, &back, err, sizeof(err)) != 0 || back.n != r.n || back.t_ms != r.t_ms)
		abort();
	for (size_t i = 0; i < r.n; i++)
		if (strcmp(back.u[i].name, r.u[i].name) != 0 || back.u[i].restarts != r.u[i].restarts)
			abort();
	if (condmsg_restarts_hint(&r, hint, sizeof(hint)) >= sizeof(hint))
		abort();
	return 0;
}
