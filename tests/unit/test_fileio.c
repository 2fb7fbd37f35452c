/* SPDX-License-Identifier: MIT */
/* base/fileio: the one bounded reader (non-blocking opens, regular files only where asked) and
 * the one atomic writer (exact mode, nothing left behind, intruders at the names replaced). */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <dirent.h>
#include <unistd.h>

#include "testutil.h"
#include "base/fileio.h"
#include "base/util.h"

static char dir[256];

static void hung(int sig)
{
	(void)sig;
	fail_msg("a read or write blocked (FIFO?)");
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cz-unit-fileio-%ld", (long)getpid());
	if (mkdir(dir, 0700) < 0)
		return -1;
	signal(SIGALRM, hung);
	alarm(20);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	alarm(0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const char *text)
{
	char p[300];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* "dir/name"; four buffers in turn, so that two calls can be arguments of one call */
static const char *at(const char *name)
{
	static char p[4][300];
	static unsigned i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static void test_read_bounded(void **state)
{
	char buf[8];

	(void)state;
	put("r", "12345678"); /* 8 bytes do not fit in 8 with the NUL */
	assert_int_equal(fileio_read_at(AT_FDCWD, at("r"), FILEIO_OURS, buf, sizeof(buf)), -EFBIG);
	put("r", "123456");
	assert_int_equal(fileio_read_at(AT_FDCWD, at("r"), FILEIO_OURS, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "123456");
	assert_int_equal(fileio_read_at(AT_FDCWD, at("none"), 0, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(fileio_read_at(AT_FDCWD, at("r"), 0, buf, 1), -EINVAL);
}

static void test_read_alloc(void **state)
{
	char *p = (char *)"untouched";
	size_t n = 99;

	(void)state;
	put("a", "hello\n");
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, at("a"), FILEIO_OURS, 5, &p, &n), -EFBIG);
	assert_string_equal(p, "untouched");
	assert_int_equal(n, 99);
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, at("a"), FILEIO_OURS, 6, &p, &n), 0);
	assert_int_equal(n, 6);
	assert_string_equal(p, "hello\n");
	free(p);
	/* procfs says size 0: the buffer grows */
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, "/proc/self/status", FILEIO_REGULAR,
					      1 << 20, &p, &n), 0);
	assert_true(n > 100);
	assert_non_null(strstr(p, "Name:"));
	free(p);
}

/* A regular file that says it is larger than the bound (a 10 GB sparse cpu-history) is refused
 * from its size, before a byte is read: the read position stays at 0 (not read to the bound,
 * 256 MiB of zeros, before -EFBIG). */
static void test_read_alloc_refuses_by_size(void **state)
{
	char *p = (char *)"untouched";
	size_t n = 99;
	int fd;

	(void)state;
	put("sparse", "");
	assert_int_equal(truncate(at("sparse"), 10ll << 30), 0);
	fd = fileio_open(AT_FDCWD, at("sparse"), FILEIO_OURS);
	assert_true(fd >= 0);
	assert_int_equal(fileio_read_alloc_fd(fd, 1 << 20, &p, &n), -EFBIG);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	assert_string_equal(p, "untouched");
	assert_int_equal(n, 99);
	close(fd);
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, at("sparse"), FILEIO_OURS, 1 << 20, &p, &n),
			 -EFBIG);
	assert_int_equal(unlink(at("sparse")), 0);
	/* a small file still reads whatever the bound: sysfs says 4096 for any attribute */
	put("a", "hello\n");
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, at("a"), FILEIO_OURS, 6, &p, &n), 0);
	free(p);
}

/* A FIFO, a socket, a symlink and a directory at one of our names: refused at once, never
 * followed, never waited on. */
