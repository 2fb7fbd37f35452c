/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcg/memcg_where.h"
#include "memcg/pods.h"
#include "base/util.h"

#define CHILDREN_MAX 256	/* children compared per level; the rest are not read */
#define NAME_MAX_CG 255
#define PATH_BUF_CG 1024	/* a path below the sys root; deeper trees stop the walk */

uint64_t memcg_where_dying(const struct memcg_cgstat *st)
{
	return st->has_subsys_memory ? st->nr_dying_subsys_memory : st->nr_dying_descendants;
}

int memcg_where_pick(const uint64_t *dying, size_t n, uint64_t parent_dying)
{
	size_t best = 0;

	if (n == 0 || parent_dying == 0)
		return -1;
	for (size_t i = 1; i < n; i++)
		if (dying[i] > dying[best])
			best = i;
	/* at least half (and at least one): a child holding less than that does not explain them */
	if (dying[best] == 0 || dying[best] * 2 < parent_dying)
		return -1;
	return (int)best;
}

static int read_stat(const struct hostfs *hf, const char *rel, uint64_t *ret)
{
	char file[PATH_BUF_CG], buf[4096];
	struct memcg_cgstat st;
	ssize_t n;
	int e;

	if ((size_t)snprintf(file, sizeof(file), "%s/cgroup.stat", rel) >= sizeof(file))
		return -ENAMETOOLONG;
	n = hostfs_read(hf, HOSTFS_SYS, file, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	e = memcg_parse_cgroup_stat(buf, &st);
	if (e < 0)
		return e;
	*ret = memcg_where_dying(&st);
	return 0;
}

/* The child directories of @rel (at most CHILDREN_MAX) with their dying counts; *@reads counts
 * the cgroup.stat files read against MEMCG_WHERE_READS. */
static size_t children(const struct hostfs *hf, const char *rel,
		       char (*names)[NAME_MAX_CG + 1], uint64_t *dying, unsigned *reads)
{
	DIR *d;
	struct dirent *de;
	size_t n = 0;
	int fd = hostfs_openat(hf, HOSTFS_SYS, rel, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (n < CHILDREN_MAX && *reads < MEMCG_WHERE_READS && (de = readdir(d))) {
		char sub[PATH_BUF_CG];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (de->d_type != DT_DIR &&
		    !(de->d_type == DT_UNKNOWN &&
		      fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		      S_ISDIR(st.st_mode)))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >= sizeof(sub))
			continue;
		++*reads;
		if (read_stat(hf, sub, &dying[n]) < 0)
			continue;	/* removed meanwhile, or not a cgroup */
		snprintf(names[n], NAME_MAX_CG + 1, "%s", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

int memcg_where_find(const struct hostfs *hf, const char *rel, char *buf, size_t size,
		     uint64_t *ret_dying)
{
	static char names[CHILDREN_MAX][NAME_MAX_CG + 1];	/* 64 KiB: not on the stack */
	static uint64_t dying[CHILDREN_MAX];
	char cur[PATH_BUF_CG];
	size_t root_len = strlen(rel);
	uint64_t here;
	unsigned reads = 1;
	int e;

	if (root_len >= sizeof(cur))
		return -ENAMETOOLONG;
	memcpy(cur, rel, root_len + 1);
	e = read_stat(hf, cur, &here);
	if (e < 0)
		return e;
	for (unsigned depth = 0; depth < MEMCG_WHERE_DEPTH; depth++) {
		size_t n = children(hf, cur, names, dying, &reads);
		int i = memcg_where_pick(dying, n, here);
		size_t len = strlen(cur);

		if (i < 0)
			break;
		if ((size_t)snprintf(cur + len, sizeof(cur) - len, "/%s", names[i]) >=
		    sizeof(cur) - len) {
			cur[len] = '\0';
			break;
		}
		here = dying[i];
	}
	if (strlen(cur) == root_len)
		return -ENODATA;
	snprintf(buf, size, "%s", cur + root_len + 1);
	*ret_dying = here;
	return 0;
}

size_t memcg_where_format(const char *subtree, uint64_t dying, char *buf, size_t size)
{
	char num[32];
	size_t fixed, len = strlen(subtree);
	int k;

	k = snprintf(num, sizeof(num), " (%llu)", (unsigned long long)dying);
	fixed = strlen("most under ") + (size_t)k;
	if (size == 0)
		return 0;
	if (fixed + len < size)
		k = snprintf(buf, size, "most under %s%s", subtree, num);
	else if (fixed + 3 < size)	/* keep the end: it names the unit or the pod */
		k = snprintf(buf, size, "most under ...%s%s",
			     subtree + len - (size - 1 - fixed - 3), num);
	else
		k = snprintf(buf, size, "%s", "");
	return k < 0 ? 0 : strlen(buf);
}

int memcg_where_pod_uid(const char *subtree, char *uid, size_t size)
{
	const char *last = strrchr(subtree, '/'), *p;
	size_t len;

	last = last ? last + 1 : subtree;
	/* the last "pod": "kubepods-burstable-pod<uid>.slice" has one in "kubepods" too */
	p = NULL;
	for (const char *q = strstr(last, "pod"); q; q = strstr(q + 1, "pod"))
		p = q;
	if (!p || size <= POD_UID_LEN)
		return -ENOENT;
	p += 3;
	len = strlen(p);
	if (len >= 6 && streq(p + len - 6, ".slice"))
		len -= 6;
	if (len != POD_UID_LEN)
		return -ENOENT;
	for (size_t i = 0; i < len; i++)
		uid[i] = p[i] == '_' ? '-' : p[i];
	uid[len] = '\0';
	return pods_valid_uid(uid, len) ? 0 : -ENOENT;
}
