/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie own-state UID DIR...`: give the state and run directories to the non-root uid the
 * node containers run as (the chart's init container `state-owner`, uid 0 with CAP_CHOWN
 * alone, no token). The host directories are created by the kubelet (hostPath
 * DirectoryOrCreate) owned by root; the agent and NPD's check then run as UID and write their
 * state and run files there. The image has no chown (no coreutils): this is it, for those
 * directories.
 *
 * Each DIR itself only, never recursively and never through a symlink (fileio_open_nofollow():
 * a symlink planted at the mount's place is refused, not followed to a host file, also when DIR
 * is given as "DIR/" or "DIR/."); UID is a
 * plain number other than 0 (giving the directory to root is what the kubelet already did), and
 * the group is the same number. In order, stopping at the first failure: exit 0 with one line
 * per DIR on stdout; 2 with one line on stderr (the DIRs before it are given).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/textsafe.h"
#include "base/util.h"

const char cmd_own_state_usage[] =
	"own-state UID DIR...\n"
	"    Give each DIR (itself, never through a symlink) to UID:UID (1-65534): the\n"
	"    chart's init container for node containers that run as non-root (the image has\n"
	"    no chown). One line per DIR; exit 0, or 2 at the first failure.\n";

/* The options of `own-state` (cmd_own_state), and the words after them. */
struct own_state_opts {
	int argc;
	char **argv;
};

/* The uid of @s: decimal, 1..65534 (not 0, not the kernel's overflow/invalid ids). Returns 0
 * or -EINVAL. */
static int parse_uid(const char *s, uid_t *ret)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 65534)
		return -EINVAL;
	*ret = (uid_t)v;
	return 0;
}

/* Gives @dir (a plain text path) itself to @uid:@uid and says so in one line. Returns
 * CZ_EXIT_OK or, logged, CZ_EXIT_ERROR. */
static int own_dir(const char *dir, uid_t uid)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = fileio_open_nofollow(dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) {
		log_error_errno(fd, "Failed to open '%s' as a directory (not following a "
				       "symlink): %m", dir);
		return CZ_EXIT_ERROR;
	}
	if (fchown(fd, uid, (gid_t)uid) < 0) {
		log_error_errno(errno, "Failed to give '%s' to %u:%u: %m", dir, (unsigned)uid,
				(unsigned)uid);
		return CZ_EXIT_ERROR;
	}
	if (fstat(fd, &st) < 0) {
		log_error_errno(errno, "Failed to stat '%s': %m", dir);
		return CZ_EXIT_ERROR;
	}
	printf("%s is owned by %u:%u (mode %04o)\n", dir, (unsigned)st.st_uid, (unsigned)st.st_gid,
	       (unsigned)(st.st_mode & 07777));
	return CZ_EXIT_OK;
}

static int own_state_main(struct cz_ctx *ctx, const struct own_state_opts *o)
{
	uid_t uid;

	(void)ctx;
	if (o->argc < 2 || !*o->argv[1]) {
		log_error("own-state: expected UID DIR... (cpuzombie own-state --help)");
		return CZ_EXIT_ERROR;
	}
	/* every DIR checked before any is given: a bad one later changes nothing */
	for (int i = 1; i < o->argc; i++)
		if (!*o->argv[i] || !textsafe_is_plain(o->argv[i])) {
			log_error("own-state: DIR must be a plain text path");
			return CZ_EXIT_ERROR;
		}
	if (parse_uid(o->argv[0], &uid) < 0) {
		log_error("own-state: UID must be a number from 1 to 65534");
		return CZ_EXIT_ERROR;
	}
	for (int i = 1; i < o->argc; i++) {
		int r = own_dir(o->argv[i], uid);

		if (r != CZ_EXIT_OK)
			return r;
		fflush(stdout); /* the lines of the DIRs given, before a later one's error */
	}
	return CZ_EXIT_OK;
}

int cmd_own_state(int argc, char **argv, struct cmd_env *env)
{
	struct own_state_opts o = { 0 };
	int r;

	r = cmd_args_common(env, argc, argv, cmd_own_state_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return own_state_main(&env->ctx, &o);
}
