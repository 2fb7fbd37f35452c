/* SPDX-License-Identifier: MIT */
/*
 * The remediation plan (remediate_plan.h), table-tested: every guard of docs/design.md as a row of
 * (node, its conditions, our slot Leases, config, now, what earlier steps found) -> (the steps,
 * whether the plan is final, what the cycle amounts to, why). Plus the pure drain decisions
 * (drain.h: PDB 429s, the drain timeout) and the slot choice (lease.h).
 */
#include "testutil.h"

#include <stdlib.h>

#include "base/config.h"
#include "base/util.h"
#include "remediator/drain.h"
#include "base/kjson.h"
#include "remediator/lease.h"
#include "remediator/remediate_plan.h"

/* rows name their leading fields by position and the rest by designator */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define NOW 1704067200000ull	/* 2024-01-01T00:00:00Z */
#define S 1000ull
#define NO_OP (-1)

/*
 * A node: its MemcgZombieLeak condition, how long ago cpuzombie's clock first saw it in that
 * state, and our marks. The condition's own lastTransitionTime is always 2000-01-01 (what a
 * node with its agent's token wrote to be drained at once): no row may depend on it.
 */
struct node_desc {
	const char *status;	/* "True", "False", "Unknown" or NULL: no such condition */
	uint64_t age_ms;	/* since our clock's annotation: True since, or (ours) recovered */
	bool unschedulable, ours, drained, control_plane, paused;
	uint64_t cordoned_age_ms;	/* ours: since the cordon (0: "x", no time: now) */
	bool gave_back;			/* ours: the slot given back (a protected pod) */
	bool no_clock;			/* our clock's annotation absent (never seen yet) */
	bool stale_clock;		/* the other state's annotation too (5 min old) */
	const char *clock_raw;		/* REMEDIATE_ANN_TRUE_SINCE as written, not age_ms's */
	bool held_long;			/* ours: REMEDIATE_ANN_HELD_LONG */
};

#define FORGED_TRANSITION "2000-01-01T00:00:00Z"

/* Append "KEY":"VALUE" to the annotations in @ann. */
static void ann_add(char *ann, size_t size, const char *key, const char *value)
{
	size_t n = strlen(ann);

	snprintf(ann + n, size - n, "%s\"%s\":\"%s\"", n ? "," : "", key, value);
}

/* Our clock's annotations for @d, into @ann. */
static void clock_json(const struct node_desc *d, char *ann, size_t size)
{
	bool foreign = d->unschedulable && !d->ours;
	bool t = d->status && streq(d->status, "True"), f = !d->status || streq(d->status, "False");
	char ts[40], old[40];

	kube_time(NOW - d->age_ms, false, ts, sizeof(ts));
	kube_time(NOW - 5 * 60000ull, false, old, sizeof(old));
	if (d->clock_raw)
		ann_add(ann, size, REMEDIATE_ANN_TRUE_SINCE, d->clock_raw);
	else if (t && !foreign && !d->no_clock)
		ann_add(ann, size, REMEDIATE_ANN_TRUE_SINCE, ts);
	else if (d->stale_clock && !t)
		ann_add(ann, size, REMEDIATE_ANN_TRUE_SINCE, old);
	if (d->ours && f && !d->no_clock)
		ann_add(ann, size, REMEDIATE_ANN_RECOVERED_SINCE, ts);
	else if (d->ours && d->stale_clock && !f)
		ann_add(ann, size, REMEDIATE_ANN_RECOVERED_SINCE, old);
	if (d->held_long)
		ann_add(ann, size, REMEDIATE_ANN_HELD_LONG, old);
}

/* The Leases as listed: up to 3 slots, holder "" = no Lease at all for that slot. */
struct lease_desc {
	const char *holder;
	uint64_t age_ms;	/* since renewTime */
};

struct row {
	const char *name;
	struct node_desc node;
	/* config */
	enum cz_remediation_mode mode;
	uint64_t for_ms, uncordon_after_ms;
	const char *max_unavailable;
	bool allow_cp;
	const char *sentinel;
	/* what earlier steps found (leases_read false: none listed yet) */
	bool leases_read;
	struct lease_desc leases[3];
	size_t nodes_total;
	uint8_t slots[3];
	int slot_held;		/* 0 means none here; use held_plus1 */
	int held_plus1;
	bool slot_tried;
	enum rem_outcome cordon, drain, mark_drained;
	int drain_left;
	/* the fleet guards (guard.h); by default read, nothing held */
	struct {
		bool unread;		/* guards not read yet */
		bool cluster_paused;
		size_t covered, true_n;	/* the storm guard's count (MemcgZombieLeak) */
		bool fleet_unknown;	/* not counted yet */
		bool tripped;
		size_t recent;		/* remediations within the breaker window */
		uint64_t last_age_ms;	/* since the last one started (0: none) */
		uint64_t breaker_max, drain_gap_ms;
		const char *max_unhealthy;
		bool window_closed;
		enum rem_outcome record, trip;
		const char *medik8s_ns;
		enum rem_outcome handoff;
		enum guard_kured kured;
		const char *kured_ds;
		enum rem_outcome kured_take;
		bool pods_peeked;
	} g;
	/* expected */
	bool again;
	enum remediate_action action;	/* when final */
	int ops[REMEDIATE_PLAN_MAX];	/* NO_OP-terminated when shorter */
	int slot;			/* of the first slot step, when any */
	const char *msg;		/* substring of the plan's message, or NULL */
	const char *reasons;		/* the Event reasons, comma-separated, or NULL: none */
	bool fails;			/* the cycle returns -errno */
	uint64_t drain_timeout_ms;	/* 0: the default */
	/* our clock */
	enum rem_outcome clock;		/* the CLOCK step of this cycle */
	enum rem_outcome slot_found;	/* FIND_SLOT */
	uint64_t want_true, want_rec;	/* CLOCK: the times it writes (0: removed) */
};

static char *node_json(const struct node_desc *d)
{
	char cond[300] = "", ann[600] = "", cr[120], *out;

	if (d->status)
		snprintf(cond, sizeof(cond), ",{\"type\":\"MemcgZombieLeak\",\"status\":\"%s\","
			 "\"lastTransitionTime\":\"" FORGED_TRANSITION "\"}", d->status);
	if (d->ours)
		snprintf(ann, sizeof(ann), "\"" REMEDIATE_ANN_CORDONED "\":\"%s\"%s%s",
			 d->cordoned_age_ms ? remediate_cordon_reason(NOW - d->cordoned_age_ms,
				"MemcgZombieLeak", 600 * S, 0, cr, sizeof(cr)) : "x",
			 d->drained ? ",\"" REMEDIATE_ANN_DRAINED "\":\"y\"" : "",
			 d->gave_back ? ",\"" REMEDIATE_ANN_GAVE_BACK "\":\"z\"" : "");
	if (d->paused)
		snprintf(ann + strlen(ann), sizeof(ann) - strlen(ann), "%s\"" GUARD_ANN_PAUSE
			 "\":\"true\"", *ann ? "," : "");
	clock_json(d, ann, sizeof(ann));
	assert_true(asprintf(&out, "{\"metadata\":{\"name\":\"n1\",\"uid\":\"u1\","
		"\"resourceVersion\":\"7\",\"labels\":{%s},\"annotations\":{%s}},"
		"\"spec\":{%s},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}%s]}}",
		d->control_plane ? "\"node-role.kubernetes.io/control-plane\":\"\"" : "", ann,
		d->unschedulable ? "\"unschedulable\":true" : "", cond) > 0);
	return out;
}

static json_object *leases_json(const struct lease_desc l[3])
{
	json_object *items = json_object_new_array();

	for (int i = 0; i < 3; i++) {
		char *s, ts[40];

		if (!l[i].holder || !*l[i].holder)
			continue;
		assert_true(asprintf(&s, "{\"metadata\":{\"name\":\"" LEASE_PREFIX "%d\","
			"\"resourceVersion\":\"%d\"},\"spec\":{\"holderIdentity\":\"%s\","
			"\"renewTime\":\"%s\"}}", i, 100 + i, l[i].holder,
			kube_time(NOW - l[i].age_ms, true, ts, sizeof(ts))) > 0);
		json_object_array_add(items, json_tokener_parse(s));
		free(s);
	}
	return items;
}

#define MIN (60 * S)
#define OLD_TRUE { "True", 20 * MIN, false, false, false, false }

