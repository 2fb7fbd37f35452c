/* SPDX-License-Identifier: MIT */
/* Remediation as a pure plan: see remediate_plan.h. */
#include <errno.h>
#include <stdarg.h>

#include "base/util.h"
#include "base/kjson.h"
#include "remediator/lease.h"
#include "remediator/remediate_plan.h"

const char *remediate_action_name(enum remediate_action a)
{
	static const char *const names[] = { "none", "waiting", "skipped", "dry-run", "cordoned",
					     "drained", "drain-incomplete", "uncordoned", "paused",
					     "held" };

	return a < ARRAY_SIZE(names) ? names[a] : "?";
}

/* ---- the plan ------------------------------------------------------------------------------ */

static void as_dry_run(const struct rem_input *in, struct rem_plan *p, const char *type);

_printf_(2, 3) static void say(struct rem_plan *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
}

static void step(struct rem_plan *p, enum rem_op op, int slot)
{
	if (p->n < REMEDIATE_PLAN_MAX)
		p->steps[p->n++] = (struct rem_step){ .op = op, .slot = slot };
}

static void event(struct rem_plan *p, const char *type, const char *reason, uint64_t when)
{
	if (p->n < REMEDIATE_PLAN_MAX)
		p->steps[p->n++] = (struct rem_step){ .op = REM_OP_EVENT, .slot = -1,
						      .event_type = type, .reason = reason,
						      .when_ms = when };
}

static void again(struct rem_plan *p)
{
	p->again = true;
}

static void final(struct rem_plan *p, enum remediate_action a, int ret)
{
	p->action = a;
	p->again = false;
	p->ret = ret;
	/* waiting while held, nothing to do, not ours, paused, held by a fleet guard: the same
	 * every cycle, not news (the guards say it once: an Event per episode) */
	p->notable = ret < 0 || (a != REM_NONE && a != REM_SKIPPED && a != REM_WAITING &&
				 a != REM_PAUSED && a != REM_HELD);
}

static void notable(struct rem_plan *p)
{
	p->notable = true;
}

static const struct cz_config *cfg_of(const struct rem_input *in)
{
	return in->cfg;
}

/* Is @in's node one we cordoned, as the plan treats it (not in dry-run)? */
static bool ours_now(const struct rem_input *in)
{
	return kube_annotation(in->node, REMEDIATE_ANN_CORDONED) &&
	       cfg_of(in)->remediation.mode != CZ_REMEDIATE_DRY_RUN;
}

/* Cordoned by someone else: never touched, so our clock does not run there (one we left there
 * before their cordon is removed: it would span a time we did not look). */
static bool foreign_cordon(const struct rem_input *in)
{
	return !kube_annotation(in->node, REMEDIATE_ANN_CORDONED) &&
	       kube_get_bool(in->node, "spec.unschedulable");
}

/* The remediator's clock on @in's node: as our annotations say, or as the CLOCK step of this
 * cycle wrote them (the same: remediate_clock() keeps what is there and is right). */
static struct rem_clock clock_of(const struct rem_input *in)
{
	struct rem_clock c;

	if (foreign_cordon(in) && in->cordon == REM_NOT_TRIED)
		return (struct rem_clock){
			.write = kube_annotation(in->node, REMEDIATE_ANN_TRUE_SINCE) ||
				 kube_annotation(in->node, REMEDIATE_ANN_RECOVERED_SINCE) };
	remediate_clock(in->node, &cfg_of(in)->remediation.conditions, ours_now(in), in->now_ms,
			&c);
	return c;
}

/* Since when a listed condition has been True on @in's node by our clock: the episode's time,
 * for the Events said once per episode (0 when none is True). */
static uint64_t problem_since(const struct rem_input *in)
{
	return clock_of(in).true_since_ms;
}

/*
 * When cpuzombie cordoned @node (the first word of our annotation, whole seconds), else
 * @now_ms cut to the second: the cordon of this cycle, annotated with that same second.
 */
