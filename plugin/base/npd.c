/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>

#include "base/npd.h"

const char *npd_status_name(enum npd_status s)
{
	switch (s) {
	case NPD_OK:
		return "OK";
	case NPD_PROBLEM:
		return "problem";
	default:
		return "Unknown";
	}
}

int npd_set(struct npd_result *res, enum npd_status status, const char *fmt, ...)
{
	va_list ap;

	res->status = status;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
	return (int)status;
}

/* Our parsers' errno values mean something more specific than strerror() says. */
static const char *reason(int err)
{
	switch (err) {
	case EINVAL:
		return "malformed content";
	case ERANGE:
		return "number out of range";
	case EFBIG:
		return "file larger than expected";
	case E2BIG:
		return "too many entries";
	case ENODATA:
		return "field not found";
	case EBADMSG:
		return "corrupt";
	default:
		return strerror(err);
	}
}

int npd_unknown(struct npd_result *res, int err, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	res->status = NPD_UNKNOWN;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
	n = strlen(res->msg);
	if (err != 0 && n < sizeof(res->msg))
		snprintf(res->msg + n, sizeof(res->msg) - n, ": %s", reason(err < 0 ? -err : err));
	return NPD_UNKNOWN;
}

void npd_append(struct npd_result *res, const char *fmt, ...)
{
	size_t n = strlen(res->msg);
	va_list ap;

	if (n + 3 >= sizeof(res->msg))
		return;
	if (n > 0) {
		memcpy(res->msg + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(res->msg + n, sizeof(res->msg) - n, fmt, ap);
	va_end(ap);
}

size_t npd_format_line(const struct npd_result *res, size_t max_output, char *buf, size_t size)
{
	const char *s = res->msg;
	size_t n = 0, start, end;

	if (size == 0)
		return 0;
	if (max_output == 0)
		max_output = NPD_DEFAULT_MAX_OUTPUT;
	/* NPD trims white space then cuts to max_output_length bytes: do the same so what we print
	 * is exactly what lands in the condition. Non-ASCII would be cut mid-character. */
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	for (; *s && n + 1 < size && n < max_output; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\n' || c == '\t' || c == '\r')
			c = ' ';
		else if (c < 0x20 || c > 0x7e)
			c = '?';
		buf[n++] = (char)c;
	}
	end = n;
	while (end > 0 && buf[end - 1] == ' ')
		end--;
	start = 0;
	buf[end] = '\0';
	return end - start;
}

int npd_emit(const struct npd_result *res, size_t max_output, FILE *out)
{
	char line[NPD_MSG_MAX];

	npd_format_line(res, max_output, line, sizeof(line));
	if (fprintf(out, "%s\n", line) < 0 || fflush(out) != 0)
		return NPD_UNKNOWN;
	switch (res->status) {
	case NPD_OK:
		return 0;
	case NPD_PROBLEM:
		return 1;
	default:
		return 2;
	}
}
