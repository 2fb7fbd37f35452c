/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/log.h"
#include "base/textsafe.h"

#define MSG_MAX 1184

static log_sink_fn sink;
static enum log_prio max_level = LOG_PRIO_INFO;

void log_set_sink(log_sink_fn fn)
{
	sink = fn;
}

void log_set_max_level(enum log_prio prio)
{
	max_level = prio;
}

enum log_prio log_get_max_level(void)
{
	return max_level;
}

bool log_journal_stream_matches(const char *env, unsigned long long dev, unsigned long long ino)
{
	const char *colon;
	uint64_t d, i;

	if (!env)
		return false;
	colon = strchr(env, ':');
	if (!colon || parse_u64_n(env, (size_t)(colon - env), &d) < 0 ||
	    parse_u64(colon + 1, &i) < 0)
		return false;
	return d == dev && i == ino;
}

static bool journal;

static void decide(void)
{
	struct stat st;

	journal =
		fstat(STDERR_FILENO, &st) == 0 &&
		log_journal_stream_matches(getenv("JOURNAL_STREAM"), (unsigned long long)st.st_dev,
					   (unsigned long long)st.st_ino);
}

bool log_to_journal(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, decide);
	return journal;
}

int log_full_errno(enum log_prio prio, int err, const struct log_fields *f, const char *fmt, ...)
{
	char line[MSG_MAX + 16], raw[MSG_MAX];
	int saved = errno, len;
	va_list ap;

	err = err < 0 ? -err : err;
	if (prio > max_level)
		return -err;
	/* %m formats @err, as in systemd's log_*_errno() */
	errno = err;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* task, interface and unit names are any bytes: no raw escape sequence reaches a terminal
	 * or the journal, and a name's newline cannot forge a second line */
	textsafe(TEXTSAFE_TEXT, raw, line + 11, MSG_MAX);
	if (sink && sink(prio, f, line + 11) >= 0) {
		errno = saved;
		return -err;
	}
	memcpy(line, "cpuzombie: ", 11);
	len = (int)strlen(line);
	line[len++] = '\n';
	/* one write(2): lines from the agent's threads never interleave */
	if (write(STDERR_FILENO, line, (size_t)len) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
	return -err;
}
