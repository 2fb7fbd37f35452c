/* SPDX-License-Identifier: MIT */
/*
 * /proc/kallsyms format (kernel/kallsyms.c s_show()): "%px %c %s\n" for the core kernel and
 * "%px %c %s\t[%s]\n" for modules; the address is hex without 0x, all zeros when the reader may
 * not see addresses (kallsyms_show_value(): kptr_restrict and CAP_SYSLOG).
 *
 * Built in two steps: the lines into a scratch array of full entries (16 bytes of address and
 * offsets each, freed at the end), sorted and deduplicated; then the compact table of
 * kallsyms.h, every array allocated at its final size.
 */
#include <errno.h>

#include "base/fileio.h"
#include "host/kallsyms.h"
#include "base/util.h"

struct entry {
	uint64_t addr;
	uint32_t name; /* offset in the string block: also the line's order in the file */
	uint32_t mod;  /* UINT32_MAX for the core kernel */
	bool global;
};

struct builder {
	struct entry *e;
	size_t n, cap;
	char *str;
	size_t slen, scap;
	size_t nonzero;
	char lastmod[KALLSYMS_MODULE_MAX + 1];
	uint32_t lastmod_off;
};

struct line {
	uint64_t addr;
	const char *name, *mod;
	size_t nlen, mlen;
	char type;
};

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

/* One line into its parts; false when it is not a well-formed text symbol line. */
static bool split_line(const char *l, size_t n, struct line *ret)
{
	size_t i = 0, d = 0;
	uint64_t a = 0;
	struct line ln = { 0 };

	for (; i < n && hexval(l[i]) >= 0; i++, d++) {
		if (d == 16)
			return false;
		a = a << 4 | (uint64_t)hexval(l[i]);
	}
	if (d == 0 || i + 3 >= n || l[i] != ' ' || !is_text(l[i + 1]) || l[i + 2] != ' ')
		return false;
	ln.type = l[i + 1];
	i += 3;
	ln.name = l + i;
	while (i < n && l[i] != '\t' && l[i] != ' ')
		i++;
	ln.nlen = (size_t)(l + i - ln.name);
	if (ln.nlen == 0 || ln.nlen > KALLSYMS_NAME_MAX)
		return false;
	if (i < n) {
		const char *m = memchr(l + i, '[', n - i), *e;

		if (!m || !(e = memchr(m, ']', (size_t)(l + n - m))) || e == m + 1)
			return false;
		ln.mod = m + 1;
		ln.mlen = (size_t)(e - m - 1);
		if (ln.mlen > KALLSYMS_MODULE_MAX)
			return false;
	}
	ln.addr = a;
	*ret = ln;
	return true;
}

/* Room for @need more elements of @size in *@p (capacity *@cap, @first at the start). */
static int grow(void **p, size_t *cap, size_t used, size_t need, size_t size, size_t first)
{
	size_t nc = *cap ? *cap : first;
	void *t;

	if (used + need <= *cap)
		return 0;
	while (nc < used + need)
		nc *= 2;
	t = realloc(*p, nc * size);
	if (!t)
		return -ENOMEM;
	*p = t;
	*cap = nc;
	return 0;
}

static uint32_t add_string(struct builder *b, const char *s, size_t len)
{
	uint32_t off = (uint32_t)b->slen;

	memcpy(b->str + b->slen, s, len);
	b->str[b->slen + len] = '\0';
	b->slen += len + 1;
	return off;
}

static int add_line(struct builder *b, const struct line *ln)
{
	size_t need = ln->nlen + 1 + (ln->mod ? ln->mlen + 1 : 0);
	struct entry *e;
	int r;

	r = grow((void **)&b->e, &b->cap, b->n, 1, sizeof(*b->e), 4096);
	if (r >= 0)
		r = grow((void **)&b->str, &b->scap, b->slen, need, 1, 65536);
	if (r < 0)
		return r;
	if (b->slen + need > UINT32_MAX || b->n >= UINT32_MAX)
		return -E2BIG;
	e = &b->e[b->n++];
	*e = (struct entry){ ln->addr, add_string(b, ln->name, ln->nlen), UINT32_MAX,
			     ln->type == 'T' || ln->type == 'W' };
	if (ln->mod) {
		/* module symbols come grouped: store each module's name once per group */
		if (b->lastmod_off == UINT32_MAX || strncmp(b->lastmod, ln->mod, ln->mlen) != 0 ||
		    b->lastmod[ln->mlen] != '\0') {
			b->lastmod_off = add_string(b, ln->mod, ln->mlen);
			memcpy(b->lastmod, ln->mod, ln->mlen);
			b->lastmod[ln->mlen] = '\0';
		}
		e->mod = b->lastmod_off;
	}
	b->nonzero += ln->addr != 0;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name; /* file order */
}

/* Of two symbols at one address, is @x the better name? (perf's choose_best_symbol) */
static bool better(const struct builder *b, const struct entry *x, const struct entry *y)
{
	size_t ux = strspn(b->str + x->name, "_"), uy = strspn(b->str + y->name, "_");

	if (x->global != y->global)
		return x->global;
	if (ux != uy)
		return ux < uy;
	return x->name < y->name;
}