static uint64_t cordoned_at(json_object *node, uint64_t now_ms)
{
	const char *a = kube_annotation(node, REMEDIATE_ANN_CORDONED);
	char t[40];
	size_t n = a ? strcspn(a, " ") : 0;
	uint64_t ms;

	if (n == 0 || n >= sizeof(t))
		return now_ms / 1000 * 1000;
	memcpy(t, a, n);
	t[n] = '\0';
	return kube_parse_time(t, &ms) == 0 ? ms : now_ms / 1000 * 1000;
}

/* The pause ConfigMap (and the guard Lease): true when the plan may go on. */
static bool guards_ready(const struct rem_input *in, struct rem_plan *p)
{
	if (!in->guards_read) {
		step(p, REM_OP_READ_GUARDS, -1);
		again(p);
		return false;
	}
	if (in->guards_err < 0) {
		say(p, "cannot read the pause ConfigMap %s/" GUARD_PAUSE_CM " or the guard Lease: "
		    "holding", cfg_of(in)->remediation.lease_namespace);
		final(p, REM_WAITING, in->guards_err);
		return false;
	}
	if (in->cluster_paused) {
		say(p, "paused cluster-wide (ConfigMap %s/" GUARD_PAUSE_CM "): cpuzombie changes "
		    "nothing until it is deleted", cfg_of(in)->remediation.lease_namespace);
		final(p, REM_PAUSED, 0);
		return false;
	}
	return true;
}

/*
 * Our clock's annotations as remediate_clock() wants them: true when they are (or were written
 * this cycle) and the plan may go on; false with the CLOCK step, or final when it failed.
 */
static bool clock_ready(const struct rem_input *in, struct rem_plan *p, const char *type)
{
	struct rem_clock c = clock_of(in);

	if (!c.write || in->clock == REM_DONE)
		return true;
	if (in->clock == REM_NOT_TRIED) {
		/* a pause cluster-wide: nothing changes, our clock included */
		if (!guards_ready(in, p)) {
			if (!p->again && in->cluster_paused && type &&
			    cfg_of(in)->remediation.mode == CZ_REMEDIATE_DRY_RUN) {
				as_dry_run(in, p, type);
				p->n = 0;	/* no episode yet to time its Event by */
			}
			return false;
		}
		step(p, REM_OP_CLOCK, -1);
		p->steps[p->n - 1].true_since_ms = c.true_since_ms;
		p->steps[p->n - 1].recovered_since_ms = c.recovered_since_ms;
		again(p);
		return false;
	}
	say(p, "cannot write cpuzombie's clock (" REMEDIATE_ANN_TRUE_SINCE ", "
	    REMEDIATE_ANN_RECOVERED_SINCE ") on the node: nothing decided, next cycle");
	final(p, REM_WAITING, in->err ? in->err : -EREMOTEIO);
	return false;
}

/* The storm guard and a tripped breaker: true (final plan made) when one holds the node; its
 * Event is timed at @episode (once per episode). */
static bool fleet_holds(const struct rem_input *in, struct rem_plan *p, uint64_t episode)
{
	const struct cz_config *cfg = cfg_of(in);
	char why[300];

	if (in->fleet && guard_storm(in->fleet, cfg, why, sizeof(why)) >= 0) {
		say(p, "%s", why);
		event(p, "Warning", "CpuzombieStormGuard", episode);
		final(p, REM_HELD, 0);
		return true;
	}
	if (cfg->remediation.breaker_max && in->guard.tripped) {
		say(p,
		    "circuit breaker tripped (%s): remediating nothing until a person resets it: "
		    "" GUARD_RESET_HINT,
		    in->guard.tripped_why, cfg->remediation.lease_namespace);
		event(p, "Warning", "CpuzombieBreakerOpen", episode);
		final(p, REM_HELD, 0);
		return true;
	}
	return false;
}

/*
 * The guards of a new remediation after the cordon-independent ones: storm, breaker, window,
 * gap, the breaker's count. Returns true when the plan may go on to the slot.
 */
