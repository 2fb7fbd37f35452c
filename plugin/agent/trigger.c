/* SPDX-License-Identifier: MIT */
/* Event-driven condition patches, rate-limited (trigger.h). */
#include <stdio.h>

#include "agent/kube_agent.h"
#include "node/check_run.h"
#include "node/checks.h"
#include "agent/trigger.h"
#include "base/util.h"

static const char *const check_of[TRIGGER_CHECKS_MAX] = { "cpu", "ena" };

void trigger_note(struct trigger *t, unsigned what)
{
	t->pending |= what & TRIGGER_ALL;
}

unsigned trigger_take(struct trigger *t, uint64_t now_ms)
{
	unsigned taken = 0;

	for (unsigned i = 0; i < ARRAY_SIZE(t->last_ms); i++) {
		unsigned bit = 1u << i;

		if (!(t->pending & bit))
			continue;
		if (t->last_ms[i] && now_ms < t->last_ms[i] + TRIGGER_GAP_MS)
			continue; /* inside the gap: stays pending */
		t->pending &= ~bit;
		t->last_ms[i] = now_ms ? now_ms : 1;
		taken |= bit;
	}
	return taken;
}

size_t trigger_run_checks(struct cz_ctx *ctx, unsigned what, const char *names[],
			  struct npd_result res[])
{
	size_t n = 0;

	for (unsigned i = 0; i < ARRAY_SIZE(check_of); i++) {
		const struct check_def *c = (what & (1u << i)) ? checks_find(check_of[i]) : NULL;

		if (!c)
			continue;
		check_run(ctx, c, NULL, &res[n]); /* as `check` and the cycle run it */
		names[n++] = c->name;
	}
	return n;
}

int trigger_publish(struct cz_ctx *ctx, struct kube_agent *ka, unsigned what, char *out,
		    size_t size)
{
	const char *names[ARRAY_SIZE(check_of)];
	struct npd_result res[ARRAY_SIZE(check_of)];
	size_t n;

	snprintf(out, size, "trigger: nothing to do");
	if (!ka || !ctx->cfg.agent.set_conditions)
		return 0;
	n = trigger_run_checks(ctx, what, names, res);
	if (n == 0)
		return 0;
	return kube_agent_publish(ka, names, res, n, out, size);
}
