/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "base/log.h"
#include "host/systemd.h"

#define FIELD_MAX 1200

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

	journal = fstat(STDERR_FILENO, &st) == 0 &&
		  log_journal_stream_matches(getenv("JOURNAL_STREAM"), (unsigned long long)st.st_dev,
					     (unsigned long long)st.st_ino);
}

bool log_to_journal(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, decide);
	return journal;
}

/* Append one "KEY=value" field to @iov (@buf holds the text). */
static void field(struct iovec *iov, int *n, char *buf, size_t size, const char *fmt, ...)
	_printf_(5, 6);
static void field(struct iovec *iov, int *n, char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	iov[*n].iov_base = buf;
	iov[*n].iov_len = (size_t)len < size ? (size_t)len : size - 1;
	(*n)++;
}

static int send_journal(enum log_prio prio, const struct log_fields *f, const char *msg)
{
	char b[7][FIELD_MAX];
	struct iovec iov[7];
	int n = 0;

	field(iov, &n, b[n], sizeof(b[0]), "MESSAGE=%s", msg);
	field(iov, &n, b[n], sizeof(b[0]), "PRIORITY=%d", (int)prio);
	field(iov, &n, b[n], sizeof(b[0]), "SYSLOG_IDENTIFIER=cpuzombie");
	if (f && f->message_id)
		field(iov, &n, b[n], sizeof(b[0]), "MESSAGE_ID=%s", f->message_id);
	if (f && f->check)
		field(iov, &n, b[n], sizeof(b[0]), "CHECK=%s", f->check);
	if (f && f->cpu >= 0)
		field(iov, &n, b[n], sizeof(b[0]), "CPU=%d", f->cpu);
	if (f && f->interface)
		field(iov, &n, b[n], sizeof(b[0]), "INTERFACE=%s", f->interface);
	return systemd_journal_sendv(iov, n);
}

void log_msg(enum log_prio prio, const struct log_fields *f, const char *fmt, ...)
{
	char msg[FIELD_MAX - 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_to_journal() && send_journal(prio, f, msg) >= 0)
		return;
	fprintf(stderr, "cpuzombie agent: %s\n", msg);
}