static bool new_remediation_ok(const struct rem_input *in, struct rem_plan *p, const char *type,
			       bool dry)
{
	const struct cz_config *cfg = cfg_of(in);
	uint64_t since = problem_since(in);
	char t[40], w[40];

	if (!guards_ready(in, p))
		return false;
	if (!in->fleet_read) {
		step(p, REM_OP_COUNT_FLEET, -1);
		again(p);
		return false;
	}
	if (!in->fleet) {
		say(p, "cannot count the nodes of the selection (storm guard): holding");
		final(p, REM_WAITING, in->err ? in->err : -EREMOTEIO);
		return false;
	}
	if (fleet_holds(in, p, since))
		return false;
	if (in->kured == GUARD_KURED_HERE) {
		say(p,
		    "%s True, but kured's node lock (" GUARD_KURED_LOCK " on %s) names this node: "
		    "kured is rebooting it",
		    type, cfg->remediation.kured_daemonset);
		final(p, REM_SKIPPED, 0);
		return false;
	}
	if (in->kured == GUARD_KURED_OTHER) {
		say(p,
		    "%s True, but kured's node lock (" GUARD_KURED_LOCK " on %s) is held by %s: "
		    "one node at a time, waiting",
		    type, cfg->remediation.kured_daemonset,
		    in->kured_holder ? in->kured_holder : "?");
		final(p, REM_WAITING, 0);
		return false;
	}
	if (in->window_closed) {
		say(p, "outside the maintenance window (remediation.window_*, %s): dry-run: would "
		    "%s: %s True", cfg->remediation.window_timezone,
		    cfg->remediation.mode == CZ_REMEDIATE_DRAIN ? "drain" : "cordon", type);
		event(p, "Normal", "CpuzombieDryRun", since);
		final(p, REM_DRY_RUN, 0);
		return false;
	}
	if (cfg->remediation.drain_gap_ms && in->guard.last_ms && in->guard.last_ms <= in->now_ms &&
	    in->now_ms - in->guard.last_ms < cfg->remediation.drain_gap_ms) {
		say(p,
		    "drain gap: the last remediation (%s) started %s ago, remediation.drain_gap is "
		    "%s",
		    *in->guard.last_node ? in->guard.last_node : "?",
		    format_duration((in->now_ms - in->guard.last_ms) / 1000 * 1000, t, sizeof(t)),
		    format_duration(cfg->remediation.drain_gap_ms, w, sizeof(w)));
		final(p, REM_HELD, 0);
		return false;
	}
	if (cfg->remediation.breaker_max && in->guard.recent >= cfg->remediation.breaker_max &&
	    dry) {
		say(p, "circuit breaker would trip: %zu remediations within %s "
		    "(remediation.breaker_max %llu)", in->guard.recent,
		    format_duration(cfg->remediation.breaker_window_ms, w, sizeof(w)),
		    (unsigned long long)cfg->remediation.breaker_max);
		final(p, REM_HELD, 0);
		return false;
	}
	if (cfg->remediation.breaker_max && in->guard.recent >= cfg->remediation.breaker_max) {
		if (in->trip == REM_NOT_TRIED) {
			step(p, REM_OP_TRIP, -1);
			again(p);
			return false;
		}
		say(p,
		    "circuit breaker tripped: %zu remediations within %s (remediation.breaker_max "
		    "%llu); remediating nothing until a person resets it: " GUARD_RESET_HINT,
		    in->guard.recent,
		    format_duration(cfg->remediation.breaker_window_ms, w, sizeof(w)),
		    (unsigned long long)cfg->remediation.breaker_max,
		    cfg->remediation.lease_namespace);
		event(p, "Warning", "CpuzombieBreakerTripped", in->now_ms);
		final(p, REM_HELD, in->trip == REM_FAILED ? (in->err ? in->err : -EREMOTEIO) : 0);
		notable(p);
		return false;
	}
	return true;
}

/*
 * The slot for this node: returns true when the plan may go on (we hold a slot), false when
 * steps were planned to learn more or the budget is full (then the plan is final or again).
 */