static void test_not_ours_refused(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[64], *p = NULL;
	size_t n;

	(void)state;
	assert_int_equal(mkfifo(at("fifo"), 0600), 0);
	assert_int_equal(fileio_read_at(AT_FDCWD, at("fifo"), FILEIO_OURS, buf, sizeof(buf)),
			 -EBADFD);
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, at("fifo"), FILEIO_OURS, 100, &p, &n),
			 -EBADFD);
	/* without FILEIO_REGULAR the open still does not block: a FIFO without writer is empty */
	assert_int_equal(fileio_read_at(AT_FDCWD, at("fifo"), 0, buf, sizeof(buf)), 0);
	put("target", "secret");
	assert_int_equal(symlink(at("target"), at("link")), 0);
	assert_int_equal(fileio_read_at(AT_FDCWD, at("link"), FILEIO_OURS, buf, sizeof(buf)),
			 -ELOOP);
	assert_int_equal(fileio_read_at(AT_FDCWD, at("link"), FILEIO_REGULAR, buf, sizeof(buf)), 6);
	assert_int_equal(mkdir(at("d"), 0700), 0);
	assert_int_equal(fileio_read_at(AT_FDCWD, at("d"), FILEIO_OURS, buf, sizeof(buf)), -EISDIR);
	assert_int_equal(fileio_read_at(AT_FDCWD, "/dev/null", FILEIO_REGULAR, buf, sizeof(buf)),
			 -EBADFD);
	assert_true(s >= 0);
	assert_true(strlen(at("sock")) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, at("sock"), strlen(at("sock")) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_true(fileio_read_at(AT_FDCWD, at("sock"), FILEIO_OURS, buf, sizeof(buf)) < 0);
}

/* A user-named pipe (`ena-diff <(ethtool -S eth0) after.txt`) is read to its end. */
static void test_blocking_read_of_a_pipe(void **state)
{
	int fds[2];
	char path[64], *p = NULL;
	size_t n;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], "NIC statistics:\n", 16), 16);
	close(fds[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, path, FILEIO_BLOCKING_READ, 1 << 20, &p, &n),
			 0);
	assert_int_equal(n, 16);
	free(p);
	close(fds[0]);
}

static void assert_no_tmp(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		assert_null(strstr(de->d_name, ".tmp"));
	closedir(d);
}

