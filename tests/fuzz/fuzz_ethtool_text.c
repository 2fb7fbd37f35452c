/* SPDX-License-Identifier: MIT */
/*
 * The `ethtool -S` / `ethtool -i` text parser, and what consumes its output: every parsed dump
 * must format and parse back to the same counters, and the ENA verdicts over any two dumps must
 * hold their invariants (no negative delta, bounded cause). The same bytes also go to the ENA
 * state payload parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ena/ena.h"
#include "host/ethtool.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void roundtrip(const struct ethtool_devdump *d)
{
	char *buf = NULL;
	size_t len = 0, n;
	struct ethtool_devdump *back;
	FILE *f = open_memstream(&buf, &len);

	if (!f || ethtool_format_text(d, f) < 0)
		__builtin_trap();
	fclose(f);
	if (ethtool_parse_text(buf, len, &back, &n, NULL) != 0 || n != 1 || back[0].n != d->n)
		__builtin_trap();
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(back[0].stats[i].name, d->stats[i].name) ||
		    back[0].stats[i].value != d->stats[i].value)
			__builtin_trap();
	ethtool_dumps_free(back, n);
	free(buf);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const struct ena_lists def = { NULL, NULL, NULL };
	struct ethtool_devdump *d;
	struct ethtool_text_error e;
	struct ena_verdict v, r;
	struct ena_allowance a;
	struct ena_state st;
	size_t n;

	if (ena_state_parse((const char *)data, size, &st) == 0)
		ena_state_free(&st);
	if (ethtool_parse_text((const char *)data, size, &d, &n, &e) != 0) {
		if (!memchr(e.what, '\0', sizeof(e.what)) || !e.what[0])
			__builtin_trap();
		return 0;
	}
	if (n == 0 || n > ETHTOOL_MAX_DUMPS)
		__builtin_trap();
	for (size_t i = 0; i < n; i++) {
		if (d[i].n == 0)
			__builtin_trap();
		for (size_t k = 0; k < d[i].n; k++)
			if (strlen(d[i].stats[k].name) > ETHTOOL_NAME_MAX)
				__builtin_trap();
		if (d[i].ifname[0])
			roundtrip(&d[i]);
	}
	if (ena_diff(&d[0], &d[n - 1], &def, NULL, 0, &v) != 0 || v.n_moved > ENA_MOVED_MAX ||
	    strlen(v.cause) >= ENA_CAUSE_MAX)
		__builtin_trap();
	for (size_t i = 0; i < v.n_moved; i++)
		if (v.moved[i].delta && v.moved[i].cur - v.moved[i].prev != v.moved[i].delta)
			__builtin_trap();
	/* `ena-diff`'s verdict across a driver reload: a counter that went down counts from its
	 * new value, one that rose by how much; without a reload it is ena_diff()'s verdict (a
	 * counter that went down alone counts 0) */
	if (ena_diff_across_reload(&d[0], &d[n - 1], &def, &r) != 0 ||
	    r.n_moved > ENA_MOVED_MAX || strlen(r.cause) >= ENA_CAUSE_MAX ||
	    (!v.new_baseline && (r.resets != v.resets || r.n_moved != v.n_moved)))
		__builtin_trap();
	for (size_t i = 0; i < r.n_moved; i++)
		if (r.moved[i].went_down
			    ? r.moved[i].delta != (r.new_baseline ? r.moved[i].cur : 0)
			    : r.moved[i].cur - r.moved[i].prev != r.moved[i].delta)
			__builtin_trap();
	ena_allowance_diff(&d[0], &d[n - 1], &def, 1000, &a);
	ethtool_dumps_free(d, n);
	return 0;
}
