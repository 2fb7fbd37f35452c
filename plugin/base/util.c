/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <time.h>

#include "base/util.h"

int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL; /* "", " 1", "-1", "+1": strtoull would accept the last three */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -errno;
	if (*end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int parse_u64_n(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || len == 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

int parse_double(const char *s, double *ret)
{
	bool dot = false, digit = false;
	double v;
	char *end;

	if (!s || !*s)
		return -EINVAL;
	/* Validate the shape first: strtod also takes "inf", "0x1p3", "1e9", " 1" and "-1". */
	for (const char *p = s; *p; p++) {
		if (*p >= '0' && *p <= '9')
			digit = true;
		else if (*p == '.' && !dot)
			dot = true;
		else
			return -EINVAL;
	}
	if (!digit)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0')
		return errno != 0 ? -ERANGE : -EINVAL;
	if (!isfinite(v))
		return -ERANGE;
	*ret = v;
	return 0;
}

static int unit_ms(const char *u, size_t len, uint64_t *ret)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (strlen(units[i].name) == len && memcmp(units[i].name, u, len) == 0) {
			*ret = units[i].ms;
			return 0;
		}
	return -EINVAL;
}

int parse_duration_ms(const char *s, uint64_t *ret_ms)
{
	uint64_t total = 0;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	if (streq(s, "0")) {
		*ret_ms = 0;
		return 0;
	}
	while (*p) {
		const char *num = p, *unit;
		uint64_t n, mult;
		int r;

		while (*p >= '0' && *p <= '9')
			p++;
		unit = p;
		while (*p >= 'a' && *p <= 'z')
			p++;
		if (unit == num || p == unit)
			return -EINVAL; /* a number without unit, or a unit without number */
		r = parse_u64_n(num, (size_t)(unit - num), &n);
		if (r < 0)
			return r;
		r = unit_ms(unit, (size_t)(p - unit), &mult);
		if (r < 0)
			return r;
		if (n > (UINT64_MAX - total) / mult)
			return -ERANGE;
		total += n * mult;
	}
	*ret_ms = total;
	return 0;
}

char *format_duration(uint64_t ms, char *buf, size_t size)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = {
		{ "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 }, { "ms", 1 }
	};
	size_t off = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (ms == 0) {
		snprintf(buf, size, "0s");
		return buf;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units) && ms > 0; i++) {
		uint64_t n = ms / units[i].ms;
		int w;

		if (n == 0)
			continue;
		ms -= n * units[i].ms;
		w = snprintf(buf + off, size - off, "%" PRIu64 "%s", n, units[i].name);
		if (w < 0 || (size_t)w >= size - off)
			break;
		off += (size_t)w;
	}
	return buf;
}

char *format_ratio(double ratio, char *buf, size_t size)
{
	if (!(ratio >= 0)) /* NaN or negative: not a ratio of counts */
		ratio = 0;
	snprintf(buf, size, ratio >= 10 ? "x%.0f" : "x%.1f", ratio);
	return buf;
}

double ratio_rounded(double ratio)
{
	char buf[64];

	/* read back what format_ratio printed, so the number and the text can never disagree */
	format_ratio(ratio, buf, sizeof(buf));
	return strtod(buf + 1, NULL);
}

char *format_bytes(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%" PRIu64 "B", bytes);
	else
		snprintf(buf, size, v < 10.0 ? "%.1f%s" : "%.0f%s", v, units[u]);
	return buf;
}

static char *utc(uint64_t ms, bool date, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n = 0;

	if (gmtime_r(&t, &tm))
		n = date ? strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm)
			 : strftime(buf, size, "%H:%M:%S", &tm);
	if (n == 0)
		snprintf(buf, size, "?");
	return buf;
}

char *utc_hms(uint64_t ms, char *buf, size_t size)
{
	return utc(ms, false, buf, size);
}

char *utc_datetime(uint64_t ms, char *buf, size_t size)
{
	return utc(ms, true, buf, size);
}

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t now_realtime_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

uint64_t now_monotonic_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int buf_vappendf(char *buf, size_t size, size_t *off, bool cut, const char *fmt, va_list ap)
{
	int w;

	if (*off >= size)
		return -ENOBUFS; /* not even room for the NUL */
	w = vsnprintf(buf + *off, size - *off, fmt, ap);
	if (w < 0)
		return -EINVAL;
	if ((size_t)w < size - *off) {
		*off += (size_t)w;
		return 0;
	}
	if (cut)
		*off = size - 1;
	return -ENOBUFS;
}

int buf_appendf(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vappendf(buf, size, off, false, fmt, ap);
	va_end(ap);
	return r;
}

void buf_appendf_cut(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)buf_vappendf(buf, size, off, true, fmt, ap);
	va_end(ap);
}

bool next_line(const char **pos, const char **ret_line, size_t *ret_len)
{
	const char *p = *pos, *nl;

	if (!p || !*p)
		return false;
	nl = strchr(p, '\n');
	*ret_line = p;
	if (nl) {
		*ret_len = (size_t)(nl - p);
		*pos = nl + 1;
	} else {
		*ret_len = strlen(p);
		*pos = p + *ret_len;
	}
	return true;
}

int name_index(const char *const *names, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strlen(names[i]) == len && memcmp(names[i], s, len) == 0)
			return (int)i;
	return -1;
}

bool line_kv(const char *line, size_t len, const char *key, const char **ret, size_t *ret_len)
{
	size_t k = strlen(key);

	if (len <= k || strncmp(line, key, k) != 0 || line[k] != ' ')
		return false;
	*ret = line + k + 1;
	*ret_len = len - k - 1;
	return true;
}

bool valid_name(const char *s, size_t max)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n > max || streq(s, ".") || streq(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == ':' || c == '@'))
			return false;
	}
	return true;
}

bool valid_ifname(const char *s)
{
	size_t n;

	/* the kernel's dev_valid_name(): any bytes but '/', ':' and whitespace, < IFNAMSIZ */
	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n > 15 || streq(s, ".") || streq(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
			return false;
	return true;
}
