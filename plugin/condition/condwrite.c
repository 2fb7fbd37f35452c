/* SPDX-License-Identifier: MIT */
/* Writing conditions on change or heartbeat: see condwrite.h. */
#include "condition/condwrite.h"
#include "base/kjson.h"
#include "base/util.h"

uint64_t condwrite_jitter(uint64_t heartbeat_ms, uint64_t seed)
{
	return seed % (heartbeat_ms ? heartbeat_ms : 1);
}

void condwrite_init(struct condwrite *w, uint64_t heartbeat_ms, uint64_t start_ms,
		    uint64_t seed)
{
	*w = (struct condwrite){ .heartbeat_ms = heartbeat_ms ? heartbeat_ms : 1 };
	w->first_ms = start_ms + condwrite_jitter(w->heartbeat_ms, seed);
	for (size_t i = 0; i < CONDWRITE_MAX; i++)
		w->slot[i].def = conditions_nth(i);
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (s = s ? s : ""; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h * 0x100000001b3ull;	/* the NUL after it */
}

uint64_t condwrite_hash(const char *status, const char *reason)
{
	return fnv(fnv(0xcbf29ce484222325ull, status), reason);
}

/* The index of @d's slot in @w, or -1. */
static int slot_of(const struct condwrite *w, const struct cond_def *d)
{
	for (int i = 0; i < CONDWRITE_MAX; i++)
		if (d && w->slot[i].def == d)
			return i;
	return -1;
}

void condwrite_learn(struct condwrite *w, json_object *node)
{
	for (size_t i = 0; i < CONDWRITE_MAX; i++) {
		struct condwrite_slot *s = &w->slot[i];
		json_object *c;

		if (!s->def)
			continue;
		c = kube_condition(node, s->def->type);
		s->known = c != NULL;
		s->said = c ? condwrite_hash(kube_get_str(c, "status", NULL),
					     kube_get_str(c, "reason", NULL)) : 0;
		if (!s->due_ms)
			s->due_ms = w->first_ms;
	}
}

/* What @in says, as the PATCH would carry it (its message aside: condwrite.h). */
static uint64_t says(const struct cond_input *in)
{
	return condwrite_hash(conditions_status_name(in->status),
			      conditions_reason(in->def, in->status));
}

uint32_t condwrite_decide(const struct condwrite *w, const struct cond_input in[], size_t n,
			  uint64_t now_ms, uint32_t *ret_changed)
{
	uint32_t write = 0, changed = 0;

	for (size_t i = 0; i < n && i < 32; i++) {
		int k = slot_of(w, in[i].def);
		const struct condwrite_slot *s = k < 0 ? NULL : &w->slot[k];

		if (!s)
			continue;
		if (!s->known || s->said != says(&in[i]))
			changed |= 1u << i;
		else if (now_ms >= (s->due_ms ? s->due_ms : w->first_ms))
			write |= 1u << i;
	}
	if (ret_changed)
		*ret_changed = changed;
	return write | changed;
}

void condwrite_written(struct condwrite *w, const struct cond_input in[], size_t n,
		       uint64_t now_ms)
{
	for (size_t i = 0; i < n; i++) {
		int k = slot_of(w, in[i].def);
		struct condwrite_slot *s = k < 0 ? NULL : &w->slot[k];

		if (!s)
			continue;
		s->known = true;
		s->said = says(&in[i]);
		s->due_ms = now_ms + w->heartbeat_ms;
	}
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t condwrite_next_due(const struct condwrite *w, const struct cond_input in[], size_t n)
{
	uint64_t next = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		int k = slot_of(w, in[i].def);
		const struct condwrite_slot *s = k < 0 ? NULL : &w->slot[k];

		if (s)
			next = min_u64(next, s->due_ms ? s->due_ms : w->first_ms);
	}
	return next;
}
