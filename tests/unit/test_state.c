/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "testutil.h"
#include "base/state.h"
#include "base/util.h"

static char dir[256];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/cz-unit-state-%ld/sub", (long)getpid());
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/cz-unit-state-%ld", (long)getpid());
	return system(cmd) == 0 ? 0 : -1;
}

static void test_crc(void **state)
{
	assert_true(state_crc32("123456789", 9) == 0xcbf43926u); /* the standard check value */
}

static void test_roundtrip(void **state)
{
	struct state_lock l = { -1 };
	char buf[64];

	assert_int_equal(state_lock(dir, "t", &l), 0); /* creates the missing directories */
	assert_int_equal(state_load(dir, "t", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(state_save(dir, "t", "a 1\nb 2\n", 8), 0);
	assert_int_equal(state_load(dir, "t", buf, sizeof(buf)), 8);
	assert_string_equal(buf, "a 1\nb 2\n");
	assert_int_equal(state_load(dir, "t", buf, 8), -EFBIG);
	state_unlock(&l);
	state_unlock(&l); /* idempotent */
}

static void test_lock_times_out(void **state)
{
	struct state_lock a = { -1 }, b = { -1 };

	assert_int_equal(state_lock(dir, "l", &a), 0);
	assert_int_equal(state_lock(dir, "l", &b), -ETIMEDOUT); /* flock is per open file */
	state_unlock(&a);
	assert_int_equal(state_lock(dir, "l", &b), 0);
	state_unlock(&b);
}

static void test_envelope(void **state)
{
	const char *p;
	size_t n = 99;
	char file[128];
	uint32_t crc = state_crc32("x 1\n", 4);

	snprintf(file, sizeof(file), "cpuzombie-state 1 t\nx 1\nend %08x\n", crc);
	assert_int_equal(state_parse_envelope(file, strlen(file), "t", &p, &n), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(p, "x 1\n", 4);
	/* wrong name, version, checksum, torn tail, empty: all corrupt */
	assert_int_equal(state_parse_envelope(file, strlen(file), "u", &p, &n), -EBADMSG);
	file[16] = '2';
	assert_int_equal(state_parse_envelope(file, strlen(file), "t", &p, &n), -EBADMSG);
	file[16] = '1';
	file[strlen(file) - 2] ^= 1; /* one hex digit of the checksum off */
	assert_int_equal(state_parse_envelope(file, strlen(file), "t", &p, &n), -EBADMSG);
	file[strlen(file) - 2] ^= 1;
	assert_int_equal(state_parse_envelope(file, strlen(file) - 1, "t", &p, &n), -EBADMSG);
	assert_int_equal(state_parse_envelope(file, 10, "t", &p, &n), -EBADMSG);
	assert_int_equal(state_parse_envelope("", 0, "t", &p, &n), -EBADMSG);
}

static void test_corrupt_moved_aside(void **state)
{
	char path[300], aside[300], buf[64];
	FILE *f;
	struct stat st;

	assert_int_equal(state_save(dir, "c", "v 1\n", 4), 0);
	snprintf(path, sizeof(path), "%s/c", dir);
	snprintf(aside, sizeof(aside), "%s/c.corrupt", dir);
	f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, 20, SEEK_SET);
	fputc('9', f); /* flip the payload */
	fclose(f);
	assert_int_equal(state_load(dir, "c", buf, sizeof(buf)), -EBADMSG);
	assert_int_equal(stat(aside, &st), 0);
	assert_int_equal(state_load(dir, "c", buf, sizeof(buf)), -ENOENT); /* a new baseline */
}

static void test_no_temporaries_left(void **state)
{
	DIR *d;
	struct dirent *de;

	assert_int_equal(state_save(dir, "n", "z\n", 2), 0);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		assert_null(strstr(de->d_name, ".tmp"));
	closedir(d);
	assert_int_equal(state_save(dir, "../escape", "z", 1), -EINVAL);
	assert_int_equal(state_save(dir, "a/b", "z", 1), -EINVAL);
}

/* A <name>.tmp left by a writer killed between link and rename is replaced, never followed. */
static void test_stale_temporary_replaced(void **state)
{
	char tmp[300], outside[300], buf[64];
	FILE *f;
	struct stat st;

	snprintf(tmp, sizeof(tmp), "%s/s.tmp", dir);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs("half a file", f);
	fclose(f);
	assert_int_equal(state_save(dir, "s", "v 1\n", 4), 0);
	assert_int_equal(state_load(dir, "s", buf, sizeof(buf)), 4);
	assert_string_equal(buf, "v 1\n");
	assert_int_equal(lstat(tmp, &st), -1);

	/* a planted symlink is removed, its target left alone */
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	f = fopen(outside, "w");
	assert_non_null(f);
	fputs("keep", f);
	fclose(f);
	assert_int_equal(symlink(outside, tmp), 0);
	assert_int_equal(state_save(dir, "s", "v 2\n", 4), 0);
	assert_int_equal(state_load(dir, "s", buf, sizeof(buf)), 4);
	assert_string_equal(buf, "v 2\n");
	assert_int_equal(lstat(tmp, &st), -1);
	assert_int_equal(stat(outside, &st), 0);
	assert_int_equal(st.st_size, 4);
}

/* ---- non-regular files, lock-free readers, read-only transactions, typed state (issues 12, 16) ---- */

static bool exists(const char *name)
{
	char p[300];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

/* "dir/name"; four buffers in turn, so that two calls can be arguments of one call */
static const char *path_of(const char *name)
{
	static char p[4][300];
	static unsigned i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

/* A FIFO or symlink at a state's name is moved aside by a writer, not waited on, not
 * followed; a FIFO at the lock's name too. */
static void test_not_regular_moved_aside(void **state)
{
	struct state_lock l = { -1 };
	char buf[64], outside[300];
	struct stat st;

	alarm(20); /* a blocking open would hang here */
	assert_int_equal(state_save(dir, "f", "v 1\n", 4), 0);
	assert_int_equal(unlink(path_of("f")), 0);
	assert_int_equal(mkfifo(path_of("f"), 0600), 0);
	assert_int_equal(mkfifo(path_of("f.lock.x"), 0600), 0);
	assert_int_equal(rename(path_of("f.lock.x"), path_of("f.lock")), 0);
	assert_int_equal(state_lock(dir, "f", &l), 0);
	assert_int_equal(lstat(path_of("f.lock"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_true(exists("f.lock.corrupt"));
	assert_int_equal(state_load(dir, "f", buf, sizeof(buf)), -EBADMSG);
	assert_true(exists("f.corrupt"));
	assert_int_equal(state_load(dir, "f", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(state_save(dir, "f", "v 2\n", 4), 0);
	assert_int_equal(state_load(dir, "f", buf, sizeof(buf)), 4);
	state_unlock(&l);

	snprintf(outside, sizeof(outside), "%s", path_of("outside-target"));
	assert_int_equal(state_save(dir, "o", "x 1\n", 4), 0);
	assert_int_equal(rename(path_of("o"), outside), 0);
	assert_int_equal(symlink(outside, path_of("g")), 0);
	assert_int_equal(state_load(dir, "g", buf, sizeof(buf)), -EBADMSG); /* never followed */
	assert_int_equal(lstat(path_of("g.corrupt"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(outside, &st), 0); /* the target is left alone */
	alarm(0);
}

struct kv {
	unsigned v;
};

static int kv_parse(const char *payload, size_t len, void *obj)
{
	unsigned v;

	if (sscanf(payload, "v %u\n", &v) != 1)
		return -EINVAL;
	((struct kv *)obj)->v = v;
	return 0;
}

static ssize_t kv_format(const void *obj, char **ret)
{
	char *p;
	int n = asprintf(&p, "v %u\n", ((const struct kv *)obj)->v);

	if (n < 0)
		return -ENOMEM;
	*ret = p;
	return n;
}

static const struct state_type kv_type = { "kv", 64, true };

/* the owner's typed calls: the store moves bytes, the owner parses and formats (state.h) */
STATE_CODEC(static, kv, struct kv, kv_parse, kv_format);

static void test_typed(void **state)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT;
	struct kv k = { 7 };

	assert_int_equal(kv_read(dir, &kv_type, &k), STATE_NONE);
	assert_int_equal(k.v, 7);
	assert_false(exists("kv.lock")); /* readers create nothing */
	assert_int_equal(kv_begin(&txn, dir, &kv_type, &k), STATE_NONE);
	k.v = 42;
	assert_int_equal(kv_commit(&txn, &k), 0);
	state_end(&txn);
	k.v = 0;
	assert_int_equal(kv_read(dir, &kv_type, &k), STATE_LOADED);
	assert_int_equal(k.v, 42);
	/* the bytes underneath: the payload alone, NUL-terminated */
	{
		_cleanup_free_ char *p = NULL;
		size_t n = 0;

		assert_int_equal(state_read(dir, &kv_type, &p, &n), STATE_LOADED);
		assert_int_equal(n, 5);
		assert_string_equal(p, "v 42\n");
	}
	/* a payload the owner cannot parse is discarded: kept aside by a writer */
	assert_int_equal(state_save(dir, "kv", "junk\n", 5), 0);
	assert_int_equal(kv_read(dir, &kv_type, &k), -EINVAL);
	assert_int_equal(k.v, 42);
	assert_true(exists("kv")); /* a reader leaves it for the writer */
	assert_int_equal(mkfifo(path_of("kv-fifo"), 0600), 0);
	assert_int_equal(kv_read(dir, &(struct state_type){ "kv-fifo", 64, true }, &k), -EBADMSG);
	assert_int_equal(kv_begin(&txn, dir, &kv_type, &k), STATE_DISCARDED);
	assert_false(exists("kv"));
	assert_true(exists("kv.corrupt"));
}

static void test_readers_write_nothing(void **state)
{
	char ro[300];
	struct kv k = { 0 };
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT_FLAGS(STATE_READ_ONLY);
	struct state_txn rw = STATE_TXN_INIT;

	snprintf(ro, sizeof(ro), "%s/ro", dir);
	/* a reader of a missing dir creates neither the dir nor a lock */
	assert_int_equal(kv_read(ro, &kv_type, &k), STATE_NONE);
	assert_false(exists("ro"));
	/* a read-only transaction (report): the writer's calls succeed and write nothing */
	assert_int_equal(kv_begin(&txn, ro, &kv_type, &k), STATE_NONE);
	k.v = 3;
	assert_int_equal(kv_commit(&txn, &k), 0);
	assert_int_equal(state_commit(&txn, "v 3\n", 4), 0);
	assert_false(exists("ro"));
	state_end(&txn);
	/* ...and a bad file stays where it is: discarded for the check, not moved aside */
	assert_int_equal(state_save(dir, "kv2", "junk\n", 5), 0);
	assert_int_equal(kv_begin(&txn, dir, &(struct state_type){ "kv2", 64, true }, &k),
			 STATE_DISCARDED);
	assert_int_equal(kv_commit(&txn, &k), 0);
	state_end(&txn);
	assert_true(exists("kv2"));
	assert_false(exists("kv2.lock"));
	assert_false(exists("kv2.corrupt"));
	assert_int_equal(unlink(path_of("kv2")), 0);
	assert_int_equal(mkfifo(path_of("kv2"), 0600), 0);
	assert_int_equal(kv_begin(&txn, dir, &(struct state_type){ "kv2", 64, true }, &k),
			 STATE_DISCARDED);
	state_end(&txn);
	assert_true(exists("kv2"));		 /* not moved aside read-only */
	assert_false(exists("kv2.corrupt"));
	/* the property is the call's: a writer beside it still writes (no process-wide switch) */
	assert_int_equal(kv_begin(&rw, ro, &kv_type, &k), STATE_NONE);
	assert_int_equal(kv_commit(&rw, &k), 0);
	state_end(&rw);
	assert_true(exists("ro/kv"));
}

/* The stamp: kept in the lock file in place, read back under the lock, never a state file. */
static void test_stamp(void **state)
{
	_cleanup_(state_end) struct state_txn txn = STATE_TXN_INIT;
	struct kv k = { 0 };
	uint64_t v = 7;
	FILE *f;

	assert_int_equal(kv_begin(&txn, dir, &kv_type, &k), STATE_NONE);
	assert_int_equal(state_stamp_get(&txn, &v), -ENODATA); /* a new lock file holds none */
	assert_int_equal(v, 7);
	assert_int_equal(state_stamp_set(&txn, 1796098697016ull), 0);
	assert_int_equal(state_stamp_get(&txn, &v), 0);
	assert_true(v == 1796098697016ull);
	assert_int_equal(state_stamp_set(&txn, 5), 0); /* shorter: fixed width, no tail left */
	assert_int_equal(state_stamp_get(&txn, &v), 0);
	assert_true(v == 5);
	assert_false(exists("kv")); /* the state itself is not written */
	state_end(&txn);
	/* someone else's bytes in the lock file are no stamp */
	f = fopen(path_of("kv.lock"), "w");
	assert_non_null(f);
	fputs("stamp 0000000000000000000x\n", f);
	fclose(f);
	assert_int_equal(kv_begin(&txn, dir, &kv_type, &k), STATE_NONE);
	assert_int_equal(state_stamp_get(&txn, &v), -ENODATA);
	assert_true(v == 5);
	state_end(&txn);
	/* read-only (report): nothing written, and no lock to read a stamp from */
	txn.flags = STATE_READ_ONLY;
	assert_int_equal(kv_begin(&txn, dir, &kv_type, &k), STATE_NONE);
	assert_int_equal(state_stamp_set(&txn, 9), 0);
	assert_int_equal(state_stamp_get(&txn, &v), -ENODATA);
	state_end(&txn);
	f = fopen(path_of("kv.lock"), "r");
	assert_non_null(f);
	assert_int_equal(fgetc(f), 's');
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc),		 cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_lock_times_out),	 cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_corrupt_moved_aside), cmocka_unit_test(test_no_temporaries_left),
		cmocka_unit_test(test_stale_temporary_replaced),
		cmocka_unit_test(test_not_regular_moved_aside),
		cmocka_unit_test(test_typed),
		cmocka_unit_test(test_stamp),
		cmocka_unit_test(test_readers_write_nothing),
	};
	return cmocka_run_group_tests_name("state", tests, setup, teardown);
}