static bool slot_ready(const struct rem_input *in, struct rem_plan *p)
{
	const struct cz_config *cfg = cfg_of(in);
	struct lease_pick pick;
	int budget;

	if (in->slot_held >= 0)
		return true;
	if (!in->leases_read) {
		step(p, REM_OP_LIST_LEASES, -1);
		again(p);
		return false;
	}
	if (!in->leases) {
		say(p, "cannot list cpuzombie leases");
		final(p, REM_WAITING, in->leases_err ? in->leases_err : -EREMOTEIO);
		return false;
	}
	budget = remediate_budget(cfg->remediation.max_unavailable, in->nodes_total);
	if (budget < 0) {
		say(p, "bad remediation.max_unavailable '%s'", cfg->remediation.max_unavailable);
		final(p, REM_WAITING, budget);
		return false;
	}
	pick = lease_pick(in->leases, budget, in->node_name, in->now_ms, in->slots, in->nslots);
	switch (pick.kind) {
	case LEASE_OURS:
		step(p, REM_OP_RENEW_SLOT, pick.slot);
		break;
	case LEASE_TAKE:
		step(p, REM_OP_TAKE_SLOT, pick.slot);
		break;
	case LEASE_CHECK_HOLDER:
		step(p, REM_OP_READ_HOLDER, pick.slot);
		break;
	case LEASE_FULL:
		say(p,
		    "remediation budget full: all %d cpuzombie slots (max_unavailable %s) are held",
		    budget, cfg->remediation.max_unavailable);
		final(p, REM_WAITING, in->err);
		notable(p);
		return false;
	}
	again(p);
	return false;
}

/* A protected pod has held the drain for drain_timeout since the cordon. */
static bool protected_too_long(const struct rem_input *in)
{
	uint64_t at = cordoned_at(in->node, in->now_ms);

	return in->now_ms >= at && in->now_ms - at >= cfg_of(in)->remediation.drain_timeout_ms;
}

/* Drain, after the cordon (this cycle or an earlier one). */
static void plan_drain(const struct rem_input *in, struct rem_plan *p)
{
	switch (in->drain) {
	case REM_NOT_TRIED:
		step(p, REM_OP_DRAIN, -1);
		again(p);
		return;
	case REM_TIMED_OUT:
	case REM_BLOCKED:
		if (in->drain == REM_BLOCKED)
			say(p, "drain blocked: %d pod(s) use emptyDir and "
			    "remediation.delete_emptydir_data is false", in->drain_left);
		else
			say(p,
			    "drain timed out: %d pod(s) still on the node (PodDisruptionBudget?)",
			    in->drain_left);
		event(p, "Warning", "CpuzombieDrainIncomplete", in->now_ms);
		final(p, REM_DRAIN_INCOMPLETE, 0);
		return;
	case REM_PROTECTED:
		if (protected_too_long(in)) {
			say(p, "drain blocked: pod %s is protected, for drain_timeout (%llus) "
			    "since the cordon: the budget slot is given back, the node stays "
			    "cordoned until its conditions recover",
			    in->drain_pod ? in->drain_pod : "?",
			    (unsigned long long)(cfg_of(in)->remediation.drain_timeout_ms / 1000));
			event(p, "Warning", "CpuzombieDrainGaveUp",
			      cordoned_at(in->node, in->now_ms));
			step(p, REM_OP_GIVE_BACK, -1);
			step(p, REM_OP_RELEASE_SLOTS, -1);
			final(p, REM_DRAIN_INCOMPLETE, 0);
			notable(p);
			return;
		}
		say(p, "drain blocked: pod %s is protected (" GUARD_ANN_PROTECT " \"true\" or "
		    GUARD_ANN_SAFE_TO_EVICT " \"false\"): nothing evicted, the node stays cordoned",
		    in->drain_pod ? in->drain_pod : "?");
		event(p, "Warning", "CpuzombieDrainProtected", cordoned_at(in->node, in->now_ms));
		final(p, REM_DRAIN_INCOMPLETE, 0);
		return;
	case REM_PAUSED_MID:
		say(p,
		    "paused mid-drain (annotation " GUARD_ANN_PAUSE
		    " or ConfigMap %s/" GUARD_PAUSE_CM
		    "): the drain stops here, %d pod(s) left, the node stays cordoned",
		    cfg_of(in)->remediation.lease_namespace, in->drain_left);
		event(p, "Warning", "CpuzombiePaused", in->now_ms);
		final(p, REM_PAUSED, 0);
		notable(p);
		return;
	case REM_FAILED:
		say(p, "drain failed: cannot list the node's pods or an eviction was refused "
		    "(the reason is logged)");
		final(p, REM_DRAIN_INCOMPLETE, in->err ? in->err : -EREMOTEIO);
		return;
	case REM_DONE:
		break;
	}
	if (in->mark_drained == REM_NOT_TRIED) {
		step(p, REM_OP_MARK_DRAINED, -1);
		again(p);
		return;
	}
	if (in->mark_drained == REM_FAILED) {
		say(p, "drained, but cannot annotate the node");
		final(p, REM_DRAIN_INCOMPLETE, in->err ? in->err : -EREMOTEIO);
		return;
	}
	say(p, "drained by cpuzombie (policy/v1 evictions)%s",
	    *cfg_of(in)->remediation.reboot_sentinel ? "; reboot sentinel written for kured" : "");
	event(p, "Warning", "CpuzombieDrain", in->now_ms);
	if (*cfg_of(in)->remediation.reboot_sentinel)
		step(p, REM_OP_SENTINEL, -1);	/* only now: kured reboots a drained node */
	final(p, REM_DRAINED, 0);
}

