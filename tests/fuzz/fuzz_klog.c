/* SPDX-License-Identifier: MIT */
/*
 * The pasted-kernel-log reader and what consumes it (`cpuzombie explain`): the stream cut into
 * lines by klog_lines_feed() in pieces, every line through klog_reader_line(), the events
 * through klog_analyze(), each reset into its chain and every event into its timeline phrase. Invariants: events name only printable ASCII, queue/CPU are
 * -1 or in range, strings stay NUL-terminated inside their buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ena/klog_incident.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void printable(const char *s, size_t size)
{
	const char *nul = memchr(s, '\0', size);

	if (!nul)
		__builtin_trap();
	for (; s < nul; s++)
		if (*s < ' ' || *s > '~')
			__builtin_trap();
}

static void check_event(const struct klog_event *e)
{
	if (e->kind <= KLOG_NONE || e->kind >= KLOG_KIND_MAX || e->queue < -1 || e->cpu < -1 ||
	    e->pid < -1 || e->queue > 1000000 || e->cpu > 1000000)
		__builtin_trap();
	printable(e->ifname, sizeof(e->ifname));
	printable(e->pci, sizeof(e->pci));
	printable(e->comm, sizeof(e->comm));
	printable(e->stat, sizeof(e->stat));
	printable(e->stamp, sizeof(e->stamp));
}

static void take(struct klog_reader *rd, struct klog_log *l, const char *line, size_t len)
{
	struct klog_event e;

	if (klog_reader_line(rd, line, len, &e) == 1) {
		check_event(&e);
		klog_log_add(l, &e);
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct klog_incident inc;
	struct ena_lists def = { NULL, NULL, NULL };
	const char *p = (const char *)data, *end = p + size;
	struct klog_reader rd;
	struct klog_lines ls = { 0 };
	struct klog_log l = { 0 };
	const char *line;
	size_t len, step;
	char buf[512];

	klog_reader_init(&rd);
	/* the stream as `explain` reads it: cut into lines by klog_lines, in pieces whose size the
	 * first byte chooses (so line ends, over-long lines and piece ends meet everywhere) */
	step = size ? 1 + (size_t)data[0] * 7 : 1;
	while (p < end) {
		size_t piece = (size_t)(end - p) < step ? (size_t)(end - p) : step;

		for (size_t i = 0; i < piece;) {
			size_t took = klog_lines_feed(&ls, p + i, piece - i, &line, &len);

			if (took == 0 || took > piece - i || (line && len > KLOG_LINE_MAX))
				__builtin_trap();
			i += took;
			if (line)
				take(&rd, &l, line, len);
		}
		p += piece;
	}
	if (klog_lines_end(&ls, &line, &len))
		take(&rd, &l, line, len);
	if (ls.lines < rd.line || (ls.nul_line && ls.nul_line > ls.lines + 1))
		__builtin_trap();
	if (klog_analyze(&l, &def, &inc) == 0) {
		if (inc.n_resets > KLOG_RESETS_MAX)
			__builtin_trap();
		for (size_t k = 0; k < inc.n_resets; k++) {
			const struct klog_reset *r = &inc.resets[k];

			if (r->first > r->last || r->last >= l.n ||
			    (r->lockup >= 0 && (size_t)r->lockup >= l.n))
				__builtin_trap();
			klog_reset_chain(&l, r, buf, sizeof(buf));
			printable(buf, sizeof(buf));
			klog_reset_cause(r, buf, sizeof(buf));
			if (r->has_verdict && strlen(r->verdict.cause) >= ENA_CAUSE_MAX)
				__builtin_trap();
		}
	}
	for (size_t i = 0; i < l.n; i++) {
		klog_event_describe(&l.ev[i], buf, sizeof(buf));
		printable(buf, sizeof(buf));
	}
	klog_log_free(&l);
	return 0;
}
