/* SPDX-License-Identifier: MIT */
/*
 * The run dir's kernel-event log (kevents.h): bounded ring, text payload, parsed back through
 * the one kernel-message parser.
 */
#include <errno.h>
#include <inttypes.h>

#include "klog/kevents.h"
#include "base/state.h"
#include "base/util.h"

#define PAYLOAD_MAX (KEVENTS_MAX * (KEVENT_MSG_MAX + 48) + KLOG_KIND_MAX * 48 + 256)

const struct state_type kevents_state = { RUN_KERNEL_EVENTS, PAYLOAD_MAX, false };

STATE_CODEC(, kevents_state, struct kevents, kevents_parse, kevents_format);

static void keep(struct kevents *k, uint64_t t_ms, uint64_t seq, const char *msg, size_t len)
{
	struct kevent *ke;

	if (k->n == KEVENTS_MAX) {
		memmove(&k->ev[0], &k->ev[1], (KEVENTS_MAX - 1) * sizeof(k->ev[0]));
		k->n--;
	}
	ke = &k->ev[k->n++];
	ke->t_ms = t_ms;
	ke->seq = seq;
	if (len > KEVENT_MSG_MAX)
		len = KEVENT_MSG_MAX;
	for (size_t i = 0; i < len; i++)
		ke->msg[i] = msg[i] >= ' ' && msg[i] < 0x7f ? msg[i] : '?';
	ke->msg[len] = '\0';
	while (len > 0 && ke->msg[len - 1] == ' ')
		ke->msg[--len] = '\0'; /* the format's "ev t seq text" must parse back the same */
	if (len == 0)
		memcpy(ke->msg, "?", 2); /* nothing but blanks: "ev t seq " would not parse back */
}

/* The last kept event is a missed-Tx line of the same device and queue, not long ago. */
static bool repeats(const struct kevents *k, const struct klog_event *e, uint64_t t_ms)
{
	struct klog_event last;

	if (e->kind != KLOG_ENA_TX_MISSED || k->n == 0 || kevents_event(k, k->n - 1, &last) != 1)
		return false;
	return last.kind == KLOG_ENA_TX_MISSED && last.queue == e->queue &&
	       streq(last.ifname, e->ifname) && t_ms >= k->ev[k->n - 1].t_ms &&
	       t_ms - k->ev[k->n - 1].t_ms < KEVENTS_REPEAT_MS;
}

bool kevents_record(struct kevents *k, const struct klog_event *e, uint64_t t_ms, uint64_t seq,
		    const char *msg, size_t len)
{
	if ((unsigned)e->kind >= KLOG_KIND_MAX || e->kind == KLOG_NONE)
		return false;
	k->count[e->kind]++;
	if (e->kind == KLOG_ENA_STAT || repeats(k, e, t_ms))
		return false;
	keep(k, t_ms, seq, msg, len);
	return true;
}

int kevents_event(const struct kevents *k, size_t i, struct klog_event *ret)
{
	const struct kevent *ke = &k->ev[i];
	struct klog_event e;
	char hms[16];

	if (i >= k->n || klog_parse_message(ke->msg, strlen(ke->msg), NULL, 0, &e) != 1)
		return 0;
	e.clock = KLOG_CLOCK_WALL;
	e.t_us = (int64_t)(ke->t_ms * 1000);
	snprintf(e.stamp, sizeof(e.stamp), "%s", utc_hms(ke->t_ms, hms, sizeof(hms)));
	*ret = e;
	return 1;
}

/* ---- payload ------------------------------------------------------------------------------ */

/* The next space-separated word of [*p, end) as a number; "-" when @dash_ok sets *@ret_none. */
static int word_u64(const char **p, const char *end, uint64_t *ret, bool *ret_none)
{
	const char *s = *p, *sp = memchr(s, ' ', (size_t)(end - s));
	size_t n = sp ? (size_t)(sp - s) : (size_t)(end - s);

	*p = sp ? sp + 1 : end;
	if (ret_none && n == 1 && s[0] == '-') {
		*ret_none = true;
		return 0;
	}
	return parse_u64_n(s, n, ret);
}

