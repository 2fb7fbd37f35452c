/* SPDX-License-Identifier: MIT */
/*
 * The page's data block (html_data.h). Each burst is formatted into memory first, so that one
 * that would pass the budget is left out whole, with the names only it brought.
 */
#include <errno.h>

#include "view/html_data.h"
#include "base/util.h"

/* The names of all bursts, once: an open-addressing table over an array. */
struct dict {
	const char **name;
	uint32_t *tab; /* index + 1, 0 empty */
	size_t n, tab_cap;
	size_t bytes;  /* of the names as JSON, at most */
};

struct html_data {
	struct dict d;
	char *json;	  /* the bursts' objects, comma-separated */
	size_t len;
	int *index;	  /* per burst of the page: its index in "bursts", -1 */
	size_t nburst;
};

static size_t *slot_of(struct dict *d, const char *s, size_t *ret)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (const char *p = s; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	for (i = (size_t)h & (d->tab_cap - 1); d->tab[i]; i = (i + 1) & (d->tab_cap - 1))
		if (streq(d->name[d->tab[i] - 1], s))
			break;
	*ret = i;
	return ret;
}

/* At least the bytes html_json_str() writes for @s, and its comma: every byte outside plain
 * ASCII counted as the longest escape of a character. */
static size_t json_bytes(const char *s)
{
	size_t n = 3;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		n += c == '"' || c == '\\' ? 2 : c < 0x20 || c >= 0x7f || c == '<' || c == '>' ||
		     c == '&' ? 12 : 1;
	}
	return n;
}

static uint32_t dict_add(struct dict *d, const char *s)
{
	size_t i;

	slot_of(d, s, &i);
	if (d->tab[i])
		return d->tab[i] - 1;
	d->name[d->n] = s;
	d->bytes += json_bytes(s);
	d->tab[i] = (uint32_t)++d->n;
	return (uint32_t)(d->n - 1);
}

/* Forgets the names added since there were @n: the last added first, so no probe chain of an
 * older name ever passed through their slots. */
static void dict_truncate(struct dict *d, size_t n)
{
	while (d->n > n) {
		size_t i;

		slot_of(d, d->name[d->n - 1], &i);
		d->tab[i] = 0;
		d->bytes -= json_bytes(d->name[--d->n]);
	}
}

/* Room for every name of the flames. 0 or -ENOMEM. */
static int dict_init(struct dict *d, const struct html_burst *b, size_t n)
{
	size_t total = 1;

	for (size_t i = 0; i < n; i++)
		total += b[i].fl ? b[i].fl->nnames : 0;
	d->tab_cap = 64;
	while (d->tab_cap < 2 * total)
		d->tab_cap *= 2;
	d->name = calloc(total, sizeof(*d->name));
	d->tab = calloc(d->tab_cap, sizeof(*d->tab));
	return d->name && d->tab ? 0 : -ENOMEM;
}

static void u32_array(FILE *out, const char *key, const uint32_t *v, size_t n)
{
	fprintf(out, ",\"%s\":[", key);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%u", i ? "," : "", v[i]);
	fputc(']', out);
}

/* The nodes in depth-first order, children in name order: @order[new] = old, @newi[old]. */
static void dfs(const struct flame *fl, uint32_t *order, uint32_t *newi, uint32_t *stack)
{
	size_t n = 0, sp = 0;

	stack[sp++] = 0;
	while (sp > 0) { /* children pushed last first, so that they pop in name order */
		uint32_t i = stack[--sp], k = 0;

		newi[i] = (uint32_t)n;
		order[n++] = i;
		for (uint32_t c = fl->node[i].child; c != FLAME_NONE; c = fl->node[c].next)
			k++;
		sp += k;
		for (uint32_t c = fl->node[i].child, j = 1; c != FLAME_NONE; c = fl->node[c].next)
			stack[sp - j++] = c;
	}
}

static const uint64_t *sort_counts; /* qsort has no context argument */

static int by_count(const void *a, const void *b)
{
	uint64_t x = sort_counts[*(const uint32_t *)a], y = sort_counts[*(const uint32_t *)b];

	return x != y ? (x > y ? -1 : 1) : (*(const uint32_t *)a > *(const uint32_t *)b) -
						   (*(const uint32_t *)a < *(const uint32_t *)b);
}

/* "dt", "leaves" and "leaf" of the sample times; nodes numbered by @newi. 0 or -ENOMEM. */
static int times(FILE *out, const struct flame *fl, const uint32_t *newi, uint32_t *v)
{
	_cleanup_free_ uint64_t *per = calloc(fl->nnodes, sizeof(*per));
	_cleanup_free_ uint32_t *rank = calloc(fl->nnodes, sizeof(*rank));
	_cleanup_free_ uint32_t *leaves = calloc(fl->nnodes, sizeof(*leaves));
	size_t nl = 0;
	int64_t last = 0;

	if (!per || !rank || !leaves)
		return -ENOMEM;
	for (size_t i = 0; i < fl->ntimes; i++)
		if (per[newi[fl->times[i].node]]++ == 0)
			leaves[nl++] = newi[fl->times[i].node];
	sort_counts = per;
	qsort(leaves, nl, sizeof(*leaves), by_count); /* the frequent ones get short indices */
	for (size_t i = 0; i < nl; i++)
		rank[leaves[i]] = (uint32_t)i;
	fputs(",\"dt\":[", out);
	for (size_t i = 0; i < fl->ntimes; i++) {
		fprintf(out, "%s%lld", i ? "," : "", (long long)fl->times[i].t_ms - last);
		last = fl->times[i].t_ms;
	}
	fputc(']', out);
	u32_array(out, "leaves", leaves, nl);
	for (size_t i = 0; i < fl->ntimes; i++)
		v[i] = rank[newi[fl->times[i].node]];
	u32_array(out, "leaf", v, fl->ntimes);
	return 0;
}

