/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: `cpuzombie fleet` on what a hostile API server may send. The input is a node list
 * page (or one Node) as JSON, any bytes in its strings (json-c takes them as they are), and after
 * the first NUL byte a list of continue tokens, one a line. Every node is recorded, the summary
 * printed as text and as JSON: never a crash, the JSON always valid UTF-8 (textsafe.h), the text
 * free of control bytes. The tokens go through the pager (kube/fleet_pager.h): it stops with
 * -ELOOP exactly at the first token seen before, and never asks past its caps.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/fleet_pager.h"
#include "base/kjson.h"
#include "fleet/fleet.h"
#include "base/textsafe.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void view(json_object *page)
{
	static const char *const group_by[] = { "pool", "kubernetes.io/hostname" };
	struct fleet *f = NULL;
	struct fleet_summary *s = calloc(1, sizeof(*s));
	json_object *items = NULL, *j, *leases[8];
	size_t n_leases = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	if (!s || fleet_new(group_by, 2, 256, &f) < 0)
		goto out;
	if (json_object_object_get_ex(page, "items", &items) &&
	    json_object_is_type(items, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(items); i++)
			(void)fleet_add_node(f, json_object_array_get_idx(items, i));
	} else {
		(void)fleet_add_node(f, page);
	}
	/* the same objects read as the Lease list */
	for (size_t i = 0; json_object_is_type(items, json_type_array) && i < 8 &&
			   i < json_object_array_length(items); i++)
		leases[n_leases++] = json_object_array_get_idx(items, i);
	fleet_set_leases(f, leases, n_leases, 1700000000000ull, 3, NULL);
	if (fleet_summarize(f, s) < 0)
		goto out;
	j = fleet_json(f, s, true);
	if (j) {
		const char *doc = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY);

		if (!textsafe_valid_utf8(doc, strlen(doc)))
			abort();
		json_object_put(j);
	}
	out = open_memstream(&text, &len);
	if (out) {
		fleet_print(f, s, true, out);
		fclose(out);
		for (size_t i = 0; i < len; i++)
			if (((unsigned char)text[i] < 0x20 && text[i] != '\n') || text[i] == 0x7f)
				abort();
		free(text);
	}
out:
	fleet_free(f);
	free(s);
}

static void pager(const char *toks, size_t n)
{
	static char seen[64][256];
	struct fleet_pager p;
	char err[160];
	size_t n_seen = 0;

	fleet_pager_init(&p, (unsigned)(n % 7));
	for (size_t off = 0; off <= n && n_seen < 64;) {
		size_t k = strcspn(toks + off, "\n");
		bool dup = false;
		int r;

		if (k > 255)
			break;
		memcpy(seen[n_seen], toks + off, k);
		seen[n_seen][k] = '\0';
		for (size_t i = 0; i < n_seen; i++)
			dup |= strcmp(seen[i], seen[n_seen]) == 0;
		r = fleet_pager_next(&p, seen[n_seen], k, err, sizeof(err));
		if (k == 0) {		/* the last page: done, or past the node cap */
			if (r != 0 && r != -E2BIG)
				abort();
			break;
		}
		if (r == -E2BIG)
			break;
		if ((r == -ELOOP) != dup || (r != -ELOOP && r != 1) || p.pages > p.pages_max)
			abort();
		if (r < 0)
			break;
		n_seen++;
		off += k + 1;
	}
	fleet_pager_done(&p);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	size_t json_len;
	json_object *o;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	json_len = strlen(s);
	o = kube_parse_body(s, json_len);
	if (o && json_object_is_type(o, json_type_object))
		view(o);
	json_object_put(o);
	if (json_len < size)
		pager(s + json_len + 1, size - json_len - 1);
	free(s);
	return 0;
}
