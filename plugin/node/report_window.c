/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "cpu/tier.h"
#include "node/report_window.h"
#include "base/util.h"

static const char *const files[TIER_COUNT] = { HISTORY_FILE, TIER_SECONDS_FILE, TIER_MINUTES_FILE };

const char *report_tier_name(int tier)
{
	switch (tier) {
	case TIER_SECONDS: return "per-second maxima";
	case TIER_MINUTES: return "per-minute maxima";
	default: return "per-sample";
	}
}

/* Keeps the samples of @h in (@since, @until]: the interval a sample stands for ends at it. */
static void trim(struct history_series *h, uint64_t since, uint64_t until)
{
	size_t a = 0, b;

	while (a < h->n && h->t_ms[a] <= since)
		a++;
	for (b = a; b < h->n && h->t_ms[b] <= until; b++)
		;
	memmove(h->t_ms, h->t_ms + a, (b - a) * sizeof(*h->t_ms));
	memmove(h->pct, h->pct + a * h->ncpu, (b - a) * h->ncpu);
	h->n = b - a;
}

struct span {
	uint64_t since, until;
};

/* A burst that overlaps the window, logged or still going on. */
static bool overlaps(const struct burst_event *ev, void *arg)
{
	const struct span *w = arg;

	return ev->end_ms >= w->since && ev->start_ms <= w->until;
}

int report_load_window(struct node_model *r, const char *run_dir, uint64_t since_ms,
		       uint64_t until_ms)
{
	struct history_series t[TIER_COUNT] = { 0 };
	uint64_t oldest[TIER_COUNT] = { 0 };
	int rc[TIER_COUNT], pick;

	for (int i = 0; i < TIER_COUNT; i++) {
		rc[i] = history_read_file(run_dir, files[i], 0, &t[i]);
		if (rc[i] == -ENOMEM)
			goto out_nomem;
		if (rc[i] > 0)
			oldest[i] = t[i].t_ms[0];
	}
	pick = tier_pick(oldest, since_ms);
	history_series_free(&r->hist);
	r->hist_rc = -ENOENT;
	if (pick >= 0) {
		r->hist = t[pick];
		t[pick] = (struct history_series){ 0 };
		trim(&r->hist, since_ms, until_ms);
		r->hist_rc = (int)r->hist.n;
		if (!report_claim_cpus(r, r->hist.ncpu)) {
			history_series_free(&r->hist); /* more CPUs than this host can have */
			r->hist_rc = -E2BIG;
		}
	}
	r->hist_tier = pick >= 0 ? pick : TIER_FINE;
	r->hist_interval_ms = pick == TIER_SECONDS ? 1000 : pick == TIER_MINUTES ? 60000 : 0;
	r->until_ms = until_ms;
	/* bursts (logged and ongoing) that overlap the window */
	report_keep_bursts(r, overlaps, &(struct span){ since_ms, until_ms });
	for (int i = 0; i < TIER_COUNT; i++)
		history_series_free(&t[i]);
	return 0;
out_nomem:
	for (int i = 0; i < TIER_COUNT; i++)
		history_series_free(&t[i]);
	return -ENOMEM;
}
