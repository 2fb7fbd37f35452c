/* SPDX-License-Identifier: MIT */
/* The compact kernel symbol table (host/kallsyms.h): hostile lines, aliases at one address,
 * unsorted input, zero addresses, two halves of the address space; and its size per symbol,
 * on the fixture and on this machine's /proc/kallsyms when it shows addresses. */
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/fileio.h"
#include "host/hostfs.h"
#include "host/kallsyms.h"
#include "base/util.h"

static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;

	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, path, FILEIO_REGULAR, 64u << 20, &buf, len),
			 0);
	return buf;
}

/* Addresses ascend strictly, each finds itself, and the table holds 8 bytes a symbol plus its
 * runs and one string block: nothing per symbol beyond that. */
static void assert_structure(const struct kallsyms *ks)
{
	for (size_t i = 0; i < ks->n; i++) {
		const char *mod = NULL;

		if (i > 0)
			assert_true(kallsyms_addr(ks, i - 1) < kallsyms_addr(ks, i));
		assert_ptr_equal(kallsyms_lookup(ks, kallsyms_addr(ks, i), &mod),
				 ks->strings + ks->name[i]);
		assert_non_null(mod);
		assert_true(ks->name[i] < ks->strings_len);
	}
	assert_true(ks->nhi >= 1 && ks->nhi <= ks->n && ks->hi[0].first == 0);
	assert_true(ks->nmod >= 1 && ks->nmod <= ks->n && ks->mod[0].first == 0);
	assert_int_equal(kallsyms_bytes(ks), ks->n * 8 + (ks->nhi + ks->nmod) * 8 + ks->strings_len);
}

static void test_hostile(void **state)
{
	size_t len;
	_cleanup_free_ char *text = slurp(FIXTURES "/profile/kallsyms-hostile", &len);
	struct kallsyms ks = { 0 };
	const char *mod = NULL;

	(void)state;
	/* 11 kept: 3 aliases of getpid and 3 of memcpy make one each, two at 0xffffffff81500000
	 * one; the zero address, the 600-byte name, the 70-byte module, the unclosed module, the
	 * missing address, type or name, "0x", "TT" and the data symbol are skipped */
	assert_int_equal(kallsyms_parse(text, len, &ks), 11);
	assert_structure(&ks);
	assert_int_equal(ks.nhi, 2); /* 0xffff8000..., 0xffffffff... */
	assert_int_equal(ks.nmod, 2); /* the core kernel, then [ena] */
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81689710ULL, &mod), "memcg_numa_stat_show");
	assert_string_equal(mod, "");
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81d35fe5ULL, NULL), "read_zero");
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81d36001ULL, NULL), "read_iter_zero");
	/* aliases: a global name over a local one, then fewer underscores, then the first listed */
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81379cc0ULL, NULL), "__x64_sys_getpid");
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff821f6491ULL, NULL), "memcpy");
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81500000ULL, NULL), "first_listed");
	/* the line after an overlong name is still read */
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81600000ULL, NULL), "after_overlong_name");
	/* module symbols listed out of order */
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffffc0a00010ULL, &mod), "ena_probe");
	assert_string_equal(mod, "ena");
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffffc0a01234ULL, &mod), "ena_io_poll");
	assert_string_equal(mod, "ena");
	/* the other half: its own run of upper bits; far past it, and below it, is nobody's */
	assert_string_equal(kallsyms_lookup(&ks, 0xffff800080010000ULL, &mod), "other_half");
	assert_string_equal(mod, "");
	assert_null(kallsyms_lookup(&ks, 0xffff800080010000ULL + KALLSYMS_FUNC_MAX + 1, NULL));
	assert_null(kallsyms_lookup(&ks, 0xffffffff80ffffffULL, NULL));
	assert_null(kallsyms_lookup(&ks, 0, NULL));
	assert_null(kallsyms_lookup(&ks, 0xffff80008000ffffULL, NULL));
	assert_null(strstr(ks.strings, "xxxxxxxx")); /* the overlong name was never copied */
	kallsyms_free(&ks);
}

