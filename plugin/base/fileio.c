/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/util.h"

int fileio_open(int dirfd, const char *path, unsigned flags)
{
	int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!path || !*path)
		return -EINVAL;
	if (flags & FILEIO_NOFOLLOW)
		oflags |= O_NOFOLLOW;
	/* O_NONBLOCK: a FIFO without a writer would block the open itself, forever */
	fd = openat(dirfd, path, oflags);
	if (fd < 0)
		/* ENXIO: a unix socket (or a device without a driver), never a regular file */
		return errno == ENXIO && (flags & FILEIO_REGULAR) ? -EBADFD : -errno;
	if (flags & FILEIO_REGULAR) {
		if (fstat(fd, &st) < 0)
			return -errno;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (!S_ISREG(st.st_mode))
			return -EBADFD;
	}
	if (flags & FILEIO_BLOCKING_READ) {
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
			return -errno;
	}
	return TAKE_FD(fd);
}

/*
 * Reads into @buf[*@off, @cap) until EOF (returns 0) or until it is full (returns 1), moving
 * *@off; from the current position, or with pread from the same offset in the file
 * (@positional). -errno on a read error. procfs and sysfs files can come in several chunks.
 */
static int read_until(int fd, char *buf, size_t cap, size_t *off, bool positional)
{
	while (*off < cap) {
		ssize_t n = positional ? pread(fd, buf + *off, cap - *off, (off_t)*off)
				       : read(fd, buf + *off, cap - *off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		*off += (size_t)n;
	}
	return 1;
}

/*
 * Reads until EOF into @buf, NUL-terminated: from the current position, or with pread from
 * offset 0 (@positional). One spare byte: a file that fills the buffer is larger than it, not
 * complete (-EFBIG).
 */
static ssize_t read_all(int fd, char *buf, size_t size, bool positional)
{
	size_t off = 0;
	int r;

	if (size < 2)
		return -EINVAL;
	r = read_until(fd, buf, size, &off, positional);
	if (r < 0)
		return r;
	if (r > 0)
		return -EFBIG;
	buf[off] = '\0';
	return (ssize_t)off;
}

ssize_t fileio_read_fd(int fd, char *buf, size_t size)
{
	return read_all(fd, buf, size, false);
}

ssize_t fileio_pread_all(int fd, char *buf, size_t size)
{
	return read_all(fd, buf, size, true);
}

ssize_t fileio_pread_once(int fd, char *buf, size_t size)
{
	ssize_t n;

	if (size < 2)
		return -EINVAL;
	do
		n = pread(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n >= size - 1)
		return -EFBIG;
	buf[n] = '\0';
	return n;
}

ssize_t fileio_read_at(int dirfd, const char *path, unsigned flags, char *buf, size_t size)
{
	_cleanup_close_ int fd = fileio_open(dirfd, path, flags);

	if (fd < 0)
		return fd;
	return fileio_read_fd(fd, buf, size);
}

int fileio_read_alloc_at(int dirfd, const char *path, unsigned flags, size_t max, char **ret,
			 size_t *ret_len)
{
	_cleanup_close_ int fd = fileio_open(dirfd, path, flags);

	if (fd < 0)
		return fd;
	return fileio_read_alloc_fd(fd, max, ret, ret_len);
}

int fileio_read_alloc_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap, off = 0;
	struct stat st;

	bool reg;

	if (max == 0 || max > SIZE_MAX / 2)
		return -EINVAL;
	reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	/* a regular file that says it is larger than @max is refused from its size, before any
	 * read (a 10 GB sparse file was read to the bound first). Only above a page: sysfs says
	 * 4096 for every attribute whatever it holds, procfs says 0. */
	if (reg && (uint64_t)st.st_size > max && st.st_size > 4096)
		return -EFBIG;
	/* a regular file says how big it is; pipes and procfs files (size 0) grow the buffer */
	cap = reg && st.st_size > 0 && (uint64_t)st.st_size < max ? (size_t)st.st_size + 1 : 4096;
	if (cap > max + 1)
		cap = max + 1;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		int r = read_until(fd, buf, cap, &off, false);
		size_t ncap;
		char *nb;

		if (r <= 0) {
			if (r < 0)
				return r;
			break;
		}
		if (off > max)
			return -EFBIG;
		ncap = cap * 2 > max + 1 ? max + 1 : cap * 2; /* full: grow */
		nb = realloc(buf, ncap + 1);
		if (!nb)
			return -ENOMEM;
		buf = nb;
		cap = ncap;
	}
	buf[off] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = off;
	return 0;
}

/* ---- writer ---- */

