/* SPDX-License-Identifier: MIT */
#ifndef CZ_TEXTSAFE_H
#define CZ_TEXTSAFE_H

/*
 * The one place that makes outside text safe for each kind of output. Text we print comes from
 * places an attacker or an accident controls: task names (any bytes, cut by the kernel at 15
 * bytes in the middle of a character), the hostname, interface and unit names, counter names.
 * Every output passes such text through here:
 *
 *   TEXTSAFE_TEXT  terminals, log lines, JSON strings (report --json, API bodies that end up in
 *                  `kubectl describe`): valid UTF-8, control characters shown visibly (\n, \t,
 *                  \r, \e, \xNN; C1 characters as \u0080..\u009f), a backslash doubled, and
 *                  the hazards of textsafe_is_hazard() shown visibly (\ufffe, \u202e): a
 *                  task name cannot reorder the terminal line it is printed in.
 *   TEXTSAFE_PROM  Prometheus label values: valid UTF-8 with the exposition format's escapes
 *                  (\\, \", \n for the newline); other control characters shown as in
 *                  TEXTSAFE_TEXT (their backslash escaped), and so are the hazards: no raw
 *                  control byte.
 *   TEXTSAFE_XML   SVG/XML text and attribute values: valid UTF-8 kept as it is (a UTF-8 comm
 *                  shows as itself), & < > " ' as entities, control characters (forbidden in
 *                  XML 1.0) shown visibly as in TEXTSAFE_TEXT, and so are the hazards of
 *                  textsafe_is_hazard() (\ufffe, \u202e).
 *
 * "Valid UTF-8" means: every byte that does not begin a complete, well-formed sequence (a
 * character cut short, a stray continuation byte, 0xc0/0xc1/0xf5..0xff, overlong forms,
 * surrogates, code points above U+10FFFF) becomes U+FFFD, one per byte (a character cut after
 * two of its three bytes shows as two U+FFFD: simple, and never hides how many bytes were bad).
 */

#include <stddef.h>
#include <stdio.h>

enum textsafe_kind {
	TEXTSAFE_TEXT,
	TEXTSAFE_PROM,
	TEXTSAFE_XML,
};

/*
 * textsafe_utf8_len - the length of the well-formed UTF-8 sequence at @s (1..4), given @avail
 * bytes, or 0 when the byte at @s starts none (invalid or cut short). Pure.
 */
size_t textsafe_utf8_len(const unsigned char *s, size_t avail);

/*
 * textsafe_utf8_cp - the code point of the well-formed @n-byte sequence at @s (@n as
 * textsafe_utf8_len() returned it; U+FFFD for any other @n). Pure.
 */
unsigned textsafe_utf8_cp(const unsigned char *s, size_t n);

/*
 * textsafe_is_hazard - true for a code point that is valid UTF-8 but unsafe in a document a
 * person reads: U+FFFE and U+FFFF (not characters: XML 1.0 forbids them, so a strict parser
 * rejects the whole file) and the bidirectional controls (U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069: they reorder the text shown around them).
 */
int textsafe_is_hazard(unsigned cp);

/*
 * textsafe_valid_utf8 - true when the @len bytes at @s are well-formed UTF-8 (NUL allowed).
 */
int textsafe_valid_utf8(const char *s, size_t len);

/*
 * textsafe_is_plain - true when @s (NUL-terminated) is valid UTF-8 without control characters
 * and without the hazards of textsafe_is_hazard():
 * safe to print as it is anywhere text goes (a data format that must read back the same, such
 * as an `ethtool -S` dump, prints such a string raw and only escapes the others).
 */
int textsafe_is_plain(const char *s);

/*
 * textsafe - write @s (NUL-terminated; NULL reads as "") made safe for @kind into @buf of
 * @size bytes, always NUL-terminated when @size > 0. Output that does not fit is cut at a
 * character (never inside a sequence or an escape). Returns @buf.
 */
char *textsafe(enum textsafe_kind kind, const char *s, char *buf, size_t size);

/*
 * textsafe_n - like textsafe() on the first @len bytes of @s (which may hold NUL bytes: shown
 * as \x00). Returns @buf.
 */
char *textsafe_n(enum textsafe_kind kind, const char *s, size_t len, char *buf, size_t size);

/*
 * textsafe_strdup - @s (NULL reads as "") made safe for @kind, uncut, in a new string the
 * caller frees. Returns NULL when out of memory.
 */
char *textsafe_strdup(enum textsafe_kind kind, const char *s);

/*
 * textsafe_fputs - write @s made safe for @kind to @out, uncut. Returns 0, or -EIO when the
 * stream failed.
 */
int textsafe_fputs(enum textsafe_kind kind, const char *s, FILE *out);

#endif