/* Cordoned by us for longer than uncordon_after + drain_timeout, a listed condition still True
 * (its type in *@ret_type). */
static bool held_too_long(const struct rem_input *in, const char **ret_type)
{
	const struct cz_config *cfg = cfg_of(in);
	uint64_t at = cordoned_at(in->node, in->now_ms);

	return in->now_ms >= at &&
	       in->now_ms - at > cfg->remediation.uncordon_after_ms +
					 cfg->remediation.drain_timeout_ms &&
	       remediate_problem(in->node, &cfg->remediation.conditions, problem_since(in), 0,
				 in->now_ms, ret_type, NULL);
}

/*
 * The slot was given back (a protected pod): release it again while a Lease still names this
 * node (the release after the give-back failed, or was lost). Returns false when the plan is
 * made (steps to learn more, or final).
 */
static bool given_back(const struct rem_input *in, struct rem_plan *p)
{
	static const char held[] = "cordoned by cpuzombie, its drain held by a protected pod past "
				   "drain_timeout: the slot was given back";

	switch (in->slot_found) {
	case REM_NOT_TRIED:
		step(p, REM_OP_FIND_SLOT, -1);
		again(p);
		return false;
	case REM_DONE:
		say(p, "%s, but a budget Lease still names this node: released again", held);
		step(p, REM_OP_RELEASE_SLOTS, -1);
		final(p, REM_WAITING, 0);
		notable(p);
		return false;
	case REM_FAILED:
		say(p, "%s; cannot list the budget Leases to see whether one is still held", held);
		final(p, REM_WAITING, in->err ? in->err : -EREMOTEIO);
		return false;
	default:
		say(p, "%s; waiting for recovery", held);
		final(p, REM_WAITING, 0);
		return false;
	}
}

/* Held too long (held_too_long, @type True): an Event each cycle (one per cordon: its name is
 * the cordon's time), and our annotation once. */
static void report_held_long(const struct rem_input *in, struct rem_plan *p, const char *type)
{
	const struct cz_config *cfg = cfg_of(in);

	say(p, "held by cpuzombie for longer than uncordon_after + drain_timeout (%llus) "
	    "with %s still True: the slot stays held; the node needs a look",
	    (unsigned long long)((cfg->remediation.uncordon_after_ms +
				  cfg->remediation.drain_timeout_ms) / 1000), type);
	event(p, "Warning", "CpuzombieHeldLong", cordoned_at(in->node, in->now_ms));
	if (!kube_annotation(in->node, REMEDIATE_ANN_HELD_LONG))
		step(p, REM_OP_MARK_HELD_LONG, -1);
	final(p, REM_WAITING, 0);
	notable(p);
}

