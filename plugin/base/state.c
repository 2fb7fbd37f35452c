/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fileio.h"
#include "base/log.h"
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

/* Move @dir/@name<suffix> aside to "<...>.corrupt" and say so: it is not a file of ours. */
static void move_aside(const char *dir, const char *name, const char *suffix, const char *why)
{
	char path[FILEIO_PATH_MAX], aside[FILEIO_PATH_MAX + 16];

	struct stat st;

	if (join(path, sizeof(path), dir, name, suffix) < 0 ||
	    snprintf(aside, sizeof(aside), "%s.corrupt", path) >= (int)sizeof(aside))
		return;
	/* Lock files are moved without holding the lock: when a concurrent writer has already
	 * replaced the intruder with a real lock file, that one stays (moving it would let two
	 * writers hold "the" lock at once). State files are moved under their lock. */
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && streq(suffix, ".lock"))
		return;
	if (rename(path, aside) < 0)
		log_warning_errno(errno, "Failed to move '%s' (%s) aside: %m", path, why);
	else
		log_warning("'%s' was %s: moved to '%s', starting afresh", path, why, aside);
}

/* What a fileio_open error on a file of ours means, for messages; NULL when it is not that. */
static const char *not_ours(int r)
{
	return r == -ELOOP ? "a symlink" : r == -EISDIR ? "a directory" :
	       r == -EBADFD ? "not a regular file" : NULL;
}

static int open_lock(const char *path)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	/* O_NONBLOCK and O_NOFOLLOW: a FIFO or symlink planted at the lock's name neither blocks
	 * nor redirects us; it is moved aside like any file that is not ours */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
	if (fd < 0)
		return errno == ENXIO ? -EBADFD : -errno; /* ENXIO: a unix socket */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
	return TAKE_FD(fd);
}

static int lock_within(const char *dir, const char *name, uint64_t wait_ms,
		       struct state_lock *ret_lock);

int state_lock(const char *dir, const char *name, struct state_lock *ret_lock)
{
	return lock_within(dir, name, STATE_LOCK_WAIT_MS, ret_lock);
}

int state_trylock(const char *dir, const char *name, struct state_lock *ret_lock)
{
	return lock_within(dir, name, 0, ret_lock);
}

static int lock_within(const char *dir, const char *name, uint64_t wait_ms,
		       struct state_lock *ret_lock)
{
	char path[FILEIO_PATH_MAX];
	_cleanup_close_ int fd = -1;
	uint64_t deadline;
	int r;