static const struct row rows[] = {
	/* -- the problem and who owns the node ----------------------------------------------- */
	{ "for not yet elapsed", { "True", 5 * S }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .action = REM_NONE, .ops = { NO_OP }, .msg = "no listed condition True for 600s" },
	{ "for elapsed: list the slots first", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN,
	  "1", .again = true, .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "condition Unknown is no problem", { "Unknown", 20 * MIN }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .action = REM_NONE, .ops = { NO_OP } },
	{ "unschedulable by someone else: never touched",
	  { "True", 20 * MIN, .unschedulable = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .action = REM_SKIPPED, .ops = { NO_OP }, .msg = "unschedulable by someone else" },
	{ "someone else's cordon is never uncordoned, even long recovered",
	  { "False", 120 * MIN, .unschedulable = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN,
	  "1", .action = REM_NONE, .ops = { NO_OP } },
	{ "control plane skipped", { "True", 20 * MIN, .control_plane = true }, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .action = REM_SKIPPED, .ops = { NO_OP }, .msg = "control-plane" },
	{ "control plane allowed", { "True", 20 * MIN, .control_plane = true }, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .allow_cp = true, .again = true,
	  .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "dry-run: the guards first, read-only: would a protected pod hold the drain?", OLD_TRUE,
	  CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1", .again = true,
	  .ops = { REM_OP_PEEK_PODS, NO_OP } },
	{ "dry-run, no guard holds: one Event, nothing else", OLD_TRUE, CZ_REMEDIATE_DRY_RUN,
	  10 * MIN, 30 * MIN, "1", .g = { .pods_peeked = true }, .action = REM_DRY_RUN,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "dry-run: would cordon: MemcgZombieLeak has "
	  "been True for at least 10m; no guard holds", .reasons = "CpuzombieDryRun" },
	{ "dry-run, guards unread: read them (nothing written)", OLD_TRUE, CZ_REMEDIATE_DRY_RUN,
	  10 * MIN, 30 * MIN, "1", .g = { .unread = true }, .again = true,
	  .ops = { REM_OP_READ_GUARDS, NO_OP } },
	{ "dry-run, paused cluster-wide: says it would hold", OLD_TRUE, CZ_REMEDIATE_DRY_RUN,
	  10 * MIN, 30 * MIN, "1", .g = { .cluster_paused = true }, .action = REM_DRY_RUN,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "dry-run: would hold: paused cluster-wide",
	  .reasons = "CpuzombieDryRun" },
	{ "dry-run, storm: 4 of 10 True: would hold, its dry-run Event only", OLD_TRUE,
	  CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1", .g = { .covered = 10, .true_n = 4 },
	  .action = REM_DRY_RUN, .ops = { REM_OP_EVENT, NO_OP },
	  .msg = "dry-run: would hold: storm guard", .reasons = "CpuzombieDryRun" },
	{ "dry-run, breaker tripped: would hold", OLD_TRUE, CZ_REMEDIATE_DRY_RUN, 10 * MIN,
	  30 * MIN, "1", .g = { .breaker_max = 3, .tripped = true }, .action = REM_DRY_RUN,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "dry-run: would hold: circuit breaker tripped",
	  .reasons = "CpuzombieDryRun" },
	{ "dry-run, breaker count reached: would trip, never trips it", OLD_TRUE,
	  CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1", .g = { .breaker_max = 3, .recent = 3 },
	  .action = REM_DRY_RUN, .ops = { REM_OP_EVENT, NO_OP },
	  .msg = "dry-run: would hold: circuit breaker would trip: 3 remediations",
	  .reasons = "CpuzombieDryRun" },
	{ "dry-run, drain gap: would hold", OLD_TRUE, CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN,
	  "1", .g = { .drain_gap_ms = 10 * MIN, .last_age_ms = 2 * MIN }, .action = REM_DRY_RUN,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "dry-run: would hold: drain gap",
	  .reasons = "CpuzombieDryRun" },
	{ "dry-run, outside the window: says so (a dry-run already)", OLD_TRUE,
	  CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1", .g = { .window_closed = true },
	  .action = REM_DRY_RUN, .ops = { REM_OP_EVENT, NO_OP },
	  .msg = "outside the maintenance window", .reasons = "CpuzombieDryRun" },
	{ "dry-run, kured's lock held for n2: would hold", OLD_TRUE, CZ_REMEDIATE_DRY_RUN,
	  10 * MIN, 30 * MIN, "1",
	  .g = { .kured = GUARD_KURED_OTHER, .kured_ds = "kube-system/kured" },
	  .action = REM_DRY_RUN, .ops = { REM_OP_EVENT, NO_OP },
	  .msg = "dry-run: would hold: MemcgZombieLeak True, but kured's node lock",
	  .reasons = "CpuzombieDryRun" },
	{ "dry-run, medik8s on: read its Lease, take nothing", OLD_TRUE, CZ_REMEDIATE_DRY_RUN,
	  10 * MIN, 30 * MIN, "1", .g = { .medik8s_ns = "medik8s-leases" }, .again = true,
	  .ops = { REM_OP_PEEK_HANDOFF, NO_OP } },
	{ "dry-run, medik8s' Lease held: would hold", OLD_TRUE, CZ_REMEDIATE_DRY_RUN, 10 * MIN,
	  30 * MIN, "1", .g = { .medik8s_ns = "medik8s-leases", .handoff = REM_BLOCKED },
	  .action = REM_DRY_RUN, .ops = { REM_OP_EVENT, NO_OP },
	  .msg = "dry-run: would hold: medik8s NodeHealthCheck's Lease medik8s-leases/node-n1 is "
	  "held by NodeHealthCheck-x", .reasons = "CpuzombieDryRun" },
	{ "dry-run, protected pod: would cordon, the drain would be held", OLD_TRUE,
	  CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1", .drain = REM_PROTECTED,
	  .g = { .pods_peeked = true }, .action = REM_DRY_RUN, .ops = { REM_OP_EVENT, NO_OP },
	  .msg = "a drain would be held: pod default/db-0 is protected",
	  .reasons = "CpuzombieDryRun" },
	{ "off: nothing", OLD_TRUE, CZ_REMEDIATE_OFF, 10 * MIN, 30 * MIN, "1",
	  .action = REM_NONE, .ops = { NO_OP }, .msg = "remediation off" },

	/* -- the remediator's own clock, never the node's lastTransitionTime (2000-01-01 in every
	 * row): `for` counts from when cpuzombie first saw a listed condition True ------------ */
	{ "True since 2000 by the node's word, never seen by cpuzombie: the clock, nothing else",
	  { "True", 0, .no_clock = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .again = true, .ops = { REM_OP_CLOCK, NO_OP }, .want_true = NOW },
	{ "the clock to write, the guards unread: the pause first", { "True", 0, .no_clock = true },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .g = { .unread = true }, .again = true,
	  .ops = { REM_OP_READ_GUARDS, NO_OP } },
	{ "paused cluster-wide: not even our clock is written", { "True", 0, .no_clock = true },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .g = { .cluster_paused = true },
	  .action = REM_PAUSED, .ops = { NO_OP }, .msg = "paused cluster-wide" },
	{ "dry-run, paused cluster-wide, never seen: would hold, no clock, no Event",
	  { "True", 0, .no_clock = true }, CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1",
	  .g = { .cluster_paused = true }, .action = REM_DRY_RUN, .ops = { NO_OP },
	  .msg = "dry-run: would hold: paused cluster-wide" },
	{ "clock written this cycle, for 10m: waiting, whatever the node says",
	  { "True", 0 }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .clock = REM_DONE,
	  .action = REM_NONE, .ops = { NO_OP },
	  .msg = "no listed condition True for 600s by cpuzombie's clock (MemcgZombieLeak True, "
	  "first seen 2024-01-01T00:00:00Z)" },
	{ "clock written this cycle, for 0s: on to the slot", { "True", 0, .no_clock = true },
	  CZ_REMEDIATE_CORDON, 0, 30 * MIN, "1", .clock = REM_DONE, .again = true,
	  .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "clock 9m59s old, for 10m: still waiting", { "True", 10 * MIN - S },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .action = REM_NONE, .ops = { NO_OP },
	  .msg = "by cpuzombie's clock" },
	{ "clock 10m old, for 10m: on", { "True", 10 * MIN }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .again = true, .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "the clock's PATCH failed: nothing decided, fails", { "True", 0, .no_clock = true },
	  CZ_REMEDIATE_CORDON, 0, 30 * MIN, "1", .clock = REM_FAILED, .action = REM_WAITING,
	  .ops = { NO_OP }, .msg = "cannot write cpuzombie's clock", .fails = true },
	{ "clock in the future (a hand, a replica's skew): restarted now",
	  { "True", 0, .clock_raw = "2030-01-01T00:00:00Z" }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .again = true, .ops = { REM_OP_CLOCK, NO_OP }, .want_true = NOW },
	{ "clock unreadable: restarted now", { "True", 0, .clock_raw = "yesterday" },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .again = true,
	  .ops = { REM_OP_CLOCK, NO_OP }, .want_true = NOW },
	{ "nothing True any more: our clock stops (removed)",
	  { "False", 0, .stale_clock = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .again = true, .ops = { REM_OP_CLOCK, NO_OP }, .want_true = 0 },
	{ "Unknown is not True: our clock stops", { "Unknown", 0, .stale_clock = true },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .again = true,
	  .ops = { REM_OP_CLOCK, NO_OP }, .want_true = 0 },
	{ "removed: nothing more to do", { "False", 0, .stale_clock = true }, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .clock = REM_DONE, .action = REM_NONE, .ops = { NO_OP },
	  .msg = "no listed condition True for 600s" },
	{ "ours, recovered, never seen so: recovery's clock starts (True's stops)",
	  { "False", 0, .unschedulable = true, .ours = true, .no_clock = true,
	    .stale_clock = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * S, "1", .again = true,
	  .ops = { REM_OP_CLOCK, NO_OP }, .want_true = 0, .want_rec = NOW },
	{ "ours, recovered 2000-01-01 by the node's word, just seen so: not uncordoned",
	  { "False", 0, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * S, "1", .leases_read = true, .held_plus1 = 1, .slot_tried = true,
	  .action = REM_WAITING, .ops = { NO_OP }, .msg = "held by cpuzombie" },
	{ "ours, True again before uncordon_after: recovery's clock stops, True's restarts",
	  { "True", 0, .unschedulable = true, .ours = true, .no_clock = true,
	    .stale_clock = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * S, "1", .again = true,
	  .ops = { REM_OP_CLOCK, NO_OP }, .want_true = NOW, .want_rec = 0 },
	{ "dry-run uses the same clock: written first (its only write besides Events)",
	  { "True", 0, .no_clock = true }, CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1",
	  .again = true, .ops = { REM_OP_CLOCK, NO_OP }, .want_true = NOW },
	{ "dry-run, clock 5s old: for not reached, nothing said",
	  { "True", 5 * S }, CZ_REMEDIATE_DRY_RUN, 10 * MIN, 30 * MIN, "1", .action = REM_NONE,
	  .ops = { NO_OP }, .msg = "by cpuzombie's clock" },
	{ "someone else's cordon: no clock runs there (ours left before it is removed)",
	  { "True", 0, .unschedulable = true, .clock_raw = "2024-01-01T00:00:00Z" },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .again = true,
	  .ops = { REM_OP_CLOCK, NO_OP }, .want_true = 0 },
	{ "control plane (not allowed): no clock written, skipped",
	  { "True", 0, .control_plane = true, .no_clock = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .action = REM_SKIPPED, .ops = { NO_OP }, .msg = "control-plane" },

	/* -- the budget ------------------------------------------------------------------------ */
	{ "free slot 0: take it", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .leases_read = true, .again = true, .ops = { REM_OP_TAKE_SLOT, NO_OP }, .slot = 0 },
	{ "budget full by count", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "2",
	  .leases_read = true, .leases = { { "a", 10 * S }, { "b", 10 * S } },
	  .action = REM_WAITING, .ops = { NO_OP }, .msg = "budget full: all 2" },
	{ "budget full by percentage (10% of 20 = 2)", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "10%", .leases_read = true, .leases = { { "a", 10 * S }, { "b", 10 * S } },
	  .nodes_total = 20, .action = REM_WAITING, .ops = { NO_OP }, .msg = "budget full: all 2" },
	{ "percentage rounds down but at least 1 (10% of 5)", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "10%", .leases_read = true, .leases = { { "a", 10 * S } },
	  .nodes_total = 5, .action = REM_WAITING, .ops = { NO_OP }, .msg = "all 1 " },
	{ "percentage with room (10% of 30 = 3): slot 2", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "10%", .leases_read = true, .leases = { { "a", 10 * S }, { "b", 10 * S } },
	  .nodes_total = 30, .again = true, .ops = { REM_OP_TAKE_SLOT, NO_OP }, .slot = 2 },
	{ "last slot: our create answered 409, another node was first", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "2", .leases_read = true,
	  .leases = { { "a", 10 * S } }, .slots = { 0, REM_SLOT_LOST }, .slot_tried = true,
	  .action = REM_WAITING, .ops = { NO_OP }, .msg = "budget full" },
	{ "last slot free: take it", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "2",
	  .leases_read = true, .leases = { { "a", 10 * S } }, .again = true,
	  .ops = { REM_OP_TAKE_SLOT, NO_OP }, .slot = 1 },
	{ "expired slot: ask whether its holder is still held", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .leases = { { "n9", 20 * MIN } },
	  .again = true, .ops = { REM_OP_READ_HOLDER, NO_OP }, .slot = 0 },
	{ "expired slot, holder still cordoned by us: full", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .leases = { { "n9", 20 * MIN } },
	  .slots = { REM_SLOT_HOLDER_HELD }, .action = REM_WAITING, .ops = { NO_OP },
	  .msg = "budget full" },
	{ "expired slot, holder released: take it at its resourceVersion", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true,
	  .leases = { { "n9", 20 * MIN } }, .slots = { REM_SLOT_HOLDER_GONE }, .again = true,
	  .ops = { REM_OP_TAKE_SLOT, NO_OP }, .slot = 0 },
	{ "a slot of ours from an earlier cycle: renew it", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "2", .leases_read = true, .leases = { { "a", 1 }, { "n1", 10 * S } },
	  .again = true, .ops = { REM_OP_RENEW_SLOT, NO_OP }, .slot = 1 },
	{ "leases unreadable: wait", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .leases_read = true, .nodes_total = (size_t)-1, .action = REM_WAITING, .ops = { NO_OP },
	  .msg = "cannot list", .fails = true },

	/* -- cordon ------------------------------------------------------------------------------ */
	{ "slot held: cordon", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .leases_read = true, .held_plus1 = 1, .again = true, .ops = { REM_OP_CORDON, NO_OP },
	  .slot = 0 },
	{ "cordoned: one Event, no sentinel in cordon mode", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .sentinel = "/run/reboot-required", .leases_read = true,
	  .held_plus1 = 1, .cordon = REM_DONE, .action = REM_CORDONED,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "cordoned by cpuzombie", .reasons = "CpuzombieCordon" },
	{ "cordon PATCH failed (changed under us): slot given back", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1, .cordon = REM_FAILED,
	  .action = REM_WAITING, .ops = { REM_OP_RELEASE_SLOTS, NO_OP },
	  .fails = true },

	/* -- drain ------------------------------------------------------------------------------- */
	{ "cordoned in drain mode: Event, then drain", OLD_TRUE, CZ_REMEDIATE_DRAIN, 10 * MIN,
	  30 * MIN, "1", .leases_read = true, .held_plus1 = 1, .cordon = REM_DONE, .again = true,
	  .ops = { REM_OP_EVENT, REM_OP_DRAIN, NO_OP }, .reasons = "CpuzombieCordon" },
	{ "drain timed out (PDB): incomplete, no sentinel, no drained mark", OLD_TRUE,
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1", .sentinel = "/run/reboot-required",
	  .leases_read = true, .held_plus1 = 1, .cordon = REM_DONE, .drain = REM_TIMED_OUT,
	  .drain_left = 2, .action = REM_DRAIN_INCOMPLETE, .ops = { REM_OP_EVENT, NO_OP },
	  .msg = "drain timed out: 2 pod(s)", .reasons = "CpuzombieDrainIncomplete" },
	{ "drain blocked by emptyDir: incomplete, no sentinel", OLD_TRUE, CZ_REMEDIATE_DRAIN,
	  10 * MIN, 30 * MIN, "1", .sentinel = "/run/reboot-required", .leases_read = true,
	  .held_plus1 = 1, .cordon = REM_DONE, .drain = REM_BLOCKED, .drain_left = 1,
	  .action = REM_DRAIN_INCOMPLETE, .ops = { REM_OP_EVENT, NO_OP }, .msg = "emptyDir",
	  .reasons = "CpuzombieDrainIncomplete" },
	{ "drain failed (pods unreadable): no Event, no sentinel", OLD_TRUE, CZ_REMEDIATE_DRAIN,
	  10 * MIN, 30 * MIN, "1", .sentinel = "/run/reboot-required", .leases_read = true,
	  .held_plus1 = 1, .cordon = REM_DONE, .drain = REM_FAILED,
	  .action = REM_DRAIN_INCOMPLETE, .ops = { NO_OP }, .fails = true },
	{ "drained: mark it first, still no sentinel", OLD_TRUE, CZ_REMEDIATE_DRAIN, 10 * MIN,
	  30 * MIN, "1", .sentinel = "/run/reboot-required", .leases_read = true, .held_plus1 = 1,
	  .cordon = REM_DONE, .drain = REM_DONE, .again = true,
	  .ops = { REM_OP_MARK_DRAINED, NO_OP } },
	{ "drained and marked: Event and kured sentinel", OLD_TRUE, CZ_REMEDIATE_DRAIN, 10 * MIN,
	  30 * MIN, "1", .sentinel = "/run/reboot-required", .leases_read = true, .held_plus1 = 1,
	  .cordon = REM_DONE, .drain = REM_DONE, .mark_drained = REM_DONE, .action = REM_DRAINED,
	  .ops = { REM_OP_EVENT, REM_OP_SENTINEL, NO_OP }, .msg = "reboot sentinel written",
	  .reasons = "CpuzombieDrain" },
	{ "drained without a sentinel configured: none written", OLD_TRUE, CZ_REMEDIATE_DRAIN,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1, .cordon = REM_DONE,
	  .drain = REM_DONE, .mark_drained = REM_DONE, .action = REM_DRAINED,
	  .ops = { REM_OP_EVENT, NO_OP }, .reasons = "CpuzombieDrain" },
	{ "drained but the mark failed: incomplete, no sentinel", OLD_TRUE, CZ_REMEDIATE_DRAIN,
	  10 * MIN, 30 * MIN, "1", .sentinel = "/run/reboot-required", .leases_read = true,
	  .held_plus1 = 1, .cordon = REM_DONE, .drain = REM_DONE, .mark_drained = REM_FAILED,
	  .action = REM_DRAIN_INCOMPLETE, .ops = { NO_OP }, .fails = true },
	{ "ours from an earlier cycle, not drained yet: renew, then drain",
	  { "True", 20 * MIN, .unschedulable = true, .ours = true }, CZ_REMEDIATE_DRAIN, 10 * MIN,
	  30 * MIN, "1", .leases_read = true, .held_plus1 = 1, .slot_tried = true, .again = true,
	  .ops = { REM_OP_DRAIN, NO_OP } },
	{ "ours and drained: hold", { "True", 20 * MIN, .unschedulable = true, .ours = true,
	  .drained = true }, CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1", .leases_read = true,
	  .held_plus1 = 1, .slot_tried = true, .action = REM_WAITING, .ops = { NO_OP },
	  .msg = "waiting for recovery" },

	/* -- recovery ---------------------------------------------------------------------------- */
	{ "recovered for less than uncordon_after: renew our slot and hold",
	  { "False", 10 * S, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * S, "1", .leases_read = true, .leases = { { "n1", 10 * S } }, .again = true,
	  .ops = { REM_OP_RENEW_SLOT, NO_OP }, .slot = 0 },
	{ "recovered for less than uncordon_after, slot renewed: hold",
	  { "False", 10 * S, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * S, "1", .leases_read = true, .held_plus1 = 1, .slot_tried = true,
	  .action = REM_WAITING, .ops = { NO_OP }, .msg = "held by cpuzombie" },
	{ "still sick and the budget is full: hold the node anyway",
	  { "True", 20 * MIN, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * S, "1", .leases_read = true, .leases = { { "x", 1 } }, .action = REM_WAITING,
	  .ops = { NO_OP }, .msg = "held by cpuzombie" },
	{ "recovered for longer than uncordon_after: uncordon what we cordoned",
	  { "False", 60 * S, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * S, "1", .action = REM_UNCORDONED,
	  .ops = { REM_OP_UNCORDON, REM_OP_RELEASE_SLOTS, REM_OP_EVENT, NO_OP },
	  .msg = "uncordoned by cpuzombie", .reasons = "CpuzombieUncordon" },
	{ "recovery needs False, not Unknown",
	  { "Unknown", 60 * MIN, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * S, "1", .again = true, .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "someone else uncordoned our node: forget it, free the slot, no Event",
	  { "True", 20 * MIN, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * S, "1",
	  .action = REM_NONE, .ops = { REM_OP_FORGET, REM_OP_RELEASE_SLOTS, NO_OP },
	  .msg = "someone else uncordoned" },

	/* -- the fleet guards (guard.h) ---------------------------------------------------------- */
	{ "guards first: the pause ConfigMap before any slot", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .g = { .unread = true }, .again = true,
	  .ops = { REM_OP_READ_GUARDS, NO_OP } },
	{ "paused node (annotation): left exactly as it is",
	  { "True", 20 * MIN, .paused = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .action = REM_PAUSED, .ops = { NO_OP }, .msg = "paused by its annotation" },
	{ "paused node we hold: not drained, not uncordoned",
	  { "False", 120 * MIN, .unschedulable = true, .ours = true, .paused = true },
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * S, "1", .action = REM_PAUSED, .ops = { NO_OP },
	  .msg = "leaves this node as it is" },
	{ "cluster paused: no new cordon", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .g = { .cluster_paused = true }, .action = REM_PAUSED, .ops = { NO_OP },
	  .msg = "paused cluster-wide" },
	{ "cluster paused: a recovered node we hold is not uncordoned behind the person's back",
	  { "False", 60 * S, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * S, "1", .g = { .cluster_paused = true }, .action = REM_PAUSED, .ops = { NO_OP },
	  .msg = "paused cluster-wide" },
	{ "pause object unreadable: hold, fail", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN,
	  "1", .g = { .unread = false, .cluster_paused = false, .covered = (size_t)-1 },
	  .action = REM_WAITING, .ops = { NO_OP }, .msg = "cannot read the pause", .fails = true },
	{ "storm not counted yet: count the selection", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .g = { .fleet_unknown = true }, .again = true,
	  .ops = { REM_OP_COUNT_FLEET, NO_OP } },
	{ "storm: 4 of 10 True > 20% (2): nothing, one Event per node and episode", OLD_TRUE,
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1", .g = { .covered = 10, .true_n = 4 },
	  .action = REM_HELD, .ops = { REM_OP_EVENT, NO_OP }, .msg = "True on 4 of 10 nodes",
	  .reasons = "CpuzombieStormGuard" },
	{ "no storm: 2 of 10 True is not more than 20%", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .g = { .covered = 10, .true_n = 2 }, .again = true,
	  .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "no storm in a small group: 3 of 5 (EKS: groups of more than 5)", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .g = { .covered = 5, .true_n = 3 },
	  .again = true, .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "storm by count: max_unhealthy 2, 3 True", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .g = { .covered = 40, .true_n = 3, .max_unhealthy = "2" },
	  .action = REM_HELD, .ops = { REM_OP_EVENT, NO_OP }, .msg = "max_unhealthy 2 (2)",
	  .reasons = "CpuzombieStormGuard" },
	{ "storm holds the drain of a node we cordoned before it began (no new Event)",
	  { "True", 20 * MIN, .unschedulable = true, .ours = true }, CZ_REMEDIATE_DRAIN, 10 * MIN,
	  30 * MIN, "1", .leases_read = true, .held_plus1 = 1, .slot_tried = true,
	  .g = { .covered = 10, .true_n = 5 }, .action = REM_HELD, .ops = { NO_OP },
	  .msg = "storm guard" },
	{ "storm does not hold the uncordon of a recovered node",
	  { "False", 60 * S, .unschedulable = true, .ours = true }, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * S, "1", .g = { .covered = 10, .true_n = 5 }, .action = REM_UNCORDONED,
	  .ops = { REM_OP_UNCORDON, REM_OP_RELEASE_SLOTS, REM_OP_EVENT, NO_OP },
	  .reasons = "CpuzombieUncordon" },
	{ "breaker tripped: nothing until a person resets it", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .g = { .breaker_max = 3, .tripped = true }, .action = REM_HELD,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "annotate lease cpuzombie-guard",
	  .reasons = "CpuzombieBreakerOpen" },
	{ "breaker: the 4th remediation within the window (max 3) trips it", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .g = { .breaker_max = 3, .recent = 3 },
	  .again = true, .ops = { REM_OP_TRIP, NO_OP } },
	{ "breaker tripped now: Event, held, nothing cordoned", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .g = { .breaker_max = 3, .recent = 3, .trip = REM_DONE },
	  .action = REM_HELD, .ops = { REM_OP_EVENT, NO_OP }, .msg = "3 remediations within 1h",
	  .reasons = "CpuzombieBreakerTripped" },
	{ "breaker under its max: the slot, then the record", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .breaker_max = 3, .recent = 2 }, .again = true, .ops = { REM_OP_RECORD, NO_OP } },
	{ "recorded: cordon", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .leases_read = true, .held_plus1 = 1, .g = { .breaker_max = 3, .record = REM_DONE },
	  .again = true, .ops = { REM_OP_CORDON, NO_OP }, .slot = 0 },
	{ "record lost (409: another remediation first): slot freed, next cycle", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .breaker_max = 3, .record = REM_FAILED }, .action = REM_WAITING,
	  .ops = { REM_OP_RELEASE_SLOTS, NO_OP }, .msg = "guard Lease changed" },
	{ "breaker off: no record, straight to the cordon", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1, .g = { .recent = 50 },
	  .again = true, .ops = { REM_OP_CORDON, NO_OP }, .slot = 0 },
	{ "drain gap: the last remediation 2m ago, gap 10m", OLD_TRUE, CZ_REMEDIATE_DRAIN,
	  10 * MIN, 30 * MIN, "1", .g = { .drain_gap_ms = 10 * MIN, .last_age_ms = 2 * MIN },
	  .action = REM_HELD, .ops = { NO_OP }, .msg = "drain gap: the last remediation (n7)" },
	{ "drain gap passed: go on", OLD_TRUE, CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .g = { .drain_gap_ms = 10 * MIN, .last_age_ms = 11 * MIN }, .again = true,
	  .ops = { REM_OP_LIST_LEASES, NO_OP } },
	{ "outside the maintenance window: a dry-run only", OLD_TRUE, CZ_REMEDIATE_DRAIN,
	  10 * MIN, 30 * MIN, "1", .g = { .window_closed = true }, .action = REM_DRY_RUN,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "outside the maintenance window",
	  .reasons = "CpuzombieDryRun" },
	{ "protected pod: nothing evicted, stays cordoned, an Event names it", OLD_TRUE,
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .cordon = REM_DONE, .drain = REM_PROTECTED, .action = REM_DRAIN_INCOMPLETE,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "pod default/db-0 is protected",
	  .reasons = "CpuzombieDrainProtected" },
	{ "medik8s hand-off on: its Lease node-n1 before the cordon", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .medik8s_ns = "medik8s-leases" }, .again = true,
	  .ops = { REM_OP_HANDOFF, NO_OP } },
	{ "medik8s NodeHealthCheck holds node-n1: left to it, our slot freed", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .medik8s_ns = "medik8s-leases", .handoff = REM_BLOCKED }, .action = REM_SKIPPED,
	  .ops = { REM_OP_RELEASE_SLOTS, NO_OP }, .msg = "is held by NodeHealthCheck-x" },
	{ "medik8s Lease unreadable: hold, slot freed, fail", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .medik8s_ns = "medik8s-leases", .handoff = REM_FAILED }, .action = REM_WAITING,
	  .ops = { REM_OP_RELEASE_SLOTS, NO_OP }, .fails = true },
	{ "medik8s Lease ours: cordon", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .leases_read = true, .held_plus1 = 1,
	  .g = { .medik8s_ns = "medik8s-leases", .handoff = REM_DONE }, .again = true,
	  .ops = { REM_OP_CORDON, NO_OP }, .slot = 0 },
	{ "kured's node lock names this node: kured reboots it, we leave it", OLD_TRUE,
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .g = { .kured = GUARD_KURED_HERE, .kured_ds = "kube-system/kured" },
	  .action = REM_SKIPPED, .ops = { NO_OP }, .msg = "kured's node lock" },
	{ "kured's lock held for another node: one node at a time, we wait", OLD_TRUE,
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .g = { .kured = GUARD_KURED_OTHER, .kured_ds = "kube-system/kured" },
	  .action = REM_WAITING, .ops = { NO_OP }, .msg = "is held by n2: one node at a time" },
	{ "kured's lock free: taken after the slot, before the cordon", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .kured_ds = "kube-system/kured" }, .again = true,
	  .ops = { REM_OP_KURED_LOCK, NO_OP } },
	{ "kured's lock lost to another writer: our slot freed, wait", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .kured_ds = "kube-system/kured", .kured_take = REM_BLOCKED },
	  .action = REM_WAITING, .ops = { REM_OP_RELEASE_SLOTS, NO_OP },
	  .msg = "was taken by n2 first" },
	{ "kured's DaemonSet unreadable: hold, slot freed, fail", OLD_TRUE, CZ_REMEDIATE_CORDON,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .kured_ds = "kube-system/kured", .kured_take = REM_FAILED },
	  .action = REM_WAITING, .ops = { REM_OP_RELEASE_SLOTS, NO_OP }, .fails = true },
	{ "kured's lock ours: record, then cordon", OLD_TRUE, CZ_REMEDIATE_CORDON, 10 * MIN,
	  30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .kured_ds = "kube-system/kured", .kured_take = REM_DONE, .breaker_max = 3 },
	  .again = true, .ops = { REM_OP_RECORD, NO_OP } },
	{ "medik8s first, then kured: both hand-offs before the cordon", OLD_TRUE,
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .g = { .medik8s_ns = "medik8s-leases", .handoff = REM_DONE,
		 .kured_ds = "kube-system/kured" },
	  .again = true, .ops = { REM_OP_KURED_LOCK, NO_OP } },
	/* a protected pod holds a drain at most drain_timeout from the cordon */
	{ "protected pod within drain_timeout: nothing evicted, the slot kept",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 5 * MIN },
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .slot_tried = true, .drain = REM_PROTECTED, .action = REM_DRAIN_INCOMPLETE,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "pod default/db-0 is protected",
	  .reasons = "CpuzombieDrainProtected", .drain_timeout_ms = 10 * MIN },
	{ "protected pod past drain_timeout: the slot given back, the node stays cordoned",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 11 * MIN },
	  CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .slot_tried = true, .drain = REM_PROTECTED, .action = REM_DRAIN_INCOMPLETE,
	  .ops = { REM_OP_EVENT, REM_OP_GIVE_BACK, REM_OP_RELEASE_SLOTS, NO_OP },
	  .msg = "the budget slot is given back", .reasons = "CpuzombieDrainGaveUp",
	  .drain_timeout_ms = 10 * MIN },
	{ "slot given back: no slot taken, no drain; is a Lease still ours?",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 20 * MIN,
	    .gave_back = true }, CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .again = true, .ops = { REM_OP_FIND_SLOT, NO_OP } },
	{ "slot given back, none held any more: cordoned until recovery",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 20 * MIN,
	    .gave_back = true }, CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .slot_found = REM_BLOCKED, .action = REM_WAITING, .ops = { NO_OP },
	  .msg = "the slot was given back; waiting for recovery" },
	{ "slot given back but its release failed: the next cycle releases it again",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 20 * MIN,
	    .gave_back = true }, CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .slot_found = REM_DONE, .action = REM_WAITING, .ops = { REM_OP_RELEASE_SLOTS, NO_OP },
	  .msg = "still names this node: released again" },
	{ "slot given back, the Leases unreadable: waiting, fails",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 20 * MIN,
	    .gave_back = true }, CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .slot_found = REM_FAILED, .action = REM_WAITING, .ops = { NO_OP }, .fails = true },
	{ "slot given back, recovered: uncordoned as any of ours",
	  { "False", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 90 * MIN,
	    .gave_back = true }, CZ_REMEDIATE_DRAIN, 10 * MIN, 30 * MIN, "1",
	  .action = REM_UNCORDONED, .ops = { REM_OP_UNCORDON, REM_OP_RELEASE_SLOTS, REM_OP_EVENT,
					     NO_OP }, .reasons = "CpuzombieUncordon" },
	/* a slot held past uncordon_after + drain_timeout with the condition True: reported */
	{ "held 41 min (uncordon_after 30m + drain_timeout 10m), still True: an Event says so",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 41 * MIN },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .slot_tried = true, .action = REM_WAITING,
	  .ops = { REM_OP_EVENT, REM_OP_MARK_HELD_LONG, NO_OP },
	  .msg = "longer than uncordon_after + drain_timeout (2400s) with MemcgZombieLeak",
	  .reasons = "CpuzombieHeldLong", .drain_timeout_ms = 10 * MIN },
	{ "held long, annotated already: the Event again (one per cordon), no second PATCH",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 50 * MIN,
	    .held_long = true }, CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1",
	  .leases_read = true, .held_plus1 = 1, .slot_tried = true, .action = REM_WAITING,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "longer than uncordon_after + drain_timeout",
	  .reasons = "CpuzombieHeldLong", .drain_timeout_ms = 10 * MIN },
	{ "held 39 min, still True: within the bound, held silently",
	  { "True", 60 * MIN, .unschedulable = true, .ours = true, .cordoned_age_ms = 39 * MIN },
	  CZ_REMEDIATE_CORDON, 10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1,
	  .slot_tried = true, .action = REM_WAITING, .ops = { NO_OP },
	  .msg = "waiting for recovery", .drain_timeout_ms = 10 * MIN },
	{ "paused mid-drain: stops where it is, stays cordoned", OLD_TRUE, CZ_REMEDIATE_DRAIN,
	  10 * MIN, 30 * MIN, "1", .leases_read = true, .held_plus1 = 1, .cordon = REM_DONE,
	  .drain = REM_PAUSED_MID, .drain_left = 1, .action = REM_PAUSED,
	  .ops = { REM_OP_EVENT, NO_OP }, .msg = "paused mid-drain", .reasons = "CpuzombiePaused" },
};

