/* SPDX-License-Identifier: MIT */
#ifndef CZ_LOG_H
#define CZ_LOG_H

/*
 * The agent's log: one line per event. Under systemd with stderr connected to the journal
 * ($JOURNAL_STREAM names stderr's device and inode, see systemd.exec(5)) each line is sent as a
 * structured journal entry instead (sd_journal_sendv through systemd.h: MESSAGE, PRIORITY,
 * MESSAGE_ID, SYSLOG_IDENTIFIER and, when given, CHECK=, CPU=, INTERFACE=), so `journalctl
 * MESSAGE_ID=... CPU=39` finds every burst on core 39. Otherwise, and whenever the journal
 * refuses the entry, a plain "cpuzombie agent: <message>" line goes to stderr.
 *
 * Checks never call this: it may load libsystemd.
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

/* Structured fields of one entry; leave a field NULL / negative to omit it. */
struct log_fields {
	const char *message_id; /* one of LOG_MID_*, or NULL */
	const char *check;	/* "memcg", "cpu", "ena" */
	int cpu;		/* -1: none */
	const char *interface;	/* "eth0" */
};

/*
 * log_journal_stream_matches - pure: true when @env (the value of $JOURNAL_STREAM,
 * "<device>:<inode>" in decimal) names the file with @dev/@ino. NULL or malformed: false.
 */
bool log_journal_stream_matches(const char *env, unsigned long long dev, unsigned long long ino);

/*
 * log_to_journal - true when stderr is the journal (decided once, then cached). Loads nothing.
 */
bool log_to_journal(void);

/*
 * log_msg - log one event at @prio with @f (may be NULL). Thread-safe (one write or one
 * sd_journal_sendv per call). Never fails: a journal error falls back to stderr.
 */
void log_msg(enum log_prio prio, const struct log_fields *f, const char *fmt, ...) _printf_(3, 4);

#endif
