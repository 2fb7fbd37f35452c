// SPDX-License-Identifier: MIT
/* The one JSON writer (jsonw.h). */
#include <errno.h>
#include <stdlib.h>

#include "base/jsonw.h"
#include "base/textsafe.h"
#include "base/util.h"

void jsonw_add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

json_object *jsonw_str(const char *s)
{
	_cleanup_free_ char *safe = textsafe_strdup(TEXTSAFE_TEXT, s);

	return safe ? json_object_new_string(safe) : NULL;
}

json_object *jsonw_strn(const char *s, size_t n)
{
	char buf[1024];

	return json_object_new_string(textsafe_n(TEXTSAFE_TEXT, s, n, buf, sizeof(buf)));
}

json_object *jsonw_u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

int jsonw_print(json_object *o, FILE *out)
{
	const char *s;

	if (!o)
		return -ENOMEM;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	return fputs(s, out) >= 0 && fputc('\n', out) != EOF ? 0 : -EIO;
}