/* Events said once per episode of the problem: timed at its lastTransitionTime. The
 * protected-pod Event is timed at the cordon: "x" in the rows' annotation is no time, so now. */
static bool per_episode(const char *reason)
{
	return streq(reason, "CpuzombieDryRun") || streq(reason, "CpuzombieStormGuard") ||
	       streq(reason, "CpuzombieBreakerOpen");
}

/* Events said once per cordon: timed at the cordon's time (our annotation). */
static bool per_cordon(const char *reason)
{
	return streq(reason, "CpuzombieDrainProtected") || streq(reason, "CpuzombieDrainGaveUp") ||
	       streq(reason, "CpuzombieHeldLong");
}

static void run_row(const struct row *t)
{
	struct cz_config cfg;
	_cleanup_free_ char *text = node_json(&t->node);
	json_object *node = json_tokener_parse(text), *leases = NULL;
	uint8_t slots[3];
	struct rem_input in;
	struct rem_plan p;
	struct guard_fleet fleet = { .covered = t->g.covered, .true_n = { t->g.true_n } };
	bool unreadable = t->g.covered == (size_t)-1;
	char reasons[200] = "";
	size_t k = 0;

	config_defaults(&cfg);
	cfg.remediation.mode = t->mode;
	cfg.remediation.for_ms = t->for_ms;
	cfg.remediation.uncordon_after_ms = t->uncordon_after_ms;
	cfg.remediation.allow_control_plane = t->allow_cp;
	if (t->drain_timeout_ms)
		cfg.remediation.drain_timeout_ms = t->drain_timeout_ms;
	snprintf(cfg.remediation.max_unavailable, sizeof(cfg.remediation.max_unavailable), "%s",
		 t->max_unavailable);
	snprintf(cfg.remediation.reboot_sentinel, sizeof(cfg.remediation.reboot_sentinel), "%s",
		 t->sentinel ? t->sentinel : "");
	memcpy(slots, t->slots, sizeof(slots));
	if (t->leases_read && t->nodes_total != (size_t)-1)
		leases = leases_json(t->leases);
	in = (struct rem_input){ .cfg = &cfg, .node_name = "n1", .node = node, .now_ms = NOW,
				 .leases_read = t->leases_read, .leases = leases,
				 .leases_err = t->leases_read && !leases ? -EREMOTEIO : 0,
				 .nodes_total = t->nodes_total == (size_t)-1 ? 0 : t->nodes_total,
				 .slots = slots, .nslots = 3, .slot_held = t->held_plus1 - 1,
				 .slot_tried = t->slot_tried, .cordon = t->cordon, .drain = t->drain,
				 .mark_drained = t->mark_drained, .drain_left = t->drain_left,
				 .guards_read = !t->g.unread, .guards_err = unreadable ? -EREMOTEIO : 0,
				 .cluster_paused = t->g.cluster_paused,
				 .kured = t->g.kured, .kured_holder = "n2",
				 .kured_take = t->g.kured_take, .pods_peeked = t->g.pods_peeked,
				 .guard = { .tripped = t->g.tripped, .recent = t->g.recent,
					    .last_ms = t->g.last_age_ms ? NOW - t->g.last_age_ms : 0,
					    .last_node = "n7" },
				 .fleet_read = !t->g.fleet_unknown,
				 .fleet = t->g.fleet_unknown ? NULL : &fleet,
				 .window_closed = t->g.window_closed, .record = t->g.record,
				 .trip = t->g.trip, .drain_pod = "default/db-0",
				 .handoff = t->g.handoff, .handoff_holder = "NodeHealthCheck-x",
				 .clock = t->clock, .slot_found = t->slot_found };
	snprintf(cfg.remediation.medik8s_lease_namespace,
		 sizeof(cfg.remediation.medik8s_lease_namespace), "%s",
		 t->g.medik8s_ns ? t->g.medik8s_ns : "");
	snprintf(cfg.remediation.kured_daemonset, sizeof(cfg.remediation.kured_daemonset), "%s",
		 t->g.kured_ds ? t->g.kured_ds : "");
	if (unreadable)
		fleet.covered = 0;
	cfg.remediation.breaker_max = t->g.breaker_max;
	cfg.remediation.drain_gap_ms = t->g.drain_gap_ms;
	if (t->g.max_unhealthy)
		snprintf(cfg.remediation.max_unhealthy, sizeof(cfg.remediation.max_unhealthy), "%s",
			 t->g.max_unhealthy);
	remediate_plan(&in, &p);
	print_message("row: %s -> %s again=%d n=%zu msg=%s\n", t->name,
		      remediate_action_name(p.action), p.again, p.n, p.msg);
	assert_int_equal(p.again, t->again);
	if (!t->again) {
		assert_int_equal(p.action, t->action);
		assert_int_equal(p.ret < 0, t->fails);
	}
	for (k = 0; k < REMEDIATE_PLAN_MAX && t->ops[k] != NO_OP; k++) {
		assert_true(k < p.n);
		assert_int_equal(p.steps[k].op, t->ops[k]);
		if (p.steps[k].op == REM_OP_EVENT) {
			snprintf(reasons + strlen(reasons), sizeof(reasons) - strlen(reasons), "%s%s",
				 *reasons ? "," : "", p.steps[k].reason);
			assert_int_equal(p.steps[k].when_ms, per_episode(p.steps[k].reason) ?
					 NOW - t->node.age_ms : NOW - (per_cordon(p.steps[k].reason) ?
					 t->node.cordoned_age_ms : 0));
		}
		if (p.steps[k].op == REM_OP_TAKE_SLOT || p.steps[k].op == REM_OP_RENEW_SLOT ||
		    p.steps[k].op == REM_OP_READ_HOLDER || p.steps[k].op == REM_OP_CORDON)
			assert_int_equal(p.steps[k].slot, t->slot);
		if (p.steps[k].op == REM_OP_CORDON)
			assert_string_equal(p.steps[k].cond_type, "MemcgZombieLeak");
		if (p.steps[k].op == REM_OP_CLOCK) {
			assert_int_equal(p.steps[k].true_since_ms, t->want_true);
			assert_int_equal(p.steps[k].recovered_since_ms, t->want_rec);
		}
	}
	assert_int_equal(p.n, k);
	/* a log line for what changes something or is refused, not for the same wait each cycle */
	if (!p.again)
		assert_int_equal(p.notable, p.ret < 0 || (p.action != REM_NONE &&
			p.action != REM_SKIPPED && p.action != REM_WAITING &&
			p.action != REM_PAUSED && p.action != REM_HELD) ||
			strstr(p.msg, "budget full") || strstr(p.msg, "someone else uncordoned") ||
			strstr(p.msg, "breaker tripped:") || strstr(p.msg, "mid-drain") ||
			strstr(p.msg, "longer than uncordon_after + drain_timeout") ||
			strstr(p.msg, "released again"));
	assert_string_equal(reasons, t->reasons ? t->reasons : "");
	if (t->msg)
		assert_non_null(strstr(p.msg, t->msg));
	json_object_put(leases);
	json_object_put(node);
}