/* Sorts, keeps one entry per address (none at 0 when others are real); returns how many. */
static size_t dedup(struct builder *b)
{
	size_t k = 0;

	qsort(b->e, b->n, sizeof(*b->e), cmp_entry);
	for (size_t i = 0; i < b->n; i++) {
		if (b->e[i].addr == 0)
			continue;
		if (k > 0 && b->e[k - 1].addr == b->e[i].addr) {
			if (better(b, &b->e[i], &b->e[k - 1]))
				b->e[k - 1] = b->e[i];
			continue;
		}
		b->e[k++] = b->e[i];
	}
	return k;
}

/* The runs of @n entries by @key (upper address bits, or module) into *@ret. */
static int make_runs(const struct entry *e, size_t n, bool by_mod, struct kallsyms_run **ret,
		     size_t *ret_n)
{
	struct kallsyms_run *runs;
	size_t k = 0;

#define RUN_KEY(x) (by_mod ? (x).mod : (uint32_t)((x).addr >> 32))
	for (size_t i = 0; i < n; i++)
		k += i == 0 || RUN_KEY(e[i]) != RUN_KEY(e[i - 1]);
	runs = malloc(k * sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || RUN_KEY(e[i]) != RUN_KEY(e[i - 1]))
			runs[k++] = (struct kallsyms_run){ (uint32_t)i, RUN_KEY(e[i]) };
#undef RUN_KEY
	*ret = runs;
	*ret_n = k;
	return 0;
}

/* The compact table of the first @n (sorted, unique) entries of @b; takes its string block. */
static int build(struct builder *b, size_t n, struct kallsyms *ret)
{
	struct kallsyms ks = { .n = n, .strings_len = b->slen };
	char *s;

	ks.lo = malloc(n * sizeof(*ks.lo));
	ks.name = malloc(n * sizeof(*ks.name));
	if (!ks.lo || !ks.name || make_runs(b->e, n, false, &ks.hi, &ks.nhi) < 0 ||
	    make_runs(b->e, n, true, &ks.mod, &ks.nmod) < 0) {
		kallsyms_free(&ks);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ks.lo[i] = (uint32_t)b->e[i].addr;
		ks.name[i] = b->e[i].name;
	}
	s = realloc(b->str, b->slen); /* give back the doubling's slack */
	ks.strings = s ? s : b->str;
	b->str = NULL;
	*ret = ks;
	return 0;
}

ssize_t kallsyms_parse(const char *text, size_t len, struct kallsyms *ret)
{
	struct builder b = { .lastmod_off = UINT32_MAX };
	const char *p = text, *end = text + len;
	size_t n = 0;
	int r = 0;

	while (p < end && r >= 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct line ln;

		if (split_line(p, ll, &ln))
			r = add_line(&b, &ln);
		p += ll + 1;
	}
	if (r >= 0 && b.n == 0)
		r = -ENODATA;
	else if (r >= 0 && b.nonzero == 0)
		r = -EPERM;
	if (r >= 0) {
		n = dedup(&b);
		r = build(&b, n, ret);
	}
	free(b.e);
	free(b.str);
	return r < 0 ? r : (ssize_t)n;
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

/* The last run starting at or before index @i. */
static const struct kallsyms_run *run_of(const struct kallsyms_run *runs, size_t nruns, size_t i)
{
	size_t lo = 0, hi = nruns;

	while (hi - lo > 1) { /* runs[0].first == 0 <= i */
		size_t mid = lo + (hi - lo) / 2;

		if (runs[mid].first <= i)
			lo = mid;
		else
			hi = mid;
	}
	return &runs[lo];
}

uint64_t kallsyms_addr(const struct kallsyms *ks, size_t i)
{
	return (uint64_t)run_of(ks->hi, ks->nhi, i)->value << 32 | ks->lo[i];
}

const char *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr, const char **ret_module)
{
	size_t lo = 0, hi = ks->n;
	uint32_t mod;

	if (ks->n == 0 || addr < kallsyms_addr(ks, 0))
		return NULL;
	while (hi - lo > 1) { /* invariant: addr(lo) <= addr, and addr < addr(hi) */
		size_t mid = lo + (hi - lo) / 2;

		if (kallsyms_addr(ks, mid) <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (addr - kallsyms_addr(ks, lo) > KALLSYMS_FUNC_MAX)
		return NULL;
	if (ret_module) {
		mod = run_of(ks->mod, ks->nmod, lo)->value;
		*ret_module = mod == UINT32_MAX ? "" : ks->strings + mod;
	}
	return ks->strings + ks->name[lo];
}

size_t kallsyms_bytes(const struct kallsyms *ks)
{
	return ks->n * (sizeof(*ks->lo) + sizeof(*ks->name)) +
	       (ks->nhi + ks->nmod) * sizeof(struct kallsyms_run) + ks->strings_len;
}

void kallsyms_free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->lo);
	free(ks->name);
	free(ks->hi);
	free(ks->mod);
	free(ks->strings);
	*ks = (struct kallsyms){ 0 };
}