/* [s, end) starts with @word: returns what follows it, else NULL (no NUL needed). */
static const char *after(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - s) >= n && memcmp(s, word, n) == 0 ? s + n : NULL;
}

static int parse_line(struct kevents *k, const char *s, const char *end)
{
	uint64_t a, b;
	bool none = false;
	const char *rest;

	if ((rest = after(s, end, "ev "))) {
		if (word_u64(&rest, end, &a, NULL) < 0 || word_u64(&rest, end, &b, NULL) < 0 ||
		    rest >= end || k->n == KEVENTS_MAX || (size_t)(end - rest) > KEVENT_MSG_MAX)
			return -EINVAL;
		keep(k, a, b, rest, (size_t)(end - rest));
		return 0;
	}
	if ((rest = after(s, end, "boot "))) {
		size_t n = (size_t)(end - rest);
		char id[sizeof(k->boot_id)];

		if (n == 0 || n >= sizeof(id))
			return -EINVAL;
		memcpy(id, rest, n);
		id[n] = '\0';
		if (!streq(id, "-") && !valid_name(id, sizeof(id) - 1))
			return -EINVAL;
		memcpy(k->boot_id, streq(id, "-") ? "" : id, streq(id, "-") ? 1 : n + 1);
		return 0;
	}
	if ((rest = after(s, end, "next_seq "))) {
		if (word_u64(&rest, end, &a, &none) < 0 || rest != end)
			return -EINVAL;
		k->have_seq = !none;
		k->next_seq = none ? 0 : a;
		return 0;
	}
	if ((rest = after(s, end, "lost ")))
		return word_u64(&rest, end, &k->lost, NULL) < 0 || rest != end ? -EINVAL : 0;
	if ((rest = after(s, end, "overruns ")))
		return word_u64(&rest, end, &k->overruns, NULL) < 0 || rest != end ? -EINVAL : 0;
	if ((rest = after(s, end, "count "))) {
		const char *sp = memchr(rest, ' ', (size_t)(end - rest));
		char name[32];
		enum klog_kind kind;

		if (!sp || (size_t)(sp - rest) >= sizeof(name))
			return -EINVAL;
		memcpy(name, rest, (size_t)(sp - rest));
		name[sp - rest] = '\0';
		kind = klog_kind_from_name(name);
		rest = sp + 1;
		if (kind == KLOG_NONE || word_u64(&rest, end, &a, NULL) < 0 || rest != end)
			return -EINVAL;
		k->count[kind] = a;
		return 0;
	}
	return -EINVAL;
}

int kevents_parse(const char *payload, size_t len, void *obj)
{
	struct kevents *k = calloc(1, sizeof(*k));
	const char *p = payload, *end = payload + len;

	if (!k)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (le > p && parse_line(k, p, le) < 0) {
			free(k);
			return -EINVAL;
		}
		p = le + 1;
	}
	memcpy(obj, k, sizeof(*k));
	free(k);
	return 0;
}

ssize_t kevents_format(const void *obj, char **ret)
{
	const struct kevents *k = obj;
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return -ENOMEM;
	fprintf(f, "boot %s\n", k->boot_id[0] ? k->boot_id : "-");
	if (k->have_seq)
		fprintf(f, "next_seq %" PRIu64 "\n", k->next_seq);
	else
		fprintf(f, "next_seq -\n");
	fprintf(f, "lost %" PRIu64 "\noverruns %" PRIu64 "\n", k->lost, k->overruns);
	for (int i = 1; i < KLOG_KIND_MAX; i++)
		if (k->count[i])
			fprintf(f, "count %s %" PRIu64 "\n", klog_kind_name((enum klog_kind)i),
				k->count[i]);
	for (size_t i = 0; i < k->n && i < KEVENTS_MAX; i++)
		fprintf(f, "ev %" PRIu64 " %" PRIu64 " %s\n", k->ev[i].t_ms, k->ev[i].seq,
			k->ev[i].msg);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return (ssize_t)size;
}
