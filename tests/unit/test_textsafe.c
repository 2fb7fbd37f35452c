/* SPDX-License-Identifier: MIT */
#include "testutil.h"
#include "base/textsafe.h"
#include "base/util.h"

/* Each hostile input, made safe for each kind of output. */
static void test_kinds(void **state)
{
	static const struct {
		const char *in, *text, *prom, *xml;
	} t[] = {
		{ "kworker/0:1", "kworker/0:1", "kworker/0:1", "kworker/0:1" },
		/* "xデータ処理サーバー" as the kernel keeps it: 15 bytes, the last character cut */
		{ "x\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf\xe5\x87\xa6\xe7\x90",
		  "x\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf\xe5\x87\xa6\xef\xbf\xbd\xef\xbf\xbd",
		  "x\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf\xe5\x87\xa6\xef\xbf\xbd\xef\xbf\xbd",
		  "x\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf\xe5\x87\xa6\xef\xbf\xbd\xef\xbf\xbd" },
		{ "a\xffz", "a\xef\xbf\xbdz", "a\xef\xbf\xbdz", "a\xef\xbf\xbdz" },
		{ "\x1b[2J\x07", "\\e[2J\\x07", "\\\\e[2J\\\\x07", "\\e[2J\\x07" },
		{ "a\nb\tc\r", "a\\nb\\tc\\r", "a\\nb\\\\tc\\\\r", "a\\nb\\tc\\r" },
		{ "q\"\\<&>'", "q\"\\\\<&>'", "q\\\"\\\\<&>'", "q&quot;\\\\&lt;&amp;&gt;&apos;" },
		{ "\xc2\x9b" "31m", "\\u009b31m", "\\\\u009b31m", "\\u009b31m" },   /* C1 CSI */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", "\xef\xbf\xbd\xef\xbf\xbd",
		  "\xef\xbf\xbd\xef\xbf\xbd" },					    /* overlong '/' */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },		    /* > U+10FFFF */
		{ "\xf0\x9f\x98\x80 ok", "\xf0\x9f\x98\x80 ok", "\xf0\x9f\x98\x80 ok",
		  "\xf0\x9f\x98\x80 ok" },
		/* U+FFFE (XML 1.0 forbids it) and bidi controls: shown, in every kind (one rule) */
		{ "a\xef\xbf\xbe", "a\\ufffe", "a\\\\ufffe", "a\\ufffe" },
		{ "a\xef\xbf\xbf" "b", "a\\uffffb", "a\\\\uffffb", "a\\uffffb" },
		{ "x\xe2\x80\xaey\xe2\x81\xa6", "x\\u202ey\\u2066", "x\\\\u202ey\\\\u2066",
		  "x\\u202ey\\u2066" },
		{ "\xe2\x80\xaa\xe2\x80\xad\xe2\x81\xa9\xd8\x9c", "\\u202a\\u202d\\u2069\\u061c",
		  "\\\\u202a\\\\u202d\\\\u2069\\\\u061c", "\\u202a\\u202d\\u2069\\u061c" },
		{ "", "", "", "" },
	};
	char buf[128];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		assert_string_equal(textsafe(TEXTSAFE_TEXT, t[i].in, buf, sizeof(buf)), t[i].text);
		assert_true(textsafe_valid_utf8(buf, strlen(buf)));
		assert_string_equal(textsafe(TEXTSAFE_PROM, t[i].in, buf, sizeof(buf)), t[i].prom);
		assert_true(textsafe_valid_utf8(buf, strlen(buf)));
		assert_string_equal(textsafe(TEXTSAFE_XML, t[i].in, buf, sizeof(buf)), t[i].xml);
		assert_true(textsafe_valid_utf8(buf, strlen(buf)));
	}
	assert_string_equal(textsafe(TEXTSAFE_TEXT, NULL, buf, sizeof(buf)), "");
	assert_string_equal(textsafe_n(TEXTSAFE_TEXT, "a\0b", 3, buf, sizeof(buf)), "a\\x00b");
}

/* A short buffer cuts between characters and escapes, never inside one. */
static void test_cut(void **state)
{
	char buf[5];

	assert_string_equal(textsafe(TEXTSAFE_TEXT, "ab\xe3\x83\x87", buf, sizeof(buf)), "ab");
	assert_string_equal(textsafe(TEXTSAFE_TEXT, "abc\x1b", buf, sizeof(buf)), "abc");
	assert_string_equal(textsafe(TEXTSAFE_XML, "a&b", buf, sizeof(buf)), "a");
	assert_string_equal(textsafe(TEXTSAFE_TEXT, "abcdef", buf, sizeof(buf)), "abcd");
	assert_string_equal(textsafe(TEXTSAFE_TEXT, "abcdef", buf, 1), "");
}

static void test_utf8_len(void **state)
{
	assert_int_equal(textsafe_utf8_len((const unsigned char *)"a", 1), 1);
	assert_int_equal(textsafe_utf8_len((const unsigned char *)"\xc3\xa9", 2), 2);
	assert_int_equal(textsafe_utf8_len((const unsigned char *)"\xc3\xa9", 1), 0);
	assert_int_equal(textsafe_utf8_len((const unsigned char *)"\xe0\x80\x80", 3), 0);
	assert_int_equal(textsafe_utf8_len((const unsigned char *)"\xe0\xa0\x80", 3), 3);
	assert_int_equal(textsafe_utf8_len((const unsigned char *)"\x80", 1), 0);
	assert_true(textsafe_is_plain("rx_queue_0\\x caf\xc3\xa9"));
	assert_false(textsafe_is_plain("a\x1b" "b"));
	assert_false(textsafe_is_plain("a\xff" "b"));
	assert_false(textsafe_is_plain("a\xc2\x9b" "b"));
	assert_false(textsafe_is_plain("caf\xc3"));
	assert_false(textsafe_is_plain("a\xe2\x80\xae" "b"));
	assert_false(textsafe_is_plain("a\xef\xbf\xbe"));
	assert_true(textsafe_valid_utf8("h\xc3\xa9", 3));
	assert_false(textsafe_valid_utf8("h\xc3", 2));
}

static void test_fputs(void **state)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	assert_non_null(f);
	assert_int_equal(textsafe_fputs(TEXTSAFE_PROM, "n\xff\"\n", f), 0);
	fclose(f);
	assert_string_equal(out, "n\xef\xbf\xbd\\\"\\n");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_utf8_len),
		cmocka_unit_test(test_fputs),
	};
	return cmocka_run_group_tests_name("textsafe", tests, NULL, NULL);
}
