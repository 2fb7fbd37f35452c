/* SPDX-License-Identifier: MIT */
#ifndef CZ_JSONW_H
#define CZ_JSONW_H

/*
 * The one JSON writer, on json-c: the documents we print (`report --json`, `explain --json`,
 * `fleet --json`) and the bodies we send are built with these. Outside text (task, host,
 * interface and unit names, what an API server said) is any bytes, and a JSON document must be
 * valid UTF-8: jsonw_str() passes it through textsafe.h once, here.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

/* jsonw_add - @o[@key] = @v, taking @v's reference (NULL: JSON null, as json-c writes it). */
void jsonw_add(json_object *o, const char *key, json_object *v);

/* jsonw_str - outside text @s as a string made safe (TEXTSAFE_TEXT); NULL when out of memory. */
json_object *jsonw_str(const char *s);

/* jsonw_strn - jsonw_str of the @n bytes at @s (a field inside a longer string), cut at 1 KiB. */
json_object *jsonw_strn(const char *s, size_t n);

/* jsonw_u64 - an unsigned number. */
json_object *jsonw_u64(uint64_t v);

/* jsonw_print - @o pretty-printed (slashes not escaped), and a newline, to @out. 0, -ENOMEM
 * (@o NULL: the document could not be built) or -EIO. */
int jsonw_print(json_object *o, FILE *out);

#endif
