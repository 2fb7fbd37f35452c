/* SPDX-License-Identifier: MIT */
/*
 * /dev/kmsg records: kmsg_parse_record() on the raw bytes (as the agent reads them, one record
 * per read(2) or, from a FIFO, a stream split at '\n'), then the message through
 * klog_parse_message(). Invariants: the message lies inside the record, a non-kernel facility
 * is reported as such, events are well formed. The same bytes also go to the run dir's
 * kernel-event log parser (kevents.c): what it accepts formats and parses back the same.
 */
#include <string.h>

#include <stdlib.h>

#include "klog/kevents.h"
#include "klog/klog.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *rec = (const char *)data;
	static const char ifs[2][16] = { "eth0", "ens5" };
	static struct kevents ke, back;
	struct kmsg_record k;
	struct klog_event e;
	char *payload = NULL;
	ssize_t n;

	if (kevents_parse(rec, size, &ke) == 0) {
		n = kevents_format(&ke, &payload);
		if (n < 0 || kevents_parse(payload, (size_t)n, &back) != 0 || back.n != ke.n ||
		    back.next_seq != ke.next_seq || back.have_seq != ke.have_seq)
			__builtin_trap();
		for (size_t i = 0; i < ke.n; i++)
			if (strcmp(back.ev[i].msg, ke.ev[i].msg) || back.ev[i].seq != ke.ev[i].seq)
				__builtin_trap();
		free(payload);
	}
	if (kmsg_parse_record(rec, size, &k) != 0)
		return 0;
	if (k.msg < rec || k.msg + k.msg_len != rec + size || k.level > 7 || k.facility >= 1u << 28)
		__builtin_trap();
	if (klog_parse_message(k.msg, k.msg_len, ifs, 2, &e) == 1) {
		if (e.kind <= KLOG_NONE || e.kind >= KLOG_KIND_MAX || e.clock != KLOG_CLOCK_NONE ||
		    !memchr(e.ifname, '\0', sizeof(e.ifname)) || !memchr(e.comm, '\0', sizeof(e.comm)))
			__builtin_trap();
		if (klog_kind_is_reset(e.kind) && !klog_kind_is_ena(e.kind))
			__builtin_trap();
	}
	return 0;
}