static void test_plan_table(void **s)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(&rows[i]);
}

/* The guards' inputs, alone: a problem, recovery, the budget, the control-plane labels. */
static void test_guard_helpers(void **s)
{
	struct node_desc d = { "False", 30 * S, true, true };
	_cleanup_free_ char *text = node_json(&d);
	json_object *node = json_tokener_parse(text);
	struct cz_strlist types = { .n = 1, .item = { "MemcgZombieLeak" } };
	struct rem_clock c;
	bool any = true;

	/* the time is ours (the recovered-since annotation), never lastTransitionTime (2000) */
	assert_true(remediate_recovered(node, &types, NOW - 30 * S, 30 * S, NOW));
	assert_false(remediate_recovered(node, &types, NOW - 30 * S, 30 * S + 1, NOW));
	assert_false(remediate_recovered(node, &types, 0, 0, NOW));	/* no time: not yet */
	assert_false(remediate_problem(node, &types, NOW - 60 * MIN, 0, NOW, NULL, &any));
	assert_false(any);
	remediate_clock(node, &types, true, NOW, &c);
	assert_int_equal(c.true_since_ms, 0);
	assert_int_equal(c.recovered_since_ms, NOW - 30 * S);
	assert_false(c.write);
	remediate_clock(node, &types, false, NOW + 1500, &c);	/* not ours: no recovery clock */
	assert_int_equal(c.recovered_since_ms, 0);
	assert_true(c.write);
	assert_false(remediate_is_control_plane(node));
	json_object_put(node);
	/* True since 2000-01-01 by the node's word, 5 s by ours: not 10 min */
	d = (struct node_desc){ "True", 5 * S };
	free(text);
	text = node_json(&d);
	node = json_tokener_parse(text);
	assert_false(remediate_problem(node, &types, NOW - 5 * S, 10 * MIN, NOW, NULL, &any));
	assert_true(any);
	assert_true(remediate_problem(node, &types, NOW - 10 * MIN, 10 * MIN, NOW, NULL, NULL));
	assert_false(remediate_problem(node, &types, 0, 0, NOW, NULL, NULL));	/* no time */
	assert_false(remediate_problem(node, &types, NOW + S, 0, NOW, NULL, NULL));
	remediate_clock(node, &types, false, NOW + 999, &c);	/* kept, not rewritten */
	assert_int_equal(c.true_since_ms, NOW - 5 * S);
	assert_false(c.write);
	assert_int_equal(remediate_budget("10%", 0), 1);
	assert_int_equal(remediate_budget("100%", 7), 7);
	assert_int_equal(remediate_budget("", 7), -EINVAL);
	json_object_put(node);
}

