/* SPDX-License-Identifier: MIT */
/* SHA-256 against FIPS 180-4's examples (NIST CSRC "Example Algorithms") and its base64 as a
 * Content-Security-Policy hash source spells it. */
#include "testutil.h"

#include "base/sha256.h"
#include "base/util.h"

static void hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < SHA256_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_vectors(void **state)
{
	static const struct {
		const char *in, *hex;
	} t[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
		  "klmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	uint8_t d[SHA256_LEN];
	char h[2 * SHA256_LEN + 1], b[SHA256_B64_LEN + 1];

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		sha256(t[i].in, strlen(t[i].in), d);
		hex(d, h);
		assert_string_equal(h, t[i].hex);
	}
	/* a million 'a' (FIPS 180-4): many blocks */
	{
		_cleanup_free_ char *m = malloc(1000000);

		memset(m, 'a', 1000000);
		sha256(m, 1000000, d);
		hex(d, h);
		assert_string_equal(h,
				    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	}
	/* 55, 56 and 64 bytes: the padding's edges */
	{
		char m[65];

		memset(m, 'a', sizeof(m));
		sha256(m, 55, d);
		hex(d, h);
		assert_string_equal(h,
				    "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
		sha256(m, 64, d);
		hex(d, h);
		assert_string_equal(h,
				    "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
	}
	assert_string_equal(sha256_b64("", 0, b), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
	assert_string_equal(sha256_b64("abc", 3, b), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
