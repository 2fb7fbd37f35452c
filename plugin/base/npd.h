/* SPDX-License-Identifier: MIT */
#ifndef CZ_NPD_H
#define CZ_NPD_H

/*
 * The result of a check, in node-problem-detector's custom plugin protocol: exit 0 (OK ->
 * condition False), 1 (problem -> condition True), 2 (Unknown: we could not tell). Our own
 * failure is always Unknown, never a problem, because a false True can trigger remediation.
 *
 * NPD takes the message from stdout, trims white space and cuts it to max_output_length *bytes*,
 * so the line we print is ASCII only, one line, most important facts first.
 */

#include <stddef.h>
#include <stdio.h>

#include "base/util.h"

enum npd_status {
	NPD_OK = 0,
	NPD_PROBLEM = 1,
	NPD_UNKNOWN = 2,
};

#define NPD_MSG_MAX 1024
#define NPD_DEFAULT_MAX_OUTPUT 256

struct npd_result {
	enum npd_status status;
	char msg[NPD_MSG_MAX];
};

/* npd_status_name - "OK", "problem" or "Unknown". */
const char *npd_status_name(enum npd_status s);

/*
 * npd_set - set status and message (printf format). A message longer than NPD_MSG_MAX - 1 is
 * cut; npd_emit() cuts again to the configured length. Returns the status as an int, so a
 * check can `return npd_set(...)`.
 */
int npd_set(struct npd_result *res, enum npd_status status, const char *fmt, ...) _printf_(3, 4);

/*
 * npd_unknown - status Unknown with "<what>: <strerror(-err)>". @err is a negative errno
 * (positive values are accepted too). Returns NPD_UNKNOWN.
 */
int npd_unknown(struct npd_result *res, int err, const char *fmt, ...) _printf_(3, 4);

/*
 * npd_append - append "; <text>" to the message (no separator when the message is empty).
 * Silently cut when full: the message is already ordered by importance.
 */
void npd_append(struct npd_result *res, const char *fmt, ...) _printf_(2, 3);

/*
 * npd_format_line - the exact bytes NPD will see: message with every byte outside printable
 * ASCII replaced by '?', newlines and tabs by spaces, leading/trailing white space trimmed, cut
 * to @max_output bytes (0 means NPD_DEFAULT_MAX_OUTPUT). Writes into @buf (NUL-terminated) and
 * returns its length.
 */
size_t npd_format_line(const struct npd_result *res, size_t max_output, char *buf, size_t size);

/*
 * npd_emit - print npd_format_line() plus '\n' to @out, flush it, and return the exit code for
 * the status (0/1/2). A write error turns the result into 2.
 */
int npd_emit(const struct npd_result *res, size_t max_output, FILE *out);

#endif