/* A PodDisruptionBudget's 429 is "not now": retried next round, never a delete, even with
 * allow_delete; other refusals are failures, or deletes only with allow_delete. */
/* The guards' pure parts: the storm limit, the guard Lease's history, windows, protected pods. */
static void test_guard_pure(void **s)
{
	struct cz_config cfg;
	struct guard_state g;
	json_object *l, *l2, *pod;
	char ts[40], hist[400];

	(void)s;
	config_defaults(&cfg);
	/* storm limit: EKS' 20% rounded down; a count as it is; bad values refused */
	assert_int_equal(guard_unhealthy_limit("20%", 10), 2);
	assert_int_equal(guard_unhealthy_limit("20%", 4), 0);
	assert_int_equal(guard_unhealthy_limit("3", 10), 3);
	assert_int_equal(guard_unhealthy_limit("0", 10), -EINVAL);
	assert_int_equal(guard_unhealthy_limit("101%", 10), -EINVAL);
	assert_int_equal(guard_unhealthy_limit("x", 10), -EINVAL);

	/* history: recorded entries count within the window, old ones drop out */
	l = guard_record_body(NULL, "n1", NOW - 2 * 3600 * S, 3600 * S);
	assert_non_null(l);
	assert_string_equal(kube_get_str(l, "metadata.name", ""), GUARD_LEASE);
	assert_string_equal(json_object_get_string(json_object_object_get(kube_get(l,
			    "metadata.labels"), "app.kubernetes.io/managed-by")), "cpuzombie");
	l2 = guard_record_body(l, "n2", NOW - 10 * S, 3600 * S);
	json_object_put(l);
	l = guard_record_body(l2, "n3", NOW, 3600 * S);
	json_object_put(l2);
	guard_state_read(l, NOW, 3600 * S, &g);
	assert_false(g.tripped);
	assert_int_equal(g.recent, 2);		/* n1 was 2 h ago: out of the window */
	assert_int_equal(g.last_ms, NOW);
	assert_string_equal(g.last_node, "n3");
	snprintf(hist, sizeof(hist), "%s n2;", kube_time(NOW - 10 * S, false, ts, sizeof(ts)));
	assert_non_null(strstr(kube_annotation(l, GUARD_ANN_HISTORY), hist));
	assert_null(strstr(kube_annotation(l, GUARD_ANN_HISTORY), " n1"));	/* pruned */
	/* a replica's clock 30 s ahead of ours: its fresh entry counts; a day ahead does not */
	l2 = guard_record_body(l, "n4", NOW + 30 * S, 3600 * S);
	guard_state_read(l2, NOW, 3600 * S, &g);
	assert_int_equal(g.recent, 3);
	guard_state_read(l2, NOW - 24 * 3600 * S, 3600 * S, &g);
	assert_int_equal(g.recent, 0);
	json_object_put(l2);
	/* trip: tripped, history cleared, the last start kept for the gap */
	l2 = guard_trip_body(l, NOW, "3 remediations within 1h");
	guard_state_read(l2, NOW, 3600 * S, &g);
	assert_true(g.tripped);
	assert_non_null(strstr(g.tripped_why, "3 remediations"));
	assert_int_equal(g.recent, 0);
	assert_int_equal(g.last_ms, NOW);
	json_object_put(l2);
	json_object_put(l);
	/* hostile history: garbage entries are no remediations; the state never overflows */
	l = json_tokener_parse("{\"metadata\":{\"annotations\":{\"" GUARD_ANN_HISTORY "\":"
			       "\";;x y;  ;2024-13-01T00:00:00Z a;\",\"" GUARD_ANN_TRIPPED "\":"
			       "\"\\u001b[31mred\"}}}");
	guard_state_read(l, NOW, 3600 * S, &g);
	assert_int_equal(g.recent, 0);
	assert_true(g.tripped);
	assert_null(strchr(g.tripped_why, 0x1b));
	json_object_put(l);

	/* windows: none = open; mon-fri 02:00-06:00; over midnight 22:00-04:00 on sat */
	assert_true(guard_window_open(&cfg, 0, 0));
	cfg.remediation.window_days = (struct cz_strlist){ 5, { "mon", "tue", "wed", "thu", "fri" } };
	snprintf(cfg.remediation.window_start, sizeof(cfg.remediation.window_start), "02:00");
	snprintf(cfg.remediation.window_end, sizeof(cfg.remediation.window_end), "06:00");
	assert_true(guard_window_open(&cfg, 1, 2 * 60));
	assert_true(guard_window_open(&cfg, 5, 5 * 60 + 59));
	assert_false(guard_window_open(&cfg, 5, 6 * 60));
	assert_false(guard_window_open(&cfg, 1, 60));
	assert_false(guard_window_open(&cfg, 0, 3 * 60));	/* Sunday */
	cfg.remediation.window_days = (struct cz_strlist){ 1, { "Sat" } };
	snprintf(cfg.remediation.window_start, sizeof(cfg.remediation.window_start), "22:00");
	snprintf(cfg.remediation.window_end, sizeof(cfg.remediation.window_end), "04:00");
	assert_true(guard_window_open(&cfg, 6, 23 * 60));
	assert_true(guard_window_open(&cfg, 0, 3 * 60));	/* Sunday's small hours */
	assert_false(guard_window_open(&cfg, 0, 23 * 60));
	assert_false(guard_window_open(&cfg, 6, 3 * 60));
	assert_int_equal(guard_parse_hhmm("24:00"), 1440);
	assert_int_equal(guard_parse_hhmm("24:01"), -EINVAL);
	assert_int_equal(guard_parse_hhmm("7:00"), -EINVAL);
	assert_int_equal(guard_day_index("SUN"), 0);
	assert_int_equal(guard_day_index("monday"), -EINVAL);

	/* medik8s' lease validity (pkg/lease isValidLease), and the Lease we take */
	l = guard_medik8s_body(NULL, "n1", "u1", NOW - 10 * S);
	assert_true(guard_medik8s_valid(l, NOW));
	assert_false(guard_medik8s_valid(l, NOW - 20 * S));	/* renewTime in the future */
	assert_false(guard_medik8s_valid(l, NOW + (GUARD_MEDIK8S_SECONDS + 1) * S));
	assert_string_equal(kube_get_str(l, "metadata.name", ""), "node-n1");
	assert_string_equal(kube_get_str(l, "spec.holderIdentity", ""), "cpuzombie");
	assert_string_equal(kube_get_str(json_object_array_get_idx(kube_get_array(l,
			    "metadata.ownerReferences"), 0), "kind", ""), "Node");
	json_object_object_add(kube_get(l, "spec"), "holderIdentity",
			       json_object_new_string("NodeHealthCheck"));
	l2 = guard_medik8s_body(l, "n1", "u1", NOW);		/* a take-over counts */
	assert_int_equal(json_object_get_int(kube_get(l2, "spec.leaseTransitions")), 1);
	json_object_put(l2);
	json_object_put(l);
	l = json_tokener_parse("{\"spec\":{\"holderIdentity\":\"x\"}}");	/* no times */
	assert_false(guard_medik8s_valid(l, NOW));
	json_object_put(l);

	/* kured's lock (pkg/daemonsetlock): one, or the multi-lock; TTL in ns, 0 = no expiry */
	assert_false(guard_kured_locked(NULL, "n1", NOW));
	assert_true(guard_kured_locked("{\"nodeID\":\"n1\",\"metadata\":{\"unschedulable\":"
				       "false},\"created\":\"2024-01-01T00:00:00.123456789Z\","
				       "\"TTL\":0}", "n1", NOW + 3600 * S));
	assert_false(guard_kured_locked("{\"nodeID\":\"n2\",\"created\":"
					"\"2024-01-01T00:00:00Z\",\"TTL\":0}", "n1", NOW));
	assert_true(guard_kured_locked("{\"nodeID\":\"n1\",\"created\":"
				       "\"2023-12-31T23:30:00Z\",\"TTL\":3600000000000}", "n1",
				       NOW));
	assert_false(guard_kured_locked("{\"nodeID\":\"n1\",\"created\":"
					"\"2023-12-31T22:30:00Z\",\"TTL\":3600000000000}", "n1",
					NOW));		/* expired */
	assert_true(guard_kured_locked("{\"maxOwners\":2,\"locks\":[{\"nodeID\":\"n0\","
				       "\"created\":\"2024-01-01T00:00:00Z\",\"TTL\":0},"
				       "{\"nodeID\":\"n1\",\"created\":"
				       "\"2024-01-01T00:00:00Z\",\"TTL\":0}]}", "n1", NOW));
	assert_false(guard_kured_locked("{\"maxOwners\":2,\"locks\":[]}", "n1", NOW));
	assert_true(guard_kured_locked("{not json", "n1", NOW));	/* unreadable: a lock */

	/* taking it: kured's own on n1, ours, others', the multi-lock's room */
	{
		const char *theirs = "{\"nodeID\":\"n1\",\"created\":\"2024-01-01T00:00:00Z\","
				     "\"TTL\":0}";
		const char *other = "{\"nodeID\":\"n2\",\"created\":\"2024-01-01T00:00:00Z\","
				    "\"TTL\":0}";
		const char *multi = "{\"maxOwners\":2,\"locks\":[{\"nodeID\":\"n0\","
				    "\"created\":\"2023-12-31T20:00:00Z\",\"TTL\":3600000000000},"
				    "{\"nodeID\":\"n2\",\"created\":\"2024-01-01T00:00:00Z\","
				    "\"TTL\":0}]}";
		char h[64], *v, *v2, *r;
		json_object *o;

		assert_int_equal(guard_kured_state(NULL, "n1", NOW, h, sizeof(h)), GUARD_KURED_FREE);
		assert_int_equal(guard_kured_state(theirs, "n1", NOW, h, sizeof(h)),
				 GUARD_KURED_HERE);
		assert_null(guard_kured_take(theirs, "n1", NOW));
		assert_null(guard_kured_release(theirs, "n1"));	/* kured's: never ours to drop */
		assert_int_equal(guard_kured_state(other, "n1", NOW, h, sizeof(h)),
				 GUARD_KURED_OTHER);
		assert_string_equal(h, "n2");
		assert_null(guard_kured_take(other, "n1", NOW));
		assert_null(guard_kured_release(other, "n1"));
		assert_int_equal(guard_kured_state("{not json", "n1", NOW, h, sizeof(h)),
				 GUARD_KURED_OTHER);
		assert_string_equal(h, "unreadable");
		/* free: ours as kured writes it, plus our holder */
		v = guard_kured_take(NULL, "n1", NOW);
		assert_non_null(v);
		o = json_tokener_parse(v);
		assert_string_equal(kube_get_str(o, "nodeID", ""), "n1");
		assert_true(kube_get_bool(o, "metadata.unschedulable"));
		assert_int_equal(json_object_get_int64(kube_get(o, "TTL")),
				 (int64_t)GUARD_KURED_TTL_MS * 1000000);
		assert_string_equal(kube_get_str(o, "holder", ""), GUARD_KURED_HOLDER);
		json_object_put(o);
		assert_int_equal(guard_kured_state(v, "n1", NOW, h, sizeof(h)), GUARD_KURED_OURS);
		assert_int_equal(guard_kured_state(v, "n2", NOW, h, sizeof(h)), GUARD_KURED_OTHER);
		assert_int_equal(guard_kured_state(v, "n2", NOW + GUARD_KURED_TTL_MS, h, sizeof(h)),
				 GUARD_KURED_FREE);	/* a cpuzombie that died: it expires */
		assert_null(guard_kured_release(v, "n2"));
		r = guard_kured_release(v, "n1");
		assert_string_equal(r, "");		/* the single lock: the annotation goes */
		free(r);
		free(v);
		/* the multi-lock, full, one expired: it makes room (canAcquireMultiple) */
		assert_int_equal(guard_kured_state(multi, "n1", NOW, h, sizeof(h)),
				 GUARD_KURED_FREE);
		v = guard_kured_take(multi, "n1", NOW);
		assert_non_null(v);
		assert_int_equal(guard_kured_state(v, "n1", NOW, h, sizeof(h)), GUARD_KURED_OURS);
		assert_int_equal(guard_kured_state(v, "n3", NOW, h, sizeof(h)), GUARD_KURED_OTHER);
		assert_string_equal(h, "n2,n1");
		v2 = guard_kured_take(v, "n1", NOW + 60 * S);	/* renewal: still one entry */
		o = json_tokener_parse(v2);
		assert_int_equal(json_object_array_length(kube_get(o, "locks")), 2);
		json_object_put(o);
		r = guard_kured_release(v2, NULL);		/* cleanup: all of ours */
		o = json_tokener_parse(r);
		assert_int_equal(json_object_array_length(kube_get(o, "locks")), 1);
		json_object_put(o);
		free(r);
		assert_null(guard_kured_release(theirs, NULL));	/* none of ours */
		assert_null(guard_kured_release(multi, NULL));
		r = guard_kured_release(v2, "n1");		/* n2's entry stays */
		o = json_tokener_parse(r);
		assert_int_equal(json_object_array_length(kube_get(o, "locks")), 1);
		assert_string_equal(kube_get_str(json_object_array_get_idx(kube_get(o, "locks"), 0),
						 "nodeID", ""), "n2");
		json_object_put(o);
		free(r);
		free(v2);
		free(v);
	}

	/* protected pods: ours and the cluster autoscaler's */
	pod = json_tokener_parse("{\"metadata\":{\"annotations\":{\"" GUARD_ANN_PROTECT
				 "\":\"true\"}}}");
	assert_true(guard_pod_protected(pod));
	json_object_put(pod);
	pod = json_tokener_parse("{\"metadata\":{\"annotations\":{\"" GUARD_ANN_SAFE_TO_EVICT
				 "\":\"false\"}}}");
	assert_true(guard_pod_protected(pod));
	json_object_put(pod);
	pod = json_tokener_parse("{\"metadata\":{\"annotations\":{\"" GUARD_ANN_SAFE_TO_EVICT
				 "\":\"true\",\"" GUARD_ANN_PROTECT "\":\"no\"}}}");
	assert_false(guard_pod_protected(pod));
	json_object_put(pod);
}