static int write_all(int fd, const struct iovec *iov, size_t iovcnt)
{
	for (size_t i = 0; i < iovcnt; i++) {
		const char *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		while (len > 0) {
			ssize_t n = write(fd, p, len);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			p += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

static int fill(int fd, const struct iovec *iov, size_t iovcnt, mode_t mode, unsigned flags)
{
	int r;

	/* the mode asked for, not the one the umask leaves */
	if (fchmod(fd, mode) < 0)
		return -errno;
	r = write_all(fd, iov, iovcnt);
	if (r == 0 && (flags & FILEIO_DURABLE) && fsync(fd) < 0)
		r = -errno;
	return r;
}

/*
 * A linkat() of /proc/self/fd/N that failed: -EOPNOTSUPP when naming an O_TMPFILE that way is
 * not possible here (no /proc mounted: ENOENT; /proc/self owned by root because the process is
 * not dumpable, e.g. the agent as nobody with ambient capabilities: EACCES; a filesystem
 * without links: EPERM, EOPNOTSUPP), so the caller writes by name instead; else -errno.
 */
static int link_error(int err)
{
	return err == ENOENT || err == EACCES || err == EPERM || err == EOPNOTSUPP ? -EOPNOTSUPP
										   : -err;
}

/*
 * Write into an unnamed O_TMPFILE in @dfd and give it a name only once it is whole: @name itself
 * when nothing has that name yet (returns 1: done, a kill can leave nothing behind), else @tmp
 * (returns 0, the caller renames it over @name). -EOPNOTSUPP when the filesystem or /proc rule
 * O_TMPFILE out (the caller writes @tmp by name instead), or another -errno.
 */
static int write_unnamed(int dfd, const char *name, const char *tmp, const struct iovec *iov,
			 size_t iovcnt, mode_t mode, unsigned flags)
{
	_cleanup_close_ int fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	char fdpath[64];
	int r;

	if (fd < 0)
		return errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL ? -EOPNOTSUPP
										   : -errno;
	r = fill(fd, iov, iovcnt, mode, flags);
	if (r < 0)
		return r;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	/* a new file (a burst's profile): linked under its own name, no temporary name at all */
	if (linkat(AT_FDCWD, fdpath, dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 1;
	if (errno != EEXIST)
		return link_error(errno);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (linkat(AT_FDCWD, fdpath, dfd, tmp, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			return link_error(errno);
		/* a stale <name>.tmp from a writer killed before its rename: writers serialise */
		if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
			return -errno;
	}
	return -EEXIST;
}

/* The fallback: write <name>.tmp by name (a kill mid-write leaves it for the next writer). */
static int write_named(int dfd, const char *tmp, const struct iovec *iov, size_t iovcnt,
		       mode_t mode, unsigned flags)
{
	int fd, r;

	/* whatever sits at the fixed name (a stale file, a FIFO) goes: O_EXCL then never blocks */
	if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	r = fill(fd, iov, iovcnt, mode, flags);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int fileio_write_atomic(const char *dir, const char *name, const struct iovec *iov, size_t iovcnt,
			mode_t mode, unsigned flags)
{
	_cleanup_close_ int dfd = -1;
	char tmp[NAME_MAX + 1];
	int r;

	if (!dir || !*dir || !name || !*name || strchr(name, '/') || streq(name, ".") ||
	    streq(name, ".."))
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = write_unnamed(dfd, name, tmp, iov, iovcnt, mode, flags);
	if (r == -EOPNOTSUPP)
		r = write_named(dfd, tmp, iov, iovcnt, mode, flags);
	if (r == 1) {
		/* linked under its own name; a "<name>.tmp" of a writer killed before its rename
		 * goes too (writers of a name serialise: it is nobody's) */
		(void)unlinkat(dfd, tmp, 0);
		return (flags & FILEIO_DURABLE) && fsync(dfd) < 0 ? -errno : 0;
	}
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	return (flags & FILEIO_DURABLE) && fsync(dfd) < 0 ? -errno : 0;
}

const char *fileio_split_path(const char *path, char *dir, size_t size)
{
	const char *slash;
	int w;

	if (!path || !*path)
		return NULL;
	slash = strrchr(path, '/');
	if (!slash)
		w = snprintf(dir, size, ".");
	else if (slash == path)
		w = snprintf(dir, size, "/");
	else
		w = snprintf(dir, size, "%.*s", (int)(slash - path), path);
	if (w < 0 || (size_t)w >= size)
		return NULL;
	return slash ? (slash[1] ? slash + 1 : NULL) : path;
}

int fileio_open_nofollow(const char *path, int flags, mode_t mode)
{
	char buf[FILEIO_PATH_MAX];
	_cleanup_close_ int dfd = -1;
	const char *name = buf;
	size_t n = path ? strlen(path) : 0;
	bool dir = false;
	char *slash;
	int fd;

	if (n == 0)
		return -EINVAL;
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	/* "X/", "X/." and "X/./" resolve X through a symlink before O_NOFOLLOW applies */
	while (n > 1 && (buf[n - 1] == '/' || (buf[n - 1] == '.' && buf[n - 2] == '/'))) {
		buf[--n] = '\0';
		dir = true;
	}
	if (dir && (flags & O_CREAT))
		return -EISDIR;
	slash = strrchr(buf, '/');
	if (slash) {
		name = slash[1] ? slash + 1 : ".";
		*slash = '\0';
		dfd = open(slash == buf ? "/" : buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return -errno;
	}
	if (streq(name, ".."))
		return -EINVAL; /* the parent of where a symlink may have led */
	fd = openat(slash ? dfd : AT_FDCWD, name,
		    flags | O_NOFOLLOW | O_CLOEXEC | (dir ? O_DIRECTORY : 0), mode);
	if (fd < 0 && errno == ENOTDIR) {
		struct stat st; /* O_DIRECTORY is checked before O_NOFOLLOW: say which it was */

		if (fstatat(slash ? dfd : AT_FDCWD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			return -ELOOP;
		errno = ENOTDIR;
	}
	return fd < 0 ? -errno : fd;
}