/* A node we cordoned earlier. */
static void plan_ours(const struct rem_input *in, struct rem_plan *p)
{
	const struct cz_config *cfg = cfg_of(in);
	const char *type = NULL;

	if (!guards_ready(in, p))
		return;	/* a person paused everything: nothing uncordoned behind their back */
	if (!kube_get_bool(in->node, "spec.unschedulable")) {
		say(p, "someone else uncordoned the node: cpuzombie forgets it and frees its slot");
		step(p, REM_OP_FORGET, -1);
		step(p, REM_OP_RELEASE_SLOTS, -1);
		final(p, REM_NONE, 0);
		notable(p);
		return;
	}
	if (remediate_recovered(in->node, &cfg->remediation.conditions,
				clock_of(in).recovered_since_ms, cfg->remediation.uncordon_after_ms,
				in->now_ms)) {
		say(p, "uncordoned by cpuzombie: conditions False for %llus",
		    (unsigned long long)(cfg->remediation.uncordon_after_ms / 1000));
		step(p, REM_OP_UNCORDON, -1);
		step(p, REM_OP_RELEASE_SLOTS, -1);
		event(p, "Normal", "CpuzombieUncordon", in->now_ms);
		final(p, REM_UNCORDONED, 0);
		return;
	}
	if (kube_annotation(in->node, REMEDIATE_ANN_GAVE_BACK)) {
		(void)given_back(in, p);
		return;
	}
	/* renew (or re-take) the slot while we hold the node; failing that is only logged */
	if (!in->slot_tried && in->leases_err == 0 && !slot_ready(in, p)) {
		if (p->again)
			return;
		p->n = 0;	/* budget full or leases unreadable: we hold the node regardless */
	}
	if (cfg->remediation.mode == CZ_REMEDIATE_DRAIN &&
	    !kube_annotation(in->node, REMEDIATE_ANN_DRAINED)) {
		(void)remediate_problem(in->node, &cfg->remediation.conditions, problem_since(in),
					0, in->now_ms, &type, NULL);
		if (in->drain == REM_NOT_TRIED && type &&
		    fleet_holds(in, p, cordoned_at(in->node, in->now_ms))) {
			p->n = 0;	/* no Event: the cordon's episode has had its say */
			return;
		}
		plan_drain(in, p);
		return;
	}
	if (held_too_long(in, &type)) {
		report_held_long(in, p, type);
		return;
	}
	say(p, "held by cpuzombie, waiting for recovery");
	final(p, REM_WAITING, 0);
}

/*
 * A guard's final plan, made a dry-run's: what would hold and why, one CpuzombieDryRun Event
 * per episode in place of the guard's own, no other step (those plans write nothing anyway).
 */
static void as_dry_run(const struct rem_input *in, struct rem_plan *p, const char *type)
{
	char why[sizeof(p->msg)];
	size_t k = 0;
	bool ev = false;

	snprintf(why, sizeof(why), "%s", p->msg);
	for (size_t i = 0; i < p->n; i++)
		if (p->steps[i].op == REM_OP_EVENT && !ev) {
			ev = true;
			p->steps[k++] = p->steps[i];
		}
	p->n = k;
	if (ev) {
		p->steps[0].event_type = "Normal";
		p->steps[0].reason = "CpuzombieDryRun";
		p->steps[0].when_ms = problem_since(in);
	} else {
		event(p, "Normal", "CpuzombieDryRun", problem_since(in));
	}
	say(p, "dry-run: would hold: %s", why);
	final(p, REM_DRY_RUN, p->ret);
}

/*
 * dry-run: the guards a real remediation would meet, read-only: the pause, storm, breaker,
 * kured's lock, window and gap (new_remediation_ok), then medik8s' Lease and a protected pod.
 * Returns true when none would hold; false with steps to learn more, or with the final
 * dry-run plan saying which holds.
 */
