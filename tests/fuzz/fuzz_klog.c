/* SPDX-License-Identifier: MIT */
/*
 * The pasted-kernel-log reader and what consumes it (`cpuzombie explain`): every line through
 * klog_reader_line(), the events through klog_analyze(), each reset into its chain and every
 * event into its timeline phrase. Invariants: events name only printable ASCII, queue/CPU are
 * -1 or in range, strings stay NUL-terminated inside their buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/klog_incident.h"

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

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct klog_incident inc;
	struct ena_lists def = { NULL, NULL, NULL };
	const char *p = (const char *)data, *end = p + size;
	struct klog_reader rd;
	struct klog_log l = { 0 };
	char buf[512];

	klog_reader_init(&rd);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct klog_event e;

		if (klog_reader_line(&rd, p, len, &e) == 1) {
			check_event(&e);
			klog_log_add(&l, &e);
		}
		p += len + 1;
	}
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
