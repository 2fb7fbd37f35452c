/* SPDX-License-Identifier: MIT */
#ifndef CZ_TESTUTIL_H
#define CZ_TESTUTIL_H

/* Common includes for cmocka unit tests, and their temporary trees. FIXTURES is the absolute
 * tests/fixtures path. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

/* tmptree_remove()'s visit: each entry, children before their directory. */
static inline int tmptree_rm_entry(const char *path, const struct stat *st, int flag,
				   struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * tmptree_make - make a fresh directory "/tmp/cz-test-@name-XXXXXX" (mkdtemp, mode 0700) and
 * write its path into @dir (@size bytes; 64 fit every name the tests use). Fails the test when
 * the name does not fit or the directory cannot be made.
 */
static inline void tmptree_make(char *dir, size_t size, const char *name)
{
	int n = snprintf(dir, size, "/tmp/cz-test-%s-XXXXXX", name);

	assert_true(n > 0 && (size_t)n < size);
	assert_non_null(mkdtemp(dir));
}

/*
 * tmptree_remove - remove @dir and everything below it, by that path: symlinks are removed,
 * never followed (FTW_PHYS), and nothing outside @dir is touched.
 */
static inline void tmptree_remove(const char *dir)
{
	nftw(dir, tmptree_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

#endif