static void test_drain_pdb_429_and_timeout(void **s)
{
	struct cz_config cfg;

	config_defaults(&cfg);
	assert_int_equal(drain_eviction_outcome(429, &cfg), DRAIN_RETRY);
	assert_int_equal(drain_eviction_outcome(201, &cfg), DRAIN_EVICTED);
	assert_int_equal(drain_eviction_outcome(200, &cfg), DRAIN_EVICTED);
	assert_int_equal(drain_eviction_outcome(404, &cfg), DRAIN_EVICTED);	/* already gone */
	assert_int_equal(drain_eviction_outcome(403, &cfg), DRAIN_EVICT_FAILED);
	assert_int_equal(drain_eviction_outcome(500, &cfg), DRAIN_EVICT_FAILED);
	cfg.remediation.allow_delete = true;
	assert_int_equal(drain_eviction_outcome(429, &cfg), DRAIN_RETRY);
	assert_int_equal(drain_eviction_outcome(403, &cfg), DRAIN_DELETE);
	/* the drain timeout: a round that would end past the deadline is not started */
	assert_int_equal(drain_round_verdict(1, 0, 0, 1000, 1000, 2000), DRAIN_ROUND_AGAIN);
	assert_int_equal(drain_round_verdict(1, 0, 0, 1001, 1000, 2000), DRAIN_ROUND_TIMED_OUT);
	assert_int_equal(drain_round_verdict(0, 0, 0, 9999, 1000, 2000), DRAIN_ROUND_DONE);
	assert_int_equal(drain_round_verdict(3, 1, 0, 0, 1000, 2000), DRAIN_ROUND_BLOCKED);
	/* a refused eviction ends the drain at once, long before the deadline, blocked or not */
	assert_int_equal(drain_round_verdict(1, 0, 1, 0, 1000, 60000), DRAIN_ROUND_FAILED);
	assert_int_equal(drain_round_verdict(2, 1, 1, 0, 1000, 60000), DRAIN_ROUND_FAILED);
	assert_int_equal(drain_next_backoff(1000), 2000);
	assert_int_equal(drain_next_backoff(4000), 5000);
	assert_true(drain_names_ok("default", "web-1"));
	assert_false(drain_names_ok("default", "x/../../nodes/n1?\""));
	assert_false(drain_names_ok("", "p"));
}

