/* SPDX-License-Identifier: MIT */
#ifndef CZ_FOLDED_H
#define CZ_FOLDED_H

/*
 * Folded stacks: one line per distinct stack, "comm;root;...;leaf count" — the format of
 * Brendan Gregg's stackcollapse scripts that flamegraph.pl, speedscope and Pyroscope read. The
 * burst profiler builds them (fold_*), the run dir keeps one file per burst, and `check cpu` and
 * `report` read them back (folded_*). All of it is pure.
 *
 * Names are kept to printable ASCII: a byte outside it becomes '?', and ';' inside a name
 * (a task may call itself anything) becomes ':', so every line parses back the same way.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Distinct stacks kept per profile; samples of further stacks count as "[other]". */
#define FOLD_STACKS_MAX 2048
/* Frames per stack (the kernel's default perf_event_max_stack is 127). */
#define FOLD_DEPTH_MAX 128

struct fold;

/* fold_new - an empty profile keeping at most @max_stacks distinct stacks. 0 or -ENOMEM. */
int fold_new(size_t max_stacks, struct fold **ret);

/* fold_free - safe on NULL. */
void fold_free(struct fold *f);

/*
 * fold_add - count @count samples of the stack @frames (@n names, ROOT FIRST) run by @comm.
 * Returns 0, or -ENOMEM. A stack beyond the distinct-stack limit is counted as "comm;[other]".
 */
int fold_add(struct fold *f, const char *comm, const char *const *frames, size_t n, uint64_t count);

/*
 * fold_keep_times - from now on, also keep the time of each sample fold_add_at() adds, at most
 * @max of them (later ones are counted, their times dropped: fold_times_lost). 0 or -ENOMEM.
 */
int fold_keep_times(struct fold *f, size_t max);

/*
 * fold_add_at - fold_add() of one sample taken @t_ms after the profile's start, its time kept
 * when fold_keep_times() asked for it. Returns 0, or -ENOMEM.
 */
int fold_add_at(struct fold *f, const char *comm, const char *const *frames, size_t n,
		uint32_t t_ms);

/* fold_times_lost - samples whose time was not kept (beyond fold_keep_times' @max). */
uint64_t fold_times_lost(const struct fold *f);

/*
 * fold_format_times - the kept sample times as the ".times" text that goes beside the folded
 * file fold_format() wrote with @lines lines (FOLDED_TIMES_HEADER, then one "t_ms line" per
 * sample in the order they were added: @line the 0-based line of that folded text holding the
 * sample's stack, its last line when the stack went to "[truncated]"), into @buf
 * (NUL-terminated). Returns the length, 0 when no time was kept, -ENOBUFS when it does not fit
 * in @size (whole or not at all: a strip with samples missing would lie), -EINVAL when @lines
 * is 0 and times were kept.
 */
ssize_t fold_format_times(const struct fold *f, size_t lines, char *buf, size_t size);

#define FOLDED_TIMES_HEADER "cpuzombie-times 1\n"

/* One sample's time as read back: @t_ms after the profile's start, its stack on @line. */
struct folded_time {
	uint32_t t_ms;
	uint32_t line;
};

/*
 * folded_times_parse - pure: the sample times of a ".times" text (fold_format_times) whose
 * folded file has @nlines lines, at most @max into @ret. Returns the number of samples (those
 * beyond @max are counted, not stored), or -EINVAL for a text without the header, a line that
 * is not "t_ms line", a line number >= @nlines, or a time above 24 h.
 */
int folded_times_parse(const char *text, size_t len, size_t nlines, struct folded_time *ret,
		       size_t max);

/* fold_samples - the samples added so far. */
uint64_t fold_samples(const struct fold *f);

/*
 * fold_format - the profile as folded text into @buf (NUL-terminated), heaviest stack first,
 * whole lines only: the stacks that do not fit in @size bytes are summed into a last line
 * "[truncated] N" so the counts still add up. Returns the length, or -ENOBUFS when @size cannot
 * hold even that line.
 */
ssize_t fold_format(const struct fold *f, char *buf, size_t size);

/* One line of a folded file, as read back (pointers into the text, not NUL-terminated). */
struct folded_line {
	const char *stack; /* "comm;root;...;leaf" */
	size_t len;
	uint64_t count;
};

/*
 * folded_parse - pure: the lines of folded text, at most @max into @ret (in file order).
 * Returns the number of lines stored (with @ret NULL: the number of lines there are), or
 * -EINVAL for a line that is not "frames count" or has a byte outside printable ASCII
 * (fold_format never writes one).
 */
int folded_parse(const char *text, size_t len, struct folded_line *ret, size_t max);

/*
 * folded_is_plumbing - true for a frame (@n bytes at @f) that folded_hot_frame() never names:
 * syscall and interrupt entry, VFS and seq_file plumbing, idle, generic helpers, the
 * profiler's own markers. Pure.
 */
bool folded_is_plumbing(const char *f, size_t n);

struct hot_frame {
	char frame[96];	   /* the kernel function that explains most samples */
	char comm[17];	   /* the task with most samples in it */
	uint64_t samples;  /* samples with @frame on their stack */
	uint64_t total;	   /* all samples of the profile */
};

/*
 * folded_hot_frame - pure: the frame that explains most samples of a folded profile, not
 * counting the syscall and interrupt entry, the VFS and seq_file plumbing, idle, and generic
 * helpers (string formatting, copies, locks) that explain nothing by themselves; ties go to the
 * deeper frame. Falls back to the leaf with most samples when every frame is plumbing.
 * Returns 0, -ENODATA for an empty profile, -EINVAL for malformed text.
 */
int folded_hot_frame(const char *text, size_t len, struct hot_frame *ret);

#endif
