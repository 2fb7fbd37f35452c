/* SPDX-License-Identifier: MIT */
/* The pure JSON model of Kubernetes objects: see kjson.h. Field names: k8s.io/api/core/v1. */
#include <errno.h>
#include <time.h>

#include "base/kjson.h"
#include "base/util.h"

json_object *kube_get(json_object *o, const char *dotted)
{
	char key[128];

	while (o && *dotted) {
		size_t n = strcspn(dotted, ".");

		if (n >= sizeof(key) || !json_object_is_type(o, json_type_object))
			return NULL;
		memcpy(key, dotted, n);
		key[n] = '\0';
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		dotted += n + (dotted[n] == '.');
	}
	return o;
}

const char *kube_get_str(json_object *o, const char *dotted, const char *def)
{
	json_object *v = kube_get(o, dotted);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : def;
}

json_object *kube_get_array(json_object *o, const char *dotted)
{
	json_object *a = kube_get(o, dotted);

	return a && json_object_is_type(a, json_type_array) ? a : NULL;
}

bool kube_get_bool(json_object *o, const char *dotted)
{
	json_object *v = kube_get(o, dotted);

	return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static json_object *map_entry(json_object *o, const char *map, const char *key)
{
	json_object *m = kube_get(o, map), *v;

	if (!m || !json_object_is_type(m, json_type_object) ||
	    !json_object_object_get_ex(m, key, &v))
		return NULL;
	return v;
}

const char *kube_annotation(json_object *o, const char *key)
{
	json_object *v = map_entry(o, "metadata.annotations", key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

bool kube_has_label(json_object *o, const char *key)
{
	json_object *m = kube_get(o, "metadata.labels");

	return m && json_object_is_type(m, json_type_object) &&
	       json_object_object_get_ex(m, key, NULL);
}

json_object *kube_condition(json_object *node, const char *type)
{
	json_object *list = kube_get_array(node, "status.conditions");
	size_t n = list ? json_object_array_length(list) : 0;

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);

		if (streq(kube_get_str(c, "type", ""), type))
			return c;
	}
	return NULL;
}

char *kube_time(uint64_t ms, bool micro, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char base[32];

	gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (micro)
		snprintf(buf, size, "%s.%06uZ", base, (unsigned)(ms % 1000) * 1000);
	else
		snprintf(buf, size, "%sZ", base);
	return buf;
}

int kube_parse_time(const char *s, uint64_t *ret_ms)
{
	struct tm tm = { 0 };
	const char *end;
	uint64_t frac_ms = 0;
	time_t t;

	if (!s)
		return -EINVAL;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return -EINVAL;
	if (*end == '.') {
		unsigned digits = 0;

		for (end++; *end >= '0' && *end <= '9'; end++, digits++)
			if (digits < 3)
				frac_ms = frac_ms * 10 + (uint64_t)(*end - '0');
		if (digits == 0)
			return -EINVAL;
		for (; digits < 3; digits++)
			frac_ms *= 10;
	}
	if (!streq(end, "Z"))
		return -EINVAL;
	t = timegm(&tm);
	if (t < 0)
		return -EINVAL;
	*ret_ms = (uint64_t)t * 1000 + frac_ms;
	return 0;
}

json_object *kube_parse_body(const char *text, size_t len)
{
	json_tokener *t;
	json_object *o;
	size_t end;

	if (!text || len == 0 || len > INT32_MAX)
		return NULL;
	t = json_tokener_new_ex(KUBE_JSON_DEPTH);
	if (!t)
		return NULL;
	o = json_tokener_parse_ex(t, text, (int)len);
	end = json_tokener_get_parse_end(t);
	while (end < len && strchr(" \t\r\n", text[end]) && text[end])
		end++;
	if (json_tokener_get_error(t) != json_tokener_success || end != len) {
		json_object_put(o);	/* an incomplete document, or more than one, is none */
		o = NULL;
	}
	json_tokener_free(t);
	return o;
}

char *kube_status_message(json_object *body, char *buf, size_t size)
{
	snprintf(buf, size, "%s", streq(kube_get_str(body, "kind", ""), "Status") ?
		 kube_get_str(body, "message", "") : "");
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return buf;
}

bool kube_token_ok(const char *tok, size_t len)
{
	if (!tok || len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)tok[i] < 0x20 || tok[i] == 0x7f)
			return false;
	return true;
}
