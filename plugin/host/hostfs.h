/* SPDX-License-Identifier: MIT */
#ifndef CZ_HOSTFS_H
#define CZ_HOSTFS_H

/*
 * Bounded reads under the host's /proc and /sys roots.
 *
 * Every file cpuzombie reads about the node goes through here, relative to two directory fds
 * opened once (--proc-root, --sys-root; /host/proc and /host/sys in a container, a fixture tree
 * in tests), the way util-linux's lscpu --sysroot replays captures. A read takes the whole file
 * into the caller's buffer and fails with -EFBIG rather than return a silently cut file (the
 * reads themselves are base/fileio.h's one bounded reader).
 */

#include <stddef.h>
#include <sys/types.h>

enum hostfs_root {
	HOSTFS_PROC,
	HOSTFS_SYS,
	_HOSTFS_ROOT_MAX,
};

struct hostfs {
	int fd[_HOSTFS_ROOT_MAX];  /* O_PATH directory fd, or -errno from opening it */
	char path[_HOSTFS_ROOT_MAX][256]; /* the root as given, for messages */
};

/*
 * hostfs_open - open both roots. A root that cannot be opened is remembered as its -errno and
 * every read under it fails with that error, so a check that needs only /proc still works when
 * /sys is missing. Returns 0, or -EINVAL when a path is NULL, empty or too long.
 * Call hostfs_close() afterwards in either case.
 */
int hostfs_open(struct hostfs *hf, const char *proc_root, const char *sys_root);

/* hostfs_close - close both fds; safe on a zeroed or half-opened struct (fds < 0 skipped). */
void hostfs_close(struct hostfs *hf);

/*
 * hostfs_read - read the whole file @rel (relative, no leading '/') under @root into @buf and
 * NUL-terminate it. Returns the number of bytes read (>= 0), or -errno: -ENOENT / -EACCES from
 * the open, -EFBIG when the file does not fit in @size - 1 bytes, or the root's own error.
 * @buf's contents are unspecified on failure.
 */
ssize_t hostfs_read(const struct hostfs *hf, enum hostfs_root root, const char *rel, char *buf,
		    size_t size);

/*
 * hostfs_openat - open @rel under @root with @flags (O_CLOEXEC is always added). Returns the fd
 * (caller closes) or -errno. For directories to walk and files the sampler keeps open.
 */
int hostfs_openat(const struct hostfs *hf, enum hostfs_root root, const char *rel, int flags);

/*
 * hostfs_pread_all - re-read an already open file from offset 0 into @buf, NUL-terminated
 * (/proc/stat is re-read this way every sample without reopening it). Returns bytes read or
 * -errno; -EFBIG when it does not fit in @size - 1 bytes. fileio_pread_all(), under its
 * hostfs name.
 */
ssize_t hostfs_pread_all(int fd, char *buf, size_t size);

/*
 * hostfs_pread_once - like hostfs_pread_all with a single pread(). Only for seq_file files the
 * kernel generates whole in one read when the buffer is large enough (/proc/stat, whose
 * single_open_size() output a read returns entirely): the EOF probe hostfs_pread_all makes is a
 * second read at a non-zero offset, which makes seq_file generate the whole file again — twice
 * the kernel time of every sample. A read that fills the buffer is -EFBIG (grow and retry).
 */
ssize_t hostfs_pread_once(int fd, char *buf, size_t size);

/*
 * hostfs_readlink - readlink @rel under @root into @buf (NUL-terminated). Returns the length or
 * -errno (-ENAMETOOLONG when it does not fit).
 */
ssize_t hostfs_readlink(const struct hostfs *hf, enum hostfs_root root, const char *rel, char *buf,
			size_t size);

/*
 * hostfs_path - "<root path>/<rel>" for messages. Returns @buf (cut to @size if needed).
 */
const char *hostfs_path(const struct hostfs *hf, enum hostfs_root root, const char *rel, char *buf,
			size_t size);

#endif
