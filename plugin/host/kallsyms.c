/* SPDX-License-Identifier: MIT */
/*
 * /proc/kallsyms format (kernel/kallsyms.c s_show()): "%px %c %s\n" for the core kernel and
 * "%px %c %s\t[%s]\n" for modules; the address is hex without 0x, all zeros when the reader may
 * not see addresses (kallsyms_show_value(): kptr_restrict and CAP_SYSLOG).
 */
#include <errno.h>

#include "base/fileio.h"
#include "host/kallsyms.h"
#include "base/util.h"

static bool is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One line into its parts; false when it is not a text symbol line. */
static bool split_line(const char *l, size_t n, uint64_t *addr, const char **name, size_t *nlen,
		       const char **mod, size_t *mlen)
{
	size_t i = 0, d = 0;
	uint64_t a = 0;

	for (; i < n && hexval(l[i]) >= 0; i++, d++) {
		if (d == 16)
			return false;
		a = a << 4 | (uint64_t)hexval(l[i]);
	}
	if (d == 0 || i + 3 >= n || l[i] != ' ' || !is_text(l[i + 1]) || l[i + 2] != ' ')
		return false;
	i += 3;
	*name = l + i;
	while (i < n && l[i] != '\t' && l[i] != ' ')
		i++;
	*nlen = (size_t)(l + i - *name);
	*mod = NULL;
	*mlen = 0;
	if (*nlen == 0)
		return false;
	if (i < n) {
		const char *m = memchr(l + i, '[', n - i), *e;

		if (!m || !(e = memchr(m, ']', (size_t)(l + n - m))) || e == m + 1)
			return false;
		*mod = m + 1;
		*mlen = (size_t)(e - m - 1);
	}
	*addr = a;
	return true;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

ssize_t kallsyms_parse(const char *text, size_t len, struct kallsyms *ret)
{
	_cleanup_free_ struct ksym *syms = NULL;
	_cleanup_free_ char *str = NULL;
	size_t n = 0, cap = 0, slen = 0, scap = 0, nonzero = 0;
	const char *p = text, *end = text + len;
	char lastmod[64] = "";
	uint32_t lastmod_off = UINT32_MAX;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *name, *mod;
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p), nlen, mlen;
		uint64_t addr;

		if (split_line(p, ll, &addr, &name, &nlen, &mod, &mlen)) {
			size_t need = nlen + 1 + (mod ? mlen + 1 : 0);

			if (n == cap) {
				size_t nc = cap ? cap * 2 : 4096;
				struct ksym *t = realloc(syms, nc * sizeof(*t));

				if (!t)
					return -ENOMEM;
				syms = t;
				cap = nc;
			}
			if (slen + need > scap) {
				size_t nc = scap ? scap * 2 : 65536;
				char *t;

				while (nc < slen + need)
					nc *= 2;
				t = realloc(str, nc);
				if (!t)
					return -ENOMEM;
				str = t;
				scap = nc;
			}
			if (slen + need > UINT32_MAX)
				return -E2BIG;
			syms[n] = (struct ksym){ addr, (uint32_t)slen, UINT32_MAX };
			memcpy(str + slen, name, nlen);
			str[slen + nlen] = '\0';
			slen += nlen + 1;
			if (mod) {
				/* module symbols come grouped: store each module's name once */
				if (mlen >= sizeof(lastmod) || strncmp(lastmod, mod, mlen) != 0 ||
				    lastmod[mlen] != '\0') {
					memcpy(str + slen, mod, mlen);
					str[slen + mlen] = '\0';
					lastmod_off = (uint32_t)slen;
					slen += mlen + 1;
					snprintf(lastmod, sizeof(lastmod), "%.*s", (int)mlen, mod);
				}
				syms[n].mod = lastmod_off;
			}
			nonzero += addr != 0;
			n++;
		}
		p += ll + 1;
	}
	if (n == 0)
		return -ENODATA;
	if (nonzero == 0)
		return -EPERM;
	qsort(syms, n, sizeof(*syms), cmp_sym);
	*ret = (struct kallsyms){ TAKE_PTR(syms), n, TAKE_PTR(str), slen };
	return (ssize_t)n;
}

ssize_t kallsyms_load(const struct hostfs *hf, struct kallsyms *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	if (hf->fd[HOSTFS_PROC] < 0)
		return hf->fd[HOSTFS_PROC];
	r = fileio_read_alloc_at(hf->fd[HOSTFS_PROC], "kallsyms", FILEIO_REGULAR, KALLSYMS_FILE_MAX,
				 &buf, &len);
	if (r < 0)
		return r;
	return kallsyms_parse(buf, len, ret);
}

const char *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr, const char **ret_module)
{
	size_t lo = 0, hi = ks->n;

	if (ks->n == 0 || addr < ks->syms[0].addr)
		return NULL;
	while (hi - lo > 1) { /* invariant: syms[lo].addr <= addr, and addr < syms[hi].addr */
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (addr - ks->syms[lo].addr > KALLSYMS_FUNC_MAX)
		return NULL;
	if (ret_module)
		*ret_module = ks->syms[lo].mod == UINT32_MAX ? "" : ks->strings + ks->syms[lo].mod;
	return ks->strings + ks->syms[lo].name;
}

void kallsyms_free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->strings);
	*ks = (struct kallsyms){ 0 };
}
