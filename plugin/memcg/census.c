/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memcg/census.h"
#include "base/fileio.h"
#include "base/util.h"

#define HEADER "cpuzombie-census 1\n"

static bool is_alnum(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A UUID at @s (8-4-4-4-12 hex digits, '-' or '_' between, as kubelet writes pod UIDs). */
static bool uuid_at(const char *s)
{
	static const unsigned groups[] = { 8, 4, 4, 4, 12 };

	for (size_t g = 0; g < 5; g++) {
		for (unsigned i = 0; i < groups[g]; i++, s++)
			if (!is_hex(*s))
				return false;
		if (g < 4 && *s != '-' && *s != '_')
			return false;
		s += g < 4;
	}
	return !is_alnum(*s);
}

/* The length of the alphanumeric run at @s, and whether it is all digits / all hex. */
static size_t token(const char *s, bool *digits, bool *hex)
{
	size_t n = 0;

	*digits = *hex = true;
	for (; is_alnum(s[n]); n++) {
		*digits &= s[n] >= '0' && s[n] <= '9';
		*hex &= is_hex(s[n]);
	}
	return n;
}

static void put(char *buf, size_t size, size_t *o, char c)
{
	if (*o + 1 < size)
		buf[(*o)++] = c;
}

char *census_pattern(const char *path, char *buf, size_t size)
{
	size_t o = 0;

	if (size == 0)
		return buf;
	for (const char *s = path; *s;) {
		bool digits, hex;
		size_t n;

		if ((s != path && is_alnum(s[-1])) || !is_alnum(*s)) {
			put(buf, size, &o,
			    *s > ' ' && *s < 0x7f && *s != ';' && *s != ',' ? *s : '?');
			s++;
			continue;
		}
		if (uuid_at(s) || (!strncmp(s, "pod", 3) && uuid_at(s + 3))) {	/* pod UIDs */
			if (*s == 'p')
				put(buf, size, &o, 'p'), put(buf, size, &o, 'o'),
					put(buf, size, &o, 'd');
			put(buf, size, &o, '*');
			s += *s == 'p' ? 39 : 36;
			continue;
		}
		n = token(s, &digits, &hex);
		if (digits || (hex && n >= 12)) {		/* numbers, container IDs */
			put(buf, size, &o, '*');
		} else if (n >= 15 && !strncmp(s, "pod", 3) && token(s + 3, &digits, &hex) &&
			   hex) {				/* a UID without dashes */
			put(buf, size, &o, 'p'), put(buf, size, &o, 'o'), put(buf, size, &o, 'd');
			put(buf, size, &o, '*');
		} else {	/* "m26", "session12": the trailing number goes */
			size_t k = n;

			while (k > 0 && s[k - 1] >= '0' && s[k - 1] <= '9')
				k--;
			for (size_t i = 0; i < k; i++)
				put(buf, size, &o, s[i]);
			if (k < n)
				put(buf, size, &o, '*');
		}
		s += n;
	}
	buf[o] = '\0';
	if (o + 1 >= size && size > 4)
		memcpy(buf + size - 4, "...", 4);	/* cut: say so */
	return buf;
}

/* Groups by key: an open-addressing table over a growing array. */
struct table {
	struct census_group *g;
	size_t n, cap;
	size_t *slot;	/* index + 1; 0 empty */
	size_t nslots;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int table_grow(struct table *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 64;
	size_t *slot = calloc(ns, sizeof(*slot));
	struct census_group *g;

	if (!slot)
		return -ENOMEM;
	g = realloc(t->g, ns / 2 * sizeof(*g));
	if (!g) {
		free(slot);
		return -ENOMEM;
	}
	t->g = g;
	t->cap = ns / 2;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = hash(g[i].key) & (ns - 1);

		while (slot[h])
			h = (h + 1) & (ns - 1);
		slot[h] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return 0;
}

static int table_add(struct table *t, const char *key, const struct census_dying *d)
{
	struct census_group *g;
	size_t h;

	if (t->n >= t->cap && table_grow(t) < 0)
		return -ENOMEM;
	for (h = hash(key) & (t->nslots - 1); t->slot[h]; h = (h + 1) & (t->nslots - 1)) {
		g = &t->g[t->slot[h] - 1];
		if (streq(g->key, key)) {
			g->count++;
			g->bytes += d->bytes;
			if (d->first_ms < g->first_ms)
				g->first_ms = d->first_ms;
			return 0;
		}
	}
	g = &t->g[t->n];
	*g = (struct census_group){ .count = 1, .bytes = d->bytes, .first_ms = d->first_ms };
	snprintf(g->key, sizeof(g->key), "%s", key);
	t->slot[h] = ++t->n;
	return 0;
}

static int by_count(const void *a, const void *b)
{
	const struct census_group *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->key, y->key);
}

static size_t table_top(struct table *t, struct census_group *out)
{
	size_t n = t->n < CENSUS_GROUPS_MAX ? t->n : CENSUS_GROUPS_MAX;

	if (t->n) {	/* (no groups: t->g is NULL, which memcpy may not be given) */
		qsort(t->g, t->n, sizeof(*t->g), by_count);
		memcpy(out, t->g, n * sizeof(*out));
	}
	free(t->g);
	free(t->slot);
	return n;
}

int census_build(const struct census_dying *v, size_t n, uint64_t t_ms, uint64_t visited,
		 bool truncated, struct census *ret)
{
	struct table pat = { 0 }, par = { 0 };
	char key[CENSUS_KEY_MAX];
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	ret->t_ms = t_ms;
	ret->visited = visited;
	ret->truncated = truncated;
	for (size_t i = 0; i < n && r == 0; i++) {
		char *slash;

		ret->dying++;
		ret->bytes += v[i].bytes;
		census_pattern(v[i].path, key, sizeof(key));
		r = table_add(&pat, key, &v[i]);
		slash = strrchr(key, '/');
		if (slash)
			*slash = '\0';
		if (r == 0)
			r = table_add(&par, slash ? key : "/", &v[i]);
	}
	ret->ngroups = table_top(&pat, ret->group);
	ret->nparents = table_top(&par, ret->parent);
	return r;
}

/* The first @n bytes of @s (fewer at a NUL) into @buf as printable ASCII, '?' for the others:
 * an error text, one line of the file whatever the agent's error said. */
static void printable(const char *s, size_t n, char *buf, size_t size)
{
	size_t k = 0;

	for (size_t i = 0; i < n && s[i] && k + 1 < size; i++)
		buf[k++] = s[i] >= ' ' && s[i] < 0x7f ? s[i] : '?';
	if (size)
		buf[k] = '\0';
}

size_t census_format(const struct census *c, const char *err, char *buf, size_t size)
{
	size_t o = 0;
	bool ok;

	ok = buf_appendf(buf, size, &o, HEADER "t %llu\n", (unsigned long long)c->t_ms) == 0;
	if (err) {
		char clean[CENSUS_ERR_MAX];

		printable(err, SIZE_MAX, clean, sizeof(clean));
		ok = ok && buf_appendf(buf, size, &o, "e %s\n", clean) == 0;
		return ok ? o : 0;
	}
	ok = ok && buf_appendf(buf, size, &o, "n %llu %llu %llu %d\n",
			       (unsigned long long)c->dying, (unsigned long long)c->bytes,
			       (unsigned long long)c->visited, c->truncated ? 1 : 0) == 0;
	for (int k = 0; k < 2; k++) {
		const struct census_group *g = k ? c->parent : c->group;
		size_t n = k ? c->nparents : c->ngroups;

		for (size_t i = 0; i < n && i < CENSUS_GROUPS_MAX; i++)
			ok = ok && buf_appendf(buf, size, &o, "%c %llu %llu %llu %s\n",
					       k ? 'p' : 'g', (unsigned long long)g[i].count,
					       (unsigned long long)g[i].bytes,
					       (unsigned long long)g[i].first_ms, g[i].key) == 0;
	}
	return ok ? o : 0;
}

/* A key as the formatter writes it: 1..CENSUS_KEY_MAX-1 printable ASCII bytes, no space. */
static bool valid_key(const char *s, size_t len)
{
	if (len == 0 || len >= CENSUS_KEY_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f)
			return false;
	return true;
}

/* "<u64> <u64> <u64> <key>" of a g/p line (after "g "). */
static int parse_group(const char *s, size_t len, struct census_group *g)
{
	uint64_t v[3];

	for (int i = 0; i < 3; i++) {
		const char *sp = memchr(s, ' ', len);

		if (!sp || parse_u64_n(s, (size_t)(sp - s), &v[i]) < 0)
			return -EINVAL;
		len -= (size_t)(sp - s) + 1;
		s = sp + 1;
	}
	if (!valid_key(s, len))
		return -EINVAL;
	*g = (struct census_group){ .count = v[0], .bytes = v[1], .first_ms = v[2] };
	memcpy(g->key, s, len);
	g->key[len] = '\0';
	return 0;
}

static int parse_line(const char *s, size_t len, struct census *c, bool *has_n, bool *has_e,
		      char *err, size_t err_size)
{
	char tmp[96];

	if (len < 3 || s[1] != ' ')
		return -EINVAL;
	switch (s[0]) {
	case 't':
		return parse_u64_n(s + 2, len - 2, &c->t_ms);
	case 'n': {
		unsigned long long a, b, v;
		int tr, n = 0;

		if (*has_n || len >= sizeof(tmp))
			return -EINVAL;
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		/* strict shape: digits only (sscanf alone would take signs and spaces) */
		for (size_t i = 2; i < len; i++)
			if (!(tmp[i] == ' ' || (tmp[i] >= '0' && tmp[i] <= '9')))
				return -EINVAL;
		if (sscanf(tmp, "n %llu %llu %llu %d%n", &a, &b, &v, &tr, &n) != 4 ||
		    (size_t)n != len || (tr != 0 && tr != 1) || strstr(tmp, "  "))
			return -EINVAL;
		c->dying = a, c->bytes = b, c->visited = v, c->truncated = tr;
		*has_n = true;
		return 0;
	}
	case 'g':
	case 'p': {
		size_t *n = s[0] == 'g' ? &c->ngroups : &c->nparents;
		struct census_group *g = s[0] == 'g' ? c->group : c->parent;

		if (!*has_n || *n >= CENSUS_GROUPS_MAX || parse_group(s + 2, len - 2, &g[*n]) < 0 ||
		    g[*n].count > c->dying || g[*n].count == 0)
			return -EINVAL;
		(*n)++;
		return 0;
	}
	case 'e':
		if (*has_n || *has_e)
			return -EINVAL;
		printable(s + 2, len - 2, err, err_size);
		*has_e = true;
		return 0;
	default:
		return -EINVAL;
	}
}

int census_parse(const char *text, struct census *ret, char *err, size_t err_size)
{
	static struct census c;	/* ~9 KiB: the check's one caller at a time */
	bool has_n = false, has_e = false, has_t = false;
	const char *s;

	if (!text || !startswith(text, HEADER))
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	for (s = text + strlen(HEADER); *s;) {
		const char *nl = strchr(s, '\n');
		size_t len;

		if (!nl)
			return -EINVAL;	/* the writer ends every line: a cut file is corrupt */
		len = (size_t)(nl - s);
		if (len && s[0] == 't') {
			if (has_t)
				return -EINVAL;
			has_t = true;
		} else if (!has_t) {
			return -EINVAL;
		}
		if (parse_line(s, len, &c, &has_n, &has_e, err, err_size) < 0)
			return -EINVAL;
		s = nl + 1;
	}
	if (!has_t || has_n == has_e)
		return -EINVAL;
	*ret = c;
	return has_e ? 1 : 0;
}

int census_load(const char *run_dir, uint64_t now_ms, uint64_t fresh_ms, struct census *ret,
		char *why, size_t why_size)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;
	struct census c;
	char err[CENSUS_ERR_MAX] = "";
	size_t len;
	int r;

	dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(why, why_size, "no census from the agent");
		return -errno;
	}
	r = fileio_read_alloc_at(dfd, CENSUS_FILE, 0, CENSUS_FILE_MAX, &text, &len);
	if (r < 0) {
		snprintf(why, why_size, r == -ENOENT ? "no census from the agent"
						     : "cannot read the census");
		return r;
	}
	r = strlen(text) == len ? census_parse(text, &c, err, sizeof(err)) : -EINVAL;
	if (r < 0) {
		snprintf(why, why_size, "census corrupt");
		return -EINVAL;
	}
	if (c.t_ms + fresh_ms < now_ms) {
		snprintf(why, why_size, "census %llu min old",
			 (unsigned long long)((now_ms - c.t_ms) / 60000));
		return -ESTALE;
	}
	if (r == 1) {
		snprintf(why, why_size, "%s", err);
		return -EIO;
	}
	*ret = c;
	return 0;
}
