/* SPDX-License-Identifier: MIT */
#ifndef CZ_UTIL_H
#define CZ_UTIL_H

/*
 * Small helpers every file uses: cleanup attributes (systemd's _cleanup_ idiom), strict number
 * parsing, durations, clocks. Everything here is pure except the clock and the cleanup helpers.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand a pointer (or fd) out of a _cleanup_ variable: returns it and leaves the variable empty. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _tp = (p);                                                           \
		(p) = NULL;                                                                        \
		_tp;                                                                               \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _tf = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_tf;                                                                               \
	})

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

/* Returns the rest of @s after @prefix, or NULL when @s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

/*
 * parse_u64 - strict decimal: digits only, fully consumed, no sign, no spaces, no overflow.
 * Returns 0 and writes *ret, or -EINVAL (not a number) / -ERANGE (overflow); *ret untouched
 * on failure.
 */
int parse_u64(const char *s, uint64_t *ret);

/*
 * parse_u64_n - like parse_u64 on the first @len bytes of @s (for tokens inside a buffer that
 * is not NUL-terminated there). Same returns.
 */
int parse_u64_n(const char *s, size_t len, uint64_t *ret);

/*
 * parse_double - a finite, non-negative decimal such as "10", "0.5", "92.5". No exponent, no
 * sign, no hex, no inf/nan. Returns 0 or -EINVAL / -ERANGE; *ret untouched on failure.
 */
int parse_double(const char *s, double *ret);

/*
 * parse_duration_ms - "250ms", "2s", "10m", "1h", "1d" or a combination such as "1m30s"; a bare
 * "0" is zero. Returns 0 and writes milliseconds, or -EINVAL (syntax) / -ERANGE (overflow).
 */
int parse_duration_ms(const char *s, uint64_t *ret_ms);

/*
 * format_duration - writes the shortest exact form of @ms ("250ms", "2s", "1m30s") into @buf.
 * Returns @buf.
 */
char *format_duration(uint64_t ms, char *buf, size_t size);

/*
 * format_bytes - human size with binary units ("1.9GiB", "512KiB", "17B"). Returns @buf.
 */
char *format_bytes(uint64_t bytes, char *buf, size_t size);

/*
 * format_ratio - the one spelling of a dying/live ratio, shared by the check line (a fleet parser
 * reads it: keep it stable), the report text, its JSON and the SVG: "x25" at 10 and above, "x2.5"
 * below (a digit more where it still says something). Returns @buf.
 */
char *format_ratio(double ratio, char *buf, size_t size);

/*
 * ratio_rounded - @ratio rounded exactly as format_ratio prints it (25, 2.5), for JSON numbers
 * that must read the same as the text.
 */
double ratio_rounded(double ratio);

/*
 * utc_hms / utc_datetime - @ms since the epoch as UTC "13:05:59" / "2026-11-29 13:05:59 UTC",
 * or "?" when it cannot be formatted. Return @buf.
 */
char *utc_hms(uint64_t ms, char *buf, size_t size);
char *utc_datetime(uint64_t ms, char *buf, size_t size);

/* Milliseconds on CLOCK_REALTIME (wall time, stored in state) and CLOCK_MONOTONIC. */
uint64_t now_realtime_ms(void);
uint64_t now_monotonic_ms(void);

/*
 * buf_appendf - printf into @buf (@size bytes) at *@off, moving *@off past what it wrote.
 * Returns 0, or -ENOBUFS when the text does not fit whole: *@off is unchanged then (the bytes
 * from *@off on hold a cut copy, NUL-terminated), so a caller building a file line by line can
 * fail the whole of it.
 */
int buf_appendf(char *buf, size_t size, size_t *off, const char *fmt, ...) _printf_(4, 5);

/*
 * buf_appendf_cut - the same for a message that may be cut: what does not fit is cut and
 * *@off stops at @size - 1 (then only "" still fits).
 */
void buf_appendf_cut(char *buf, size_t size, size_t *off, const char *fmt, ...) _printf_(4, 5);

/* buf_vappendf - buf_appendf (@cut false) or buf_appendf_cut (@cut true) with a va_list. Returns
 * 0, -ENOBUFS (did not fit whole; cut when @cut) or -EINVAL (an encoding error: nothing added). */
int buf_vappendf(char *buf, size_t size, size_t *off, bool cut, const char *fmt, va_list ap)
	_printf_(5, 0);

/*
 * next_line - iterate over the lines of a NUL-terminated buffer without modifying it.
 * *@pos is the cursor (start at the buffer). On each call returns true and sets *@ret_line and
 * *@ret_len to the next line (without its '\n'); returns false at the end.
 */
bool next_line(const char **pos, const char **ret_line, size_t *ret_len);

/*
 * name_index - the index of the @len bytes at @s in the table @names (@n entries, NULL entries
 * skipped; a name matches only whole), or -1. For the enum <-> name tables of config and state.
 */
int name_index(const char *const *names, size_t n, const char *s, size_t len);

/*
 * line_kv - true when the line @line (@len bytes, as next_line gives it) is "@key <value>":
 * then *@ret and *@ret_len are the value (the rest of the line). For "key value" state files.
 */
bool line_kv(const char *line, size_t len, const char *key, const char **ret, size_t *ret_len);

/*
 * valid_name - true when @s is a safe single path component or interface name: 1..@max bytes of
 * [A-Za-z0-9._:@-], not "." or "..". Config values pass through it before reaching a path or
 * an ifreq.
 */
bool valid_name(const char *s, size_t max);

/*
 * valid_ifname - true when @s is a name the kernel accepts for a network interface
 * (dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or whitespace). Any other byte is
 * allowed - control characters and invalid UTF-8 included - so a name is a safe path component
 * and ifreq name but must pass through textsafe.h before it is printed.
 */
bool valid_ifname(const char *s);

#include "base/banned.h"

#endif