/* One burst's object. 0 or -ENOMEM. */
static int burst(FILE *out, struct dict *d, const struct html_burst *b)
{
	const struct flame *fl = b->fl;
	_cleanup_free_ uint32_t *order = calloc(fl->nnodes, sizeof(*order));
	_cleanup_free_ uint32_t *newi = calloc(fl->nnodes, sizeof(*newi));
	_cleanup_free_ uint32_t *v = calloc(fl->nnodes + fl->ntimes + 1, sizeof(*v));
	_cleanup_free_ uint32_t *stack = calloc(fl->nnodes, sizeof(*stack));
	char id[48];

	if (!order || !newi || !v || !stack)
		return -ENOMEM;
	dfs(fl, order, newi, stack);
	fputs("{\"id\":", out);
	html_burst_id(b->ev, id, sizeof(id));
	html_json_str(out, id, strlen(id));
	fprintf(out, ",\"cpu\":%u,\"total\":%llu,\"hot\":", b->ev->cpu,
		(unsigned long long)fl->node[0].total);
	if (fl->hot != FLAME_NONE)
		fprintf(out, "%u", dict_add(d, fl->names[fl->hot]));
	else
		fputs("-1", out);
	for (size_t i = 0; i < fl->nnodes; i++)
		v[i] = dict_add(d, fl->names[fl->node[order[i]].name]);
	u32_array(out, "node", v, fl->nnodes);
	for (size_t i = 0; i < fl->nnodes; i++)
		v[i] = i ? (uint32_t)i - newi[fl->node[order[i]].parent] : 0;
	u32_array(out, "up", v, fl->nnodes);
	for (size_t i = 0; i < fl->nnodes; i++)
		v[i] = (uint32_t)fl->node[order[i]].kind;
	u32_array(out, "kind", v, fl->nnodes);
	fputs(",\"self\":[", out);
	for (size_t i = 0; i < fl->nnodes; i++)
		fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)fl->node[order[i]].self);
	fputc(']', out);
	if (times(out, fl, newi, v) < 0)
		return -ENOMEM;
	fputc('}', out);
	return 0;
}

/* Appends @b's object to @pd if it fits @budget; its index or -1. 0 or -ENOMEM. */
static int add(struct html_data *pd, const struct html_burst *b, size_t budget, int *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, names = pd->d.n;
	FILE *m = open_memstream(&buf, &len);
	int r, k = 0;
	char *grown;

	if (!m)
		return -ENOMEM;
	r = burst(m, &pd->d, b);
	if (fclose(m) != 0 || !buf)
		r = -ENOMEM;
	if (r < 0)
		return r;
	*ret = -1;
	if (pd->len + len + 1 + pd->d.bytes + 128 > budget) { /* 128: the element around them */
		dict_truncate(&pd->d, names);
		return 0;
	}
	grown = realloc(pd->json, pd->len + len + 2);
	if (!grown)
		return -ENOMEM;
	pd->json = grown;
	if (pd->len)
		pd->json[pd->len++] = ',';
	memcpy(pd->json + pd->len, buf, len + 1);
	pd->len += len;
	for (size_t i = 0; i < pd->nburst; i++)
		k += pd->index[i] >= 0;
	*ret = k;
	return 0;
}

int html_data_build(const struct html_burst *b, size_t n, size_t budget, struct html_data **ret)
{
	struct html_data *pd = calloc(1, sizeof(*pd));
	int r = pd ? dict_init(&pd->d, b, n) : -ENOMEM;

	if (r == 0)
		pd->index = calloc(n + 1, sizeof(*pd->index));
	r = r == 0 && !pd->index ? -ENOMEM : r;
	for (size_t i = 0; r == 0 && i < n; i++) {
		pd->index[i] = -1;
		if (b[i].fl)
			r = add(pd, &b[i], budget, &pd->index[i]);
		pd->nburst = i + 1;
	}
	if (r < 0) {
		html_data_free(pd);
		return r;
	}
	*ret = pd;
	return 0;
}

int html_data_index(const struct html_data *d, size_t i)
{
	return i < d->nburst ? d->index[i] : -1;
}

void html_data_write(const struct html_data *d, FILE *out)
{
	fputs("<script type=\"application/json\" id=\"cz-data\">{\"bursts\":[", out);
	if (d->len)
		fwrite(d->json, 1, d->len, out);
	fputs("],\"names\":[", out);
	for (size_t i = 0; i < d->d.n; i++) {
		if (i)
			fputc(',', out);
		html_json_str(out, d->d.name[i], strlen(d->d.name[i]));
	}
	fputs("]}</script>\n", out);
}

void html_data_free(struct html_data *d)
{
	if (!d)
		return;
	free(d->d.name);
	free(d->d.tab);
	free(d->json);
	free(d->index);
	free(d);
}
