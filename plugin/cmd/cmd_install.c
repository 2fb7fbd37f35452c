/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie install-plugin DEST_DIR [--from FILE]`: put the static check binary where
 * node-problem-detector's container finds it, DEST_DIR/bin/cpuzombie (the chart's init
 * container: DEST_DIR is the emptyDir NPD's container mounts at /opt/cpuzombie). The image then
 * needs no cp (and none of coreutils' libraries) to hand the binary over.
 *
 * Atomic: the bytes go to a temporary file created O_EXCL in DEST_DIR/bin, are fsynced and made
 * 0755, and only then renamed over bin/cpuzombie, so NPD never execs a half-written binary and
 * a failure leaves what was there (and no temporary file). Never through a symlink: DEST_DIR,
 * bin and bin/cpuzombie are refused if they are symlinks (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), as
 * is anything but a directory for DEST_DIR and bin, and anything but a regular file (or
 * nothing) at bin/cpuzombie. The source must be a regular file of at most SRC_MAX bytes.
 *
 * Exit 0 with one line on stdout; 2 with one line on stderr on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/textsafe.h"
#include "base/util.h"

const char cmd_install_plugin_usage[] =
	"install-plugin DEST_DIR [--from FILE]\n"
	"    Copy the static check binary (--from, default " CZ_PLUGIN_BINARY ") to\n"
	"    DEST_DIR/bin/cpuzombie for node-problem-detector's container: a temporary file\n"
	"    fsynced, mode 0755, renamed over the old one; never through a symlink. The chart's\n"
	"    init container runs it (the image has no cp). One line; exit 0, or 2 on\n"
	"    failure.\n";

enum { OPT_FROM = 256 };

/* The options of `install-plugin` (cmd_install_plugin), and the words after them. */
struct install_plugin_opts {
	const char *from;	 /* --from FILE, or NULL: CZ_PLUGIN_BINARY */
	int argc;
	char **argv;
};

#define SRC_MAX (256u << 20)	/* the static check binary is ~2 MiB */
#define TMP_TRIES 16

/* Write all of @buf to @fd. Returns 0 or -errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Copy @src (whose fstat said @size bytes) into @dst. Returns 0, -EFBIG past SRC_MAX, -EIO if
 * the file changed size while read, or -errno. */
static int copy_fd(int src, int dst, off_t size)
{
	static char buf[64 << 10];
	uint64_t total = 0;

	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > SRC_MAX)
			return -EFBIG;
		r = write_all(dst, buf, (size_t)n);
		if (r < 0)
			return r;
	}
	return total == (uint64_t)size ? 0 : -EIO;
}

/* Open the source: a regular file within SRC_MAX. Returns the fd (size in *ret_size) or -errno. */
static int open_source(const char *path, off_t *ret_size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;

	if (fd < 0)
		return log_error_errno(-errno, "Failed to open '%s': %m", path);
	if (fstat(fd, &st) < 0)
		return log_error_errno(-errno, "Failed to stat '%s': %m", path);
	if (!S_ISREG(st.st_mode)) {
		log_error("Failed to install from '%s': not a regular file", path);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > SRC_MAX) {
		log_error("Failed to install from '%s': larger than %u bytes", path, SRC_MAX);
		return -EFBIG;
	}
	*ret_size = st.st_size;
	return TAKE_FD(fd);
}

/* DEST_DIR/bin as a directory fd, made 0755 if missing; never through a symlink. Returns the
 * fd or -errno, said on stderr. */
static int open_bin_dir(const char *dest)
{
	/* "DEST/" and "DEST/." too: DEST itself is never a symlink */
	_cleanup_close_ int dfd = fileio_open_nofollow(dest, O_RDONLY | O_DIRECTORY, 0);
	bool made;
	int bfd, r;

	if (dfd < 0) {
		if (dfd == -ELOOP || dfd == -ENOTDIR) {
			log_error("Failed to install into '%s': not a directory (or a symlink)",
				  dest);
			return -ENOTDIR;
		}
		return log_error_errno(dfd, "Failed to open '%s': %m", dest);
	}
	made = mkdirat(dfd, "bin", 0755) == 0;
	if (!made && errno != EEXIST)
		return log_error_errno(-errno, "Failed to create '%s/bin': %m", dest);
	bfd = openat(dfd, "bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0) {
		if (errno == ELOOP || errno == ENOTDIR) {
			log_error("Failed to install into '%s/bin': not a directory (or a symlink)",
				  dest);
			return -ENOTDIR;
		}
		return log_error_errno(-errno, "Failed to open '%s/bin': %m", dest);
	}
	/* 0755 whatever the umask: NPD's container may run as another uid */
	if (made && fchmod(bfd, 0755) < 0) {
		r = log_error_errno(-errno, "Failed to make '%s/bin' 0755: %m", dest);
		close(bfd);
		return r;
	}
	return bfd;
}

/* Create a temporary file in @bfd (O_EXCL, never through a symlink), its name in @name. */
static int create_temp(int bfd, char *name, size_t name_size)
{
	for (unsigned i = 0; i < TMP_TRIES; i++) {
		int fd;

		if (snprintf(name, name_size, ".cpuzombie.%ld.%u.tmp", (long)getpid(), i) >=
		    (int)name_size)
			return -ENAMETOOLONG;
		fd = openat(bfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/* Write @src into a temporary file of @bfd and rename it to @target. On failure the temporary
 * file is removed. Returns 0 or -errno. */
static int install_at(int src, off_t size, int bfd, const char *target)
{
	char tmp[64];
	int fd, r;

	fd = create_temp(bfd, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	r = copy_fd(src, fd, size);
	if (r >= 0 && fchmod(fd, 0755) < 0)
		r = -errno;
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r >= 0 && renameat(bfd, tmp, bfd, target) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(bfd, tmp, 0);
		return r;
	}
	/* the rename itself durable, as the bytes are */
	return fsync(bfd) < 0 ? -errno : 0;
}

static int install_plugin_main(struct cz_ctx *ctx, const struct install_plugin_opts *o)
{
	const char *from = o->from ? o->from : CZ_PLUGIN_BINARY;
	_cleanup_close_ int src = -1, bfd = -1;
	struct stat st;
	off_t size = 0;
	const char *dest;
	int r;

	(void)ctx;
	if (o->argc != 1 || !*o->argv[0]) {
		log_error(
			"install-plugin: expected one DEST_DIR (cpuzombie install-plugin --help)");
		return CZ_EXIT_ERROR;
	}
	dest = o->argv[0];
	/* printed in every message: plain text only (no terminal escapes, valid UTF-8) */
	if (!textsafe_is_plain(dest) || !textsafe_is_plain(from)) {
		log_error("install-plugin: DEST_DIR and --from must be plain text paths");
		return CZ_EXIT_ERROR;
	}
	src = open_source(from, &size);
	if (src < 0)
		return CZ_EXIT_ERROR;
	bfd = open_bin_dir(dest);
	if (bfd < 0)
		return CZ_EXIT_ERROR;
	/* rename would replace a symlink rather than follow it, but one there is not ours */
	if (fstatat(bfd, "cpuzombie", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
		log_error(
			"Failed to install '%s/bin/cpuzombie': it exists and is not a regular file "
			"(a symlink?)",
			dest);
		return CZ_EXIT_ERROR;
	}
	r = install_at(src, size, bfd, "cpuzombie");
	if (r < 0) {
		log_error_errno(r, "Failed to install '%s' as '%s/bin/cpuzombie': %m", from, dest);
		return CZ_EXIT_ERROR;
	}
	printf("installed %s as %s/bin/cpuzombie (%" PRIu64 " bytes, mode 0755)\n", from, dest,
	       (uint64_t)size);
	return CZ_EXIT_OK;
}

int cmd_install_plugin(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "from", required_argument, NULL, OPT_FROM },
		CMD_COMMON_OPTIONS,
	};
	struct install_plugin_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) > 0) {
		switch (r) {
		case OPT_FROM: o.from = optarg; break;
		}
	}
	r = cmd_args(env, r, argc, argv, cmd_install_plugin_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return install_plugin_main(&env->ctx, &o);
}
