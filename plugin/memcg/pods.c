/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/pods.h"
#include "base/fileio.h"
#include "base/util.h"

#define HEADER "cpuzombie-pods 1\n"

bool pods_valid_uid(const char *s, size_t len)
{
	if (len != POD_UID_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-'
			 : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/* DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', alphanumeric at both ends. */
static bool dns_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > POD_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && ((c != '-' && c != '.') || i == 0 || i == len - 1))
			return false;
	}
	return true;
}

size_t pods_format_line(const char *uid, const char *ns, const char *name, char *buf,
			size_t size)
{
	int k;

	if (!uid || !ns || !name || !pods_valid_uid(uid, strlen(uid)) ||
	    !dns_name_ok(ns, strlen(ns)) || !dns_name_ok(name, strlen(name)))
		return 0;
	k = snprintf(buf, size, "p %s %s %s\n", uid, ns, name);
	return k < 0 || (size_t)k >= size ? 0 : (size_t)k;
}

size_t pods_log_dir_line(const char *dname, char *buf, size_t size)
{
	const char *first = strchr(dname, '_'), *last = strrchr(dname, '_');
	char ns[POD_NAME_MAX + 1], name[POD_NAME_MAX + 1];
	size_t nslen, namelen;

	if (!first || first == last)
		return 0;
	nslen = (size_t)(first - dname);
	namelen = (size_t)(last - first - 1);
	if (nslen > POD_NAME_MAX || namelen > POD_NAME_MAX)
		return 0;
	memcpy(ns, dname, nslen);
	ns[nslen] = '\0';
	memcpy(name, first + 1, namelen);
	name[namelen] = '\0';
	return pods_format_line(last + 1, ns, name, buf, size);
}

int pods_find(const char *text, const char *uid, uint64_t min_t_ms, char *buf, size_t size)
{
	const char *pos, *line;
	size_t len;
	bool has_t = false;

	if (strncmp(text, HEADER, strlen(HEADER)) != 0)
		return -EINVAL;
	pos = text + strlen(HEADER);
	while (next_line(&pos, &line, &len)) {
		const char *f[3], *end = line + len, *p = line + 2;
		size_t flen[3];
		uint64_t t;

		if (len < 3 || line[1] != ' ')
			return -EINVAL;
		if (line[0] == 't') {
			if (has_t || parse_u64_n(p, len - 2, &t) < 0)
				return -EINVAL;
			if (t < min_t_ms)
				return -ESTALE;
			has_t = true;
			continue;
		}
		if (line[0] != 'p' || !has_t)
			return -EINVAL;
		for (int i = 0; i < 3; i++) {
			const char *sp = i < 2 ? memchr(p, ' ', (size_t)(end - p)) : end;

			if (!sp)
				return -EINVAL;
			f[i] = p;
			flen[i] = (size_t)(sp - p);
			p = sp + 1;
		}
		if (!pods_valid_uid(f[0], flen[0]) || !dns_name_ok(f[1], flen[1]) ||
		    !dns_name_ok(f[2], flen[2]))
			return -EINVAL;
		if (flen[0] == strlen(uid) && memcmp(f[0], uid, flen[0]) == 0) {
			snprintf(buf, size, "%.*s/%.*s", (int)flen[1], f[1], (int)flen[2], f[2]);
			return 0;
		}
	}
	return has_t ? -ENOENT : -EINVAL;
}

int pods_lookup(const char *run_dir, const char *uid, uint64_t now_ms, char *buf, size_t size)
{
	char path[FILEIO_PATH_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", run_dir, PODS_FILE) >= sizeof(path))
		return -ENAMETOOLONG;
	r = fileio_read_alloc_at(AT_FDCWD, path, FILEIO_OURS, PODS_FILE_MAX, &text, &len);
	if (r < 0)
		return r;
	if (strlen(text) != len)
		return -EINVAL;
	return pods_find(text, uid, now_ms > PODS_FRESH_MS ? now_ms - PODS_FRESH_MS : 0, buf, size);
}
