/* SPDX-License-Identifier: MIT */
#ifndef CZ_REPORT_PROFILE_H
#define CZ_REPORT_PROFILE_H

/*
 * A burst's recorded profile as the report shows it: the folded-stacks file the agent wrote in
 * the run dir (agent/burst_profiles.h), read back (bounded) and cut to its heaviest stacks.
 */

#include <stddef.h>
#include <stdint.h>

#include "cpu/history.h"

#define REPORT_PROFILE_TOP 3

struct report_profile {
	char path[4200];    /* run dir + file name */
	uint64_t total;	    /* samples in the file */
	size_t n;
	struct {
		char stack[1024]; /* "comm;root;...;leaf", cut from the root side when long */
		uint64_t count;
	} top[REPORT_PROFILE_TOP];
};

/*
 * report_profile_load - @ev's profile file under @run_dir, at most @max_bytes, into *@ret: the
 * REPORT_PROFILE_TOP heaviest stacks (the file is written heaviest first). Returns 0, -ENOENT
 * when @ev has no profile or the file rolled off, -EINVAL for a file that is not folded stacks,
 * or the read's -errno.
 */
int report_profile_load(const char *run_dir, const struct burst_event *ev, size_t max_bytes,
			struct report_profile *ret);

struct flame;

/*
 * report_profile_flame - @ev's profile file under @run_dir (at most @max_bytes) and the sample
 * times beside it (history_profile_times; at most @max_bytes, absent: no times) as a flame
 * graph (view/flame.h) into *@ret (flame_free). Returns 0, or as report_profile_load() and
 * flame_build(); a times file that is unreadable or does not match leaves the times out and
 * says why (flame.times_why).
 */
int report_profile_flame(const char *run_dir, const struct burst_event *ev, size_t max_bytes,
			 struct flame **ret);

#endif
