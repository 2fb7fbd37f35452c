/* SPDX-License-Identifier: MIT */
/* Clearing with hysteresis: see recover.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "condition/recover.h"
#include "base/util.h"

enum recover_verdict recover_step(struct recover_state *s, enum npd_status status, uint64_t now_ms,
				  uint64_t after_ms)
{
	if (status == NPD_PROBLEM) {
		if (s->active && s->ok_since_ms)
			s->flaps++;	/* back while held: a flip nobody saw */
		if (!s->active)
			s->true_since_ms = now_ms;
		s->active = true;
		s->ok_since_ms = 0;
		return RECOVER_PASS;
	}
	if (status != NPD_OK || !s->active) {
		s->ok_since_ms = 0;	/* Unknown: the absence is not proven; restart the clock */
		return RECOVER_PASS;
	}
	if (!s->ok_since_ms || now_ms < s->ok_since_ms)
		s->ok_since_ms = now_ms;
	if (now_ms - s->ok_since_ms >= after_ms) {
		s->active = false;
		s->ok_since_ms = 0;
		s->clears++;
		return RECOVER_CLEAR;
	}
	return RECOVER_HOLD;
}

char *recover_hold_message(const struct recover_state *s, uint64_t now_ms, uint64_t after_ms,
			   const char *check_msg, char *buf, size_t size)
{
	uint64_t ok = s->ok_since_ms && now_ms >= s->ok_since_ms ? now_ms - s->ok_since_ms : 0;
	char a[32], b[32];

	format_duration(ok / 1000 * 1000, a, sizeof(a));
	format_duration(after_ms, b, sizeof(b));
	snprintf(buf, size, "recovering: OK for %s of recover_after %s; %s", a, b,
		 check_msg ? check_msg : "");
	return buf;
}

static const char *const fields[] = { "active", "ok_since", "true_since", "flaps", "clears" };

int recover_parse(const char *payload, size_t len, void *obj)
{
	struct recover_state *ret = obj;
	uint64_t v[ARRAY_SIZE(fields)];
	unsigned seen = 0;
	const char *p = payload, *end = payload + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;
		size_t i;

		if (!nl)
			return -EINVAL;
		sp = memchr(p, ' ', (size_t)(nl - p));
		if (!sp)
			return -EINVAL;
		for (i = 0; i < ARRAY_SIZE(fields); i++)
			if ((size_t)(sp - p) == strlen(fields[i]) &&
			    !memcmp(p, fields[i], strlen(fields[i])))
				break;
		/* a key of a later version is skipped; a known one twice is damage */
		if (i < ARRAY_SIZE(fields)) {
			if (seen & (1u << i) ||
			    parse_u64_n(sp + 1, (size_t)(nl - sp - 1), &v[i]) < 0)
				return -EINVAL;
			seen |= 1u << i;
		}
		p = nl + 1;
	}
	if (seen != (1u << ARRAY_SIZE(fields)) - 1 || v[0] > 1)
		return -EINVAL;
	*ret = (struct recover_state){ v[0] == 1, v[1], v[2], v[3], v[4] };
	return 0;
}

ssize_t recover_format(const void *obj, char **ret)
{
	const struct recover_state *s = obj;
	char *buf;
	int n;

	n = asprintf(&buf, "active %d\nok_since %llu\ntrue_since %llu\nflaps %llu\nclears %llu\n",
		     s->active ? 1 : 0, (unsigned long long)s->ok_since_ms,
		     (unsigned long long)s->true_since_ms, (unsigned long long)s->flaps,
		     (unsigned long long)s->clears);
	if (n < 0)
		return -ENOMEM;
	*ret = buf;
	return n;
}

const char *recover_state_name(const char *check, char *buf, size_t size)
{
	snprintf(buf, size, "recover-%s", check);
	return buf;
}
