/* SPDX-License-Identifier: MIT */
/* recover.h's state in the state dir: see recover_store.h. */
#include <errno.h>
#include <stdio.h>

#include "condition/recover_store.h"
#include "base/state.h"
#include "base/util.h"

#define RECOVER_STATE_MAX 512

static const struct state_type types[] = {
	{ "recover-memcg", RECOVER_STATE_MAX, true },
	{ "recover-cpu", RECOVER_STATE_MAX, true },
	{ "recover-ena", RECOVER_STATE_MAX, true },
};

/* the typed calls STATE_CODEC generates below (base/state.h) */
static int recover_state_read(const char *dir, const struct state_type *t,
			      struct recover_state *obj);
static int recover_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
			       struct recover_state *obj);
static int recover_state_commit(struct state_txn *txn, const struct recover_state *obj);
static int recover_state_write(const char *dir, const struct state_type *t,
			       const struct recover_state *obj);
STATE_CODEC(static, recover_state, struct recover_state, recover_parse, recover_format);

static const struct state_type *type_of(const char *check)
{
	char name[64];

	recover_state_name(check, name, sizeof(name));
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (streq(types[i].name, name))
			return &types[i];
	return NULL;
}

int recover_store_apply(const char *state_dir, const char *check, uint64_t after_ms,
			uint64_t now_ms, struct npd_result *res)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT;
	const struct state_type *t = type_of(check);
	struct recover_state s = { 0 }, old;
	enum recover_verdict v;
	char msg[NPD_MSG_MAX];
	int r;

	if (!t)
		return -ENOENT;
	if (after_ms == 0)
		return RECOVER_PASS; /* off: the check's word as it is, and no state touched */
	r = recover_state_begin(&txn, state_dir, t, &s);
	if (r < 0)
		return r;
	old = s;
	v = recover_step(&s, res->status, now_ms, after_ms);
	/* written only when it changed: a steady node costs a check no fsync */
	if (old.active != s.active || old.ok_since_ms != s.ok_since_ms ||
	    old.true_since_ms != s.true_since_ms || old.flaps != s.flaps ||
	    old.clears != s.clears) {
		r = recover_state_commit(&txn, &s);
		if (r < 0)
			return r;
	}
	if (v == RECOVER_HOLD) {
		recover_hold_message(&s, now_ms, after_ms, res->msg, msg, sizeof(msg));
		npd_set(res, NPD_PROBLEM, "%s", msg);
	}
	return (int)v;
}

int recover_store_read(const char *state_dir, const char *check, struct recover_state *s)
{
	const struct state_type *t = type_of(check);

	return t ? recover_state_read(state_dir, t, s) : -ENOENT;
}