static void test_drain_pod_disposition(void **s)
{
	static const struct {
		const char *json;
		enum drain_pod plain, with_emptydir_ok;
	} pods[] = {
		{ "{\"metadata\":{\"name\":\"web\"}}", DRAIN_POD_EVICT, DRAIN_POD_EVICT },
		{ "{\"metadata\":{\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":true}]}}",
		  DRAIN_POD_SKIP, DRAIN_POD_SKIP },
		{ "{\"metadata\":{\"annotations\":{\"kubernetes.io/config.mirror\":\"x\"}}}",
		  DRAIN_POD_SKIP, DRAIN_POD_SKIP },
		{ "{\"status\":{\"phase\":\"Succeeded\"}}", DRAIN_POD_SKIP, DRAIN_POD_SKIP },
		{ "{\"spec\":{\"volumes\":[{\"emptyDir\":{}}]}}", DRAIN_POD_BLOCKED, DRAIN_POD_EVICT },
		{ "{\"metadata\":{\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"}}", DRAIN_POD_LEAVING,
		  DRAIN_POD_LEAVING },
		/* wrong shapes count as absent */
		{ "{\"metadata\":{\"ownerReferences\":\"DaemonSet\"}}", DRAIN_POD_EVICT,
		  DRAIN_POD_EVICT },
		{ "{\"spec\":{\"volumes\":{\"emptyDir\":{}}}}", DRAIN_POD_EVICT, DRAIN_POD_EVICT },
	};
	struct cz_config cfg;

	config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		json_object *p = json_tokener_parse(pods[i].json);

		cfg.remediation.delete_emptydir_data = false;
		assert_int_equal(drain_pod_disposition(p, &cfg), pods[i].plain);
		cfg.remediation.delete_emptydir_data = true;
		assert_int_equal(drain_pod_disposition(p, &cfg), pods[i].with_emptydir_ok);
		json_object_put(p);
	}
}