/* The same lines in reverse: the same table, but for the ties decided by the order listed. */
static void test_order(void **state)
{
	static const char fwd[] = "ffffffff81000010 T b\nffffffff81000000 T a\n"
				  "ffffffff81000020 t c\tX\nffffffff81000030 t d\n";
	static const char rev[] = "ffffffff81000030 t d\nffffffff81000010 T b\n"
				  "ffffffff81000000 T a\n";
	struct kallsyms f = { 0 }, r = { 0 };

	(void)state;
	assert_int_equal(kallsyms_parse(fwd, strlen(fwd), &f), 3); /* "c\tX": no [module] */
	assert_int_equal(kallsyms_parse(rev, strlen(rev), &r), 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(kallsyms_addr(&f, i), kallsyms_addr(&r, i));
		assert_string_equal(f.strings + f.name[i], r.strings + r.name[i]);
	}
	assert_string_equal(kallsyms_lookup(&f, 0xffffffff81000025ULL, NULL), "b");
	kallsyms_free(&f);
	kallsyms_free(&r);
}

/* Only zeros (kptr_restrict): -EPERM, untouched; a zero among real ones is just dropped. */
static void test_zero(void **state)
{
	static const char zeros[] = "0000000000000000 T a\n0000000000000000 t b\n";
	static const char mixed[] = "0000000000000000 T a\nffff T b\n";
	struct kallsyms ks = { 0 }, keep;

	(void)state;
	keep = ks;
	assert_int_equal(kallsyms_parse(zeros, strlen(zeros), &ks), -EPERM);
	assert_memory_equal(&ks, &keep, sizeof(ks));
	assert_int_equal(kallsyms_parse(mixed, strlen(mixed), &ks), 1);
	assert_null(kallsyms_lookup(&ks, 0, NULL));
	assert_string_equal(kallsyms_lookup(&ks, 0xffff, NULL), "b");
	kallsyms_free(&ks);
}

/* This machine's table: ~8 bytes a symbol beside its name (no per-symbol allocation), and the
 * names stored once each (the string block no larger than the names of the text lines). */
static void test_real(void **state)
{
	struct kallsyms ks = { 0 }, same = { 0 };
	struct hostfs hf;
	_cleanup_free_ char *text = NULL;
	size_t len = 0, names = 0;
	ssize_t n;

	(void)state;
	assert_int_equal(hostfs_open(&hf, "/proc", "/sys"), 0);
	n = kallsyms_load(&hf, &ks);
	if (n == -EPERM || n == -ENOENT || n == -EACCES) {
		print_message("SKIP test_real: /proc/kallsyms hides its addresses here (%s)\n",
			      strerror((int)-n));
		hostfs_close(&hf);
		skip();
	}
	assert_true(n > 1000);
	assert_structure(&ks);
	assert_true((kallsyms_bytes(&ks) - ks.strings_len) * 100 / ks.n <= 850);
	assert_int_equal(fileio_read_alloc_at(AT_FDCWD, "/proc/kallsyms", FILEIO_REGULAR,
					      KALLSYMS_FILE_MAX, &text, &len), 0);
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (ll > 19 && strchr("tTwW", p[17]) && p[18] == ' ')
			names += ll - 19 + 1; /* name, and module, with its NUL */
		p += ll + 1;
	}
	/* the bound on the table parsed from the very text counted: a module loaded between two
	 * reads of /proc/kallsyms (a busy machine loads veth, bridge, overlay...) adds names */
	assert_true(kallsyms_parse(text, len, &same) > 1000);
	assert_true(same.strings_len <= names);
	print_message("real kallsyms: %zd symbols, %zu bytes (%.1f a symbol, names %zu)\n", n,
		      kallsyms_bytes(&ks), (double)kallsyms_bytes(&ks) / (double)ks.n,
		      ks.strings_len);
	kallsyms_free(&same);
	kallsyms_free(&ks);
	hostfs_close(&hf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_zero),
		cmocka_unit_test(test_real),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
