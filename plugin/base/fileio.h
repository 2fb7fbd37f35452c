/* SPDX-License-Identifier: MIT */
#ifndef CZ_FILEIO_H
#define CZ_FILEIO_H

/*
 * The one bounded file reader and the one atomic file writer of cpuzombie.
 *
 * Reader: every file the binary reads (host /proc and /sys through hostfs, state and run files,
 * the config, kubeconfig and token files, `ethtool -S` dumps) is read whole into a bounded
 * buffer with one spare byte, so a file larger than expected is -EFBIG instead of silently
 * parsed in half. Opens are always O_NONBLOCK: opening a FIFO without a writer, or a device,
 * never blocks (`mkfifo RUN/cpu-bursts` must not stop the sampler). Files that belong
 * to us (state and run files) are opened with FILEIO_OURS: not followed when a symlink, and
 * refused unless fstat() says regular file, so the caller can move the intruder aside.
 *
 * Writer: a file is only ever replaced whole. The new content goes into an unnamed O_TMPFILE in
 * the target's directory and gets a name only once it is complete: "<name>" itself when there
 * is no such file yet, else "<name>.tmp", renamed over "<name>" at once; a writer killed
 * mid-write (NPD's timeout, kill -9 of the agent) leaves nothing behind, since the kernel frees
 * the unnamed inode (only a kill between that link and the rename leaves "<name>.tmp", which
 * the next writer of the name replaces). Where O_TMPFILE or /proc is missing the file
 * is written as "<name>.tmp" by name (a kill then leaves that one file, which the next writer
 * replaces). Readers therefore need no lock: they see the old file or the new one, never a torn
 * one. Writers of one name must serialise themselves (the state store's flock, the agent's one
 * metrics writer): "<name>.tmp" is a single fixed name.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

enum fileio_flags {
	/* Refuse a directory (-EISDIR) and anything else that is not a regular file (-EBADFD:
	 * FIFO, socket, device). Every /proc and /sys file is regular. */
	FILEIO_REGULAR = 1 << 0,
	/* Do not follow a symlink at the last component (-ELOOP): files that belong to us. */
	FILEIO_NOFOLLOW = 1 << 3,
	FILEIO_OURS = FILEIO_REGULAR | FILEIO_NOFOLLOW,
	/* A user-named input that may be a pipe (`ena-diff <(ethtool -S eth0) after.txt`): the open
	 * is still non-blocking, the reads then block until the writer closes. */
	FILEIO_BLOCKING_READ = 1 << 1,
	/* Writer: fsync the file and the directory (state files); without it the replacement is
	 * still atomic, only durability across power loss is given up (tmpfs run dir). */
	FILEIO_DURABLE = 1 << 2,
};

/* Upper bound on a path built by the reader and writer (a state dir plus a name). */
#define FILEIO_PATH_MAX 4096

/*
 * fileio_open - open @path (relative to @dirfd, or AT_FDCWD) read-only, O_CLOEXEC | O_NOCTTY |
 * O_NONBLOCK, and check it as @flags ask (FILEIO_REGULAR, FILEIO_NOFOLLOW). Returns the fd (caller
 * closes) or -errno: the open's own (-ENOENT, -EACCES), -ELOOP, -EISDIR, -EBADFD.
 */
int fileio_open(int dirfd, const char *path, unsigned flags);

/*
 * fileio_read_fd - read @fd from its current position to EOF into @buf and NUL-terminate.
 * Returns the bytes read, or -errno; -EFBIG when the file does not fit in @size - 1 bytes,
 * -EAGAIN from a non-blocking FIFO or device that had nothing to give. @size >= 2.
 */
ssize_t fileio_read_fd(int fd, char *buf, size_t size);

/*
 * fileio_pread_all - like fileio_read_fd from offset 0 with pread(), for files kept open and
 * re-read (/proc/stat every sample). Returns the bytes read or -errno (-EFBIG).
 */
ssize_t fileio_pread_all(int fd, char *buf, size_t size);

/*
 * fileio_pread_once - one pread() at offset 0 for seq_file files the kernel generates whole in
 * one read (/proc/stat): the EOF probe of fileio_pread_all would make it generate the file a
 * second time. A read that fills the buffer is -EFBIG (grow and retry).
 */
ssize_t fileio_pread_once(int fd, char *buf, size_t size);

/*
 * fileio_read_at - fileio_open + fileio_read_fd into the caller's @buf. Returns the bytes read
 * (the buffer is NUL-terminated) or -errno as for those two.
 */
ssize_t fileio_read_at(int dirfd, const char *path, unsigned flags, char *buf, size_t size);

/*
 * fileio_read_alloc_at - read @path whole into a new buffer of at most @max bytes (plus a NUL).
 * On success *@ret (free()) and *@ret_len are set and 0 is returned; -EFBIG when the file is
 * larger than @max (a regular file whose fstat() size is above @max and a page: before any
 * read), -ENOMEM, or the -errno of fileio_open / the read. Outputs untouched on failure.
 */
int fileio_read_alloc_at(int dirfd, const char *path, unsigned flags, size_t max, char **ret,
			 size_t *ret_len);

/* fileio_read_alloc_fd - the same from an fd opened with fileio_open(), to its end. */
int fileio_read_alloc_fd(int fd, size_t max, char **ret, size_t *ret_len);

/*
 * fileio_write_atomic - replace @dir/@name with the bytes of @iov (@iovcnt pieces), mode @mode
 * exactly (the umask does not apply: the metrics textfile must be 0644 for node_exporter).
 * @flags: FILEIO_DURABLE. @dir must exist; @name is one path component. Returns 0 or -errno;
 * on failure the previous file is intact and no temporary file is left behind.
 */
int fileio_write_atomic(const char *dir, const char *name, const struct iovec *iov, size_t iovcnt,
			mode_t mode, unsigned flags);

/*
 * fileio_split_path - split @path into its directory (into @dir, "." when there is none) and
 * its last component (returned, pointing into @path). NULL when @path is empty, ends in '/', or
 * its directory does not fit in @size.
 */
const char *fileio_split_path(const char *path, char *dir, size_t size);

/*
 * fileio_open_nofollow - open(@path, @flags | O_CLOEXEC, @mode) never through a symlink at its
 * last component: the parent is opened (its own components resolved as usual), then the last
 * component with O_NOFOLLOW relative to it. A path that ends in "/" or "/." ("X/", "X/.",
 * "X/./") names X itself, which the kernel would resolve through a symlink X before
 * O_NOFOLLOW applies: it is cut to X, and X must be a directory (O_DIRECTORY added; -EISDIR
 * with O_CREAT). Every open of a path that must not be a symlink goes through here.
 * Returns the fd (caller closes) or -errno: -ELOOP (the last component is a symlink),
 * -ENOTDIR, -EINVAL (empty, or a last component ".."), -ENAMETOOLONG, the open's own.
 */
int fileio_open_nofollow(const char *path, int flags, mode_t mode);

#endif
