/* SPDX-License-Identifier: MIT */
#ifndef CZ_SHA256_H
#define CZ_SHA256_H

/*
 * SHA-256 (FIPS 180-4) of a buffer, and its base64 (RFC 4648) spelling: what a
 * Content-Security-Policy 'sha256-...' source names (CSP Level 2 "hash-source"), so a page can
 * allow exactly its own script and nothing injected beside it. Pure.
 */

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_B64_LEN 44 /* base64 of 32 bytes, with its one '=' */

/* sha256 - the digest of the @len bytes at @data into @ret. */
void sha256(const void *data, size_t len, uint8_t ret[SHA256_LEN]);

/*
 * sha256_b64 - the digest of @data as base64 into @buf (SHA256_B64_LEN + 1 bytes, NUL-terminated).
 * Returns @buf.
 */
char *sha256_b64(const void *data, size_t len, char buf[SHA256_B64_LEN + 1]);

#endif
