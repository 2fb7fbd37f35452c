/* SPDX-License-Identifier: MIT */
#ifndef CZ_LOG_H
#define CZ_LOG_H

/*
 * The one logging channel of every subcommand: checks (diagnostics behind -v), the agent, the
 * Kubernetes client and remediation. One line per event on stderr, "cpuzombie: <message>"; a
 * check's stdout line (npd.h) is separate and never goes through here.
 *
 * Under systemd with stderr connected to the journal ($JOURNAL_STREAM names stderr's device and
 * inode, see systemd.exec(5)) the agent installs a sink (log_set_sink) that sends each line as a
 * structured journal entry instead (MESSAGE, PRIORITY, MESSAGE_ID, SYSLOG_IDENTIFIER and, when
 * given, CHECK=, CPU=, INTERFACE=), so `journalctl MESSAGE_ID=... CPU=39` finds every burst on
 * core 39. When the sink refuses an entry the line goes to stderr. This file itself loads nothing:
 * the check binary links it without libsystemd.
 *
 * Like systemd's log_*_errno(), every call returns the negative errno it was given, so an error
 * is logged and propagated in one statement: `return log_error_errno(r, "Failed to read '%s': %m",
 * path);`. Within the format, %m is strerror() of that errno.
 */

#include <stdbool.h>

#include "base/util.h"

/* syslog(3) priorities, without pulling <syslog.h>'s LOG_* macros into every file. */
enum log_prio {
	LOG_PRIO_ERR = 3,
	LOG_PRIO_WARNING = 4,
	LOG_PRIO_NOTICE = 5,
	LOG_PRIO_INFO = 6,
	LOG_PRIO_DEBUG = 7,
};

/* MESSAGE_IDs (128-bit, journalctl MESSAGE_ID=...). */
#define LOG_MID_BURST "5b8d9c1f0a7e4c2d9f3e6a1b7c4d2e90"	 /* a core saturation burst */
#define LOG_MID_CHECK "c6a0f2e14b3d4a7e8f9012ab34cd56ef"	 /* a check result in the agent */
#define LOG_MID_METRICS "e1f2a3b4c5d64e7f8091a2b3c4d5e6f7"	 /* metrics textfile trouble */
#define LOG_MID_AGENT "0f1e2d3c4b5a49687766554433221100"	 /* agent life cycle, other */
#define LOG_MID_KUBE "7a3c1e5f9b2d4068a1c3e5f7092b4d6f"	 /* API server, conditions, remediation */

/* Structured fields of one entry; leave a field NULL / negative to omit it. */
struct log_fields {
	const char *message_id; /* one of LOG_MID_*, or NULL */
	const char *check;	/* "memcg", "cpu", "ena" */
	int cpu;		/* -1: none */
	const char *interface;	/* "eth0" */
};

/*
 * A sink takes one formatted entry (@msg already made safe for a log) and returns >= 0 when it
 * took it, -errno when the line should go to stderr instead.
 */
typedef int (*log_sink_fn)(enum log_prio prio, const struct log_fields *f, const char *msg);

/* log_set_sink - route entries to @sink (NULL: stderr only). Set once, before threads start. */
void log_set_sink(log_sink_fn sink);

/* log_set_max_level - entries above @prio are dropped (default LOG_PRIO_INFO; -v: DEBUG). */
void log_set_max_level(enum log_prio prio);

/* log_get_max_level - the current level, for callers that skip expensive formatting. */
enum log_prio log_get_max_level(void);

/*
 * log_journal_stream_matches - pure: true when @env (the value of $JOURNAL_STREAM,
 * "<device>:<inode>" in decimal) names the file with @dev/@ino. NULL or malformed: false.
 */
bool log_journal_stream_matches(const char *env, unsigned long long dev, unsigned long long ino);

/* log_to_journal - true when stderr is the journal (decided once, then cached). Loads nothing. */
bool log_to_journal(void);

/*
 * log_full_errno - log one entry at @prio with @f (may be NULL). @err is a positive or negative
 * errno, or 0; %m in @fmt formats it. Thread-safe (one write(2) or one sink call per entry).
 * Returns -abs(@err) (0 when @err is 0), also when the entry was below the level and dropped.
 */
int log_full_errno(enum log_prio prio, int err, const struct log_fields *f, const char *fmt, ...)
	_printf_(4, 5);

#define log_error_errno(err, ...) log_full_errno(LOG_PRIO_ERR, (err), NULL, __VA_ARGS__)
#define log_warning_errno(err, ...) log_full_errno(LOG_PRIO_WARNING, (err), NULL, __VA_ARGS__)
#define log_notice_errno(err, ...) log_full_errno(LOG_PRIO_NOTICE, (err), NULL, __VA_ARGS__)
#define log_info_errno(err, ...) log_full_errno(LOG_PRIO_INFO, (err), NULL, __VA_ARGS__)
#define log_debug_errno(err, ...) log_full_errno(LOG_PRIO_DEBUG, (err), NULL, __VA_ARGS__)
#define log_error(...) ((void)log_full_errno(LOG_PRIO_ERR, 0, NULL, __VA_ARGS__))
#define log_warning(...) ((void)log_full_errno(LOG_PRIO_WARNING, 0, NULL, __VA_ARGS__))
#define log_notice(...) ((void)log_full_errno(LOG_PRIO_NOTICE, 0, NULL, __VA_ARGS__))
#define log_info(...) ((void)log_full_errno(LOG_PRIO_INFO, 0, NULL, __VA_ARGS__))
#define log_debug(...) ((void)log_full_errno(LOG_PRIO_DEBUG, 0, NULL, __VA_ARGS__))
/* With structured fields (the second argument): log_fields_full(LOG_PRIO_NOTICE, &f, "...", ...).
 * */
#define log_fields_full(prio, ...) ((void)log_full_errno((prio), 0, __VA_ARGS__))

#endif