static void test_write_atomic(void **state)
{
	struct iovec iov[2] = { { (void *)"a=1\n", 4 }, { (void *)"b=2\n", 4 } };
	char buf[64];
	struct stat st;
	mode_t old = umask(077);

	(void)state;
	assert_int_equal(fileio_write_atomic(dir, "w.prom", iov, 2, 0644, FILEIO_DURABLE), 0);
	umask(old);
	assert_int_equal(fileio_read_at(AT_FDCWD, at("w.prom"), FILEIO_OURS, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "a=1\nb=2\n");
	assert_int_equal(stat(at("w.prom"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644); /* exact, whatever the umask */
	assert_no_tmp();
	assert_int_equal(fileio_write_atomic(dir, "../x", iov, 1, 0600, 0), -EINVAL);
	assert_int_equal(fileio_write_atomic(dir, "", iov, 1, 0600, 0), -EINVAL);
	assert_int_equal(fileio_write_atomic("/nonexistent-cz", "x", iov, 1, 0600, 0), -ENOENT);
}

/* Whatever sits at "<name>.tmp" or "<name>" (stale file, FIFO, symlink) is replaced, not
 * followed and not waited on. */
static void test_write_replaces_intruders(void **state)
{
	struct iovec iov = { (void *)"v\n", 2 };
	char buf[64];
	struct stat st;

	(void)state;
	assert_int_equal(mkfifo(at("i.tmp"), 0600), 0);
	assert_int_equal(mkfifo(at("i"), 0600), 0);
	assert_int_equal(fileio_write_atomic(dir, "i", &iov, 1, 0600, 0), 0);
	assert_int_equal(fileio_read_at(AT_FDCWD, at("i"), FILEIO_OURS, buf, sizeof(buf)), 2);
	assert_int_equal(lstat(at("i.tmp"), &st), -1);
	put("keep", "keep");
	assert_int_equal(symlink(at("keep"), at("j")), 0);
	assert_int_equal(symlink(at("keep"), at("j.tmp")), 0);
	assert_int_equal(fileio_write_atomic(dir, "j", &iov, 1, 0600, FILEIO_DURABLE), 0);
	assert_int_equal(lstat(at("j"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(fileio_read_at(AT_FDCWD, at("keep"), 0, buf, sizeof(buf)), 4);
	assert_no_tmp();
}

/* The open of a path that must not be a symlink: X, X/, X/., X/./ and a symlinked middle. */
static void test_open_nofollow(void **state)
{
	static const char *const ends[] = { "", "/", "/.", "/./", "//" };
	char p[400];
	struct stat a, b;
	int fd;

	(void)state;
	assert_int_equal(mkdir(at("real"), 0700), 0);
	assert_int_equal(symlink(at("real"), at("ln")), 0);
	assert_int_equal(symlink(dir, at("mid")), 0);
	assert_int_equal(stat(at("real"), &a), 0);
	for (size_t i = 0; i < ARRAY_SIZE(ends); i++) {
		snprintf(p, sizeof(p), "%s%s", at("ln"), ends[i]);
		assert_int_equal(fileio_open_nofollow(p, O_RDONLY | O_DIRECTORY, 0), -ELOOP);
		snprintf(p, sizeof(p), "%s/ln%s", at("mid"), ends[i]);
		assert_int_equal(fileio_open_nofollow(p, O_RDONLY, 0), -ELOOP);
		/* a real directory named so is itself; through a symlinked middle component too */
		snprintf(p, sizeof(p), "%s/real%s", at("mid"), ends[i]);
		fd = fileio_open_nofollow(p, O_RDONLY | O_DIRECTORY, 0);
		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &b), 0);
		assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		close(fd);
	}
	/* a file: created without following; with a trailing slash it must be a directory */
	fd = fileio_open_nofollow(at("f"), O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(at("f"), at("fl")), 0);
	assert_int_equal(fileio_open_nofollow(at("fl"), O_WRONLY | O_CREAT, 0600), -ELOOP);
	snprintf(p, sizeof(p), "%s/", at("f"));
	assert_int_equal(fileio_open_nofollow(p, O_RDONLY, 0), -ENOTDIR);
	assert_int_equal(fileio_open_nofollow(p, O_WRONLY | O_CREAT, 0600), -EISDIR);
	snprintf(p, sizeof(p), "%s/..", at("ln"));
	assert_int_equal(fileio_open_nofollow(p, O_RDONLY, 0), -EINVAL);
	assert_int_equal(fileio_open_nofollow("", O_RDONLY, 0), -EINVAL);
	assert_int_equal(fileio_open_nofollow(at("absent/x"), O_RDONLY, 0), -ENOENT);
	fd = fileio_open_nofollow("/", O_RDONLY | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	close(fd);
	fd = fileio_open_nofollow(".", O_RDONLY | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	close(fd);
}

static void test_split_path(void **state)
{
	char d[64];

	(void)state;
	assert_string_equal(fileio_split_path("/var/lib/x.prom", d, sizeof(d)), "x.prom");
	assert_string_equal(d, "/var/lib");
	assert_string_equal(fileio_split_path("x.prom", d, sizeof(d)), "x.prom");
	assert_string_equal(d, ".");
	assert_string_equal(fileio_split_path("/x", d, sizeof(d)), "x");
	assert_string_equal(d, "/");
	assert_null(fileio_split_path("/var/", d, sizeof(d)));
	assert_null(fileio_split_path("", d, sizeof(d)));
	assert_null(fileio_split_path("/a/long/dir/x", d, 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_bounded),
		cmocka_unit_test(test_read_alloc),
		cmocka_unit_test(test_read_alloc_refuses_by_size),
		cmocka_unit_test(test_not_ours_refused),
		cmocka_unit_test(test_blocking_read_of_a_pipe),
		cmocka_unit_test(test_write_atomic),
		cmocka_unit_test(test_write_replaces_intruders),
		cmocka_unit_test(test_split_path),
		cmocka_unit_test(test_open_nofollow),
	};
	return cmocka_run_group_tests_name("fileio", tests, setup, teardown);
}
