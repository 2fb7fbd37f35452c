/* SPDX-License-Identifier: MIT */
/*
 * The parsers issue 7 added, on arbitrary bytes: the systemd restart state (with a round trip
 * through format and the growth/hint code), the canary state, the cause -> CPU scan of the
 * report and $JOURNAL_STREAM.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/canary.h"
#include "check/condmsg.h"
#include "base/log.h"
#include "node/model.h"
#include "host/systemd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct systemd_restarts a, b;
	struct canary_result c;
	char buf[SYSTEMD_TOP_MAX * (SYSTEMD_UNIT_MAX + 32) + 64], hint[128];

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (systemd_restarts_parse(s, &a) == 0) {
		size_t n = systemd_restarts_format(&a, buf, sizeof(buf));

		if (systemd_restarts_parse(buf, &b) != 0 || b.n != a.n || n == 0)
			abort(); /* what we write we must read back */
		b.t_ms = a.t_ms + 3600000;
		(void)systemd_restarts_growth(&a, &b);
		if (condmsg_restarts_hint(&b, hint, sizeof(hint)) >= sizeof(hint))
			abort();
	}
	if (canary_parse(s, &c) == 0) {
		char cb[512];

		canary_format(&c, cb, sizeof(cb));
		if (canary_parse(cb, &c) != 0)
			abort();
	}
	(void)report_ena_cpu(s);
	(void)log_journal_stream_matches(s, 1, 2);
	free(s);
	return 0;
}