/* The Lease body: a conditional update keeps metadata, acquireTime stays with the same holder. */
static void test_lease_body(void **s)
{
	struct lease_desc l[3] = { { "n1", 10 * S } };
	json_object *items = leases_json(l), *b;

	assert_true(remediate_holds_slot(items, "n1"));
	assert_false(remediate_holds_slot(items, "n2"));
	assert_false(remediate_holds_slot(NULL, "n1"));
	b = lease_body(LEASE_PREFIX "0", "n1", json_object_array_get_idx(items, 0), NOW);
	assert_string_equal(kube_get_str(b, "metadata.resourceVersion", ""), "100");
	assert_string_equal(kube_get_str(b, "spec.renewTime", ""), "2024-01-01T00:00:00.000000Z");
	json_object_put(b);
	/* a take-over builds on the listed Lease without changing it: if the PUT is refused (409),
	 * the list must still say who holds the slot (it said "n2" once, and n2 cordoned) */
	b = lease_body(LEASE_PREFIX "0", "n2", json_object_array_get_idx(items, 0), NOW);
	assert_string_equal(kube_get_str(b, "spec.holderIdentity", ""), "n2");
	assert_string_equal(kube_get_str(json_object_array_get_idx(items, 0), "spec.holderIdentity",
					 ""), "n1");
	json_object_put(b);
	b = lease_body(LEASE_PREFIX "1", "n2", NULL, NOW + 1);
	assert_string_equal(kube_get_str(b, "metadata.name", ""), LEASE_PREFIX "1");
	assert_null(kube_get(b, "metadata.resourceVersion"));	/* a create */
	assert_string_equal(kube_get_str(b, "spec.holderIdentity", ""), "n2");
	assert_string_equal(kube_get_str(b, "spec.acquireTime", ""), "2024-01-01T00:00:00.001000Z");
	json_object_put(b);
	json_object_put(items);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_table),
		cmocka_unit_test(test_guard_helpers),
		cmocka_unit_test(test_guard_pure),
		cmocka_unit_test(test_drain_pdb_429_and_timeout),
		cmocka_unit_test(test_drain_pod_disposition),
		cmocka_unit_test(test_lease_body),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
