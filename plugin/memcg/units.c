/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/units.h"
#include "base/fileio.h"
#include "base/util.h"

#define HEADER "cpuzombie-units 1\n"

size_t units_format(const struct systemd_restarts *r, const char *err, char *buf, size_t size)
{
	size_t off;
	int k;

	k = snprintf(buf, size, HEADER "t %llu\n", (unsigned long long)r->t_ms);
	if (k < 0 || (size_t)k >= size)
		return 0;
	off = (size_t)k;
	if (err) {
		char clean[UNITS_ERR_MAX];
		size_t i;

		/* one printable ASCII line, whatever libsystemd's strerror said */
		for (i = 0; err[i] && i + 1 < sizeof(clean); i++)
			clean[i] = (err[i] >= 32 && err[i] < 127) ? err[i] : '?';
		clean[i] = '\0';
		k = snprintf(buf + off, size - off, "e %s\n", clean);
		return k < 0 || (size_t)k >= size - off ? 0 : off + (size_t)k;
	}
	for (size_t i = 0; i < r->n; i++) {
		char g[32] = "-";

		if (r->u[i].has_growth && r->u[i].per_hour >= 0 && r->u[i].per_hour < 1e12)
			snprintf(g, sizeof(g), "%llu",
				 (unsigned long long)(r->u[i].per_hour * 1000.0 + 0.5));
		k = snprintf(buf + off, size - off, "u %llu %s %s\n",
			     (unsigned long long)r->u[i].restarts, g, r->u[i].name);
		if (k < 0 || (size_t)k >= size - off)
			return 0;
		off += (size_t)k;
	}
	return off;
}

/* A systemd unit name: [A-Za-z0-9:_.\\@-]+ with a '.' type suffix (systemd's unit_name_is_valid
 * charset). Anything else from a shared directory is refused, not printed. */
static bool valid_unit_name(const char *s, size_t len)
{
	static const char extra[] = ":-_.\\@";
	bool dot = false;

	if (len == 0 || len >= SYSTEMD_UNIT_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c && strchr(extra, c))))
			return false;
		dot |= c == '.';
	}
	return dot && s[len - 1] != '.';
}

/* "<token> " at *@p within @end: its start and length; advances past the space. */
static bool token(const char **p, const char *end, const char **ret, size_t *ret_len)
{
	const char *sp = memchr(*p, ' ', (size_t)(end - *p));

	if (!sp || sp == *p)
		return false;
	*ret = *p;
	*ret_len = (size_t)(sp - *p);
	*p = sp + 1;
	return true;
}

int units_parse(const char *text, struct systemd_restarts *ret, char *err, size_t err_size)
{
	struct systemd_restarts r = { 0 };
	const char *pos, *line;
	size_t len;
	bool has_t = false, is_err = false;

	if (strncmp(text, HEADER, strlen(HEADER)) != 0)
		return -EINVAL;
	pos = text + strlen(HEADER);
	while (next_line(&pos, &line, &len)) {
		const char *p = line + 2, *end = line + len, *tok;
		size_t tlen;
		struct systemd_unit_restarts *u;
		uint64_t v;

		if (len < 3 || line[1] != ' ')
			return -EINVAL;
		switch (line[0]) {
		case 't':
			if (has_t || parse_u64_n(p, len - 2, &r.t_ms) < 0)
				return -EINVAL;
			has_t = true;
			break;
		case 'e':
			if (!has_t || is_err || r.n)
				return -EINVAL;
			for (size_t i = 0; i < len - 2; i++)
				if (p[i] < 32 || p[i] >= 127)
					return -EINVAL;
			if (err_size)
				snprintf(err, err_size, "%.*s", (int)(len - 2), p);
			is_err = true;
			break;
		case 'u':
			if (!has_t || is_err || r.n == SYSTEMD_TOP_MAX)
				return -EINVAL;
			u = &r.u[r.n];
			if (!token(&p, end, &tok, &tlen) ||
			    parse_u64_n(tok, tlen, &u->restarts) < 0)
				return -EINVAL;
			if (!token(&p, end, &tok, &tlen))
				return -EINVAL;
			if (!(tlen == 1 && tok[0] == '-')) {
				if (parse_u64_n(tok, tlen, &v) < 0)
					return -EINVAL;
				u->has_growth = true;
				u->per_hour = (double)v / 1000.0;
			}
			if (!valid_unit_name(p, (size_t)(end - p)))
				return -EINVAL;
			memcpy(u->name, p, (size_t)(end - p));
			u->name[end - p] = '\0';
			r.n++;
			break;
		default:
			return -EINVAL;
		}
	}
	if (!has_t)
		return -EINVAL;
	*ret = r;
	return is_err ? 1 : 0;
}

int units_load(const char *run_dir, uint64_t now_ms, struct systemd_restarts *ret, char *why,
	       size_t why_size)
{
	char path[FILEIO_PATH_MAX], agent_err[UNITS_ERR_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", run_dir, UNITS_FILE) >= sizeof(path)) {
		snprintf(why, why_size, "run dir path too long");
		return -ENAMETOOLONG;
	}
	r = fileio_read_alloc_at(AT_FDCWD, path, FILEIO_OURS, UNITS_FILE_MAX, &text, &len);
	if (r == -ENOENT) {
		snprintf(why, why_size, "no unit data from the agent");
		return r;
	}
	if (r < 0) {
		snprintf(why, why_size, "unit data unreadable: %s", strerror(-r));
		return r;
	}
	if (strlen(text) != len) {
		snprintf(why, why_size, "unit data corrupt");
		return -EINVAL;
	}
	r = units_parse(text, ret, agent_err, sizeof(agent_err));
	if (r < 0) {
		snprintf(why, why_size, "unit data corrupt");
		return -EINVAL;
	}
	if (ret->t_ms > now_ms + UNITS_FRESH_MS || now_ms - ret->t_ms > UNITS_FRESH_MS) {
		uint64_t age = ret->t_ms > now_ms ? 0 : (now_ms - ret->t_ms) / 60000;

		if (ret->t_ms > now_ms)
			snprintf(why, why_size, "unit data from the future");
		else
			snprintf(why, why_size, "unit data %llu min old", (unsigned long long)age);
		return -ESTALE;
	}
	if (r == 1) {
		snprintf(why, why_size, "%s", agent_err);
		return -EIO;
	}
	return 0;
}

const char *units_words(int err)
{
	switch (err) {
	case -ENOENT:
		return "no unit data from the agent";
	case -ESTALE:
		return "unit data stale";
	case -EIO:
		return "agent cannot ask systemd";
	default:
		return "unit data unreadable";
	}
}
