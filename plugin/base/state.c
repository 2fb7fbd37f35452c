/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "host/hostfs.h"
#include "base/state.h"
#include "base/util.h"

#define HEADER_FMT "cpuzombie-state %d %s\n"

uint32_t state_crc32(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t crc = 0xffffffffu;

	/* Bitwise IEEE CRC-32: state files are a few KiB, a table buys nothing measurable. */
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static bool valid_state_name(const char *name)
{
	return valid_name(name, 64) && !strchr(name, '/');
}

/* mkdir -p for the state and run dirs; each missing level is created 0700. */
static int mkdir_p(const char *dir)
{
	char path[4096];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(path))
		return -EINVAL;
	memcpy(path, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		path[i] = i < n ? '/' : '\0';
	}
	return 0;
}

static int join(char *buf, size_t size, const char *dir, const char *name, const char *suffix)
{
	int w = snprintf(buf, size, "%s/%s%s", dir, name, suffix);

	return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

/* For writers and lockers: check @name, create @dir if missing, and build "dir/name<suffix>". */
static int writable_path(char *buf, size_t size, const char *dir, const char *name,
			 const char *suffix)
{
	int r;

	if (!dir || !valid_state_name(name))
		return -EINVAL;
	r = mkdir_p(dir);
	if (r < 0)
		return r;
	return join(buf, size, dir, name, suffix);
}

int state_lock(const char *dir, const char *name, struct state_lock *ret_lock)
{
	char path[4096];
	_cleanup_close_ int fd = -1;
	uint64_t deadline;
	int r;

	r = writable_path(path, sizeof(path), dir, name, ".lock");
	if (r < 0)
		return r;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* Bounded wait: NPD kills a check at its timeout, so never block on a stuck holder. */
	deadline = now_monotonic_ms() + STATE_LOCK_WAIT_MS;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (now_monotonic_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	ret_lock->fd = TAKE_FD(fd);
	return 0;
}

void state_unlock(struct state_lock *lock)
{
	if (lock && lock->fd >= 0) {
		close(lock->fd); /* closing drops the flock */
		lock->fd = -1;
	}
}

int state_parse_envelope(const char *file, size_t len, const char *name, const char **ret_payload,
			 size_t *ret_len)
{
	char header[128];
	const char *payload, *trailer;
	uint64_t crc;
	int w;

	w = snprintf(header, sizeof(header), HEADER_FMT, STATE_VERSION, name);
	if (w < 0 || (size_t)w >= sizeof(header))
		return -EBADMSG;
	if (len < (size_t)w + 13 || memcmp(file, header, (size_t)w) != 0)
		return -EBADMSG;
	/* trailer: "end XXXXXXXX\n" (13 bytes) closes the file */
	trailer = file + len - 13;
	if (memcmp(trailer, "end ", 4) != 0 || trailer[12] != '\n')
		return -EBADMSG;
	crc = 0;
	for (int i = 4; i < 12; i++) {
		char c = trailer[i];
		unsigned v;

		if (c >= '0' && c <= '9')
			v = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = (unsigned)(c - 'a' + 10);
		else
			return -EBADMSG;
		crc = crc * 16 + v;
	}
	payload = file + w;
	if (trailer < payload || state_crc32(payload, (size_t)(trailer - payload)) != crc)
		return -EBADMSG;
	*ret_payload = payload;
	*ret_len = (size_t)(trailer - payload);
	return 0;
}

ssize_t state_load(const char *dir, const char *name, char *buf, size_t size)
{
	char path[4096], aside[4096];
	_cleanup_free_ char *file = NULL;
	_cleanup_close_ int fd = -1;
	const char *payload;
	size_t cap, plen;
	ssize_t n;
	int r;

	if (!dir || !valid_state_name(name) || size == 0)
		return -EINVAL;
	r = join(path, sizeof(path), dir, name, "");
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	cap = size + 256; /* payload + header + trailer */
	file = malloc(cap);
	if (!file)
		return -ENOMEM;
	n = hostfs_pread_all(fd, file, cap);
	if (n == -EFBIG)
		return -EFBIG;
	if (n < 0)
		return n;
	if (state_parse_envelope(file, (size_t)n, name, &payload, &plen) < 0) {
		/* Keep the evidence, start a new baseline: a torn or foreign file must never be
		 * read as counters (that could fake a delta, i.e. a false problem). */
		if (join(aside, sizeof(aside), dir, name, ".corrupt") == 0)
			(void)rename(path, aside);
		return -EBADMSG;
	}
	if (plen + 1 > size)
		return -EFBIG;
	memcpy(buf, payload, plen);
	buf[plen] = '\0';
	return (ssize_t)plen;
}

static int write_all(int fd, const char *p, size_t len)
{
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
	return 0;
}

static int fsync_dir(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return fsync(fd) < 0 ? -errno : 0;
}

/* Header, payload and trailer into @fd; fsync'ed when @durable. */
static int write_envelope(int fd, const char *name, const char *payload, size_t len, bool durable)
{
	char header[128], trailer[16];
	int hl, r;

	hl = snprintf(header, sizeof(header), HEADER_FMT, STATE_VERSION, name);
	snprintf(trailer, sizeof(trailer), "end %08" PRIx32 "\n", state_crc32(payload, len));
	r = write_all(fd, header, (size_t)hl);
	if (r == 0)
		r = write_all(fd, payload, len);
	if (r == 0)
		r = write_all(fd, trailer, 13);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	return r;
}

/*
 * Write the new file as an unnamed O_TMPFILE in @dir and give it the name @tmp only once it is
 * whole, just before the rename. A writer killed while writing (NPD's timeout, kill -9 of the
 * agent) then leaves nothing behind: the kernel frees the unnamed inode. Only a kill in the few
 * microseconds between linkat and rename leaves <name>.tmp, which the next writer replaces.
 * Returns 0 with @tmp linked, -EOPNOTSUPP when the filesystem or a missing /proc rules O_TMPFILE
 * out (the caller falls back to writing @tmp by name), or another -errno.
 */
static int write_unnamed(const char *dir, const char *tmp, const char *name, const char *payload,
			 size_t len, bool durable)
{
	_cleanup_close_ int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	char fdpath[64];
	int r;

	if (fd < 0)
		return errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL ? -EOPNOTSUPP
										   : -errno;
	r = write_envelope(fd, name, payload, len, durable);
	if (r < 0)
		return r;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (linkat(AT_FDCWD, fdpath, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			/* no /proc mounted (ENOENT), or a filesystem without links */
			return errno == ENOENT || errno == EPERM || errno == EOPNOTSUPP ? -EOPNOTSUPP
											 : -errno;
		/* a stale <name>.tmp from a writer killed before its rename: we hold the lock */
		if (unlink(tmp) < 0 && errno != ENOENT)
			return -errno;
	}
	return -EEXIST;
}

/* The fallback: write <name>.tmp by name (a kill mid-write leaves it for the next writer). */
static int write_named(const char *tmp, const char *name, const char *payload, size_t len,
		       bool durable)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	int r;

	if (fd < 0)
		return -errno;
	r = write_envelope(fd, name, payload, len, durable);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

static int save(const char *dir, const char *name, const char *payload, size_t len, bool durable)
{
	char path[4096], tmp[4096];
	int r;

	r = writable_path(path, sizeof(path), dir, name, "");
	if (r < 0)
		return r;
	/* One fixed temporary name: writers hold the lock, so there is never a second one, and a
	 * writer SIGKILLed at the wrong moment leaves one stale file that the next writer replaces
	 * instead of one per dead PID piling up. */
	r = join(tmp, sizeof(tmp), dir, name, ".tmp");
	if (r < 0)
		return r;

	r = write_unnamed(dir, tmp, name, payload, len, durable);
	if (r == -EOPNOTSUPP)
		r = write_named(tmp, name, payload, len, durable);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlink(tmp);
		return r;
	}
	return durable ? fsync_dir(dir) : 0;
}

int state_save(const char *dir, const char *name, const char *payload, size_t len)
{
	return save(dir, name, payload, len, true);
}

int state_save_volatile(const char *dir, const char *name, const char *payload, size_t len)
{
	return save(dir, name, payload, len, false);
}