	if (!dir || !valid_state_name(name))
		return -EINVAL;
	r = join(path, sizeof(path), dir, name, ".lock");
	if (r < 0)
		return r;
	fd = open_lock(path);
	if (fd == -ENOENT) { /* the first writer creates the directories (a check runs often:
			     * the mkdir of each level is not paid on every run) */
		r = writable_path(path, sizeof(path), dir, name, ".lock");
		if (r < 0)
			return r;
		fd = open_lock(path);
	}
	if (not_ours(fd)) {
		move_aside(dir, name, ".lock", not_ours(fd));
		fd = open_lock(path);
	}
	if (fd < 0)
		return fd;
	/* Bounded wait: NPD kills a check at its timeout, so never block on a stuck holder. */
	deadline = now_monotonic_ms() + wait_ms;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (wait_ms == 0 && errno == EWOULDBLOCK)
			return -EWOULDBLOCK;
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

/*
 * Read and check @dir/@name: on success *@ret (free()) holds the file and *@ret_payload,
 * *@ret_len the payload inside it. A file that is corrupt, too big for @max or not a regular
 * file is -EBADMSG; @writer moves it aside (readers leave it for the next writer).
 */
static int load(const char *dir, const char *name, size_t max, bool writer, char **ret,
		const char **ret_payload, size_t *ret_len)
{
	char path[FILEIO_PATH_MAX];
	_cleanup_free_ char *file = NULL;
	const char *why;
	size_t n;
	int r;

	if (!dir || !valid_state_name(name))
		return -EINVAL;
	r = join(path, sizeof(path), dir, name, "");
	if (r < 0)
		return r;
	r = fileio_read_alloc_at(AT_FDCWD, path, FILEIO_OURS, max + STATE_ENVELOPE_MAX, &file,
				 &n);
	why = r == -EFBIG ? "too big" : not_ours(r);
	if (r < 0 && !why)
		return r;
	/* Keep the evidence, start a new baseline: a torn or foreign file must never be read as
	 * counters (that could fake a delta, i.e. a false problem). */
	if (!why && state_parse_envelope(file, n, name, ret_payload, ret_len) < 0)
		why = "corrupt";
	if (why) {
		if (writer)
			move_aside(dir, name, "", why);
		else
			log_debug("state '%s' is %s, ignoring", path, why);
		return -EBADMSG;
	}
	*ret = TAKE_PTR(file);
	return 0;
}

ssize_t state_load(const char *dir, const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *file = NULL;
	const char *payload;
	size_t plen;
	int r;

	if (size == 0)
		return -EINVAL;
	r = load(dir, name, size + 1, true, &file, &payload, &plen);
	if (r < 0)
		return r;
	if (plen + 1 > size)
		return -EFBIG;
	memcpy(buf, payload, plen);
	buf[plen] = '\0';
	return (ssize_t)plen;
}

static int save(const char *dir, const char *name, const char *payload, size_t len, bool durable)
{
	char path[FILEIO_PATH_MAX], header[128], trailer[16];
	struct iovec iov[3];
	int hl, r;

	r = writable_path(path, sizeof(path), dir, name, "");
	if (r < 0)
		return r;
	hl = snprintf(header, sizeof(header), HEADER_FMT, STATE_VERSION, name);
	snprintf(trailer, sizeof(trailer), "end %08" PRIx32 "\n", state_crc32(payload, len));
	iov[0] = (struct iovec){ header, (size_t)hl };
	iov[1] = (struct iovec){ (void *)payload, len };
	iov[2] = (struct iovec){ trailer, 13 };
	return fileio_write_atomic(dir, name, iov, 3, 0600, durable ? FILEIO_DURABLE : 0);
}

int state_save(const char *dir, const char *name, const char *payload, size_t len)
{
	return save(dir, name, payload, len, true);
}

int state_save_volatile(const char *dir, const char *name, const char *payload, size_t len)
{
	return save(dir, name, payload, len, false);
}

/* ---- typed: bytes in, bytes out ---- */

/* Load @t's payload: the file's bytes with the payload moved to the start, NUL-terminated. */
static int load_typed(const char *dir, const struct state_type *t, bool writer, bool ro,
		      char **ret, size_t *ret_len)
{
	_cleanup_free_ char *file = NULL;
	const char *payload;
	size_t len;
	int r;

	r = load(dir, t->name, t->max, writer && !ro, &file, &payload, &len);
	if (r == -ENOENT)
		return STATE_NONE;
	if (r == -EBADMSG && writer)
		return STATE_DISCARDED;
	if (r < 0)
		return r;
	if (len > t->max && !writer)
		return -EBADMSG;
	if (len >
	    t->max) { /* discarded means moved aside, as an unparsable one (fuzz_state_typed) */
		if (!ro)
			move_aside(dir, t->name, "", "oversized");
		return STATE_DISCARDED;
	}
	/* parsers take NUL-terminated text: the payload, moved over the header (the file buffer
	 * holds the trailer after it, so there is room for the NUL) */
	memmove(file, payload, len);
	file[len] = '\0';
	*ret = TAKE_PTR(file);
	*ret_len = len;
	return STATE_LOADED;
}

int state_read(const char *dir, const struct state_type *t, char **ret, size_t *ret_len)
{
	return load_typed(dir, t, false, false, ret, ret_len);
}

int state_begin(struct state_txn *txn, const char *dir, const struct state_type *t, char **ret,
		size_t *ret_len)
{
	int r;

	txn->lock.fd = -1;
	txn->dir = dir;
	txn->t = t;
	/* read-only: no lock (every file a reader opens is whole) and nothing moved aside, but the
	 * writer's answers (a bad file is STATE_DISCARDED), so a check decides as it would */
	if (txn->flags & STATE_READ_ONLY)
		return dir && valid_state_name(t->name) ?
			       load_typed(dir, t, true, true, ret, ret_len) :
			       -EINVAL;
	r = state_lock(dir, t->name, &txn->lock);
	return r < 0 ? r : load_typed(dir, t, true, false, ret, ret_len);
}

int state_discard(struct state_txn *txn)
{
	if (!(txn->flags & STATE_READ_ONLY))
		move_aside(txn->dir, txn->t->name, "", "unparsable");
	return STATE_DISCARDED;
}

int state_commit(struct state_txn *txn, const char *payload, size_t len)
{
	if (!txn->t)
		return -EINVAL;
	if (txn->flags & STATE_READ_ONLY)
		return 0;
	return save(txn->dir, txn->t->name, payload, len, txn->t->durable);
}

void state_end(struct state_txn *txn)
{
	if (txn)
		state_unlock(&txn->lock);
}

int state_write(const char *dir, const struct state_type *t, const char *payload, size_t len)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT;
	int r;

	txn.dir = dir;
	txn.t = t;
	r = state_lock(dir, t->name, &txn.lock);
	return r < 0 ? r : state_commit(&txn, payload, len);
}

/* "stamp <20 digits>\n": fixed width, so a rewrite in place never leaves a longer tail behind */
#define STAMP_FMT "stamp %020" PRIu64 "\n"
#define STAMP_LEN 27

int state_stamp_get(const struct state_txn *txn, uint64_t *ret)
{
	char buf[STAMP_LEN + 1];
	const char *p;
	ssize_t n;

	if (!txn || txn->lock.fd < 0)
		return -ENODATA;
	n = pread(txn->lock.fd, buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	if (n != STAMP_LEN || buf[STAMP_LEN - 1] != '\n' || !(p = startswith(buf, "stamp ")))
		return -ENODATA;
	return parse_u64_n(p, STAMP_LEN - 7, ret) < 0 ? -ENODATA : 0;
}

int state_stamp_set(struct state_txn *txn, uint64_t v)
{
	char buf[STAMP_LEN + 1];
	ssize_t n;

	if (txn && (txn->flags & STATE_READ_ONLY))
		return 0;
	if (!txn || txn->lock.fd < 0)
		return -EBADF;
	snprintf(buf, sizeof(buf), STAMP_FMT, v);
	n = pwrite(txn->lock.fd, buf, STAMP_LEN, 0);
	if (n < 0)
		return -errno;
	return n == STAMP_LEN ? 0 : -EIO;
}

void state_move_aside(const char *dir, const char *name, const char *why)
{
	if (dir && valid_state_name(name))
		move_aside(dir, name, "", why);
}

const char *state_not_ours(int err)
{
	return not_ours(err);
}
