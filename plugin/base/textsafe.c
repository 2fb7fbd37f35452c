/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/textsafe.h"
#include "base/util.h"

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

size_t textsafe_utf8_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte (RFC 3629 table) */

	if (avail == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0; /* a continuation byte, 0xc0/0xc1 (overlong) or beyond U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

unsigned textsafe_utf8_cp(const unsigned char *s, size_t n)
{
	switch (n) {
	case 1: return s[0];
	case 2: return (unsigned)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
	case 3: return (unsigned)(s[0] & 0x0f) << 12 | (unsigned)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
	case 4:
		return (unsigned)(s[0] & 0x07) << 18 | (unsigned)(s[1] & 0x3f) << 12 |
		       (unsigned)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
	default: return 0xfffd;
	}
}

int textsafe_is_hazard(unsigned cp)
{
	return cp == 0xfffe || cp == 0xffff || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

int textsafe_valid_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = textsafe_utf8_len(p + i, len - i);

		if (n == 0)
			return 0;
		i += n;
	}
	return 1;
}

int textsafe_is_plain(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);

	for (size_t i = 0; i < len;) {
		size_t n = textsafe_utf8_len(p + i, len - i);

		if (n == 0 || p[i] < 0x20 || p[i] == 0x7f || (p[i] == 0xc2 && p[i + 1] <= 0x9f) ||
		    textsafe_is_hazard(textsafe_utf8_cp(p + i, n)))
			return 0;
		i += n;
	}
	return 1;
}

/* Where pieces go: a stream, or a buffer that stops taking pieces at the first that misses. */
struct sink {
	FILE *out;
	char *buf;
	size_t size, len;
	bool full;
};

static void put(struct sink *k, const char *piece, size_t n)
{
	if (k->out) {
		fwrite(piece, 1, n, k->out);
		return;
	}
	if (k->full || k->len + n >= k->size) {
		k->full = true;
		return;
	}
	memcpy(k->buf + k->len, piece, n);
	k->len += n;
}

/* A control character, visibly: the C escapes people read in logs, else \xNN / \u00NN. */
static void put_control(struct sink *k, unsigned cp)
{
	char e[8];

	switch (cp) {
	case '\n': put(k, "\\n", 2); return;
	case '\t': put(k, "\\t", 2); return;
	case '\r': put(k, "\\r", 2); return;
	case 0x1b: put(k, "\\e", 2); return;
	}
	snprintf(e, sizeof(e), cp < 0x80 ? "\\x%02x" : "\\u%04x", cp);
	put(k, e, strlen(e));
}

/* One ASCII character that is not a control character. */
static void put_ascii(struct sink *k, enum textsafe_kind kind, char c)
{
	if (c == '\\') {
		/* doubled: in text so that "\e" always means an escape was there, in a label value
		 * because the exposition format says so */
		put(k, "\\\\", 2);
		return;
	}
	if (kind == TEXTSAFE_PROM && c == '"') {
		put(k, "\\\"", 2);
		return;
	}
	if (kind == TEXTSAFE_XML) {
		switch (c) {
		case '<': put(k, "&lt;", 4); return;
		case '>': put(k, "&gt;", 4); return;
		case '&': put(k, "&amp;", 5); return;
		case '"': put(k, "&quot;", 6); return;
		case '\'': put(k, "&apos;", 6); return;
		}
	}
	put(k, &c, 1);
}

static void run(struct sink *k, enum textsafe_kind kind, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len && !k->full;) {
		size_t n = textsafe_utf8_len(p + i, len - i);
		unsigned cp;

		if (n == 0) {
			put(k, replacement, 3);
			i++;
			continue;
		}
		cp = textsafe_utf8_cp(p + i, n);
		if (kind == TEXTSAFE_PROM && cp == '\n') {
			put(k, "\\n",
			    2); /* the exposition format's own escape: the value keeps it */
		} else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) {
			if (kind == TEXTSAFE_PROM)
				put(k, "\\", 1); /* the label value's escape of our backslash */
			put_control(k, cp);
		} else if (textsafe_is_hazard(cp)) {
			/* one rule for every output: a terminal line, a JSON string, a label value
			 * and XML never carry a reordering or a non-character */
			if (kind == TEXTSAFE_PROM)
				put(k, "\\", 1);
			put_control(k, cp);
		} else if (n == 1) {
			put_ascii(k, kind, (char)cp);
		} else {
			put(k, s + i, n);
		}
		i += n;
	}
}

char *textsafe_n(enum textsafe_kind kind, const char *s, size_t len, char *buf, size_t size)
{
	struct sink k = { .buf = buf, .size = size };

	if (size == 0)
		return buf;
	run(&k, kind, s ? s : "", s ? len : 0);
	buf[k.len] = '\0';
	return buf;
}

char *textsafe(enum textsafe_kind kind, const char *s, char *buf, size_t size)
{
	return textsafe_n(kind, s, s ? strlen(s) : 0, buf, size);
}

char *textsafe_strdup(enum textsafe_kind kind, const char *s)
{
	/* the longest form of one input byte is six output bytes ("&quot;", "\\\\x07") */
	size_t n = s ? strlen(s) : 0, size = n * 6 + 1;
	char *buf = malloc(size);

	return buf ? textsafe(kind, s, buf, size) : NULL;
}

int textsafe_fputs(enum textsafe_kind kind, const char *s, FILE *out)
{
	struct sink k = { .out = out };

	if (s)
		run(&k, kind, s, strlen(s));
	return ferror(out) ? -EIO : 0;
}
