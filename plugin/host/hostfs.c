/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "host/hostfs.h"
#include "base/fileio.h"
#include "base/util.h"

int hostfs_open(struct hostfs *hf, const char *proc_root, const char *sys_root)
{
	const char *roots[_HOSTFS_ROOT_MAX] = { proc_root, sys_root };

	for (int i = 0; i < _HOSTFS_ROOT_MAX; i++) {
		hf->fd[i] = -EBADF;
		hf->path[i][0] = '\0';
	}
	for (int i = 0; i < _HOSTFS_ROOT_MAX; i++) {
		int fd, w;

		if (!roots[i] || !*roots[i])
			return -EINVAL;
		w = snprintf(hf->path[i], sizeof(hf->path[i]), "%s", roots[i]);
		if (w < 0 || (size_t)w >= sizeof(hf->path[i]))
			return -EINVAL;
		fd = open(roots[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		hf->fd[i] = fd >= 0 ? fd : -errno;
	}
	return 0;
}

void hostfs_close(struct hostfs *hf)
{
	for (int i = 0; i < _HOSTFS_ROOT_MAX; i++) {
		if (hf->fd[i] >= 0)
			close(hf->fd[i]);
		hf->fd[i] = -EBADF;
	}
}

static int root_fd(const struct hostfs *hf, enum hostfs_root root, const char *rel)
{
	if ((unsigned)root >= _HOSTFS_ROOT_MAX || !rel || !*rel || rel[0] == '/')
		return -EINVAL;
	return hf->fd[root]; /* -errno when the root itself could not be opened */
}

int hostfs_openat(const struct hostfs *hf, enum hostfs_root root, const char *rel, int flags)
{
	int dfd = root_fd(hf, root, rel), fd;

	if (dfd < 0)
		return dfd;
	fd = openat(dfd, rel, flags | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

ssize_t hostfs_pread_all(int fd, char *buf, size_t size)
{
	return fileio_pread_all(fd, buf, size);
}

ssize_t hostfs_pread_once(int fd, char *buf, size_t size)
{
	return fileio_pread_once(fd, buf, size);
}

ssize_t hostfs_read(const struct hostfs *hf, enum hostfs_root root, const char *rel, char *buf,
		    size_t size)
{
	int dfd = root_fd(hf, root, rel);

	if (dfd < 0)
		return dfd;
	return fileio_read_at(dfd, rel, FILEIO_REGULAR, buf, size);
}

ssize_t hostfs_readlink(const struct hostfs *hf, enum hostfs_root root, const char *rel, char *buf,
			size_t size)
{
	int dfd = root_fd(hf, root, rel);
	ssize_t n;

	if (dfd < 0)
		return dfd;
	if (size < 2)
		return -EINVAL;
	n = readlinkat(dfd, rel, buf, size);
	if (n < 0)
		return -errno;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return n;
}

const char *hostfs_path(const struct hostfs *hf, enum hostfs_root root, const char *rel, char *buf,
			size_t size)
{
	const char *base = (unsigned)root < _HOSTFS_ROOT_MAX ? hf->path[root] : "?";
	size_t bl = strlen(base);

	/* "/" + "stat" must read "/stat", not "//stat" */
	snprintf(buf, size, "%s%s%s", base, bl > 0 && base[bl - 1] == '/' ? "" : "/",
		 rel ? rel : "");
	return buf;
}