static bool dry_guards_ok(const struct rem_input *in, struct rem_plan *p, const char *type)
{
	const struct cz_config *cfg = cfg_of(in);

	if (!new_remediation_ok(in, p, type, true)) {
		if (!p->again && !streq(p->msg, "") &&
		    strncmp(p->msg, "outside the maintenance window", 30) != 0)
			as_dry_run(in, p, type);
		return false;
	}
	if (*cfg->remediation.medik8s_lease_namespace) {
		if (in->handoff == REM_NOT_TRIED) {
			step(p, REM_OP_PEEK_HANDOFF, -1);
			again(p);
			return false;
		}
		if (in->handoff != REM_DONE) {
			if (in->handoff == REM_BLOCKED)
				say(p, "medik8s NodeHealthCheck's Lease %s/" GUARD_MEDIK8S_PREFIX
				    "%s is held by %s", cfg->remediation.medik8s_lease_namespace,
				    in->node_name, in->handoff_holder ? in->handoff_holder : "?");
			else
				say(p, "cannot read medik8s' Lease %s/" GUARD_MEDIK8S_PREFIX "%s",
				    cfg->remediation.medik8s_lease_namespace, in->node_name);
			final(p, REM_SKIPPED, in->handoff == REM_BLOCKED ? 0 :
			      (in->err ? in->err : -EREMOTEIO));
			as_dry_run(in, p, type);
			return false;
		}
	}
	/* dry-run does not say whether it would drain: a protected pod is told either way */
	if (!in->pods_peeked) {
		step(p, REM_OP_PEEK_PODS, -1);
		again(p);
		return false;
	}
	if (in->drain == REM_PROTECTED) {
		say(p, "dry-run: would cordon (%s True), but a drain would be held: pod %s is "
		    "protected (" GUARD_ANN_PROTECT " \"true\" or " GUARD_ANN_SAFE_TO_EVICT
		    " \"false\"), the node would stay cordoned", type,
		    in->drain_pod ? in->drain_pod : "?");
		event(p, "Normal", "CpuzombieDryRun", problem_since(in));
		final(p, REM_DRY_RUN, 0);
		return false;
	}
	return true;
}

/* A node with a problem that nobody holds: take a slot, then cordon (and drain). */
static void plan_cordon(const struct rem_input *in, struct rem_plan *p, const char *type)
{
	const struct cz_config *cfg = cfg_of(in);
	char why[200], t[40];

	if (cfg->remediation.mode == CZ_REMEDIATE_DRY_RUN) {
		if (!dry_guards_ok(in, p, type))
			return;
		say(p, "dry-run: would cordon: %s has been True for at least %s; no guard holds",
		    type, format_duration(cfg->remediation.for_ms, t, sizeof(t)));
		event(p, "Normal", "CpuzombieDryRun", problem_since(in)); /* per episode */
		final(p, REM_DRY_RUN, 0);
		return;
	}
	if (in->cordon == REM_FAILED) {
		say(p,
		    "cannot cordon the node: it changed under us or the API refused; slot freed");
		step(p, REM_OP_RELEASE_SLOTS, -1);
		final(p, REM_WAITING, in->err ? in->err : -EREMOTEIO);
		return;
	}
	if (in->cordon == REM_DONE) {
		if (in->drain == REM_NOT_TRIED) {
			say(p, "cordoned by cpuzombie: %s", remediate_cordon_reason(
			    in->now_ms, type, cfg->remediation.for_ms, in->slot_held, why,
			    sizeof(why)));
			event(p, "Warning", "CpuzombieCordon", in->now_ms);
		}
		if (cfg->remediation.mode == CZ_REMEDIATE_DRAIN) {
			plan_drain(in, p);
			return;
		}
		final(p, REM_CORDONED, 0);
		return;
	}
	if (!new_remediation_ok(in, p, type, false) || !slot_ready(in, p))
		return;
	if (*cfg->remediation.medik8s_lease_namespace && in->handoff != REM_DONE) {
		if (in->handoff == REM_NOT_TRIED) {
			step(p, REM_OP_HANDOFF, -1);
			again(p);
			return;
		}
		if (in->handoff == REM_BLOCKED)
			say(p,
			    "%s True, but medik8s NodeHealthCheck's Lease %s/" GUARD_MEDIK8S_PREFIX
			    "%s is held by %s: another remediator acts on this node",
			    type, cfg->remediation.medik8s_lease_namespace, in->node_name,
			    in->handoff_holder ? in->handoff_holder : "?");
		else
			say(p, "cannot take medik8s' Lease %s/" GUARD_MEDIK8S_PREFIX "%s: holding",
			    cfg->remediation.medik8s_lease_namespace, in->node_name);
		step(p, REM_OP_RELEASE_SLOTS, -1);
		final(p, in->handoff == REM_BLOCKED ? REM_SKIPPED : REM_WAITING,
		      in->handoff == REM_BLOCKED ? 0 : (in->err ? in->err : -EREMOTEIO));
		return;
	}
	if (*cfg->remediation.kured_daemonset && in->kured_take != REM_DONE) {
		if (in->kured_take == REM_NOT_TRIED) {
			step(p, REM_OP_KURED_LOCK, -1);
			again(p);
			return;
		}
		if (in->kured_take == REM_BLOCKED)
			say(p, "%s True, but kured's node lock (" GUARD_KURED_LOCK " on %s) was "
			    "taken by %s first: waiting", type, cfg->remediation.kured_daemonset,
			    in->kured_holder ? in->kured_holder : "?");
		else
			say(p,
			    "cannot take kured's node lock (" GUARD_KURED_LOCK " on %s): holding",
			    cfg->remediation.kured_daemonset);
		step(p, REM_OP_RELEASE_SLOTS, -1);
		final(p, REM_WAITING,
		      in->kured_take == REM_BLOCKED ? 0 : (in->err ? in->err : -EREMOTEIO));
		return;
	}
	if ((cfg->remediation.breaker_max || cfg->remediation.drain_gap_ms) &&
	    in->record != REM_DONE) {
		if (in->record == REM_NOT_TRIED) {
			step(p, REM_OP_RECORD, -1);
			again(p);
			return;
		}
		say(p, "the guard Lease changed under us (another remediation started?): slot "
		    "freed, next cycle");
		step(p, REM_OP_RELEASE_SLOTS, -1);
		final(p, REM_WAITING, 0);
		return;
	}
	step(p, REM_OP_CORDON, in->slot_held);
	p->steps[p->n - 1].cond_type = type;
	again(p);
}

