/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "base/timespec.h"
#include "base/util.h"

/* Exactly @n digits at *@p into *@ret; advances *@p. */
static int digits(const char **p, int n, unsigned *ret)
{
	unsigned v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(**p - '0');
	}
	*ret = v;
	return 0;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static unsigned days_in_month(unsigned y, unsigned m)
{
	static const unsigned dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

static int absolute(const char *s, uint64_t *ret_ms)
{
	const char *p = s;
	unsigned y, mo, d, h, mi, sec = 0;
	int64_t days;

	if (digits(&p, 4, &y) < 0 || *p++ != '-' || digits(&p, 2, &mo) < 0 || *p++ != '-' ||
	    digits(&p, 2, &d) < 0 || (*p != 'T' && *p != ' '))
		return -EINVAL;
	p++;
	if (digits(&p, 2, &h) < 0 || *p++ != ':' || digits(&p, 2, &mi) < 0)
		return -EINVAL;
	if (*p == ':' && (p++, digits(&p, 2, &sec) < 0))
		return -EINVAL;
	if (*p == 'Z')
		p++;
	if (*p != '\0' || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
	    h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	days = days_from_civil(y, mo, d);
	*ret_ms = ((uint64_t)days * 86400 + h * 3600ULL + mi * 60ULL + sec) * 1000ULL;
	return 0;
}

int parse_time_spec(const char *s, uint64_t now_ms, uint64_t *ret_ms)
{
	uint64_t v;
	int r;

	if (!s || !*s)
		return -EINVAL;
	if (streq(s, "now")) {
		*ret_ms = now_ms;
		return 0;
	}
	if (*s == '@') {
		r = parse_u64(s + 1, &v);
		if (r < 0)
			return r;
		if (v > UINT64_MAX / 1000)
			return -ERANGE;
		*ret_ms = v * 1000;
		return 0;
	}
	if (strlen(s) >= 16 && s[4] == '-')
		return absolute(s, ret_ms);
	r = parse_duration_ms(s, &v);
	if (r < 0)
		return r;
	if (v > now_ms)
		return -EINVAL; /* before the epoch */
	*ret_ms = now_ms - v;
	return 0;
}
