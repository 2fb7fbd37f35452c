/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>

#include "cpu/folded.h"
#include "view/flame.h"
#include "view/report_profile.h"
#include "base/fileio.h"
#include "base/util.h"

/* "comm;a;b;...;z" with its middle frames dropped when it does not fit: the comm and the leaf
 * side (where the time went) are what a reader needs. */
static void shorten(const char *s, size_t n, char *buf, size_t size)
{
	const char *semi = memchr(s, ';', n), *tail;

	if (n < size || !semi) {
		snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), s);
		return;
	}
	tail = s + n - (size - (size_t)(semi - s) - 6);
	while (tail < s + n && *tail != ';')
		tail++;
	snprintf(buf, size, "%.*s;...%.*s", (int)(semi - s), s, (int)(s + n - tail), tail);
}

int report_profile_load(const char *run_dir, const struct burst_event *ev, size_t max_bytes,
			struct report_profile *ret)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ struct folded_line *l = NULL;
	struct report_profile p = { 0 };
	size_t len = 0;
	int n, r;

	if (!ev->profile[0])
		return -ENOENT;
	if (snprintf(p.path, sizeof(p.path), "%s/%s", run_dir, ev->profile) >= (int)sizeof(p.path))
		return -ENAMETOOLONG;
	r = fileio_read_alloc_at(AT_FDCWD, p.path, FILEIO_OURS, max_bytes, &text, &len);
	if (r < 0)
		return r;
	n = folded_parse(text, len, NULL, 0);
	if (n < 0)
		return n;
	l = calloc((size_t)n + 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	n = folded_parse(text, len, l, (size_t)n + 1);
	for (int i = 0; i < n; i++) {
		p.total += l[i].count;
		if (p.n < REPORT_PROFILE_TOP) {
			shorten(l[i].stack, l[i].len, p.top[p.n].stack, sizeof(p.top[0].stack));
			p.top[p.n++].count = l[i].count;
		}
	}
	*ret = p;
	return 0;
}

int report_profile_flame(const char *run_dir, const struct burst_event *ev, size_t max_bytes,
			 struct flame **ret)
{
	_cleanup_free_ char *text = NULL, *times = NULL;
	char path[4200], name[80];
	size_t len = 0, tlen = 0;
	int r, tr = -ENOENT;

	if (!ev->profile[0])
		return -ENOENT;
	if (snprintf(path, sizeof(path), "%s/%s", run_dir, ev->profile) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = fileio_read_alloc_at(AT_FDCWD, path, FILEIO_OURS, max_bytes, &text, &len);
	if (r < 0)
		return r;
	if (history_profile_times(ev->profile, name, sizeof(name)) == 0 &&
	    snprintf(path, sizeof(path), "%s/%s", run_dir, name) < (int)sizeof(path))
		tr = fileio_read_alloc_at(AT_FDCWD, path, FILEIO_OURS, max_bytes, &times, &tlen);
	r = flame_build(text, len, tr >= 0 ? times : NULL, tlen, ret);
	if (r == 0 && tr < 0 && tr != -ENOENT)
		(*ret)->times_why = "unreadable";
	return r;
}