void remediate_plan(const struct rem_input *in, struct rem_plan *p)
{
	const struct cz_config *cfg = cfg_of(in);
	const char *type = NULL;
	bool ours, any;
	char t[40];

	*p = (struct rem_plan){ .action = REM_NONE };
	if (cfg->remediation.mode == CZ_REMEDIATE_OFF) {
		say(p, "remediation off");
		return;
	}
	if (guard_paused_node(in->node) && in->cordon == REM_NOT_TRIED) {
		say(p,
		    "paused by its annotation " GUARD_ANN_PAUSE ": cpuzombie leaves this node as "
		    "it is");
		final(p, REM_PAUSED, 0);
		return;
	}
	ours = ours_now(in) && in->cordon == REM_NOT_TRIED;
	/* any listed condition True, and the first such type, for the messages */
	(void)remediate_problem(in->node, &cfg->remediation.conditions, in->now_ms, 0, in->now_ms,
				&type, &any);
	if (!ours && in->cordon == REM_NOT_TRIED && remediate_is_control_plane(in->node) &&
	    !cfg->remediation.allow_control_plane) {
		/* before the clock: nothing of ours is written on a control-plane node */
		say(p, "%s True, but this is a control-plane node (remediation.allow_control_plane "
		    "is false)", type ? type : "no listed condition");
		final(p, any ? REM_SKIPPED : REM_NONE, 0);
		return;
	}
	if (!clock_ready(in, p, type))
		return;
	if (ours) {
		plan_ours(in, p);
		return;
	}
	if (any && in->cordon == REM_NOT_TRIED && foreign_cordon(in)) {
		say(p,
		    "%s True, but the node is already unschedulable by someone else: not touching "
		    "it",
		    type);
		final(p, REM_SKIPPED, 0);
		return;
	}
	if (!remediate_problem(in->node, &cfg->remediation.conditions, problem_since(in),
			       cfg->remediation.for_ms, in->now_ms, &type, NULL)) {
		if (any)
			say(p, "no listed condition True for %llus by cpuzombie's clock (%s True, "
			    "first seen %s)", (unsigned long long)(cfg->remediation.for_ms / 1000),
			    type, kube_time(problem_since(in), false, t, sizeof(t)));
		else
			say(p, "no listed condition True for %llus",
			    (unsigned long long)(cfg->remediation.for_ms / 1000));
		return;
	}
	plan_cordon(in, p, type);
}
